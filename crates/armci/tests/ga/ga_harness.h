/*
 * Harness of the Global Arrays acceptance programs (driven by tests/ga.rs); the
 * protocol is check.h's. These programs use Debian's ga.h only: they are built
 * against Debian's libga-openmpi.a, linked with libarmci in place of ARMCI-MPI.
 */
#ifndef NF_ARMCI_GA_HARNESS_H
#define NF_ARMCI_GA_HARNESS_H

#include <ga.h>
#include <macdecls.h>

#include "check.h"

static void harness_sync(void) {
    GA_Sync();
}

static void ga_init(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    GA_Initialize();
    CHECK(MA_init(C_DBL, 1 << 20, 1 << 22), "MA_init failed");
    me = GA_Nodeid();
    nproc = GA_Nnodes();
}

static void ga_done(void) {
    GA_Terminate();
    MPI_Finalize();
    if (me == 0) printf("done\n");
    fflush(stdout);
}

/* The value the serial model holds at (i, j) of an n-column matrix, for seed s. */
static double cell(int s, int i, int j) {
    return (double)((s * 7919 + i * 131 + j * 17) % 1000) * 0.25 - 50.0;
}

#endif /* NF_ARMCI_GA_HARNESS_H */
