/* Reports shared by bench/'s C reference programs; see ppreport.h. */
#define _POSIX_C_SOURCE 200809L

#include "ppreport.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FULL_UP_TO (64L * 1024L)
#define MIN_ITERS 20L

const char pp_opts_usage[] =
    "  [--sizes 8,16,...] [--iters N] [--warmup W] [--json F] [--transport NAME] [--git REV]\n";

void pp_init_opts(struct pp_opts *o, const char *bench, const char *transport)
{
    memset(o, 0, sizeof *o);
    o->iters = 10000;
    o->warmup = 1000;
    o->transport = transport;
    o->bench = bench;
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

int pp_take_opt(struct pp_opts *o, const char *a, const char *v)
{
    static const char *const known[] = { "--sizes", "--iters", "--warmup", "--json", "--git",
                                         "--transport" };
    int found = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        found |= !strcmp(a, known[i]);
    if (!found)
        return 0;
    if (!v)
        return -1;
    if (!strcmp(a, "--sizes")) {
        char *list = strdup(v), *save = NULL;
        int bad = !list;
        o->nsizes = 0;
        for (char *t = list ? strtok_r(list, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
            long s = parse_pos(t);
            if (!s || s > INT_MAX || o->nsizes == PP_MAX_SIZES) {
                bad = 1;
                break;
            }
            o->sizes[o->nsizes++] = s;
        }
        free(list);
        return bad || o->nsizes == 0 ? -1 : 1;
    }
    if (!strcmp(a, "--iters"))
        return (o->iters = parse_pos(v)) ? 1 : -1;
    if (!strcmp(a, "--warmup")) {
        char *end;
        errno = 0;
        o->warmup = strtol(v, &end, 10);
        return errno || *end || end == v || o->warmup < 0 ? -1 : 1;
    }
    if (!strcmp(a, "--json"))
        o->json = v;
    else if (!strcmp(a, "--git"))
        o->git = v;
    else
        o->transport = v;
    return 1;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

void pp_default_sizes(struct pp_opts *o, long largest)
{
    if (o->nsizes)
        return;
    for (long s = 8; s <= largest && o->nsizes < PP_MAX_SIZES; s *= 2)
        o->sizes[o->nsizes++] = s;
}

void pp_finish_opts(struct pp_opts *o)
{
    if (o->nsizes)
        return;
    pp_default_sizes(o, 8L << 20);
    o->sizes[o->nsizes++] = 2000000;
    qsort(o->sizes, (size_t)o->nsizes, sizeof o->sizes[0], cmp_long);
}

long pp_iters_for(long size, long iters)
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

long pp_warmup_for(long size, long iters, long warmup)
{
    long n = pp_iters_for(size, iters);
    return warmup < n ? warmup : n;
}

void pp_maxima(const struct pp_opts *o, long *max_size, long *max_iters)
{
    *max_size = 0;
    *max_iters = 0;
    for (int i = 0; i < o->nsizes; i++) {
        long n = pp_iters_for(o->sizes[i], o->iters);
        if (o->sizes[i] > *max_size)
            *max_size = o->sizes[i];
        if (n > *max_iters)
            *max_iters = n;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct pp_result pp_summarise(long size, double *s, long n)
{
    struct pp_result r = { .size = size, .iters = n };
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
    r.mb_per_s = r.median_us > 0.0 ? (double)size / r.median_us : 0.0;
    return r;
}

void pp_fmt_size(char *buf, size_t len, long size)
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

/* This host's name and the current UTC time, for the heading and the report. */
static void host_and_stamp(char *host, size_t hlen, char *stamp, size_t slen)
{
    if (gethostname(host, hlen) != 0)
        snprintf(host, hlen, "unknown");
    host[hlen - 1] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, slen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void pp_print_table(FILE *f, const struct pp_opts *o, int ranks, const struct pp_result *r, int n)
{
    char host[256], stamp[32];
    host_and_stamp(host, sizeof host, stamp, sizeof stamp);
    fprintf(f, "%s over %s, %d ranks, host %s, %s\n", o->bench, o->transport, ranks, host, stamp);
    fprintf(f, "%10s %7s %10s %10s %10s %10s %10s %10s\n", "size", "iters", "min us", "avg us",
            "median us", "max us", "stddev us", "MB/s");
    for (int k = 0; k < n; k++) {
        char sz[32];
        pp_fmt_size(sz, sizeof sz, r[k].size);
        fprintf(f, "%10s %7ld %10.2f %10.2f %10.2f %10.2f %10.2f %10.1f\n", sz, r[k].iters,
                r[k].min_us, r[k].avg_us, r[k].median_us, r[k].max_us, r[k].stddev_us,
                r[k].mb_per_s);
    }
    fflush(f);
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

int pp_write_json(const char *path, const struct pp_opts *o, int ranks, const struct pp_param *p,
                  int np, const struct pp_result *r, int n)
{
    char host[256], stamp[32];
    host_and_stamp(host, sizeof host, stamp, sizeof stamp);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"bench\": ");
    json_str(f, o->bench);
    fprintf(f, ",\n  \"transport\": ");
    json_str(f, o->transport);
    fprintf(f, ",\n  \"ranks\": %d,\n  \"host\": ", ranks);
    json_str(f, host);
    fprintf(f, ",\n  \"timestamp\": \"%s\",\n", stamp);
    if (o->git) {
        fprintf(f, "  \"git\": ");
        json_str(f, o->git);
        fprintf(f, ",\n");
    }
    fprintf(f, "  \"params\": {\n    \"iters\": %ld,\n    \"warmup\": %ld", o->iters, o->warmup);
    for (int i = 0; i < np; i++) {
        fprintf(f, ",\n    ");
        json_str(f, p[i].key);
        fprintf(f, ": ");
        json_str(f, p[i].value);
    }
    fprintf(f, "\n  },\n  \"results\": [");
    for (int k = 0; k < n; k++) {
        fprintf(f,
                "%s\n    { \"size\": %ld, \"iters\": %ld, \"min_us\": %.9g, \"avg_us\": %.9g, "
                "\"median_us\": %.9g, \"max_us\": %.9g, \"stddev_us\": %.9g, \"mb_per_s\": %.9g }",
                k ? "," : "", r[k].size, r[k].iters, r[k].min_us, r[k].avg_us, r[k].median_us,
                r[k].max_us, r[k].stddev_us, r[k].mb_per_s);
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f);
}
