/* The active-set collectives of OpenSHMEM 1.4 (deprecated in 1.5, still in
 * programs): an active set (PE_start, logPE_stride, PE_size) is a strided group
 * (csrc/team.h) whose barrier words are the program's pSync, resting at
 * SHMEM_SYNC_VALUE as the specification requires; the collectives are the cores of
 * csrc/coll.c.
 *
 * 1. pSync[0..1] are the barrier's words; collect also uses pSync[2] for its count
 *    (SHMEM_COLLECT_SYNC_SIZE is 3) and puts it back to SHMEM_SYNC_VALUE after
 *    its last barrier. pWrk is accepted and unused.
 * 2. The arguments are checked (the set inside the job, this PE in it, pSync not
 *    NULL), naming the call and the PE; a pSync outside the symmetric heap is
 *    refused by its first atomic, naming the call.
 * 3. Broadcast leaves the root's dest alone, as 1.4 says. */
#include <shmem.h>

#include "internal.h"
#include "team.h"

/* The group of the active set (rule 2). */
static void nf_active_set(const char *call, int start, int logstride, int size, long *psync,
                          struct nf_group *g) {
    int npes = shmem_n_pes(), me = shmem_my_pe();
    if (start < 0 || logstride < 0 || logstride > 30 || size < 1)
        nf_fatalf(call,
                  "PE_start = %d, logPE_stride = %d, PE_size = %d is no active set (each "
                  "must be >= 0, logPE_stride < 31, PE_size >= 1)",
                  start, logstride, size);
    long stride = 1L << logstride, last = start + (long)(size - 1) * stride;
    if (last >= npes)
        nf_fatalf(call,
                  "PE_start = %d, logPE_stride = %d, PE_size = %d reach PE %ld; the job "
                  "has %d PEs (0 ..= %d)",
                  start, logstride, size, last, npes, npes - 1);
    long from = me - start;
    if (from < 0 || from % stride != 0 || from / stride >= size)
        nf_fatalf(call,
                  "this PE is not in the active set PE_start = %d, logPE_stride = %d, "
                  "PE_size = %d",
                  start, logstride, size);
    if (!psync) nf_shmem_fatal(call, "pSync is NULL");
    g->size = size;
    g->me = (int)(from / stride);
    g->start = start;
    g->stride = (int)stride;
    g->list = NULL;
    g->psync = psync;
    g->idle = SHMEM_SYNC_VALUE;
    g->count = &psync[2];
    g->direct = NULL; /* the program's pSync, not a slot's counters */
}

#define NF_ON_SET(call, CORE)                                                        \
    do {                                                                             \
        struct nf_group g;                                                           \
        nf_active_set(call, PE_start, logPE_stride, PE_size, pSync, &g);             \
        CORE;                                                                        \
    } while (0)

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync) {
    NF_ON_SET("shmem_barrier", nf_group_barrier("shmem_barrier", &g));
}

#define NF_ACTIVE_SET(BITS)                                                          \
    void shmem_broadcast##BITS(void *dest, const void *source, size_t nelems,        \
                               int PE_root, int PE_start, int logPE_stride,          \
                               int PE_size, long *pSync) {                           \
        const char *call = "shmem_broadcast" #BITS;                                  \
        NF_ON_SET(call, nf_coll_broadcast(call, &g, dest, source, nelems * BITS / 8, \
                                          PE_root, 0));                              \
    }                                                                                \
    void shmem_collect##BITS(void *dest, const void *source, size_t nelems,          \
                             int PE_start, int logPE_stride, int PE_size,            \
                             long *pSync) {                                          \
        const char *call = "shmem_collect" #BITS;                                    \
        NF_ON_SET(call, nf_coll_collect(call, &g, dest, source, nelems * BITS / 8)); \
        pSync[2] = SHMEM_SYNC_VALUE;                                                 \
    }                                                                                \
    void shmem_fcollect##BITS(void *dest, const void *source, size_t nelems,         \
                              int PE_start, int logPE_stride, int PE_size,           \
                              long *pSync) {                                         \
        const char *call = "shmem_fcollect" #BITS;                                   \
        NF_ON_SET(call, nf_coll_fcollect(call, &g, dest, source, nelems * BITS / 8)); \
    }                                                                                \
    void shmem_alltoall##BITS(void *dest, const void *source, size_t nelems,         \
                              int PE_start, int logPE_stride, int PE_size,           \
                              long *pSync) {                                         \
        const char *call = "shmem_alltoall" #BITS;                                   \
        NF_ON_SET(call, nf_coll_alltoall(call, &g, dest, source, nelems * BITS / 8)); \
    }                                                                                \
    void shmem_alltoalls##BITS(void *dest, const void *source, ptrdiff_t dst,        \
                               ptrdiff_t sst, size_t nelems, int PE_start,           \
                               int logPE_stride, int PE_size, long *pSync) {         \
        const char *call = "shmem_alltoalls" #BITS;                                  \
        NF_ON_SET(call, nf_coll_alltoalls(call, &g, dest, source, dst, sst, BITS / 8, \
                                          nelems));                                  \
    }
NF_ACTIVE_SET(32)
NF_ACTIVE_SET(64)

#define NF_TO_ALL(T, N, OP, COMBINE)                                                 \
    NF_COMBINE(T, N##_##OP, COMBINE)                                                 \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce,            \
                                   int PE_start, int logPE_stride, int PE_size,      \
                                   T *pWrk, long *pSync) {                           \
        const char *call = "shmem_" #N "_" #OP "_to_all";                            \
        (void)pWrk;                                                                  \
        if (nreduce < 0) nf_fatalf(call, "nreduce = %d is negative", nreduce);       \
        NF_ON_SET(call, nf_coll_reduce(call, &g, dest, source, (size_t)nreduce,      \
                                       sizeof(T), nf_combine_##N##_##OP));           \
    }
#define NF_OLD_BITWISE(T, N)                                                         \
    NF_TO_ALL(T, N, and, a & b) NF_TO_ALL(T, N, or, a | b) NF_TO_ALL(T, N, xor, a ^ b)
#define NF_OLD_ORDERED(T, N)                                                         \
    NF_TO_ALL(T, N, max, a > b ? a : b) NF_TO_ALL(T, N, min, a < b ? a : b)
#define NF_OLD_ARITH(T, N) NF_TO_ALL(T, N, sum, a + b) NF_TO_ALL(T, N, prod, a * b)
_NF_SHMEM_OLD_BITWISE_TYPES(NF_OLD_BITWISE)
_NF_SHMEM_OLD_ORDERED_TYPES(NF_OLD_ORDERED)
_NF_SHMEM_OLD_ARITH_TYPES(NF_OLD_ARITH)
