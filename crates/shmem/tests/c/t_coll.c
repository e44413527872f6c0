/* Collectives on SHMEM_TEAM_WORLD: broadcast, collect, fcollect, alltoall(s), and
 * every reduction on every type, checked against a plain computation. */
#include <shmem.h>
#include <string.h>

#include "check.h"

#define N 8

/* Every reduction on T: source[i] = small values from PE p and index i. */
#define VAL(p, i) ((p) % 3 + (i) % 2 + 1)

#define CHECK_REDUCE(T, NAME, OP, START, COMBINE)                                    \
    {                                                                                \
        shmem_##NAME##_##OP##_reduce(SHMEM_TEAM_WORLD, dst, src, N);                 \
        for (int i = 0; i < N; i++) {                                                \
            T want = (T)VAL(0, i);                                                   \
            for (int p = 1; p < npes; p++) {                                         \
                T a = want, b = (T)VAL(p, i);                                        \
                want = (T)(COMBINE);                                                 \
            }                                                                        \
            CHECK(dst[i] == want, #NAME " " #OP " [%d]", i);                         \
        }                                                                            \
    }

#define BITWISE(T, NAME)                                                             \
    static void bitwise_##NAME(int me, int npes) {                                  \
        T *src = shmem_malloc(N * sizeof(T)), *dst = shmem_malloc(N * sizeof(T));    \
        for (int i = 0; i < N; i++) src[i] = (T)VAL(me, i);                          \
        CHECK_REDUCE(T, NAME, and, 0, a & b)                                         \
        CHECK_REDUCE(T, NAME, or, 0, a | b)                                          \
        CHECK_REDUCE(T, NAME, xor, 0, a ^ b)                                         \
        shmem_free(dst);                                                             \
        shmem_free(src);                                                             \
    }
_NF_SHMEM_BITWISE_REDUCE_TYPES(BITWISE)

#define ORDERED(T, NAME)                                                             \
    static void ordered_##NAME(int me, int npes) {                                  \
        T *src = shmem_malloc(N * sizeof(T)), *dst = shmem_malloc(N * sizeof(T));    \
        for (int i = 0; i < N; i++) src[i] = (T)VAL(me, i);                          \
        CHECK_REDUCE(T, NAME, max, 0, a > b ? a : b)                                 \
        CHECK_REDUCE(T, NAME, min, 0, a < b ? a : b)                                 \
        shmem_free(dst);                                                             \
        shmem_free(src);                                                             \
    }
_NF_SHMEM_ORDERED_REDUCE_TYPES(ORDERED)

#define ARITH(T, NAME)                                                               \
    static void arith_##NAME(int me, int npes) {                                    \
        T *src = shmem_malloc(N * sizeof(T)), *dst = shmem_malloc(N * sizeof(T));    \
        for (int i = 0; i < N; i++) src[i] = (T)VAL(me, i);                          \
        CHECK_REDUCE(T, NAME, sum, 0, a + b)                                         \
        CHECK_REDUCE(T, NAME, prod, 0, a * b)                                        \
        /* In place: dest == source. */                                              \
        shmem_##NAME##_sum_reduce(SHMEM_TEAM_WORLD, src, src, N);                    \
        for (int i = 0; i < N; i++) {                                                \
            T want = 0;                                                              \
            for (int p = 0; p < npes; p++) want += (T)VAL(p, i);                     \
            CHECK(src[i] == want, #NAME " in-place sum [%d]", i);                    \
        }                                                                            \
        shmem_free(dst);                                                             \
        shmem_free(src);                                                             \
    }
_NF_SHMEM_ARITH_REDUCE_TYPES(ARITH)

#define RUN_BITWISE(T, NAME) bitwise_##NAME(me, npes);
#define RUN_ORDERED(T, NAME) ordered_##NAME(me, npes);
#define RUN_ARITH(T, NAME) arith_##NAME(me, npes);

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "team_my_pe");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "team_n_pes");

    long *src = shmem_malloc(N * 64 * sizeof(long));
    long *dst = shmem_malloc(N * 64 * sizeof(long));
    for (int i = 0; i < N * npes; i++) src[i] = me * 1000 + i;
    int root = npes - 1;
    shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, N, root);
    for (int i = 0; i < N; i++) CHECK(dst[i] == root * 1000 + i, "broadcast [%d]", i);
    char *cs = shmem_malloc(8), *cd = shmem_calloc(8, 1);
    for (int i = 0; i < 8; i++) cs[i] = (char)('a' + me + i);
    shmem_broadcastmem(SHMEM_TEAM_WORLD, cd, cs, 3, 0);
    CHECK(cd[0] == 'a' && cd[2] == 'c' && cd[3] == 0, "broadcastmem %.8s", cd);
    PASS("broadcast");

    shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, N);
    for (int p = 0; p < npes; p++)
        for (int i = 0; i < N; i++)
            CHECK(dst[p * N + i] == p * 1000 + i, "fcollect [%d][%d]", p, i);
    /* collect: PE p contributes p + 1 elements. */
    shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1);
    int at = 0;
    for (int p = 0; p < npes; p++)
        for (int i = 0; i <= p; i++, at++)
            CHECK(dst[at] == p * 1000 + i, "collect [%d][%d]", p, i);
    PASS("collect_fcollect");

    /* alltoall: block j of PE p goes to PE j as its block p. */
    shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, N);
    for (int p = 0; p < npes; p++)
        for (int i = 0; i < N; i++)
            CHECK(dst[p * N + i] == p * 1000 + me * N + i, "alltoall [%d][%d]", p, i);
    /* alltoalls with source stride 2 and dest stride 3, 2 elements per block. */
    memset(dst, 0, N * 64 * sizeof(long));
    shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 3, 2, 2);
    for (int p = 0; p < npes; p++)
        for (int k = 0; k < 2; k++)
            CHECK(dst[(p * 2 + k) * 3] == p * 1000 + (me * 2 + k) * 2, "alltoalls [%d][%d]",
                  p, k);
    PASS("alltoall_alltoalls");

    _NF_SHMEM_BITWISE_REDUCE_TYPES(RUN_BITWISE)
    _NF_SHMEM_ORDERED_REDUCE_TYPES(RUN_ORDERED)
    _NF_SHMEM_ARITH_REDUCE_TYPES(RUN_ARITH)
    PASS("every_reduction_on_every_type");

    /* Nothing to move: every collective returns, whatever the (NULL) buffers. */
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, 0) == 0, "broadcast 0");
    CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "collect 0");
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "fcollect 0");
    CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "alltoall 0");
    CHECK(shmem_long_alltoalls(SHMEM_TEAM_WORLD, NULL, NULL, 1, 1, 0) == 0, "alltoalls 0");
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "sum_reduce 0");
    CHECK(shmem_ulong_and_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "and_reduce 0");
    PASS("zero_length_collectives");

    shmem_sync(SHMEM_TEAM_WORLD);
    shmem_finalize();
    return 0;
}
