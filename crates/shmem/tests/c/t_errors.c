/* Each error class, chosen by argv[1]: the PE must end with a message naming the
 * call and itself (the Rust driver checks the message and that nothing hangs). */
#include <shmem.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <string.h>

#include "check.h"

/* A put from a thread that did not call shmem_init (FUNNELED at most). */
static void *put_from_another_thread(void *x) {
    shmem_int_p(x, 1, 0);
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "before_init") == 0) return shmem_my_pe();
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int *x = shmem_malloc(sizeof(int));
    if (strcmp(mode, "bad_pe") == 0 && me == 0) shmem_int_p(x, 1, npes);
    /* PEs far past the fast path's table, where an unchecked read finds no 0 that
     * would send the call to the Rust side (one past it happened to hold 0). */
    if (strcmp(mode, "far_pe_p") == 0 && me == 0) shmem_int_p(x, 1, INT_MAX);
    if (strcmp(mode, "far_pe_g") == 0 && me == 0) (void)shmem_int_g(x, 1 << 28);
    if (strcmp(mode, "far_pe_amo") == 0 && me == 0) (void)shmem_int_atomic_fetch_inc(x, 1 << 24);
    if (strcmp(mode, "other_thread") == 0 && me == 0) {
        pthread_t th;
        CHECK(pthread_create(&th, NULL, put_from_another_thread, x) == 0, "pthread_create");
        pthread_join(th, NULL);
    }
    /* libc's heap is neither the symmetric heap nor static data. */
    if (strcmp(mode, "outside_heap") == 0 && me == 0) {
        int *not_symmetric = malloc(sizeof(int));
        shmem_int_p(not_symmetric, 1, 0);
    }
    if (strcmp(mode, "oversize") == 0) {
        /* The spec's answer is NULL (with libshmem's message); the heap stays usable. */
        if (shmem_malloc((size_t)1 << 40) != NULL) return 3;
        int *y = shmem_malloc(sizeof(int));
        if (y == NULL) return 4;
        shmem_free(y);
        shmem_finalize();
        return 0;
    }
    if (strcmp(mode, "inconsistent") == 0) shmem_malloc(me == 0 ? 100 : 200);
    if (strcmp(mode, "bad_cmp") == 0 && me == 0) shmem_int_wait_until(x, 42, 0);
    if (strcmp(mode, "bad_team") == 0 && me == 0) shmem_sync(SHMEM_TEAM_INVALID);
    if (strcmp(mode, "destroyed_team") == 0) {
        shmem_team_t t;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
        shmem_team_destroy(t);
        /* The next split takes the same slot: only the handle's generation tells. */
        shmem_team_t u;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &u);
        if (me == 0) shmem_int_sum_reduce(t, x, x, 1);
    }
    /* An invalid triplet is no team: nonzero and SHMEM_TEAM_INVALID on every PE, the
     * reason said; exit 3 then, so the test sees both. */
    if (strcmp(mode, "split_stride0") == 0 || strcmp(mode, "split_range") == 0 ||
        strcmp(mode, "split_empty") == 0) {
        shmem_team_t t = SHMEM_TEAM_WORLD;
        int rc = strcmp(mode, "split_stride0") == 0
                     ? shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 2, NULL, 0, &t)
                 : strcmp(mode, "split_range") == 0
                     ? shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes, NULL, 0, &t)
                     : shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 0, NULL, 0, &t);
        if (rc != 0 && t == SHMEM_TEAM_INVALID) {
            printf("PE %d: no team\n", me);
            fflush(stdout);
            shmem_barrier_all();
            exit(3);
        }
    }
    if (strcmp(mode, "split_inconsistent") == 0) {
        shmem_team_t t;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, me, 1, 1, NULL, 0, &t);
    }
    if (strcmp(mode, "bad_root") == 0) shmem_int_broadcast(SHMEM_TEAM_WORLD, x, x, 1, npes);
    if (strcmp(mode, "bad_ctx") == 0 && me == 0) {
        /* Quiet, fence and destroy of "no context" do nothing; a put through it is an error. */
        shmem_ctx_quiet(SHMEM_CTX_INVALID);
        shmem_ctx_fence(SHMEM_CTX_INVALID);
        shmem_ctx_destroy(SHMEM_CTX_INVALID);
        shmem_ctx_int_p(SHMEM_CTX_INVALID, x, 1, 0);
    }
    if (strcmp(mode, "huge_stride") == 0 && me == 0)
        shmem_int_iput(x, x, PTRDIFF_MAX, 1, 2, 1);
    /* The operator is checked before anything moves (x stands in for the signal). */
    if (strcmp(mode, "bad_sig_op") == 0 && me == 0)
        shmem_putmem_signal(x, x, sizeof *x, (uint64_t *)(void *)x, 1, 7, 1);
    /* 4 bytes past the first block's (page-aligned) start: in the heap, misaligned. */
    if (strcmp(mode, "misaligned_amo") == 0 && me == 0)
        shmem_long_atomic_fetch_add((long *)(void *)((char *)x + 4), 1, 1);
    /* The heap's edge, on a same-host PE (the C side's fast path checks it first):
     * one past the end, and 8 bytes of which the last 4 are past it. */
    if (strncmp(mode, "edge_", 5) == 0 && me == 0) {
        char *end = heap_end(x);
        long v = 1;
        if (strcmp(mode, "edge_p") == 0) shmem_long_p((long *)(void *)end, 1, 1);
        if (strcmp(mode, "edge_put") == 0) shmem_putmem(end - 4, &v, sizeof v, 1);
        if (strcmp(mode, "edge_get") == 0) shmem_getmem(&v, end - 4, sizeof v, 1);
        if (strcmp(mode, "edge_amo") == 0)
            shmem_long_atomic_fetch_add((long *)(void *)end, 1, 1);
    }
    if (strcmp(mode, "negative_pe") == 0 && me == 0) (void)shmem_long_g((long *)(void *)x, -1);
    if (strcmp(mode, "killed") == 0 && me == npes - 1) raise(SIGKILL);
    /* Everyone else waits here for the PE that failed: the launcher must end them. */
    shmem_int_wait_until(x, SHMEM_CMP_EQ, 12345);
    shmem_finalize();
    return 0;
}
