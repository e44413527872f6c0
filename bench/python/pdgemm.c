/*
 * ScaLAPACK pdgemm, the distributed anchor of bench/compare-python.sh: C = A * B of
 * n x n doubles on a P_row x (ranks / P_row) BLACS grid (--prow, default 1: one
 * process row), block size nb,
 * block-cyclic as ScaLAPACK lays out. The matrices are bench/python/common.py's
 * gemm_inputs (small integers: every entry of the product is exact in a double, so
 * the checksum sum_ij w_i C_ij v_j, w_i = i % 11 + 1, v_j = j % 13 + 1, must equal
 * (w^T A)(B v) exactly), and 64 entries per process are checked against direct dot
 * products. Each of --reps products (after
 * one untimed) is timed on rank 0 with MPI_Wtime between two MPI_Barriers.
 *
 * Output: a line per product, and with --json F the report shape of common.py
 * (bench "python", the side given by --side).
 *
 * Usage: mpirun -np 2 ./pdgemm [--n N] [--nb NB] [--prow P] [--reps R] [--side NAME]
 *                              [--json F] [--git REV]
 * Build: mpicc -O2 -Wall -o pdgemm pdgemm.c -lscalapack-openmpi -lm
 *        (libblas.so.3 decides the BLAS: Debian's alternative, or LD_LIBRARY_PATH)
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void Cblacs_pinfo(int *me, int *np);
void Cblacs_get(int ctx, int what, int *val);
void Cblacs_gridinit(int *ctx, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctx, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctx);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ctx, const int *lld, int *info);
void pdgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja,
             const int *desca, const double *b, const int *ib, const int *jb,
             const int *descb, const double *beta, double *c, const int *ic,
             const int *jc, const int *descc);

static double a_at(long i, long j) { return (double)((3 * i + 5 * j) % 7 - 3); }
static double b_at(long i, long j) { return (double)((2 * i + 7 * j) % 5 - 2); }
static double w_at(long i) { return (double)(i % 11 + 1); }
static double v_at(long j) { return (double)(j % 13 + 1); }

/* The global index of local index l in a block-cyclic dimension. */
static long l2g(long l, int nb, int me, int np) { return (l / nb * np + me) * nb + l % nb; }

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double pct(const double *s, int n, double q)
{
    int k = (int)lround(q / 100.0 * (n - 1));
    return s[k < 0 ? 0 : k >= n ? n - 1 : k];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = 2048, nb = 128, reps = 5, prow = 1;
    const char *json = NULL, *side = "pdgemm", *git = "";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "pdgemm: %s needs a value\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (!strcmp(argv[i], "--n")) n = atoi(v);
        else if (!strcmp(argv[i], "--nb")) nb = atoi(v);
        else if (!strcmp(argv[i], "--prow")) prow = atoi(v);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(v);
        else if (!strcmp(argv[i], "--json")) json = v;
        else if (!strcmp(argv[i], "--side")) side = v;
        else if (!strcmp(argv[i], "--git")) git = v;
        else {
            fprintf(stderr, "pdgemm: unknown argument %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        i++;
    }
    if (n < 1 || nb < 1 || reps < 1) {
        fprintf(stderr, "pdgemm: --n, --nb and --reps must be positive\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    int me, np, ctx, nprow, npcol, myrow, mycol, zero = 0, one = 1, info;
    Cblacs_pinfo(&me, &np);
    Cblacs_get(-1, 0, &ctx);
    if (prow < 1 || np % prow != 0) {
        fprintf(stderr, "pdgemm: --prow %d does not divide %d ranks\n", prow, np);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    Cblacs_gridinit(&ctx, "Row", prow, np / prow);
    Cblacs_gridinfo(ctx, &nprow, &npcol, &myrow, &mycol);

    int mloc = numroc_(&n, &nb, &myrow, &zero, &nprow);
    int nloc = numroc_(&n, &nb, &mycol, &zero, &npcol);
    int lld = mloc > 1 ? mloc : 1;
    int desc[9];
    descinit_(desc, &n, &n, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
    if (info != 0) {
        fprintf(stderr, "pdgemm: descinit failed (%d)\n", info);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    size_t cnt = (size_t)mloc * (size_t)(nloc > 0 ? nloc : 1);
    double *a = malloc(cnt * sizeof *a), *b = malloc(cnt * sizeof *b), *c = calloc(cnt, sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "pdgemm: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long lj = 0; lj < nloc; lj++) {
        long gj = l2g(lj, nb, mycol, npcol);
        for (long li = 0; li < mloc; li++) {
            long gi = l2g(li, nb, myrow, nprow);
            a[lj * lld + li] = a_at(gi, gj);
            b[lj * lld + li] = b_at(gi, gj);
        }
    }

    double alpha = 1.0, beta = 0.0;
    double *t = malloc((size_t)reps * sizeof *t);
    for (int r = 0; r < 1 + reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        pdgemm_("N", "N", &n, &n, &n, &alpha, a, &one, &one, desc, b, &one, &one, desc, &beta,
                c, &one, &one, desc);
        MPI_Barrier(MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        if (r >= 1)
            t[r - 1] = dt;
        if (me == 0)
            printf("pdgemm %s: product %d: %.4f s, %.2f GFLOP/s%s\n", side, r, dt,
                   2.0 * n * (double)n * n / dt / 1e9, r ? "" : " (untimed)");
    }

    /* Checks: the checksum against the closed form, 64 local entries against dots. */
    double local = 0.0, err = 0.0;
    for (long lj = 0; lj < nloc; lj++) {
        double vj = v_at(l2g(lj, nb, mycol, npcol));
        for (long li = 0; li < mloc; li++)
            local += w_at(l2g(li, nb, myrow, nprow)) * c[lj * lld + li] * vj;
    }
    srand(1 + (unsigned)me);
    for (int s = 0; s < 64 && mloc > 0 && nloc > 0; s++) {
        long li = rand() % mloc, lj = rand() % nloc;
        long gi = l2g(li, nb, myrow, nprow), gj = l2g(lj, nb, mycol, npcol);
        double want = 0.0;
        for (long k = 0; k < n; k++)
            want += a_at(gi, k) * b_at(k, gj);
        double e = fabs(c[lj * lld + li] - want);
        if (e > err)
            err = e;
    }
    double sum = 0.0, maxerr = 0.0;
    MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&err, &maxerr, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    if (me == 0) {
        double expect = 0.0;
        for (long k = 0; k < n; k++) { /* (w^T A)_k (B v)_k */
            double wa = 0.0, bv = 0.0;
            for (long i = 0; i < n; i++) {
                wa += w_at(i) * a_at(i, k);
                bv += b_at(k, i) * v_at(i);
            }
            expect += wa * bv;
        }
        int ok = sum == expect && maxerr == 0.0;
        if (!ok)
            fprintf(stderr, "pdgemm: WRONG product: checksum %.17g, want %.17g, spot error %g\n",
                    sum, expect, maxerr);
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        double med = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
        double mean = 0.0;
        for (int r = 0; r < reps; r++)
            mean += t[r] / reps;
        double flops = 2.0 * n * (double)n * n;
        printf("pdgemm %s: n %d, nb %d, grid %dx%d, median %.4f s = %.2f GFLOP/s, checksum %s\n",
               side, n, nb, nprow, npcol, med, flops / med / 1e9, ok ? "ok" : "WRONG");
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) {
                perror(json);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            char lib[MPI_MAX_LIBRARY_VERSION_STRING];
            int len;
            MPI_Get_library_version(lib, &len);
            for (char *p = lib; *p; p++)
                if (*p == '"' || *p == '\\' || *p == '\n' || *p == '\r' || *p == '\t')
                    *p = ' ';
            double la[3] = {0, 0, 0};
            FILE *lf = fopen("/proc/loadavg", "r");
            if (lf) {
                if (fscanf(lf, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3)
                    la[0] = la[1] = la[2] = 0;
                fclose(lf);
            }
            const char *ob = getenv("OPENBLAS_NUM_THREADS"), *omp = getenv("OMP_NUM_THREADS");
            fprintf(f, "{\n  \"bench\": \"python\",\n  \"side\": \"%s\",\n", side);
            fprintf(f, "  \"params\": {\"ranks\": %d, \"grid\": \"%dx%d\", \"nb\": %d, \"git\": \"%s\", "
                       "\"mpi_library\": \"%s\", \"loadavg\": \"%.2f %.2f %.2f\", "
                       "\"openblas_num_threads\": \"%s\", \"omp_num_threads\": \"%s\"},\n",
                    np, nprow, npcol, nb, git, lib, la[0], la[1], la[2], ob ? ob : "", omp ? omp : "");
            fprintf(f, "  \"results\": [{\"metric\": \"matmul\", \"size\": 0, \"n\": %d, \"iters\": %d, "
                       "\"median_us\": %.3f, \"p10_us\": %.3f, \"p90_us\": %.3f, \"p99_us\": %.3f, "
                       "\"min_us\": %.3f, \"max_us\": %.3f, \"mean_us\": %.3f, "
                       "\"gflop_per_s\": %.4f, \"best_gflop_per_s\": %.4f, "
                       "\"checksum\": %.17g, \"expected_checksum\": %.17g, \"max_spot_err\": %g, "
                       "\"correct\": %s}]\n}\n",
                    n, reps, med * 1e6, pct(t, reps, 10) * 1e6, pct(t, reps, 90) * 1e6,
                    pct(t, reps, 99) * 1e6, t[0] * 1e6, t[reps - 1] * 1e6, mean * 1e6,
                    flops / med / 1e9, flops / t[0] / 1e9, sum, expect, maxerr, ok ? "true" : "false");
            fclose(f);
        }
    }
    free(t);
    free(a);
    free(b);
    free(c);
    Cblacs_gridexit(ctx);
    MPI_Finalize();
    return 0;
}
