/*
 * What the C benchmarks in bench/mpi share: the iteration rule, sample statistics,
 * the text table and the JSON report shape of ninefold's benchmarks
 * (crates/bench/src/report.rs). Header-only: each benchmark is one translation unit.
 */
#ifndef NF_BENCH_REPORT_H
#define NF_BENCH_REPORT_H

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FULL_UP_TO (64L * 1024L)
#define MIN_ITERS 20L
#define MAX_SIZES 256

static inline long iters_for(long size, long iters)
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

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Summarises n > 0 samples (sorts them in place). */
static inline struct result summarise(long size, double *s, long n)
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
static inline void json_str(FILE *f, const char *s)
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

static inline void fmt_size(char *buf, size_t len, long size)
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

static inline int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Parses a positive long; returns 0 on error. */
static inline long parse_pos(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0)
        return 0;
    return v;
}

/* Parses a comma-separated list of positive sizes (each at most INT_MAX) into
 * sizes[0..max); returns how many, or 0 on error. */
static inline int parse_sizes(const char *v, long *sizes, int max)
{
    int n = 0;
    char *list = strdup(v), *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        long s = parse_pos(t);
        if (!s || s > INT_MAX || n == max) {
            n = 0;
            break;
        }
        sizes[n++] = s;
    }
    free(list);
    return n;
}

/* Options every C benchmark takes. */
struct common_opts {
    long sizes[MAX_SIZES];
    int nsizes;
    long iters, warmup;
    const char *json, *git, *transport;
};

/* Takes option `a` with value `v` if it is a common one: 1 if taken, -1 if its value
 * is bad, 0 if `a` is not a common option. */
static inline int common_option(const char *a, const char *v, struct common_opts *o)
{
    if (!strcmp(a, "--sizes"))
        return (o->nsizes = parse_sizes(v, o->sizes, MAX_SIZES)) ? 1 : -1;
    if (!strcmp(a, "--iters"))
        return (o->iters = parse_pos(v)) ? 1 : -1;
    if (!strcmp(a, "--warmup")) {
        char *end;
        o->warmup = strtol(v, &end, 10);
        return (*end || end == v || o->warmup < 0) ? -1 : 1;
    }
    if (!strcmp(a, "--json"))
        o->json = v;
    else if (!strcmp(a, "--git"))
        o->git = v;
    else if (!strcmp(a, "--transport"))
        o->transport = v;
    else
        return 0;
    return 1;
}

/* Where and when a report was made. */
struct origin {
    char host[256];
    char stamp[32];
};

static inline struct origin origin_now(void)
{
    struct origin o = { .host = "unknown" };
    if (gethostname(o.host, sizeof o.host) != 0)
        strcpy(o.host, "unknown");
    o.host[sizeof o.host - 1] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(o.stamp, sizeof o.stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return o;
}

/* Prints the results as the text table of ninefold's reports. */
static inline void print_table(const char *bench, const char *transport, int nranks,
                        const struct origin *o, const struct result *results, int n)
{
    printf("%s over %s, %d ranks, host %s, %s\n", bench, transport, nranks, o->host, o->stamp);
    printf("%10s %7s %10s %10s %10s %10s %10s %10s\n", "size", "iters", "min us", "avg us",
           "median us", "max us", "stddev us", "MB/s");
    for (int k = 0; k < n; k++) {
        const struct result *r = &results[k];
        char sz[32];
        fmt_size(sz, sizeof sz, r->size);
        printf("%10s %7ld %10.2f %10.2f %10.2f %10.2f %10.2f %10.1f\n", sz, r->iters, r->min_us,
               r->avg_us, r->median_us, r->max_us, r->stddev_us, r->mb_per_s);
    }
    fflush(stdout);
}

/* Writes the JSON report to `path`; `params` is the body of the params object
 * (`"key": value` pairs, comma-separated, no braces). Returns 0, or -1 with errno. */
static inline int write_report(const char *path, const char *bench, const char *transport, int nranks,
                        const struct origin *o, const char *git, const char *params,
                        const struct result *results, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"bench\": ");
    json_str(f, bench);
    fprintf(f, ",\n  \"transport\": ");
    json_str(f, transport);
    fprintf(f, ",\n  \"ranks\": %d,\n  \"host\": ", nranks);
    json_str(f, o->host);
    fprintf(f, ",\n  \"timestamp\": \"%s\",\n", o->stamp);
    if (git) {
        fprintf(f, "  \"git\": ");
        json_str(f, git);
        fprintf(f, ",\n");
    }
    fprintf(f, "  \"params\": {\n    %s\n  },\n  \"results\": [", params);
    for (int k = 0; k < n; k++) {
        const struct result *r = &results[k];
        fprintf(f,
                "%s\n    { \"size\": %ld, \"iters\": %ld, \"min_us\": %.9g, \"avg_us\": %.9g, "
                "\"median_us\": %.9g, \"max_us\": %.9g, \"stddev_us\": %.9g, \"mb_per_s\": %.9g }",
                k ? "," : "", r->size, r->iters, r->min_us, r->avg_us, r->median_us, r->max_us,
                r->stddev_us, r->mb_per_s);
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f);
}

/* A JSON string literal of s in buf (for building `params`). */
static inline void json_quote(char *buf, size_t len, const char *s)
{
    FILE *f = fmemopen(buf, len, "w");
    if (!f) {
        snprintf(buf, len, "\"\"");
        return;
    }
    json_str(f, s);
    fclose(f);
}

#endif
