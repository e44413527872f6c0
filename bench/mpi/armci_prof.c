/*
 * An ARMCI call profile of one program: every call of bench/mpi/armci_prof_calls.h
 * counted and timed per rank, written as JSON when the program calls ARMCI_Finalize.
 *
 * Link armci_prof.o before the ARMCI library (libarmci or ARMCI-MPI: both export the
 * PARMCI_ profiling interface, so the same object works over either), with
 * -Wl,--wrap=NAME for each W line of the table (bench/compare-ga.sh does both). Over
 * a shared libarmci, a shared build of this file can also be LD_PRELOADed for the
 * P lines (ARMCI-MPI is a static archive: there only linking works).
 *
 * Rules:
 *   1. Only the outermost call counts: a call made inside another profiled call (an
 *      ARMCI-MPI ARMCI_Malloc calling ARMCI_Barrier, GA's group gop calling the
 *      world one) adds neither a count nor time, so the times add up to the time
 *      the program spent in ARMCI.
 *   2. ARMCI_PROF_DIR=DIR makes rank R write DIR/prof-R.json; unset, nothing is
 *      written (the program runs as without the profiler but for the counting).
 *   3. The JSON: {"rank", "nranks", "wall_s" (ARMCI_Init* to ARMCI_Finalize),
 *      "calls": {NAME: {"calls", "total_s", "bytes"}}}, calls never made left out.
 */
#define _POSIX_C_SOURCE 200809L

#include <armci.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum {
#define P(ret, name, params, args, bytes) CALL_##name,
#define PV(name, params, args, bytes) CALL_##name,
#define W(ret, name, params, args, bytes) CALL_##name,
#define WV(name, params, args, bytes) CALL_##name,
#include "armci_prof_calls.h"
#undef P
#undef PV
#undef W
#undef WV
    CALL_Finalize,
    N_CALLS
};

static const char *const call_names[N_CALLS] = {
#define P(ret, name, params, args, bytes) "ARMCI_" #name,
#define PV(name, params, args, bytes) "ARMCI_" #name,
#define W(ret, name, params, args, bytes) #name,
#define WV(name, params, args, bytes) #name,
#include "armci_prof_calls.h"
#undef P
#undef PV
#undef W
#undef WV
    "ARMCI_Finalize",
};

static struct {
    unsigned long calls;
    double seconds;
    double bytes;
} stats[N_CALLS];

static int depth;      /* profiled calls in progress on this process (rule 1) */
static double started; /* first ARMCI_Init*, for wall_s */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Bytes of a strided transfer: count[0] bytes times the other levels' counts. */
static double sbytes(const int *count, int levels)
{
    double b = count[0];
    for (int i = 1; i <= levels; i++)
        b *= count[i];
    return b;
}

/* Bytes of a vector transfer: each descriptor's segments times their length. */
static double vbytes(const armci_giov_t *iov, int n)
{
    double b = 0;
    for (int i = 0; i < n; i++)
        b += (double)iov[i].bytes * iov[i].ptr_array_len;
    return b;
}

static double enter(void)
{
    if (started == 0)
        started = now();
    return depth++ == 0 ? now() : 0;
}

static void leave(int call, double t0, double bytes)
{
    if (--depth > 0)
        return;
    stats[call].calls++;
    stats[call].seconds += now() - t0;
    stats[call].bytes += bytes;
}

/* The wrappers: one per table line. */
#define P(ret, name, params, args, bytes)                                                \
    ret ARMCI_##name params                                                              \
    {                                                                                    \
        double t0 = enter();                                                             \
        ret r = PARMCI_##name args;                                                      \
        leave(CALL_##name, t0, (double)(bytes));                                         \
        return r;                                                                        \
    }
#define PV(name, params, args, bytes)                                                    \
    void ARMCI_##name params                                                             \
    {                                                                                    \
        double t0 = enter();                                                             \
        PARMCI_##name args;                                                              \
        leave(CALL_##name, t0, (double)(bytes));                                         \
    }
#define W(ret, name, params, args, bytes)                                                \
    ret __real_##name params;                                                            \
    ret __wrap_##name params;                                                            \
    ret __wrap_##name params                                                             \
    {                                                                                    \
        double t0 = enter();                                                             \
        ret r = __real_##name args;                                                      \
        leave(CALL_##name, t0, (double)(bytes));                                         \
        return r;                                                                        \
    }
#define WV(name, params, args, bytes)                                                    \
    void __real_##name params;                                                           \
    void __wrap_##name params;                                                           \
    void __wrap_##name params                                                            \
    {                                                                                    \
        double t0 = enter();                                                             \
        __real_##name args;                                                              \
        leave(CALL_##name, t0, (double)(bytes));                                         \
    }
#include "armci_prof_calls.h"
#undef P
#undef PV
#undef W
#undef WV

static void write_profile(double wall)
{
    const char *dir = getenv("ARMCI_PROF_DIR");
    if (!dir)
        return;
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[4096];
    snprintf(path, sizeof path, "%s/prof-%d.json", dir, rank);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "armci_prof: cannot write %s (is ARMCI_PROF_DIR a directory?)\n", path);
        return;
    }
    fprintf(f, "{\"rank\": %d, \"nranks\": %d, \"wall_s\": %.9f, \"calls\": {", rank, size, wall);
    const char *sep = "";
    for (int i = 0; i < N_CALLS; i++) {
        if (!stats[i].calls)
            continue;
        fprintf(f, "%s\n  \"%s\": {\"calls\": %lu, \"total_s\": %.9f, \"bytes\": %.0f}", sep,
                call_names[i], stats[i].calls, stats[i].seconds, stats[i].bytes);
        sep = ",";
    }
    fprintf(f, "\n}}\n");
    fclose(f);
}

/* Writes the profile first: MPI is still up, and the finalize itself is counted. */
int ARMCI_Finalize(void)
{
    double t0 = enter();
    double end = now();
    leave(CALL_Finalize, t0, 0);
    write_profile(end - started);
    return PARMCI_Finalize();
}
