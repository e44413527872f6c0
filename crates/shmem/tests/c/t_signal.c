/* Put-with-signal: the data is there once the signal is seen, set and add, the sized
 * and byte forms, signal_fetch and the value signal_wait_until returns. */
#include <shmem.h>
#include <string.h>

#include "check.h"

#define ROUNDS 8
#define N 8192 /* longs per round: 64 KiB, several network packets */

static long value(int from, int round, int i) { return ((long)from << 40) | ((long)round << 20) | i; }

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    /* Each round a fresh block to the right neighbour, then the round as its signal:
     * whoever sees the signal sees the whole block. */
    long *blocks = shmem_calloc((size_t)ROUNDS * N, sizeof(long));
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long *src = malloc(N * sizeof(long));
    for (int r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < N; i++) src[i] = value(me, r, i);
        long *dest = blocks + (size_t)(r - 1) * N;
        if (r % 2)
            shmem_long_put_signal(dest, src, N, sig, (uint64_t)r, SHMEM_SIGNAL_SET, right);
        else
            shmem_put64_signal_nbi(dest, src, N, sig, (uint64_t)r, SHMEM_SIGNAL_SET, right);
        uint64_t seen = shmem_signal_wait_until(sig, SHMEM_CMP_GE, (uint64_t)r);
        CHECK(seen >= (uint64_t)r, "round %d: wait_until returned %lu", r, (unsigned long)seen);
        for (int i = 0; i < N; i++)
            CHECK(dest[i] == value(left, r, i), "round %d element %d: %lx", r, i, dest[i]);
    }
    shmem_quiet();
    shmem_barrier_all();
    CHECK(shmem_signal_fetch(sig) == ROUNDS, "signal %lu", (unsigned long)shmem_signal_fetch(sig));
    PASS("the_data_is_there_once_the_signal_is_seen");

    /* SHMEM_SIGNAL_ADD from every PE onto PE 0's word, each with a few bytes. */
    uint64_t *sum = shmem_calloc(1, sizeof(uint64_t));
    char *bytes = shmem_calloc((size_t)npes, 8);
    char mine[8];
    memset(mine, 'a' + me, sizeof mine);
    shmem_putmem_signal(bytes + 8 * me, mine, sizeof mine, sum, (uint64_t)(1 + me),
                        SHMEM_SIGNAL_ADD, 0);
    if (me == 0) {
        uint64_t want = (uint64_t)npes * (npes + 1) / 2;
        uint64_t got = shmem_signal_wait_until(sum, SHMEM_CMP_EQ, want);
        CHECK(got == want, "sum %lu, want %lu", (unsigned long)got, (unsigned long)want);
        for (int p = 0; p < npes; p++)
            for (int k = 0; k < 8; k++)
                CHECK(bytes[8 * p + k] == 'a' + p, "byte %d of PE %d: %c", k, p, bytes[8 * p + k]);
    }
    PASS("signal_add_from_every_pe");

    free(src);
    shmem_free(bytes);
    shmem_free(sum);
    shmem_free(sig);
    shmem_free(blocks);
    shmem_finalize();
    return 0;
}
