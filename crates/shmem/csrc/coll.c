/* Collectives on any team (OpenSHMEM 1.5 section 9.9), every typed family one
 * macro over a type table of shmem.h, and the cores they share with the 1.4
 * active-set forms (csrc/activeset.c). A core runs on a group (csrc/team.h): PE
 * numbers are member numbers, and only members synchronise.
 *
 * 1. A group barrier first: every member has entered, so every source is ready.
 * 2. Each member gets what it needs from the others' symmetric sources (no member
 *    writes another's memory), starting at the member after itself so that not
 *    everyone reads member 0 at once.
 * 3. A group barrier: nobody reads a source any more, so sources may change.
 * 4. Reductions are a reduce-scatter then an allgather by puts: member m combines
 *    the m-th chunk of the elements, getting that chunk from every member and
 *    combining in member order (so every PE ends with the same bits), then, after
 *    a barrier (nobody reads a source: dest may be a source), puts its chunk into
 *    every member's dest, then a barrier. Each member moves about 2 x the data
 *    once, instead of getting every member's whole source. */
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "team.h"

void nf_coll_broadcast(const char *call, const struct nf_group *g, void *dest,
                       const void *source, size_t bytes, int root, int root_gets) {
    if (root < 0 || root >= g->size)
        nf_fatalf(call, "PE_root = %d is not a PE of the team (0 ..= %d)", root, g->size - 1);
    if (g->direct) {
        nf_direct_broadcast(call, g, dest, source, bytes, root, root_gets);
        return;
    }
    nf_group_barrier(call, g);
    if (g->me != root || root_gets) nf_get(call, dest, source, bytes, nf_group_pe(g, root));
    nf_group_sync(call, g);
}

void nf_coll_fcollect(const char *call, const struct nf_group *g, void *dest,
                      const void *source, size_t bytes) {
    nf_group_barrier(call, g);
    for (int k = 0; k < g->size; k++) {
        int i = (g->me + k) % g->size;
        nf_get(call, (char *)dest + (size_t)i * bytes, source, bytes, nf_group_pe(g, i));
    }
    nf_group_sync(call, g);
}

/* Sizes differ between members: each publishes its count in the group's word. */
void nf_coll_collect(const char *call, const struct nf_group *g, void *dest,
                     const void *source, size_t bytes) {
    *g->count = (long)bytes;
    nf_group_barrier(call, g);
    size_t at = 0;
    for (int i = 0; i < g->size; i++) {
        long theirs = (long)bytes;
        if (i != g->me) nf_get(call, &theirs, g->count, sizeof theirs, nf_group_pe(g, i));
        nf_get(call, (char *)dest + at, source, (size_t)theirs, nf_group_pe(g, i));
        at += (size_t)theirs;
    }
    nf_group_sync(call, g);
}

void nf_coll_alltoall(const char *call, const struct nf_group *g, void *dest,
                      const void *source, size_t bytes) {
    nf_group_barrier(call, g);
    for (int k = 0; k < g->size; k++) {
        int i = (g->me + k) % g->size;
        nf_get(call, (char *)dest + (size_t)i * bytes,
               (const char *)source + (size_t)g->me * bytes, bytes, nf_group_pe(g, i));
    }
    nf_group_sync(call, g);
}

void nf_coll_alltoalls(const char *call, const struct nf_group *g, void *dest,
                       const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t elem,
                       size_t nelems) {
    nf_group_barrier(call, g);
    for (int k = 0; k < g->size; k++) {
        int i = (g->me + k) % g->size;
        nf_shmem_iget(call, (char *)dest + (size_t)i * nelems * (size_t)dst * elem,
                      (const char *)source + (size_t)g->me * nelems * (size_t)sst * elem, dst,
                      sst, elem, nelems, nf_group_pe(g, i));
    }
    nf_group_sync(call, g);
}

void nf_coll_reduce(const char *call, const struct nf_group *g, void *dest,
                    const void *source, size_t nreduce, size_t elem, nf_combine_fn combine) {
    /* Nothing to combine takes the general path, whose steps touch no address (the
     * direct one maps the source, which may then be anything, NULL too). */
    if (g->direct && nreduce > 0 &&
        nf_direct_reduce(call, g, dest, source, nreduce, elem, combine))
        return;
    size_t chunk = (nreduce + (size_t)g->size - 1) / (size_t)g->size;
    size_t lo = (size_t)g->me * chunk < nreduce ? (size_t)g->me * chunk : nreduce;
    size_t n = nreduce - lo < chunk ? nreduce - lo : chunk;
    size_t off = lo * elem, bytes = n * elem;
    char *acc = malloc(bytes + 1), *got = malloc(bytes + 1);
    if (!acc || !got) nf_shmem_fatal(call, "out of local memory for the result");
    nf_group_barrier(call, g);
    if (n) {
        nf_get(call, acc, (const char *)source + off, bytes, nf_group_pe(g, 0));
        for (int i = 1; i < g->size; i++) {
            nf_get(call, got, (const char *)source + off, bytes, nf_group_pe(g, i));
            combine(acc, got, n);
        }
    }
    nf_group_sync(call, g);
    for (int k = 0; n && k < g->size; k++) {
        int i = (g->me + k) % g->size;
        nf_put(call, (char *)dest + off, acc, bytes, nf_group_pe(g, i));
    }
    nf_group_barrier(call, g);
    free(acc);
    free(got);
}

/* ---- The 1.5 forms: a team's group, then the core ---- */

#define NF_ON_TEAM(call, team, CORE)                                                 \
    do {                                                                             \
        struct nf_group g;                                                           \
        nf_team_group(call, team, &g);                                               \
        CORE;                                                                        \
        return 0;                                                                    \
    } while (0)

#define NF_COLL(T, N)                                                                \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source,           \
                              size_t nelems, int PE_root) {                          \
        const char *call = "shmem_" #N "_broadcast";                                 \
        NF_ON_TEAM(call, team,                                                       \
                   nf_coll_broadcast(call, &g, dest, source, nelems * sizeof(T),     \
                                     PE_root, 1));                                   \
    }                                                                                \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source,             \
                            size_t nelems) {                                         \
        const char *call = "shmem_" #N "_collect";                                   \
        NF_ON_TEAM(call, team, nf_coll_collect(call, &g, dest, source, nelems * sizeof(T))); \
    }                                                                                \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source,            \
                             size_t nelems) {                                        \
        const char *call = "shmem_" #N "_fcollect";                                  \
        NF_ON_TEAM(call, team, nf_coll_fcollect(call, &g, dest, source, nelems * sizeof(T))); \
    }                                                                                \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source,            \
                             size_t nelems) {                                        \
        const char *call = "shmem_" #N "_alltoall";                                  \
        NF_ON_TEAM(call, team, nf_coll_alltoall(call, &g, dest, source, nelems * sizeof(T))); \
    }                                                                                \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source,           \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {         \
        const char *call = "shmem_" #N "_alltoalls";                                 \
        NF_ON_TEAM(call, team,                                                       \
                   nf_coll_alltoalls(call, &g, dest, source, dst, sst, sizeof(T), nelems)); \
    }
_NF_SHMEM_RMA_TYPES(NF_COLL)

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root) {
    const char *call = "shmem_broadcastmem";
    NF_ON_TEAM(call, team, nf_coll_broadcast(call, &g, dest, source, nelems, PE_root, 1));
}
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
    const char *call = "shmem_collectmem";
    NF_ON_TEAM(call, team, nf_coll_collect(call, &g, dest, source, nelems));
}
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
    const char *call = "shmem_fcollectmem";
    NF_ON_TEAM(call, team, nf_coll_fcollect(call, &g, dest, source, nelems));
}
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
    const char *call = "shmem_alltoallmem";
    NF_ON_TEAM(call, team, nf_coll_alltoall(call, &g, dest, source, nelems));
}

/* One reduction: COMBINE(a, b) is the new value of a. */
#define NF_REDUCE(T, N, OP, COMBINE)                                                 \
    NF_COMBINE(T, N##_##OP, COMBINE)                                                 \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,       \
                                  size_t nreduce) {                                  \
        const char *call = "shmem_" #N "_" #OP "_reduce";                            \
        NF_ON_TEAM(call, team,                                                       \
                   nf_coll_reduce(call, &g, dest, source, nreduce, sizeof(T),        \
                                  nf_combine_##N##_##OP));                           \
    }
#define NF_BITWISE_REDUCE(T, N)                                                      \
    NF_REDUCE(T, N, and, a & b) NF_REDUCE(T, N, or, a | b) NF_REDUCE(T, N, xor, a ^ b)
#define NF_ORDERED_REDUCE(T, N)                                                      \
    NF_REDUCE(T, N, max, a > b ? a : b) NF_REDUCE(T, N, min, a < b ? a : b)
#define NF_ARITH_REDUCE(T, N) NF_REDUCE(T, N, sum, a + b) NF_REDUCE(T, N, prod, a * b)
_NF_SHMEM_BITWISE_REDUCE_TYPES(NF_BITWISE_REDUCE)
_NF_SHMEM_ORDERED_REDUCE_TYPES(NF_ORDERED_REDUCE)
_NF_SHMEM_ARITH_REDUCE_TYPES(NF_ARITH_REDUCE)
