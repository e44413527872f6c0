/* Atomics: every operation on every AMO type against PE 0, from every PE at once
 * (the result must be exact), and the fetching _nbi forms. */
#include <shmem.h>
#include <string.h>

#include "check.h"

#define ROUNDS 200

/* Standard AMO types: inc, add, fetch_inc, fetch_add, compare_swap. */
#define STD(T, NAME)                                                                  \
    static void std_##NAME(int me, int npes) {                                       \
        T *ctr = shmem_calloc(2, sizeof(T));                                          \
        for (int i = 0; i < ROUNDS; i++) {                                            \
            shmem_##NAME##_atomic_inc(ctr, 0);                                        \
            (void)shmem_##NAME##_atomic_fetch_add(ctr, (T)2, 0);                      \
            T f;                                                                      \
            shmem_##NAME##_atomic_fetch_inc_nbi(&f, ctr, 0);                          \
            shmem_##NAME##_atomic_add(ctr + 1, (T)1, 0);                              \
        }                                                                             \
        shmem_barrier_all();                                                          \
        T total = shmem_##NAME##_atomic_fetch(ctr, 0);                                \
        CHECK(total == (T)(4 * ROUNDS * npes), #NAME " counter %lld",                 \
              (long long)total);                                                      \
        CHECK(shmem_##NAME##_g(ctr + 1, 0) == (T)(ROUNDS * npes), #NAME " add");      \
        shmem_barrier_all();                                                          \
        /* compare_swap: exactly one PE wins each round. */                          \
        if (me == 0) ctr[1] = 0;                                                      \
        shmem_barrier_all();                                                          \
        /* Round r moves the word from r to r + 1 exactly once, whoever wins; a PE \
         * reaches round r only after seeing the word at r or more. */             \
        for (int r = 0; r < 10; r++) {                                                \
            T old = shmem_##NAME##_atomic_compare_swap(ctr + 1, (T)r, (T)(r + 1), 0); \
            CHECK(old >= (T)r, #NAME " cswap saw %lld in round %d", (long long)old, r); \
        }                                                                             \
        shmem_barrier_all();                                                          \
        CHECK(shmem_##NAME##_atomic_fetch(ctr + 1, 0) == (T)10, #NAME " cswap");     \
        T fetched;                                                                    \
        shmem_##NAME##_atomic_compare_swap_nbi(&fetched, ctr + 1, (T)99, (T)5, 0);    \
        CHECK(fetched == (T)10, #NAME " cswap_nbi fetched");                          \
        shmem_##NAME##_atomic_fetch_add_nbi(&fetched, ctr + 1, (T)0, 0);              \
        CHECK(fetched == (T)10, #NAME " fetch_add_nbi");                              \
        shmem_barrier_all();                                                          \
        shmem_free(ctr);                                                              \
    }
_NF_SHMEM_AMO_TYPES(STD)

/* Extended: set, fetch, swap (floating point too). */
#define EXT(T, NAME)                                                                  \
    static void ext_##NAME(int me, int npes) {                                       \
        T *v = shmem_calloc(npes, sizeof(T));                                         \
        int right = (me + 1) % npes;                                                  \
        shmem_##NAME##_atomic_set(v + me, (T)(me + 1.5), right);                      \
        shmem_barrier_all();                                                          \
        int left = (me + npes - 1) % npes;                                            \
        CHECK(v[left] == (T)(left + 1.5), #NAME " set");                              \
        shmem_barrier_all();                                                          \
        T old = shmem_##NAME##_atomic_swap(v + me, (T)7, right);                      \
        CHECK(old == (T)(me + 1.5), #NAME " swap old");                               \
        T f;                                                                          \
        shmem_##NAME##_atomic_swap_nbi(&f, v + me, (T)8, right);                      \
        CHECK(f == (T)7, #NAME " swap_nbi");                                          \
        shmem_##NAME##_atomic_fetch_nbi(&f, v + me, right);                           \
        CHECK(f == (T)8 && shmem_##NAME##_atomic_fetch(v + me, right) == (T)8,        \
              #NAME " fetch");                                                        \
        shmem_barrier_all();                                                          \
        shmem_free(v);                                                                \
    }
_NF_SHMEM_EXT_AMO_TYPES(EXT)

/* Bitwise: each PE owns bit `me` (mod width) of a word on PE 0. */
#define BIT(T, NAME)                                                                  \
    static void bit_##NAME(int me, int npes) {                                       \
        T *w = shmem_calloc(3, sizeof(T));                                            \
        T mine = (T)1 << (me % (8 * (int)sizeof(T)));                                 \
        T all = 0;                                                                    \
        for (int p = 0; p < npes; p++) all |= (T)1 << (p % (8 * (int)sizeof(T)));     \
        if (me == 0) w[1] = all;                                                      \
        shmem_barrier_all();                                                          \
        shmem_##NAME##_atomic_or(w, mine, 0);                                         \
        shmem_##NAME##_atomic_xor(w + 2, mine, 0);                                    \
        shmem_barrier_all();                                                          \
        CHECK(shmem_##NAME##_atomic_fetch_or(w, 0, 0) == all, #NAME " or");           \
        shmem_barrier_all();                                                          \
        if (npes <= 8 * (int)sizeof(T))                                               \
            CHECK(shmem_##NAME##_g(w + 2, 0) == all, #NAME " xor");                   \
        shmem_barrier_all();                                                          \
        T before = shmem_##NAME##_atomic_fetch_and(w + 1, (T)~mine, 0);               \
        CHECK((before & mine) == mine, #NAME " fetch_and saw my bit cleared early");  \
        shmem_barrier_all();                                                          \
        CHECK(shmem_##NAME##_g(w + 1, 0) == 0, #NAME " and");                         \
        /* The same bits from every PE, twice: xor cancels, or would not. */         \
        shmem_##NAME##_atomic_xor(w + 2, (T)0x5a, 0);                                 \
        shmem_##NAME##_atomic_xor(w + 2, (T)0x5a, 0);                                 \
        shmem_barrier_all();                                                          \
        if (npes <= 8 * (int)sizeof(T))                                               \
            CHECK(shmem_##NAME##_g(w + 2, 0) == all, #NAME " xor twice");             \
        shmem_barrier_all();                                                          \
        T f;                                                                          \
        shmem_##NAME##_atomic_fetch_xor_nbi(&f, w + 1, (T)0, 0);                      \
        shmem_##NAME##_atomic_fetch_and_nbi(&f, w + 1, (T)0, 0);                      \
        shmem_##NAME##_atomic_fetch_or_nbi(&f, w + 1, (T)0, 0);                       \
        shmem_##NAME##_atomic_and(w + 1, (T)0, 0);                                    \
        CHECK(f == 0, #NAME " fetch_or_nbi");                                         \
        shmem_barrier_all();                                                          \
        shmem_free(w);                                                                \
    }
_NF_SHMEM_BITWISE_AMO_TYPES(BIT)

#define RUN(T, NAME) std_##NAME(me, npes);
#define RUN_EXT(T, NAME) ext_##NAME(me, npes);
#define RUN_BIT(T, NAME) bit_##NAME(me, npes);

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    _NF_SHMEM_AMO_TYPES(RUN)
    PASS("standard_amo_exact_from_every_pe");
    _NF_SHMEM_EXT_AMO_TYPES(RUN_EXT)
    PASS("extended_amo_set_fetch_swap");
    _NF_SHMEM_BITWISE_AMO_TYPES(RUN_BIT)
    PASS("bitwise_amo");

    /* Unique tickets: fetch_inc from every PE hands out 0 .. n-1 exactly once. */
    long *ctr = shmem_calloc(1, sizeof(long));
    int *seen = shmem_calloc((size_t)npes * ROUNDS, sizeof(int));
    for (int i = 0; i < ROUNDS; i++) {
        long t = shmem_atomic_fetch_inc(ctr, 0);
        CHECK(t >= 0 && t < (long)npes * ROUNDS, "ticket %ld", t);
        shmem_int_atomic_inc(seen + t, 0);
    }
    shmem_barrier_all();
    if (me == 0)
        for (int i = 0; i < npes * ROUNDS; i++) CHECK(seen[i] == 1, "ticket %d seen %d", i, seen[i]);
    PASS("tickets_are_unique");

    shmem_finalize();
    return 0;
}
