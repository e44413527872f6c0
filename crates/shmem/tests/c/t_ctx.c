/* Contexts: puts, gets and atomics through a created context and the default one,
 * completed by shmem_ctx_quiet. */
#include <shmem.h>
#include <stdint.h>

#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0 && ctx != SHMEM_CTX_INVALID,
          "ctx_create");
    long *x = shmem_calloc(4, sizeof(long));
    long v[2] = {me * 10 + 1, me * 10 + 2};
    shmem_ctx_long_put(ctx, x, v, 2, right);
    shmem_ctx_long_p(SHMEM_CTX_DEFAULT, x + 2, me, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK(x[0] == left * 10 + 1 && x[1] == left * 10 + 2 && x[2] == left, "ctx put");
    CHECK(shmem_ctx_long_g(ctx, x + 2, right) == me, "ctx g");
    shmem_ctx_long_atomic_add(ctx, x + 3, 1, 0);
    (void)shmem_ctx_long_atomic_fetch_inc(ctx, x + 3, 0);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK(shmem_ctx_long_atomic_fetch(ctx, x + 3, 0) == 2L * npes, "ctx atomics");

    /* Fetching non-blocking atomics through a context: complete at ctx_quiet. */
    long *y = shmem_calloc(2, sizeof(long));
    long got[4] = {-1, -1, -1, -1};
    shmem_barrier_all();
    shmem_ctx_long_atomic_fetch_add_nbi(ctx, &got[0], y, 5, right);
    shmem_ctx_long_atomic_fetch_inc_nbi(ctx, &got[1], y + 1, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK(got[0] == 0 && got[1] == 0 && y[0] == 5 && y[1] == 1, "ctx fetch_add/inc_nbi");
    shmem_barrier_all(); /* everyone has read its y before it changes again */
    shmem_ctx_long_atomic_compare_swap_nbi(ctx, &got[2], y, 5, 7, right);
    shmem_ctx_long_atomic_swap_nbi(ctx, &got[3], y + 1, 9, right);
    unsigned long *u = shmem_calloc(1, sizeof(unsigned long)), was = 1;
    shmem_barrier_all();
    shmem_ctx_ulong_atomic_fetch_xor_nbi(ctx, &was, u, 6, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK(got[2] == 5 && y[0] == 7, "ctx compare_swap_nbi");
    CHECK(got[3] == 1 && y[1] == 9, "ctx swap_nbi");
    CHECK(was == 0 && *u == 6, "ctx fetch_xor_nbi");
    long seen = -1;
    shmem_ctx_long_atomic_fetch_nbi(ctx, &seen, y, right);
    shmem_ctx_quiet(ctx);
    CHECK(seen == 7, "ctx fetch_nbi");

    /* Put-with-signal through a context: the data is there once the signal is. */
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long *box = shmem_calloc(64, sizeof(long));
    long mine[64];
    for (int i = 0; i < 64; i++) mine[i] = me * 1000 + i;
    shmem_barrier_all();
    shmem_ctx_long_put_signal(ctx, box, mine, 32, sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_ctx_putmem_signal_nbi(ctx, box + 32, mine + 32, 32 * sizeof(long), sig, 1,
                                SHMEM_SIGNAL_ADD, right);
    shmem_ctx_quiet(ctx);
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 2);
    for (int i = 0; i < 64; i++) CHECK(box[i] == left * 1000 + i, "ctx put_signal data");
    shmem_barrier_all();
    shmem_free(box);
    shmem_free(sig);
    shmem_free(u);
    shmem_free(y);

    shmem_ctx_fence(ctx);
    shmem_ctx_destroy(ctx);
    PASS("contexts");
    shmem_finalize();
    return 0;
}
