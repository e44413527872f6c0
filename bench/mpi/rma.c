/*
 * One-sided benchmark over the ARMCI API, the reference side of bench/compare-rma.sh:
 * the same operations, layouts, sizes and iteration rule as ninefold's `nf bench rma`
 * (crates/bench/src/rma.rs), timed with MPI_Wtime by rank 0 on rank 1's memory.
 * Link it with any ARMCI: Debian's ARMCI-MPI (-larmci-openmpi), or ninefold's libarmci.
 *
 * Operations (--op): put (blocking, timed at the sender), put-fence (put + ARMCI_Fence),
 * get, acc (ARMCI_ACC_DBL, scale 1, + ARMCI_Fence). Layouts (--layout): contig, or
 * strided: a 2-D patch of min(16, size / 8) rows, row stride row + 64 B locally and
 * row + 128 B remotely (ARMCI_PutS / GetS / AccS with one stride level).
 *
 * While rank 0 measures, rank 1 waits in ARMCI_Barrier, which lets an ARMCI that needs
 * the target's help (MPI RMA without asynchronous progress) make progress; ninefold's
 * target instead sleeps without calling the library (its service thread answers).
 *
 * Output: a table on stdout and, with --json F, ninefold's report shape with bench
 * "rma-<op>-<layout>" and params.op / params.layout (crates/bench/src/report.rs).
 * Iteration rule, options and report: bench/c/ppreport.h.
 *
 * Usage: mpirun -np 2 ./rma --op get --layout contig [--sizes 8,16,...] [--iters N]
 *                           [--warmup W] [--json F] [--transport NAME] [--git REV]
 * Defaults: sizes powers of two from 8 B to 4 MiB, 2000 iterations, 200 warm-up.
 * Build: mpicc -O2 -I bench/c -o rma bench/mpi/rma.c bench/c/ppreport.c -larmci-openmpi -lm
 *        (or: make -C bench/mpi rma)
 */
#define _POSIX_C_SOURCE 200809L

#include <armci.h>
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppreport.h"

#define FLAG_AREA 4096L

enum op { PUT, PUT_FENCE, GET, ACC };
static const char *op_names[] = { "put", "put-fence", "get", "acc" };

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np 2 rma --op put|put-fence|get|acc --layout contig|strided\n%s",
            pp_opts_usage);
}

static void die(int rank, const char *what)
{
    if (rank == 0)
        fprintf(stderr, "rma: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* One operation of `size` bytes from local `lbuf` to/from rank 1's `remote`. */
static void one(enum op op, int strided, long size, char *lbuf, char *remote)
{
    long rows = size / 8 < 16 ? (size / 8 > 0 ? size / 8 : 1) : 16;
    int row = (int)(size / rows);
    int ls[1] = { row + 64 }, rs[1] = { row + 128 }, count[2] = { row, (int)rows };
    double one_ = 1.0;
    int rc = 0;
    switch (op) {
    case PUT:
    case PUT_FENCE:
        rc = strided ? ARMCI_PutS(lbuf, ls, remote, rs, count, 1, 1)
                     : ARMCI_Put(lbuf, remote, (int)size, 1);
        break;
    case GET:
        rc = strided ? ARMCI_GetS(remote, rs, lbuf, ls, count, 1, 1)
                     : ARMCI_Get(remote, lbuf, (int)size, 1);
        break;
    case ACC:
        rc = strided ? ARMCI_AccS(ARMCI_ACC_DBL, &one_, lbuf, ls, remote, rs, count, 1, 1)
                     : ARMCI_Acc(ARMCI_ACC_DBL, &one_, lbuf, remote, (int)size, 1);
        break;
    }
    if (rc != 0) {
        fprintf(stderr, "rma: ARMCI call failed with %d\n", rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (op == PUT_FENCE || op == ACC)
        ARMCI_Fence(1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    ARMCI_Init();
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    int op = -1, strided = -1;
    struct pp_opts opt;
    pp_init_opts(&opt, NULL, "armci-mpi");
    opt.iters = 2000;
    opt.warmup = 200;

    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (rank == 0)
                usage(stdout);
            ARMCI_Finalize();
            MPI_Finalize();
            return 0;
        } else if (!v) {
            bad = 1;
        } else if (!strcmp(a, "--op")) {
            for (int k = 0; k < 4; k++)
                if (!strcmp(v, op_names[k]))
                    op = k;
            bad = op < 0;
        } else if (!strcmp(a, "--layout")) {
            strided = !strcmp(v, "strided") ? 1 : !strcmp(v, "contig") ? 0 : -1;
            bad = strided < 0;
        } else {
            bad = pp_take_opt(&opt, a, v) != 1;
        }
        if (bad) {
            if (rank == 0) {
                fprintf(stderr, "rma: bad argument %s%s%s\n", a, v ? " " : "", v ? v : "");
                usage(stderr);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (op < 0 || strided < 0)
        die(rank, "--op and --layout are required");
    if (nranks < 2)
        die(rank, "needs at least 2 ranks (mpirun -np 2)");
    pp_default_sizes(&opt, 4L << 20);
    for (int k = 0; k < opt.nsizes; k++)
        if (opt.sizes[k] % 8)
            die(rank, "sizes must be multiples of 8 (accumulates move doubles)");
    char bench[64];
    const char *layout = strided ? "strided" : "contig";
    snprintf(bench, sizeof bench, "rma-%s-%s", op_names[op], layout);
    opt.bench = bench;

    long max_size, max_iters;
    pp_maxima(&opt, &max_size, &max_iters);
    long room = 2 * max_size + 128 * 16 + 64;
    void **bases = malloc((size_t)nranks * sizeof *bases);
    double *samples = malloc((size_t)max_iters * sizeof *samples);
    struct pp_result *results = calloc((size_t)opt.nsizes, sizeof *results);
    if (!bases || !samples || !results || ARMCI_Malloc(bases, FLAG_AREA + room) != 0)
        die(rank, "out of memory");
    char *lbuf = ARMCI_Malloc_local(room);
    if (!lbuf)
        die(rank, "ARMCI_Malloc_local failed");
    memset(lbuf, 0, (size_t)room);
    char *remote = (char *)bases[1] + FLAG_AREA;

    for (int k = 0; k < opt.nsizes; k++) {
        long size = opt.sizes[k];
        long n = pp_iters_for(size, opt.iters);
        long w = pp_warmup_for(size, opt.iters, opt.warmup);
        ARMCI_Barrier();
        if (rank == 0) {
            for (long i = 0; i < w + n; i++) {
                double t0 = MPI_Wtime();
                one(op, strided, size, lbuf, remote);
                double t1 = MPI_Wtime();
                if (i >= w)
                    samples[i - w] = (t1 - t0) * 1e6;
            }
            ARMCI_Fence(1);
            results[k] = pp_summarise(size, samples, n);
        }
    }
    ARMCI_Barrier();

    if (rank == 0) {
        pp_print_table(stdout, &opt, nranks, results, opt.nsizes);
        const struct pp_param params[] = { { "op", op_names[op] }, { "layout", layout } };
        if (opt.json && pp_write_json(opt.json, &opt, nranks, params, 2, results, opt.nsizes)) {
            fprintf(stderr, "rma: cannot write %s: %s\n", opt.json, strerror(errno));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    ARMCI_Free_local(lbuf);
    ARMCI_Free(bases[rank]);
    free(bases);
    free(samples);
    free(results);
    ARMCI_Finalize();
    MPI_Finalize();
    return 0;
}
