/* Contexts: puts, gets and atomics through a created context and the default one,
 * completed by shmem_ctx_quiet. */
#include <shmem.h>

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
    shmem_ctx_fence(ctx);
    shmem_ctx_destroy(ctx);
    PASS("contexts");
    shmem_finalize();
    return 0;
}
