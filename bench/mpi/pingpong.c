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

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FULL_UP_TO (64L * 1024L)
#define MIN_ITERS 20L
#define MAX_SIZES 256
#define TAG 7

static long iters_for(long size, long iters)
{
    if (size <= FULL_UP_TO)
        return iters;
    long n = iters * FULL_UP_TO / size;
    if (n < MIN_ITERS)
        n = MIN_ITERS;
    if (n > iters)
        n = iters;
    return n;
}

struct result {
    long size, iters;
    double min_us, avg_us, median_us, max_us, stddev_us, mb_per_s;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Summarises n > 0 samples (sorts them in place). */
static struct result summarise(long size, double *s, long n)
{
    struct result r = { .size = size, .iters = n };
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double sum = 0.0;
    for (long i = 0; i < n; i++)
        sum += s[i];
    r.avg_us = sum / (double)n;
    r.min_us = s[0];
    r.max_us = s[n - 1];
    r.median_us = (n % 2) ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
    double ss = 0.0;
    for (long i = 0; i < n; i++)
        ss += (s[i] - r.avg_us) * (s[i] - r.avg_us);
    r.stddev_us = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    r.mb_per_s = r.avg_us > 0.0 ? (double)size / r.avg_us : 0.0;
    return r;
}

/* Writes s as a JSON string literal. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void fmt_size(char *buf, size_t len, long size)
{
    static const struct { long scale; const char *unit; } units[] = {
        { 1L << 30, "GiB" }, { 1L << 20, "MiB" }, { 1L << 10, "KiB" },
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (size >= units[i].scale && size % units[i].scale == 0) {
            snprintf(buf, len, "%ld %s", size / units[i].scale, units[i].unit);
            return;
        }
    }
    snprintf(buf, len, "%ld B", size);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np 2 pingpong [--sizes 8,16,...] [--iters N] [--warmup W]\n"
               "                             [--json F] [--transport NAME] [--git REV]\n");
}

/* Parses a positive long; returns 0 on error. */
static long parse_pos(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0)
        return 0;
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    long sizes[MAX_SIZES];
    int nsizes = 0;
    long iters = 10000, warmup = 1000;
    const char *json = NULL, *git = NULL, *transport = "openmpi-ob1-vader";

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
        } else if (!strcmp(a, "--sizes")) {
            char *list = strdup(v), *save = NULL;
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                long s = parse_pos(t);
                if (!s || s > INT_MAX || nsizes == MAX_SIZES) {
                    bad = 1;
                    break;
                }
                sizes[nsizes++] = s;
            }
            free(list);
            bad |= nsizes == 0;
        } else if (!strcmp(a, "--iters")) {
            bad = !(iters = parse_pos(v));
        } else if (!strcmp(a, "--warmup")) {
            char *end;
            warmup = strtol(v, &end, 10);
            bad = *end || end == v || warmup < 0;
        } else if (!strcmp(a, "--json")) {
            json = v;
        } else if (!strcmp(a, "--git")) {
            git = v;
        } else if (!strcmp(a, "--transport")) {
            transport = v;
        } else {
            bad = 1;
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
    if (nsizes == 0) {
        for (int p = 3; p <= 23; p++)
            sizes[nsizes++] = 1L << p;
        sizes[nsizes++] = 2000000;
        qsort(sizes, (size_t)nsizes, sizeof sizes[0], cmp_long);
    }
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong: needs at least 2 ranks (mpirun -np 2)\n");
        MPI_Finalize();
        return 2;
    }

    long max_size = 0, max_iters = 0;
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] > max_size)
            max_size = sizes[i];
        long n = iters_for(sizes[i], iters);
        if (n > max_iters)
            max_iters = n;
    }
    /* Separate send and receive buffers, touched so no first-touch page faults are timed. */
    char *sbuf = malloc((size_t)max_size), *rbuf = malloc((size_t)max_size);
    double *samples = malloc((size_t)max_iters * sizeof *samples);
    struct result *results = calloc((size_t)nsizes, sizeof *results);
    if (!sbuf || !rbuf || !samples || !results) {
        fprintf(stderr, "pingpong: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < max_size; i++)
        sbuf[i] = (char)(i * 31 + rank);
    memset(rbuf, 0, (size_t)max_size);

    for (int k = 0; k < nsizes; k++) {
        long size = sizes[k];
        long n = iters_for(size, iters);
        long w = warmup < n ? warmup : n;
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
        char host[256] = "unknown";
        if (gethostname(host, sizeof host) != 0)
            strcpy(host, "unknown");
        host[sizeof host - 1] = '\0';
        char stamp[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int liblen = 0;
        MPI_Get_library_version(lib, &liblen);
        lib[strcspn(lib, "\n,")] = '\0'; /* first line / clause only */

        printf("pingpong over %s, %d ranks, host %s, %s\n", transport, nranks, host, stamp);
        printf("%10s %7s %10s %10s %10s %10s %10s %10s\n", "size", "iters", "min us", "avg us",
               "median us", "max us", "stddev us", "MB/s");
        for (int k = 0; k < nsizes; k++) {
            const struct result *r = &results[k];
            char sz[32];
            fmt_size(sz, sizeof sz, r->size);
            printf("%10s %7ld %10.2f %10.2f %10.2f %10.2f %10.2f %10.1f\n", sz, r->iters, r->min_us,
                   r->avg_us, r->median_us, r->max_us, r->stddev_us, r->mb_per_s);
        }
        fflush(stdout);

        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) {
                fprintf(stderr, "pingpong: cannot write %s: %s\n", json, strerror(errno));
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            fprintf(f, "{\n  \"bench\": \"pingpong\",\n  \"transport\": ");
            json_str(f, transport);
            fprintf(f, ",\n  \"ranks\": %d,\n  \"host\": ", nranks);
            json_str(f, host);
            fprintf(f, ",\n  \"timestamp\": \"%s\",\n", stamp);
            if (git) {
                fprintf(f, "  \"git\": ");
                json_str(f, git);
                fprintf(f, ",\n");
            }
            fprintf(f, "  \"params\": {\n    \"iters\": %ld,\n    \"warmup\": %ld,\n", iters, warmup);
            fprintf(f, "    \"mpi_library\": ");
            json_str(f, lib);
            fprintf(f, "\n  },\n  \"results\": [");
            for (int k = 0; k < nsizes; k++) {
                const struct result *r = &results[k];
                fprintf(f,
                        "%s\n    { \"size\": %ld, \"iters\": %ld, \"min_us\": %.9g, \"avg_us\": %.9g, "
                        "\"median_us\": %.9g, \"max_us\": %.9g, \"stddev_us\": %.9g, \"mb_per_s\": %.9g }",
                        k ? "," : "", r->size, r->iters, r->min_us, r->avg_us, r->median_us, r->max_us,
                        r->stddev_us, r->mb_per_s);
            }
            fprintf(f, "\n  ]\n}\n");
            if (fclose(f) != 0) {
                fprintf(stderr, "pingpong: cannot write %s: %s\n", json, strerror(errno));
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
