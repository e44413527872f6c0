/*
 * MPI ping-pong between ranks 0 and 1, the reference side of bench/compare-mpi.sh and
 * bench/compare-net.sh.
 *
 * Rank 0 sends `size` bytes to rank 1, rank 1 sends them back; rank 0 times every
 * round trip with MPI_Wtime and records half of it, as nf bench pingpong does. Other
 * ranks only join the barriers. Output: a table on stdout and, with --json F, the same JSON
 * report shape as ninefold's `nf bench pingpong`, with the MPI library in
 * params.mpi_library. Iteration rule, options and report: bench/c/ppreport.h.
 *
 * Usage: mpirun -np 2 ./pingpong [--sizes 8,16,...] [--iters N] [--warmup W]
 *                                [--json F] [--transport NAME] [--git REV]
 *
 * Build: mpicc -O2 -I bench/c -o pingpong pingpong.c ../c/ppreport.c -lm
 *        (or: make -C bench/mpi)
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppreport.h"

#define TAG 7

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np 2 pingpong\n%s", pp_opts_usage);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    struct pp_opts o;
    pp_init_opts(&o, "pingpong", "openmpi-ob1-vader");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (rank == 0)
                usage(stdout);
            MPI_Finalize();
            return 0;
        }
        if (pp_take_opt(&o, a, v) != 1) {
            if (rank == 0) {
                fprintf(stderr, "pingpong: bad argument %s%s%s\n", a, v ? " " : "", v ? v : "");
                usage(stderr);
            }
            MPI_Finalize();
            return 2;
        }
        i++;
    }
    pp_finish_opts(&o);
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong: needs at least 2 ranks (mpirun -np 2)\n");
        MPI_Finalize();
        return 2;
    }

    long max_size, max_iters;
    pp_maxima(&o, &max_size, &max_iters);
    /* Separate send and receive buffers, touched so no first-touch page faults are timed. */
    char *sbuf = malloc((size_t)max_size), *rbuf = malloc((size_t)max_size);
    double *samples = malloc((size_t)max_iters * sizeof *samples);
    struct pp_result *results = calloc((size_t)o.nsizes, sizeof *results);
    if (!sbuf || !rbuf || !samples || !results) {
        fprintf(stderr, "pingpong: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < max_size; i++)
        sbuf[i] = (char)(i * 31 + rank);
    memset(rbuf, 0, (size_t)max_size);

    for (int k = 0; k < o.nsizes; k++) {
        long size = o.sizes[k];
        long n = pp_iters_for(size, o.iters);
        long w = pp_warmup_for(size, o.iters, o.warmup);
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
            results[k] = pp_summarise(size, samples, n);
        } else if (rank == 1) {
            for (long i = 0; i < w + n; i++) {
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(rbuf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int liblen = 0;
        MPI_Get_library_version(lib, &liblen);
        lib[strcspn(lib, "\n,")] = '\0'; /* first line / clause only */
        pp_print_table(stdout, &o, nranks, results, o.nsizes);
        const struct pp_param params[] = { { "mpi_library", lib } };
        if (o.json && pp_write_json(o.json, &o, nranks, params, 1, results, o.nsizes)) {
            fprintf(stderr, "pingpong: cannot write %s: %s\n", o.json, strerror(errno));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }

    free(sbuf);
    free(rbuf);
    free(samples);
    free(results);
    MPI_Finalize();
    return 0;
}
