/*
 * Harness of the ARMCI C tests (driven by tests/c_api.rs); check.h has the protocol.
 *
 * The tests are written against the ARMCI API, not against ninefold: they pass
 * with ARMCI-MPI too (the driver links them against it when
 * NF_ARMCI_TEST_IMPL=armci-mpi). Checks of things ARMCI-MPI leaves out (real SMP
 * domains, absmax / absmin, reduce) sit under #ifdef ARMCI_NINEFOLD.
 */
#ifndef NF_ARMCI_TEST_HARNESS_H
#define NF_ARMCI_TEST_HARNESS_H

#include <armci.h>
#include <message.h>

#include "check.h"

static void harness_sync(void) {
    ARMCI_Barrier();
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

#endif /* NF_ARMCI_TEST_HARNESS_H */
