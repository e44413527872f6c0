/*
 * A Global Arrays workload, timed as a whole: the GA side of bench/compare-armci.sh.
 * It uses Debian's ga.h only; link it as `ga-config --libs` says, with ARMCI-MPI or
 * with ninefold's libarmci in its place.
 *
 * Phases, each between GA_Sync calls and timed as the slowest rank's MPI_Wtime:
 *   patches   every rank gets, puts and accumulates --patches random 2-D patches
 *             (1x1 .. 64x64 doubles) of N x N arrays: puts go to the rank's own rows
 *             (i % nranks == rank) of one array, accumulates anywhere in another, so
 *             the result does not depend on timing
 *   read_inc  --tasks tasks handed out one by one by NGA_Read_inc (a dynamic loop:
 *             each task does a small get)
 *   dgemm     C = A B, N x N doubles (GA_Dgemm)
 * The checksum (GA_Ddot of the patch arrays and of C) must match between ARMCIs.
 *
 * Usage: mpirun -np P ./ga [--n N] [--patches K] [--tasks T] [--json F]
 *                          [--transport NAME] [--git REV]
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ga.h>
#include <macdecls.h>

static int me, nranks;

static void die(const char *what)
{
    if (me == 0)
        fprintf(stderr, "ga: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int below(uint64_t *s, int n)
{
    return (int)(next(s) % (uint64_t)n);
}

/* Seconds the slowest rank spent in fn. */
static double timed(void (*fn)(void))
{
    GA_Sync();
    double t0 = MPI_Wtime();
    fn();
    GA_Sync();
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return dt;
}

static int n = 512, patches = 10000, tasks = 40000;
static int g_p, g_q, g_a, g_b, g_c, g_count;

static void phase_patches(void)
{
    static double buf[64 * 64];
    uint64_t s = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(me + 1);
    for (int k = 0; k < patches; k++) {
        int h = 1 + below(&s, 64), w = 1 + below(&s, 64);
        int r0 = below(&s, n - h + 1), c0 = below(&s, n - w + 1);
        int lo[2] = { r0, c0 }, hi[2] = { r0 + h - 1, c0 + w - 1 }, ld[1] = { w };
        switch (k % 3) {
        case 0:
            NGA_Get(g_p, lo, hi, buf, ld);
            break;
        case 1: { /* one of this rank's rows */
            int row = me + nranks * below(&s, (n - me + nranks - 1) / nranks);
            int rlo[2] = { row, c0 }, rhi[2] = { row, c0 + w - 1 };
            for (int j = 0; j < w; j++)
                buf[j] = (double)(row + c0 + j);
            NGA_Put(g_p, rlo, rhi, buf, ld);
            break;
        }
        default: {
            double alpha = 1.0;
            for (int i = 0; i < h * w; i++)
                buf[i] = 0.5;
            NGA_Acc(g_q, lo, hi, buf, ld, &alpha);
        }
        }
    }
}

static void phase_read_inc(void)
{
    int sub[1] = { 0 };
    double v;
    for (long t = NGA_Read_inc(g_count, sub, 1); t < tasks; t = NGA_Read_inc(g_count, sub, 1)) {
        int r = (int)(t % n), lo[2] = { r, 0 }, hi[2] = { r, 0 }, ld[1] = { 1 };
        NGA_Get(g_a, lo, hi, &v, ld);
    }
}

static void phase_dgemm(void)
{
    GA_Dgemm('N', 'N', n, n, n, 1.0, g_a, g_b, 0.0, g_c);
}

static int parse(const char *v, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || end == v || x < 1 || x > 1 << 20)
        return 0;
    *out = (int)x;
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    GA_Initialize();
    if (!MA_init(C_DBL, 1 << 20, 1 << 22))
        die("MA_init failed");
    me = GA_Nodeid();
    nranks = GA_Nnodes();
    const char *json = NULL, *transport = "armci", *git = NULL;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = v != NULL;
        if (ok && !strcmp(a, "--n"))
            ok = parse(v, &n) && n >= 64;
        else if (ok && !strcmp(a, "--patches"))
            ok = parse(v, &patches);
        else if (ok && !strcmp(a, "--tasks"))
            ok = parse(v, &tasks);
        else if (ok && !strcmp(a, "--json"))
            json = v;
        else if (ok && !strcmp(a, "--transport"))
            transport = v;
        else if (ok && !strcmp(a, "--git"))
            git = v;
        else
            ok = 0;
        if (!ok)
            die("usage: ga [--n N>=64] [--patches K] [--tasks T] [--json F] [--transport NAME] [--git REV]");
    }

    int dims[2] = { n, n }, chunk[2] = { -1, -1 }, one[1] = { 1 }, c1[1] = { -1 };
    g_p = NGA_Create(C_DBL, 2, dims, "patches", chunk);
    g_q = NGA_Create(C_DBL, 2, dims, "sums", chunk);
    g_a = NGA_Create(C_DBL, 2, dims, "A", chunk);
    g_b = NGA_Create(C_DBL, 2, dims, "B", chunk);
    g_c = NGA_Create(C_DBL, 2, dims, "C", chunk);
    g_count = NGA_Create(C_LONG, 1, one, "counter", c1);
    if (!g_p || !g_q || !g_a || !g_b || !g_c || !g_count)
        die("NGA_Create failed");
    double a = 0.25, b = 0.5;
    GA_Zero(g_p);
    GA_Zero(g_q);
    GA_Fill(g_a, &a);
    GA_Fill(g_b, &b);
    GA_Zero(g_count);

    const char *names[3] = { "patches", "read_inc", "dgemm" };
    double secs[3] = { timed(phase_patches), timed(phase_read_inc), timed(phase_dgemm) };
    double checksum = GA_Ddot(g_p, g_p) + GA_Ddot(g_q, g_q) + GA_Ddot(g_c, g_c);
    double total = secs[0] + secs[1] + secs[2];

    if (me == 0) {
        printf("ga over %s, %d ranks, n %d, %d patches/rank, %d tasks\n", transport, nranks, n,
               patches, tasks);
        for (int i = 0; i < 3; i++)
            printf("  %-9s %10.4f s\n", names[i], secs[i]);
        printf("  %-9s %10.4f s   checksum %.17g\n", "total", total, checksum);
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f)
                die("cannot write the JSON report");
            fprintf(f, "{\n  \"bench\": \"ga\",\n  \"transport\": \"%s\",\n  \"ranks\": %d,\n",
                    transport, nranks);
            if (git)
                fprintf(f, "  \"git\": \"%s\",\n", git);
            fprintf(f, "  \"params\": {\"n\": %d, \"patches\": %d, \"tasks\": %d},\n", n,
                    patches, tasks);
            fprintf(f, "  \"phases\": {");
            for (int i = 0; i < 3; i++)
                fprintf(f, "%s\"%s\": %.9f", i ? ", " : "", names[i], secs[i]);
            fprintf(f, "},\n  \"total_seconds\": %.9f,\n  \"checksum\": %.17g\n}\n", total,
                    checksum);
            fclose(f);
        }
    }
    GA_Destroy(g_count);
    GA_Destroy(g_c);
    GA_Destroy(g_b);
    GA_Destroy(g_a);
    GA_Destroy(g_q);
    GA_Destroy(g_p);
    GA_Terminate();
    MPI_Finalize();
    return 0;
}
