/* A program in the 1.4 style: start_pes, _my_pe, shmalloc, the old atomic names. */
#include <shmem.h>

#include "check.h"

int main(void) {
    start_pes(0);
    int me = _my_pe(), npes = _num_pes();
    CHECK(me == shmem_my_pe() && npes == shmem_n_pes(), "_my_pe / _num_pes");
    long *ctr = shmalloc(2 * sizeof(long));
    double *d = shmemalign(64, sizeof(double));
    ctr[0] = ctr[1] = 0;
    *d = 0;
    shmem_barrier_all();
    for (int i = 0; i < 10; i++) {
        shmem_long_inc(ctr, 0);
        (void)shmem_long_finc(ctr, 0);
        shmem_long_add(ctr, 2, 0);
        (void)shmem_long_fadd(ctr, 1, 0);
    }
    /* 1.3's C11 generic forms of the same. */
    shmem_inc(ctr, 0);
    (void)shmem_finc(ctr, 0);
    shmem_add(ctr, 2L, 0);
    (void)shmem_fadd(ctr, 1L, 0);
    shmem_barrier_all();
    CHECK(shmem_long_fetch(ctr, 0) == 55L * npes, "counter %ld", shmem_long_fetch(ctr, 0));
    CHECK(shmem_fetch(ctr, 0) == 55L * npes, "generic fetch");
    CHECK(shmem_long_cswap(ctr + 1, 0, 7, 0) >= 0, "cswap");
    shmem_barrier_all();
    CHECK(shmem_long_fetch(ctr + 1, 0) == 7, "cswap result");
    shmem_double_set(d, 1.5, (me + 1) % npes);
    shmem_barrier_all();
    CHECK(shmem_double_swap(d, 2.5, me) == 1.5, "double swap");
    CHECK(shmem_swap(d, 3.5, me) == 2.5, "generic swap");
    shmem_set(d, 4.5, me);
    CHECK(shmem_cswap(ctr + 1, 9L, 8L, me) == (me == 0 ? 7 : 0), "generic cswap");
    /* The deprecated cache calls do nothing; 1.4's generic wait returns once the
     * variable differs from the value given. */
    shmem_clear_cache_inv();
    shmem_set_cache_inv();
    shmem_clear_cache_line_inv(ctr);
    shmem_set_cache_line_inv(ctr);
    shmem_udcflush();
    shmem_udcflush_line(ctr);
    long *flag = shmalloc(sizeof(long));
    *flag = 0;
    shmem_barrier_all();
    shmem_long_p(flag, 1, (me + 1) % npes);
    shmem_wait(flag, 0L);
    CHECK(*flag == 1, "shmem_wait saw %ld", *flag);
    shfree(flag);
    long *bigger = shrealloc(ctr, 64 * sizeof(long));
    CHECK(bigger[1] == (me == 0 ? 7 : 0), "shrealloc kept %ld", bigger[1]);
    shfree(bigger);
    shfree(d);
    PASS("deprecated_1_4_names");
    shmem_finalize();
    shmem_finalize(); /* a second call does nothing, as in other implementations */
    return 0;
}
