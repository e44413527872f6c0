/*
 * Reports shared by the C reference programs of bench/ (the MPI ping-pong
 * bench/mpi/pingpong.c, the raw socket ping-pong bench/net/tcp_pingpong.c and the
 * ARMCI one-sided benchmark bench/mpi/rma.c): the iteration rule, the statistics, the
 * command-line options they have in common, and the table and JSON report in the shape
 * of ninefold's `nf bench pingpong` / `nf bench rma` (crates/bench/src/report.rs):
 *
 *   { "bench": BENCH, "transport": "...", "ranks": 2, "host": "...",
 *     "timestamp": "2025-01-01T12:00:00Z", "git": "...",            (git only with --git)
 *     "params": { "iters": 10000, "warmup": 1000, KEY: "VALUE", ... }, (KEYs optional)
 *     "results": [ { "size": 8, "iters": 10000, "min_us": ..., "avg_us": ...,
 *                    "median_us": ..., "max_us": ..., "stddev_us": ..., "mb_per_s": ... } ] }
 *
 * BENCH is "pingpong" (samples: half round trips) or "rma-<op>-<layout>" (samples: one
 * operation each); compare_report.py and nf bench plot read either.
 *
 * stddev_us is the sample standard deviation (divisor n-1); mb_per_s = size / median_us (as nf_bench::report)
 * (MB = 10^6 B). The median of an even count is the mean of the two middle samples.
 *
 * Iteration rule (identical to nf_bench::pingpong::iters_for, keep them in step):
 *
 *   iters(size)  = ITERS                                       if size <= 64 KiB
 *                = max(20, min(ITERS, ITERS * 64 KiB / size))  otherwise (integer division)
 *   warmup(size) = min(WARMUP, iters(size))
 *
 * so every size above 64 KiB moves about ITERS x 64 KiB, but never fewer than 20 trips
 * (and never more than ITERS). Ping-pong defaults: ITERS = 10000, WARMUP = 1000; sizes:
 * powers of two from 8 B to 8 MiB, plus 2000000 B, ascending (pp_finish_opts); a program
 * with other defaults sets them after pp_init_opts and calls pp_default_sizes instead.
 */
#ifndef NF_BENCH_PPREPORT_H
#define NF_BENCH_PPREPORT_H

#include <stddef.h>
#include <stdio.h>

#define PP_MAX_SIZES 256

/* One size's summary. */
struct pp_result {
    long size, iters;
    double min_us, avg_us, median_us, max_us, stddev_us, mb_per_s;
};

/* The options every reference program takes, and the report's bench name. */
struct pp_opts {
    long sizes[PP_MAX_SIZES];
    int nsizes;
    long iters, warmup;
    const char *json, *git, *transport, *bench;
};

/* One string parameter of the report (params.KEY = "VALUE"). */
struct pp_param {
    const char *key, *value;
};

/* Defaults: no sizes yet (see pp_finish_opts), 10000 iterations, 1000 warm-up. */
void pp_init_opts(struct pp_opts *o, const char *bench, const char *transport);

/*
 * Takes option `a` with value `v` (NULL if there is none): --sizes, --iters, --warmup,
 * --json, --git, --transport. Returns 1 if taken, 0 if `a` is not one of them,
 * -1 if its value is missing or bad.
 */
int pp_take_opt(struct pp_opts *o, const char *a, const char *v);

/* Fills the ping-pong default sizes if none were given; sorts nothing the user gave. */
void pp_finish_opts(struct pp_opts *o);

/* Fills the powers of two from 8 B to `largest` if no sizes were given. */
void pp_default_sizes(struct pp_opts *o, long largest);

/* The usage lines of the common options. */
extern const char pp_opts_usage[];

/* Timed round trips for `size`, and untimed ones before them (the rule above). */
long pp_iters_for(long size, long iters);
long pp_warmup_for(long size, long iters, long warmup);

/* Largest size and largest iteration count over the options' sizes. */
void pp_maxima(const struct pp_opts *o, long *max_size, long *max_iters);

/* Summarises n > 0 half-round-trip samples in microseconds (sorts them in place). */
struct pp_result pp_summarise(long size, double *s, long n);

/* "8 B", "4 KiB", "8 MiB", "2000000 B" (binary units only when exact). */
void pp_fmt_size(char *buf, size_t len, long size);

/* Prints the heading line ("BENCH over TRANSPORT, ...") and the table to f. */
void pp_print_table(FILE *f, const struct pp_opts *o, int ranks, const struct pp_result *r,
                    int n);

/*
 * Writes the JSON report to `path`, with the string parameters p[0..np) after iters
 * and warmup. Returns 0, or -1 with errno set.
 */
int pp_write_json(const char *path, const struct pp_opts *o, int ranks, const struct pp_param *p,
                  int np, const struct pp_result *r, int n);

#endif
