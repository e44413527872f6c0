/*
 * ninefold libarmci: ARMCI (Aggregate Remote Memory Copy Interface) over
 * ninefold's transports — shared memory between processes of one host, the
 * network transports between hosts — with asynchronous progress, so a target never
 * has to call the library for an operation on its memory to complete.
 *
 * Source- and binary-compatible with ARMCI-MPI 0.3 as Debian ships it
 * (libarmci-mpi-dev): programs and Debian's prebuilt Global Arrays link against
 * libarmci.so instead. This header gathers one header per capability:
 *
 *   armci_types.h        shared types and constants (ABI-fixed layouts)
 *   armci_setup.h        init / finalize / errors
 *   armci_memory.h       collective and local allocation
 *   armci_onesided.h     blocking put / get / accumulate: contiguous, strided, vector
 *   armci_nonblocking.h  handles, Nb* calls, wait / test
 *   armci_sync.h         fences, barrier, read-modify-write, mutexes
 *   armci_groups.h       process groups (real MPI communicators)
 *   armci_topology.h     nodes and the domain queries
 *   message.h            armci_msg_* message passing over MPI
 *   armci_tcgmsg.h       TCGMSG under GA's armci_tcgmsg_* names
 *
 * Bad arguments (NULL pointers, remote addresses outside every segment, process
 * ids out of range, too many stride levels, ...) print an error naming the call
 * and the argument on stderr and abort the job with exit code ARMCI_NF_ABORT_CODE.
 */
#ifndef NF_ARMCI_H
#define NF_ARMCI_H

/* Identifies this implementation (ARMCI-MPI defines ARMCI_MPI instead). */
#define ARMCI_NINEFOLD 1
/* Exit code of a job aborted for a bad argument. */
#define ARMCI_NF_ABORT_CODE 65

#include "armci_types.h"
#include "armci_setup.h"
#include "armci_memory.h"
#include "armci_onesided.h"
#include "armci_nonblocking.h"
#include "armci_sync.h"
#include "armci_groups.h"
#include "armci_topology.h"
#include "message.h"
#include "armci_tcgmsg.h"

#endif /* NF_ARMCI_H */
