/*
 * Test harness for the C tests of libarmci (driven by tests/c_api.rs).
 *
 * Every test program is an MPI program that runs RUN(test_fn) for each test;
 * after each, rank 0 prints "ok test_fn", and at the very end "done". A failed
 * CHECK prints "FAIL ..." and aborts the job with exit code 2. The driver
 * requires one "ok" line per RUN(...) in the source and the final "done".
 *
 * The tests are written against the ARMCI API, not against ninefold: they pass
 * with ARMCI-MPI too (the driver links them against it when
 * NF_ARMCI_TEST_IMPL=armci-mpi). Checks of things ARMCI-MPI leaves out (real SMP
 * domains, absmax / absmin, reduce) sit under #ifdef ARMCI_NINEFOLD.
 */
#ifndef NF_ARMCI_TEST_HARNESS_H
#define NF_ARMCI_TEST_HARNESS_H

#include <mpi.h>
#include <armci.h>
#include <message.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me, nproc;

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
    ARMCI_Barrier();
    fn();
    ARMCI_Barrier();
    if (me == 0) printf("ok %s\n", name);
    fflush(stdout);
}

static void harness_init(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    ARMCI_Init();
    me = armci_msg_me();
    nproc = armci_msg_nproc();
}

static void harness_done(void) {
    ARMCI_Finalize();
    MPI_Finalize();
    if (me == 0) printf("done\n");
    fflush(stdout);
}

/* Seconds on a monotonic clock (no library call: usable while "computing"). */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The byte every test stores at offset i of process p's data, pass k. */
static unsigned char pattern(int p, size_t i, int k) {
    return (unsigned char)(p * 31 + (int)(i % 251) * 7 + k * 13 + 1);
}

/* Collective ARMCI_Malloc of `bytes` per process; returns the pointer table. */
static void **alloc_all(size_t bytes) {
    void **ptr = calloc((size_t)nproc, sizeof(void *));
    CHECK(ptr != NULL, "out of memory");
    CHECK(ARMCI_Malloc(ptr, (armci_size_t)bytes) == 0, "ARMCI_Malloc(%zu) failed", bytes);
    CHECK(bytes == 0 || ptr[me] != NULL, "own pointer is NULL");
    return ptr;
}

static void free_all(void **ptr) {
    CHECK(ARMCI_Free(ptr[me]) == 0, "ARMCI_Free failed");
    free(ptr);
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

#endif /* NF_ARMCI_TEST_HARNESS_H */
