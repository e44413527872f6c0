/*
 * ninefold libarmci: ARMCI-MPI's extensions, with ARMCI-MPI's declarations.
 *
 * Groups: ARMCIX_Group_split is MPI_Comm_split over the parent (collective over it;
 * processes of one `color` form a group, ordered by `key`), ARMCIX_Group_dup a copy
 * of the parent; both return 0, or MPI's error code. Free them with
 * ARMCI_Group_free.
 *
 * Mutex handles: batches of mutexes besides ARMCI_Create_mutexes' one set, so a
 * library can have its own. ARMCIX_Create_mutexes_hdl is collective over `pgroup`
 * (NULL: the world) and makes `count` mutexes on the caller (counts may differ);
 * the lock calls name a mutex by its number and the world rank `proc` it lives on;
 * ARMCIX_Trylock_hdl returns 0 when it took the mutex, 1 when it is held.
 * ARMCIX_Destroy_mutexes_hdl is collective again.
 *
 * ARMCIX_Progress: operations progress on their own here; it returns at once.
 */
#ifndef NF_ARMCIX_H
#define NF_ARMCIX_H

#include "armci.h"

#ifdef __cplusplus
extern "C" {
#endif

int ARMCIX_Group_split(ARMCI_Group *parent, int color, int key, ARMCI_Group *new_group);
int ARMCIX_Group_dup(ARMCI_Group *parent, ARMCI_Group *new_group);

/* Opaque (ARMCI-MPI's fields are MPI windows; only the pointer crosses the ABI). */
typedef struct armcix_mutex_hdl_s *armcix_mutex_hdl_t;

armcix_mutex_hdl_t ARMCIX_Create_mutexes_hdl(int count, ARMCI_Group *pgroup);
int ARMCIX_Destroy_mutexes_hdl(armcix_mutex_hdl_t hdl);
void ARMCIX_Lock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
int ARMCIX_Trylock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
void ARMCIX_Unlock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);

void ARMCIX_Progress(void);

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCIX_H */
