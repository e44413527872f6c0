/* Point-to-point synchronization with remote writers, progress while waiting, and
 * locks. */
#include <shmem.h>
#include <string.h>

#include "check.h"

#define ROUNDS 100

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes;

    /* A token passed round the ring three times: each PE waits for its left
     * neighbour's put, then puts to its right one. */
    long *token = shmem_calloc(1, sizeof(long));
    for (long lap = 1; lap <= 3; lap++) {
        if (me == 0) shmem_long_p(token, lap, right);
        shmem_long_wait_until(token, SHMEM_CMP_GE, lap);
        CHECK(*token == lap, "token %ld in lap %ld", *token, lap);
        if (me != 0) shmem_long_p(token, lap, right);
    }
    shmem_barrier_all();
    PASS("wait_until_with_a_remote_writer");

    /* Progress: PE 0 waits on a flag while every other PE does atomics on PE 0's
     * counter; the PE that makes the last increment raises the flag. */
    int *flag = shmem_calloc(1, sizeof(int));
    long *ctr = shmem_calloc(1, sizeof(long));
    long total = (long)(npes - 1) * ROUNDS;
    if (me == 0) {
        if (total > 0) shmem_int_wait_until(flag, SHMEM_CMP_EQ, 1);
        CHECK(*ctr == total, "counter %ld of %ld", *ctr, total);
    } else {
        for (int i = 0; i < ROUNDS; i++)
            if (shmem_long_atomic_fetch_inc(ctr, 0) == total - 1) shmem_int_atomic_set(flag, 1, 0);
    }
    shmem_barrier_all();
    PASS("a_waiting_pe_does_not_stall_atomics_on_its_memory");

    /* _all / _any / _some and their vectors: PE 0 hosts one ivar per PE. */
    int *ivars = shmem_calloc((size_t)npes, sizeof(int));
    shmem_barrier_all();
    shmem_int_atomic_set(ivars + me, me + 1, 0);
    if (me == 0) {
        shmem_int_wait_until_all(ivars, npes, NULL, SHMEM_CMP_GT, 0);
        int status[64] = {0};
        int vals[64];
        for (int i = 0; i < npes; i++) vals[i] = i + 1;
        shmem_int_wait_until_all_vector(ivars, npes, status, SHMEM_CMP_EQ, vals);
        CHECK(shmem_int_test_all(ivars, npes, NULL, SHMEM_CMP_GE, 1), "test_all");
        size_t any = shmem_int_wait_until_any(ivars, npes, NULL, SHMEM_CMP_EQ, npes);
        CHECK(any == (size_t)npes - 1, "wait_until_any %zu", any);
        size_t idx[64];
        size_t n = shmem_int_wait_until_some(ivars, npes, idx, NULL, SHMEM_CMP_LE, 2);
        CHECK(n == (size_t)(npes < 2 ? npes : 2) && idx[0] == 0, "wait_until_some %zu", n);
        status[0] = 1; /* Masked out. */
        n = shmem_int_test_some(ivars, npes, idx, status, SHMEM_CMP_LE, 2);
        CHECK(n == (size_t)(npes >= 2), "test_some with a mask %zu", n);
        CHECK(shmem_int_test_any(ivars, npes, status, SHMEM_CMP_GT, 1000) == SIZE_MAX,
              "test_any that holds nowhere");
        any = shmem_int_test_any_vector(ivars, npes, NULL, SHMEM_CMP_EQ, vals);
        CHECK(any < (size_t)npes, "test_any_vector %zu", any);
        any = shmem_int_wait_until_any_vector(ivars, npes, status, SHMEM_CMP_EQ, vals);
        CHECK(npes > 1 ? any >= 1 && any < (size_t)npes : any == SIZE_MAX,
              "wait_until_any_vector %zu (index 0 masked)", any);
        /* Fair: with every ivar ready, npes calls in a row return each index once. */
        int seen[64] = {0};
        for (int k = 0; k < npes; k++) {
            size_t i = shmem_int_test_any(ivars, npes, NULL, SHMEM_CMP_GE, 1);
            CHECK(i < (size_t)npes && !seen[i], "test_any returned %zu again", i);
            seen[i] = 1;
        }
        CHECK(shmem_int_test_some_vector(ivars, npes, idx, NULL, SHMEM_CMP_NE, vals) == 0,
              "test_some_vector");
        CHECK(shmem_int_test_all_vector(ivars, npes, NULL, SHMEM_CMP_EQ, vals), "test_all_vector");
        CHECK(shmem_int_wait_until_some_vector(ivars, npes, idx, NULL, SHMEM_CMP_EQ, vals) ==
                  (size_t)npes, "wait_until_some_vector");
        CHECK(shmem_test(ivars, SHMEM_CMP_EQ, 1) && !shmem_int_test(ivars, SHMEM_CMP_NE, 1),
              "test");
    }
    shmem_barrier_all();
    PASS("all_any_some_vector_forms");

    /* Locks: a plain get / increment / put counter on PE 0 under the lock. */
    long *lock = shmem_calloc(1, sizeof(long));
    long *plain = shmem_calloc(1, sizeof(long));
    for (int i = 0; i < ROUNDS; i++) {
        shmem_set_lock(lock);
        long v = shmem_long_g(plain, 0);
        shmem_long_p(plain, v + 1, 0);
        shmem_clear_lock(lock);
    }
    while (shmem_test_lock(lock)) {
    }
    shmem_clear_lock(lock);
    shmem_barrier_all();
    CHECK(shmem_long_g(plain, 0) == (long)npes * ROUNDS, "locked counter %ld of %ld",
          shmem_long_g(plain, 0), (long)npes * ROUNDS);
    PASS("locks_count_exactly");

    shmem_sync_all();
    shmem_finalize();
    return 0;
}
