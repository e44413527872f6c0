/*
 * ninefold libarmci: completion, atomics and mutexes.
 */
#ifndef NF_ARMCI_SYNC_H
#define NF_ARMCI_SYNC_H

#include "armci_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns when every put / accumulate this process issued to proc is complete there. */
ARMCI_PROFILED(void, Fence, (int proc));
/* ARMCI_Fence for every process. */
ARMCI_PROFILED(void, AllFence, (void));
/* ARMCI_AllFence, then a barrier over the world group. */
ARMCI_PROFILED(void, Barrier, (void));

/*
 * Atomic read-modify-write of the int or long at prem on proc (enum ARMCI_Rmw_e):
 * fetch-and-add stores the old remote value in *ploc and adds `value`; swap
 * exchanges *ploc with the remote value. Returns 0.
 */
ARMCI_PROFILED(int, Rmw, (int op, void *ploc, void *prem, int value, int proc));

/* Collective: every process creates `count` mutexes of its own (0 .. count-1). */
ARMCI_PROFILED(int, Create_mutexes, (int count));
/* Collective: destroys them; no mutex may be held. */
ARMCI_PROFILED(int, Destroy_mutexes, (void));
/* Acquires / releases mutex number `mutex` owned by proc (blocking, not reentrant). */
ARMCI_PROFILED(void, Lock, (int mutex, int proc));
ARMCI_PROFILED(void, Unlock, (int mutex, int proc));

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_SYNC_H */
