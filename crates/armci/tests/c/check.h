/*
 * What every C test program of libarmci shares, ARMCI or Global Arrays alike:
 * CHECK, the RUN protocol, a clock and a deterministic generator.
 *
 * A program runs RUN(test_fn) for each test; around each, every process calls
 * harness_sync() (the including harness defines it), and rank 0 then prints
 * "ok test_fn"; the harness prints "done" at the very end. A failed CHECK prints
 * "FAIL ..." and aborts the job with exit code 2. The driver (tests/common) requires
 * one "ok" line per RUN(...) in the source and the final "done".
 */
#ifndef NF_ARMCI_TEST_CHECK_H
#define NF_ARMCI_TEST_CHECK_H

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me, nproc;

/* Every process waits for the others (ARMCI_Barrier, GA_Sync, ...). */
static void harness_sync(void);

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "FAIL rank %d %s:%d: %s: ", me, __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
            fflush(NULL);                                                                 \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                 \
        }                                                                                 \
    } while (0)

#define RUN(fn) run_test(#fn, fn)

static void run_test(const char *name, void (*fn)(void)) {
    harness_sync();
    fn();
    harness_sync();
    if (me == 0) printf("ok %s\n", name);
    fflush(stdout);
}

/* Seconds on a monotonic clock (no library call: usable while "computing"). */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A small deterministic generator, the same on every process for the same seed. */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int rng_below(uint64_t *s, int n) {
    return (int)(rng_next(s) % (uint64_t)n);
}

#endif /* NF_ARMCI_TEST_CHECK_H */
