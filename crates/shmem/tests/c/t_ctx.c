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

    /* The sized forms through a context: 32- and 64-bit elements, blocking, _nbi and
     * strided, each landing on the right PE. */
    uint32_t *w32 = shmem_calloc(8, sizeof(uint32_t));
    uint64_t *w64 = shmem_calloc(8, sizeof(uint64_t));
    uint32_t s32[4] = {me + 100u, me + 200u, me + 300u, me + 400u};
    uint64_t s64[4] = {me + 1000u, me + 2000u, me + 3000u, me + 4000u};
    shmem_barrier_all();
    shmem_ctx_put32(ctx, w32, s32, 2, right);
    shmem_ctx_put64_nbi(ctx, w64, s64, 2, right);
    shmem_ctx_iput32(ctx, w32 + 4, s32, 2, 1, 2, right); /* s32[0], s32[1] to w32[4], [6] */
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK(w32[0] == left + 100u && w32[1] == left + 200u, "ctx put32");
    CHECK(w64[0] == left + 1000u && w64[1] == left + 2000u, "ctx put64_nbi");
    CHECK(w32[4] == left + 100u && w32[5] == 0 && w32[6] == left + 200u, "ctx iput32");
    uint32_t g32[2] = {0, 0};
    uint64_t g64[4] = {0, 0, 0, 0};
    shmem_ctx_get32(ctx, g32, w32, 2, right);
    shmem_ctx_get64_nbi(ctx, g64, w64, 2, right);
    shmem_ctx_quiet(ctx);
    CHECK(g32[0] == me + 100u && g32[1] == me + 200u, "ctx get32");
    CHECK(g64[0] == me + 1000u && g64[1] == me + 2000u, "ctx get64_nbi");
    shmem_ctx_iget64(ctx, g64, w64, 2, 1, 2, right); /* w64[0], w64[1] to g64[0], [2] */
    CHECK(g64[0] == me + 1000u && g64[2] == me + 2000u, "ctx iget64");
    shmem_barrier_all();
    shmem_free(w64);
    shmem_free(w32);

    shmem_ctx_fence(ctx);
    shmem_ctx_destroy(ctx);
    PASS("contexts");
    shmem_finalize();
    return 0;
}
