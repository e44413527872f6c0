/*
 * MPI ping-pong between ranks 0 and 1, the reference side of bench/compare-mpi.sh.
 *
 * Rank 0 sends `size` bytes to rank 1, rank 1 sends them back; rank 0 times every
 * round trip with MPI_Wtime and records half of it (seed 001's method). Other ranks
 * only join the barriers. Output: a table on stdout and, with --json F, the same JSON
 * report shape as ninefold's `nf bench pingpong` (crates/bench/src/report.rs):
 *
 *   { "bench": "pingpong", "transport": "openmpi-ob1-vader", "ranks": 2, "host": "...",
 *     "timestamp": "2025-01-01T12:00:00Z", "git": "...",            (git only with --git)
 *     "params": { "iters": 10000, "warmup": 1000, "mpi_library": "..." },
 *     "results": [ { "size": 8, "iters": 10000, "min_us": ..., "avg_us": ...,
 *                    "median_us": ..., "max_us": ..., "stddev_us": ..., "mb_per_s": ... } ] }
 *
 * stddev_us is the sample standard deviation (divisor n-1); mb_per_s = size / avg_us
 * (MB = 10^6 B). The median of an even count is the mean of the two middle samples.
 *
 * Iteration rule (identical to nf_bench::pingpong::iters_for, keep them in step):
 *
 *   iters(size)  = ITERS                                       if size <= 64 KiB
 *                = max(20, min(ITERS, ITERS * 64 KiB / size))  otherwise (integer division)
 *   warmup(size) = min(WARMUP, iters(size))
 *
 * so every size above 64 KiB moves about ITERS x 64 KiB, but never fewer than 20 trips
 * (and never more than ITERS). Defaults: ITERS = 10000, WARMUP = 1000.
 *
 * Usage: mpirun -np 2 ./pingpong [--sizes 8,16,...] [--iters N] [--warmup W]
 *                                [--json F] [--transport NAME] [--git REV]
 * Default sizes: powers of two from 8 B to 8 MiB, plus 2000000 B, ascending.
 *
 * Build: mpicc -O2 -o pingpong pingpong.c -lm   (or: make -C bench/mpi)
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include "report.h"

#define TAG 7

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np 2 pingpong [--sizes 8,16,...] [--iters N] [--warmup W]\n"
               "                             [--json F] [--transport NAME] [--git REV]\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    struct common_opts opt = { .iters = 10000, .warmup = 1000, .transport = "openmpi-ob1-vader" };

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (rank == 0)
                usage(stdout);
            MPI_Finalize();
            return 0;
        } else if (!v) {
            bad = 1;
        } else {
            int taken = common_option(a, v, &opt);
            bad = taken <= 0;
        }
        if (bad) {
            if (rank == 0) {
                fprintf(stderr, "pingpong: bad argument %s%s%s\n", a, v ? " " : "", v ? v : "");
                usage(stderr);
            }
            MPI_Finalize();
            return 2;
        }
        i++;
    }
    if (opt.nsizes == 0) {
        for (int p = 3; p <= 23; p++)
            opt.sizes[opt.nsizes++] = 1L << p;
        opt.sizes[opt.nsizes++] = 2000000;
        qsort(opt.sizes, (size_t)opt.nsizes, sizeof opt.sizes[0], cmp_long);
    }
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong: needs at least 2 ranks (mpirun -np 2)\n");
        MPI_Finalize();
        return 2;
    }

    long max_size = 0, max_iters = 0;
    for (int i = 0; i < opt.nsizes; i++) {
        if (opt.sizes[i] > max_size)
            max_size = opt.sizes[i];
        long n = iters_for(opt.sizes[i], opt.iters);
        if (n > max_iters)
            max_iters = n;
    }
    /* Separate send and receive buffers, touched so no first-touch page faults are timed. */
    char *sbuf = malloc((size_t)max_size), *rbuf = malloc((size_t)max_size);
    double *samples = malloc((size_t)max_iters * sizeof *samples);
    struct result *results = calloc((size_t)opt.nsizes, sizeof *results);
    if (!sbuf || !rbuf || !samples || !results) {
        fprintf(stderr, "pingpong: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < max_size; i++)
        sbuf[i] = (char)(i * 31 + rank);
    memset(rbuf, 0, (size_t)max_size);

    for (int k = 0; k < opt.nsizes; k++) {
        long size = opt.sizes[k];
        long n = iters_for(size, opt.iters);
        long w = opt.warmup < n ? opt.warmup : n;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            for (long i = 0; i < w + n; i++) {
                double t0 = MPI_Wtime();
                MPI_Send(sbuf, (int)size, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double t1 = MPI_Wtime();
                if (i >= w)
                    samples[i - w] = (t1 - t0) * 1e6 / 2.0;
            }
            results[k] = summarise(size, samples, n);
        } else if (rank == 1) {
            for (long i = 0; i < w + n; i++) {
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(rbuf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        struct origin o = origin_now();
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int liblen = 0;
        MPI_Get_library_version(lib, &liblen);
        lib[strcspn(lib, "\n,")] = '\0'; /* first line / clause only */
        print_table("pingpong", opt.transport, nranks, &o, results, opt.nsizes);
        if (opt.json) {
            char qlib[2 * MPI_MAX_LIBRARY_VERSION_STRING + 8], params[4 * MPI_MAX_LIBRARY_VERSION_STRING];
            json_quote(qlib, sizeof qlib, lib);
            snprintf(params, sizeof params,
                     "\"iters\": %ld,\n    \"warmup\": %ld,\n    \"mpi_library\": %s", opt.iters, opt.warmup,
                     qlib);
            if (write_report(opt.json, "pingpong", opt.transport, nranks, &o, opt.git, params, results, opt.nsizes)) {
                fprintf(stderr, "pingpong: cannot write %s: %s\n", opt.json, strerror(errno));
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
    }

    free(sbuf);
    free(rbuf);
    free(samples);
    free(results);
    MPI_Finalize();
    return 0;
}
