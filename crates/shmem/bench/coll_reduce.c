/* Time of one double sum reduction on SHMEM_TEAM_WORLD: libshmem's
 * (shmem_double_sum_reduce: reduce-scatter then puts, csrc/coll.c) against the
 * scheme it replaced, rebuilt here from the same public calls the old code made
 * (a barrier, every PE gets every PE's whole source and combines in PE order, a
 * barrier, a copy into dest, a barrier). A measurement, not a test:
 *
 *   cc -O2 -I crates/shmem/include crates/shmem/bench/coll_reduce.c -o coll_reduce \
 *      -L target/release -Wl,-rpath,$PWD/target/release -lshmem
 *   nf run -n 4 ./coll_reduce
 *
 * PE 0 prints one line per size: the best of 7 rounds' mean microseconds per
 * call of each. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* The replaced scheme: O(PEs^2) gets of whole sources. */
static void old_sum(double *dest, const double *source, size_t n, double *acc, double *got) {
    int npes = shmem_n_pes();
    shmem_barrier_all();
    shmem_getmem(acc, source, n * sizeof(double), 0);
    for (int pe = 1; pe < npes; pe++) {
        shmem_getmem(got, source, n * sizeof(double), pe);
        for (size_t i = 0; i < n; i++) acc[i] = acc[i] + got[i];
    }
    shmem_barrier_all();
    memcpy(dest, acc, n * sizeof(double));
    shmem_barrier_all();
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    const size_t max = 1 << 17;
    double *src = shmem_malloc(max * sizeof(double)), *dst = shmem_malloc(max * sizeof(double));
    double *acc = malloc(max * sizeof(double)), *got = malloc(max * sizeof(double));
    for (size_t i = 0; i < max; i++) src[i] = me + (double)i;
    for (size_t n = 1; n <= max; n *= 32) {
        /* Rounds alternate the two; the best round of each is kept, which a loaded
         * machine disturbs least. */
        int iters = n < 1024 ? 100 : n < 32768 ? 20 : 5;
        double best_new = 1e30, best_old = 1e30;
        for (int round = 0; round < 8; round++) {
            shmem_barrier_all();
            double t0 = now_us();
            for (int k = 0; k < iters; k++) shmem_double_sum_reduce(SHMEM_TEAM_WORLD, dst, src, n);
            double t1 = now_us();
            for (int k = 0; k < iters; k++) old_sum(dst, src, n, acc, got);
            double t2 = now_us();
            if (round > 0) { /* the first round warms up */
                best_new = (t1 - t0) / iters < best_new ? (t1 - t0) / iters : best_new;
                best_old = (t2 - t1) / iters < best_old ? (t2 - t1) / iters : best_old;
            }
        }
        if (me == 0)
            printf("reduce double x %zu (%zu B) on %d PEs: new %.1f us, old %.1f us, "
                   "old/new %.2f\n",
                   n, n * sizeof(double), shmem_n_pes(), best_new, best_old,
                   best_old / best_new);
    }
    free(got);
    free(acc);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
