/*
 * The ARMCI calls Global Arrays leans on besides data movement, timed one by one: the
 * reference program of bench/compare-armci-calls.sh. Link it with any ARMCI (Debian's
 * ARMCI-MPI, -larmci-openmpi, or ninefold's libarmci) and start it with mpirun.
 *
 * Calls (each timed over --iters rounds after --warmup, every rank, MPI_Wtime; a
 * round's time is the slowest rank's, since a collective is as slow as its last member):
 *   malloc-free-<size>  ARMCI_Malloc of <size> bytes on every rank, then ARMCI_Free
 *                       (GA allocates and frees a segment for every array it creates,
 *                       temporaries included)
 *   malloc-<size>, free-<size>  the two halves of the same rounds, timed apart
 *   malloc-free-fresh   the same with a size that changes every round (4 KiB plus a
 *                       page per round, 64 sizes in turn): an ARMCI that keeps freed
 *                       segments only for the same size cannot reuse them here; one
 *                       that keeps them by size class (libarmci) can
 *   malloc-free-new     the same with 9 size classes in turn (8 KiB doubled 0 to 8
 *                       times, a page less: 4 KiB to 2 MiB): a cache of 8 or fewer freed segments
 *                       (libarmci's) never holds the class asked, so every round makes
 *                       a new segment
 *   barrier             ARMCI_Barrier (completes outstanding one-sided calls, then syncs)
 *   msg-barrier         armci_msg_barrier
 *   dgop-<n>            armci_msg_dgop of n doubles, "+"
 *   igop-1              armci_msg_igop of 1 int, "max"
 *   brdcst-<n>          armci_msg_brdcst of n bytes from rank 0
 *   half-barrier, half-dgop-1, half-bcast-8
 *                       armci_msg_group_barrier, _dgop of 1 double and _bcast_scope
 *                       of 8 bytes (from the half's first rank) in two groups of
 *                       half the ranks each, both at once (on one host with 4 or
 *                       more ranks: groups holding part of a node; GA_Pgroup's)
 *   most-barrier, most-dgop-1, most-bcast-8
 *                       the same in a group of every rank but the last (on one host
 *                       a group holding part of the node; on two hosts x 2 one
 *                       holding the first host and part of the second); the last
 *                       rank times nothing
 *   with --large, also dgop of 4 Ki .. 256 Ki doubles and brdcst of 4 KiB .. 16 MiB
 *   (where a library's collectives change path; libarmci's NF_ARMCI_COLL_MAX)
 *
 * Output: one line per call on rank 0, "call median_us min_us max_us", and with
 * --json F the same as a JSON object {"ranks": P, "calls": {name: {median_us, ...}}}.
 *
 * Usage: mpirun -np P ./armci_calls [--iters N] [--warmup W] [--json F] [--large]
 * Build: mpicc -O2 -o armci_calls bench/mpi/armci_calls.c -larmci-openmpi
 */
#define _POSIX_C_SOURCE 200809L

#include <armci.h>
#include <message.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iters = 200, warmup = 20, large = 0;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stat3 {
    double median, min, max;
};

/* Summary of `n` round times (seconds) in µs; sorts `t`. */
static struct stat3 summarize(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    struct stat3 s;
    s.min = t[0] * 1e6;
    s.max = t[n - 1] * 1e6;
    s.median = (n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2) * 1e6;
    return s;
}

/* The slowest rank's time of each round, on every rank. */
static void slowest(double *t, int n)
{
    MPI_Allreduce(MPI_IN_PLACE, t, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

static FILE *json;
static int first_json = 1;

static void report(int rank, const char *name, double *t)
{
    slowest(t, iters);
    struct stat3 s = summarize(t, iters);
    if (rank != 0)
        return;
    printf("%-20s %10.2f %10.2f %10.2f\n", name, s.median, s.min, s.max);
    if (json) {
        fprintf(json, "%s\n    \"%s\": {\"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f}",
                first_json ? "" : ",", name, s.median, s.min, s.max);
        first_json = 0;
    }
}

/* The size of round `i` (from 0, warm-up included): `size` plus `step` more each round,
 * 64 sizes in turn, when `step` > 0; `size` doubled 0 to 8 times in turn, a page less,
 * when `step` < 0; else `size`. */
static long round_size(long size, long step, int i)
{
    if (step > 0)
        return size + step * (i % 64);
    if (step < 0)
        return (size << (i % 9)) - 4096;
    return size;
}

/* Rounds of ARMCI_Malloc + ARMCI_Free of round_size's sizes. */
static void malloc_free(int rank, int nproc, long size, long step, double *tm, double *tf,
                        double *tb)
{
    void **ptrs = malloc(sizeof(void *) * (size_t)nproc);
    for (int i = -warmup; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        long bytes = round_size(size, step, i + warmup);
        if (ARMCI_Malloc(ptrs, bytes) != 0) {
            fprintf(stderr, "armci_calls: ARMCI_Malloc(%ld) failed\n", bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        double t1 = MPI_Wtime();
        /* GA touches what it allocates; so do we (one byte per page). */
        for (long o = 0; o < bytes; o += 4096)
            ((char *)ptrs[rank])[o] = 1;
        double t2 = MPI_Wtime();
        ARMCI_Free(ptrs[rank]);
        double t3 = MPI_Wtime();
        if (i >= 0) {
            tm[i] = t1 - t0;
            tf[i] = t3 - t2;
            tb[i] = (t1 - t0) + (t3 - t2);
        }
    }
    free(ptrs);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    ARMCI_Init();
    int rank, nproc;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--iters") && a + 1 < argc)
            iters = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--warmup") && a + 1 < argc)
            warmup = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--large"))
            large = 1;
        else if (!strcmp(argv[a], "--json") && a + 1 < argc) {
            ++a;
            if (rank == 0 && !(json = fopen(argv[a], "w"))) {
                perror(argv[a]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: mpirun -np P armci_calls [--iters N] [--warmup W] [--json F] [--large]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (iters < 1 || warmup < 0) {
        if (rank == 0)
            fprintf(stderr, "armci_calls: --iters must be >= 1 and --warmup >= 0\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double *tm = malloc(sizeof(double) * (size_t)iters);
    double *tf = malloc(sizeof(double) * (size_t)iters);
    double *tb = malloc(sizeof(double) * (size_t)iters);
    if (rank == 0) {
        printf("# %d ranks, %d rounds after %d warm-up; µs, slowest rank per round\n", nproc,
               iters, warmup);
        printf("%-20s %10s %10s %10s\n", "call", "median", "min", "max");
        if (json)
            fprintf(json, "{\"ranks\": %d, \"iters\": %d, \"calls\": {", nproc, iters);
    }
    long sizes[] = { 4096, 1 << 20 };
    for (int k = 0; k < 2; k++) {
        char name[64];
        malloc_free(rank, nproc, sizes[k], 0, tm, tf, tb);
        snprintf(name, sizeof name, "malloc-free-%ld", sizes[k]);
        report(rank, name, tb);
        snprintf(name, sizeof name, "malloc-%ld", sizes[k]);
        report(rank, name, tm);
        snprintf(name, sizeof name, "free-%ld", sizes[k]);
        report(rank, name, tf);
    }

#define TIME_ROUNDS(NAME, CALL)                                                     \
    do {                                                                            \
        for (int i = -warmup; i < iters; i++) {                                     \
            MPI_Barrier(MPI_COMM_WORLD);                                            \
            double t0 = MPI_Wtime();                                                \
            CALL;                                                                   \
            if (i >= 0)                                                             \
                tb[i] = MPI_Wtime() - t0;                                           \
        }                                                                           \
        report(rank, NAME, tb);                                                     \
    } while (0)

    malloc_free(rank, nproc, 4096, 4096, tm, tf, tb);
    report(rank, "malloc-free-fresh", tb);
    report(rank, "malloc-fresh", tm);
    report(rank, "free-fresh", tf);
    malloc_free(rank, nproc, 8192, -1, tm, tf, tb);
    report(rank, "malloc-free-new", tb);
    report(rank, "malloc-new", tm);
    report(rank, "free-new", tf);

    TIME_ROUNDS("barrier", ARMCI_Barrier());
    TIME_ROUNDS("msg-barrier", armci_msg_barrier());
    double d[1024];
    int n1 = 1, n1k = 1024;
    memset(d, 0, sizeof d);
    TIME_ROUNDS("dgop-1", armci_msg_dgop(d, n1, "+"));
    TIME_ROUNDS("dgop-1024", armci_msg_dgop(d, n1k, "+"));
    int iv = rank;
    TIME_ROUNDS("igop-1", armci_msg_igop(&iv, 1, "max"));
    char buf[65536];
    memset(buf, rank, sizeof buf);
    TIME_ROUNDS("brdcst-8", armci_msg_brdcst(buf, 8, 0));
    TIME_ROUNDS("brdcst-65536", armci_msg_brdcst(buf, 65536, 0));
    {
        int half = nproc / 2, upper = rank >= half;
        int *list = malloc(sizeof(int) * (size_t)nproc);
        ARMCI_Group halves[2];
        for (int k = 0; k < 2; k++) { /* every rank makes both, in the same order */
            int n = k ? nproc - half : half, first = k ? half : 0;
            for (int i = 0; i < n; i++)
                list[i] = first + i;
            if (n > 0)
                ARMCI_Group_create(n, list, &halves[k]);
        }
        ARMCI_Group *mine = &halves[upper];
        int root = upper ? half : 0;
        TIME_ROUNDS("half-barrier", armci_msg_group_barrier(mine));
        TIME_ROUNDS("half-dgop-1", armci_msg_group_dgop(d, n1, "+", mine));
        TIME_ROUNDS("half-bcast-8", armci_msg_group_bcast_scope(SCOPE_ALL, buf, 8, root, mine));
        for (int k = 0; k < 2; k++)
            if (k ? nproc - half : half)
                ARMCI_Group_free(&halves[k]);
        free(list);
    }
    if (nproc > 2) {
        int n = nproc - 1, in = rank < n;
        int *list = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            list[i] = i;
        ARMCI_Group most = {0}; /* ARMCI-MPI leaves a non-member's tables unset */
        ARMCI_Group_create(n, list, &most);
        TIME_ROUNDS("most-barrier", if (in) armci_msg_group_barrier(&most));
        TIME_ROUNDS("most-dgop-1", if (in) armci_msg_group_dgop(d, n1, "+", &most));
        TIME_ROUNDS("most-bcast-8",
                    if (in) armci_msg_group_bcast_scope(SCOPE_ALL, buf, 8, 0, &most));
        ARMCI_Group_free(&most);
        free(list);
    }
    if (large) {
        long most = 1L << 24;
        char *big = malloc((size_t)most);
        if (big == NULL) {
            fprintf(stderr, "armci_calls: out of memory for --large\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(big, 0, (size_t)most);
        for (int n = 4096; n <= (1 << 18); n *= 4) {
            char name[32];
            snprintf(name, sizeof name, "dgop-%d", n);
            TIME_ROUNDS(name, armci_msg_dgop((double *)big, n, "+"));
        }
        for (int n = 4096; n <= (1 << 24); n *= 4) {
            char name[32];
            snprintf(name, sizeof name, "brdcst-%d", n);
            TIME_ROUNDS(name, armci_msg_brdcst(big, n, 0));
        }
        free(big);
    }

    if (rank == 0 && json) {
        fprintf(json, "\n  }}\n");
        fclose(json);
    }
    free(tm);
    free(tf);
    free(tb);
    ARMCI_Finalize();
    MPI_Finalize();
    return 0;
}
