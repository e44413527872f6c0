/* Collectives on SHMEM_TEAM_WORLD, every typed family one macro over a type table
 * of shmem.h, built on the library's own gets and barriers:
 *
 * 1. A barrier first: every PE has entered, so every source is ready.
 * 2. Each PE gets what it needs from the others' symmetric sources (no PE writes
 *    another's memory), into its dest or, for reductions, a private buffer that it
 *    combines in PE order, so every PE computes the same result bit for bit.
 * 3. A barrier: nobody reads a source any more, so sources may change and a
 *    reduction may write its dest (which may be its source).
 * 4. Reductions copy the result into dest, then a last barrier.
 *
 * Any other team ends the process naming the call (teams are not provided yet). */
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Ends the process with `msg`, naming `call` (src/error.rs). */

static void nf_team(const char *call, shmem_team_t team) {
    if (team != SHMEM_TEAM_WORLD)
        nf_shmem_fatal(call, "only SHMEM_TEAM_WORLD is provided in this version");
}

int shmem_team_my_pe(shmem_team_t team) {
    nf_team("shmem_team_my_pe", team);
    return shmem_my_pe();
}

int shmem_team_n_pes(shmem_team_t team) {
    nf_team("shmem_team_n_pes", team);
    return shmem_n_pes();
}

int shmem_sync(shmem_team_t team) {
    nf_team("shmem_sync", team);
    shmem_sync_all();
    return 0;
}

static int nf_broadcast(const char *call, shmem_team_t team, void *dest, const void *source,
                        size_t bytes, int root) {
    nf_team(call, team);
    if (root < 0 || root >= shmem_n_pes()) nf_shmem_fatal(call, "PE_root is not a PE of the team");
    shmem_barrier_all();
    nf_shmem_get(call, dest, source, bytes, root);
    shmem_barrier_all();
    return 0;
}

static int nf_fcollect(const char *call, shmem_team_t team, void *dest, const void *source,
                       size_t bytes) {
    nf_team(call, team);
    shmem_barrier_all();
    for (int pe = 0; pe < shmem_n_pes(); pe++)
        nf_shmem_get(call, (char *)dest + (size_t)pe * bytes, source, bytes, pe);
    shmem_barrier_all();
    return 0;
}

/* Sizes differ between PEs: each publishes its count in a symmetric word first. */
static int nf_collect(const char *call, shmem_team_t team, void *dest, const void *source,
                      size_t bytes) {
    nf_team(call, team);
    size_t *count = shmem_malloc(sizeof(size_t));
    *count = bytes;
    shmem_barrier_all();
    size_t at = 0;
    for (int pe = 0; pe < shmem_n_pes(); pe++) {
        size_t theirs;
        nf_shmem_get(call, &theirs, count, sizeof theirs, pe);
        nf_shmem_get(call, (char *)dest + at, source, theirs, pe);
        at += theirs;
    }
    shmem_free(count);
    return 0;
}

static int nf_alltoall(const char *call, shmem_team_t team, void *dest, const void *source,
                       size_t bytes) {
    nf_team(call, team);
    int me = shmem_my_pe();
    shmem_barrier_all();
    for (int pe = 0; pe < shmem_n_pes(); pe++)
        nf_shmem_get(call, (char *)dest + (size_t)pe * bytes,
                     (const char *)source + (size_t)me * bytes, bytes, pe);
    shmem_barrier_all();
    return 0;
}

static int nf_alltoalls(const char *call, shmem_team_t team, void *dest, const void *source,
                        ptrdiff_t dst, ptrdiff_t sst, size_t elem, size_t nelems) {
    nf_team(call, team);
    int me = shmem_my_pe();
    shmem_barrier_all();
    for (int pe = 0; pe < shmem_n_pes(); pe++)
        nf_shmem_iget(call, (char *)dest + (size_t)pe * nelems * (size_t)dst * elem,
                      (const char *)source + (size_t)me * nelems * (size_t)sst * elem, dst,
                      sst, elem, nelems, pe);
    shmem_barrier_all();
    return 0;
}

#define NF_COLL(T, N)                                                                \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source,           \
                              size_t nelems, int PE_root) {                          \
        return nf_broadcast("shmem_" #N "_broadcast", team, dest, source,            \
                            nelems * sizeof(T), PE_root);                            \
    }                                                                                \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source,             \
                            size_t nelems) {                                         \
        return nf_collect("shmem_" #N "_collect", team, dest, source,                \
                          nelems * sizeof(T));                                       \
    }                                                                                \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source,            \
                             size_t nelems) {                                        \
        return nf_fcollect("shmem_" #N "_fcollect", team, dest, source,              \
                           nelems * sizeof(T));                                      \
    }                                                                                \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source,            \
                             size_t nelems) {                                        \
        return nf_alltoall("shmem_" #N "_alltoall", team, dest, source,              \
                           nelems * sizeof(T));                                      \
    }                                                                                \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source,           \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {         \
        return nf_alltoalls("shmem_" #N "_alltoalls", team, dest, source, dst, sst,  \
                            sizeof(T), nelems);                                      \
    }
_NF_SHMEM_RMA_TYPES(NF_COLL)

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root) {
    return nf_broadcast("shmem_broadcastmem", team, dest, source, nelems, PE_root);
}
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
    return nf_collect("shmem_collectmem", team, dest, source, nelems);
}
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
    return nf_fcollect("shmem_fcollectmem", team, dest, source, nelems);
}
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
    return nf_alltoall("shmem_alltoallmem", team, dest, source, nelems);
}

/* One reduction: COMBINE(a, b) is the new value of a. */
#define NF_REDUCE(T, N, OP, COMBINE)                                                 \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,       \
                                  size_t nreduce) {                                  \
        const char *call = "shmem_" #N "_" #OP "_reduce";                            \
        nf_team(call, team);                                                         \
        size_t bytes = nreduce * sizeof(T);                                          \
        T *acc = malloc(bytes + 1), *got = malloc(bytes + 1);                        \
        if (!acc || !got) nf_shmem_fatal(call, "out of local memory for the result"); \
        shmem_barrier_all();                                                         \
        nf_shmem_get(call, acc, source, bytes, 0);                                   \
        for (int pe = 1; pe < shmem_n_pes(); pe++) {                                 \
            nf_shmem_get(call, got, source, bytes, pe);                              \
            for (size_t i = 0; i < nreduce; i++) {                                   \
                T a = acc[i], b = got[i];                                            \
                acc[i] = (T)(COMBINE);                                               \
            }                                                                        \
        }                                                                            \
        shmem_barrier_all();                                                         \
        if (bytes) memcpy(dest, acc, bytes);                                         \
        free(acc);                                                                   \
        free(got);                                                                   \
        shmem_barrier_all();                                                         \
        return 0;                                                                    \
    }
#define NF_BITWISE_REDUCE(T, N)                                                      \
    NF_REDUCE(T, N, and, a & b) NF_REDUCE(T, N, or, a | b) NF_REDUCE(T, N, xor, a ^ b)
#define NF_ORDERED_REDUCE(T, N)                                                      \
    NF_REDUCE(T, N, max, a > b ? a : b) NF_REDUCE(T, N, min, a < b ? a : b)
#define NF_ARITH_REDUCE(T, N) NF_REDUCE(T, N, sum, a + b) NF_REDUCE(T, N, prod, a * b)
_NF_SHMEM_BITWISE_REDUCE_TYPES(NF_BITWISE_REDUCE)
_NF_SHMEM_ORDERED_REDUCE_TYPES(NF_ORDERED_REDUCE)
_NF_SHMEM_ARITH_REDUCE_TYPES(NF_ARITH_REDUCE)
