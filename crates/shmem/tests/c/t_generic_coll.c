/* The C11 generic collectives (built with -std=c11): shmem_broadcast, collect,
 * fcollect, alltoall, alltoalls and shmem_OP_reduce select the typed function by
 * the type dest points to; each result is checked against a computed answer, on
 * the world and on a split team. */
#include <shmem.h>
#include <complex.h>
#include <string.h>

#include "check.h"

#define N 4

static void on(shmem_team_t team) {
    int t = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    int w[64];
    for (int p = 0; p < n; p++) w[p] = shmem_team_translate_pe(team, p, SHMEM_TEAM_WORLD);
    int *is = shmem_malloc(64 * N * sizeof(int)), *id = shmem_malloc(64 * N * sizeof(int));
    double *ds = shmem_malloc(N * sizeof(double)), *dd = shmem_malloc(N * sizeof(double));
    unsigned long *us = shmem_malloc(N * sizeof(unsigned long)),
                  *ud = shmem_malloc(N * sizeof(unsigned long));
    double _Complex *cs = shmem_malloc(N * sizeof(double _Complex)),
                    *cd = shmem_malloc(N * sizeof(double _Complex));
    for (int i = 0; i < 64 * N; i++) is[i] = w[t] * 100 + i;
    for (int i = 0; i < N; i++) {
        ds[i] = t + 0.5 * i;
        us[i] = 1ul << (t + i);
        cs[i] = (double)t + (double)i * I;
    }

    shmem_broadcast(team, id, is, N, n - 1);
    for (int i = 0; i < N; i++) CHECK(id[i] == w[n - 1] * 100 + i, "broadcast [%d]", i);
    shmem_fcollect(team, id, is, N);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < N; i++) CHECK(id[p * N + i] == w[p] * 100 + i, "fcollect");
    shmem_collect(team, id, is, (size_t)t + 1);
    for (int p = 0, at = 0; p < n; p++)
        for (int i = 0; i <= p; i++, at++) CHECK(id[at] == w[p] * 100 + i, "collect");
    shmem_alltoall(team, id, is, N);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < N; i++) CHECK(id[p * N + i] == w[p] * 100 + t * N + i, "alltoall");
    shmem_alltoalls(team, id, is, 2, 1, 1);
    for (int p = 0; p < n; p++) CHECK(id[p * 2] == w[p] * 100 + t, "alltoalls [%d]", p);

    shmem_sum_reduce(team, dd, ds, N);
    shmem_max_reduce(team, id, is, N);
    shmem_or_reduce(team, ud, us, N);
    shmem_prod_reduce(team, cd, cs, N);
    for (int i = 0; i < N; i++) {
        double sum = 0;
        unsigned long bits = 0;
        double _Complex prod = 1;
        for (int p = 0; p < n; p++) {
            sum += p + 0.5 * i;
            bits |= 1ul << (p + i);
            prod *= (double)p + (double)i * I;
        }
        CHECK(dd[i] == sum, "sum_reduce double [%d] = %g, want %g", i, dd[i], sum);
        CHECK(ud[i] == bits, "or_reduce ulong [%d]", i);
        CHECK(cd[i] == prod, "prod_reduce complexd [%d]", i);
    }
    int top = 0;
    for (int p = 0; p < n; p++) top = w[p] > top ? w[p] : top;
    for (int i = 0; i < N; i++) CHECK(id[i] == top * 100 + i, "max_reduce int [%d]", i);
    shmem_xor_reduce(team, us, us, N);
    shmem_min_reduce(team, ds, ds, N);
    shmem_and_reduce(team, ud, ud, N);
    for (int i = 0; i < N; i++) CHECK(ds[i] == 0.5 * i, "min_reduce in place [%d]", i);

    shmem_free(cd);
    shmem_free(cs);
    shmem_free(ud);
    shmem_free(us);
    shmem_free(dd);
    shmem_free(ds);
    shmem_free(id);
    shmem_free(is);
}

int main(void) {
    shmem_init();
    int npes = shmem_n_pes();
    on(SHMEM_TEAM_WORLD);
    PASS("generic_collectives_on_the_world");
    shmem_team_t rev;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev);
    on(rev);
    shmem_team_destroy(rev);
    PASS("generic_collectives_on_a_team");
    shmem_finalize();
    return 0;
}
