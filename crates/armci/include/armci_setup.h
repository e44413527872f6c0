/*
 * ninefold libarmci: starting, stopping and failing.
 *
 * A program calls MPI_Init first, then ARMCI_Init (Global Arrays' GA_Initialize
 * does); the library wires up through MPI_COMM_WORLD. Calling ARMCI_Init before
 * MPI_Init is an error that aborts with a message saying so.
 */
#ifndef NF_ARMCI_SETUP_H
#define NF_ARMCI_SETUP_H

#include "armci_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over MPI_COMM_WORLD. Returns 0; a repeated call only counts. */
ARMCI_PROFILED(int, Init, (void));
/* As ARMCI_Init; the arguments are not used. */
ARMCI_PROFILED(int, Init_args, (int *argc, char ***argv));
/* As ARMCI_Init, requiring MPI thread level `armci_requested` (MPI_THREAD_*) from MPI
 * (a lower level aborts); returns 0. The _comm form makes `comm`'s processes, ranked
 * as there, ARMCI's world. */
ARMCI_PROFILED(int, Init_thread, (int armci_requested));
ARMCI_PROFILED(int, Init_thread_comm, (int armci_requested, MPI_Comm comm));
/* 1 between ARMCI_Init and the matching ARMCI_Finalize, else 0. */
ARMCI_PROFILED(int, Initialized, (void));
/* Collective: completes all operations, frees every segment, returns 0. */
ARMCI_PROFILED(int, Finalize, (void));
/* Local: releases shared segments without talking to other processes (for exits). */
void ARMCI_Cleanup(void);
/* Prints msg and code on stderr, then aborts the whole job (code 0 aborts with 1). */
void ARMCI_Error(const char *msg, int code);

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_SETUP_H */
