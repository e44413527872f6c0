/*
 * ninefold libarmci: global memory.
 *
 * Only memory from ARMCI_Malloc / ARMCI_Malloc_group can be the remote side of a
 * one-sided operation. Allocation is collective: every member passes its own size
 * (which may be 0) and gets back, in ptr_arr[i], the address of member i's piece as
 * member i sees it (NULL for a member that asked for 0 bytes). Those addresses are
 * what put / get / accumulate take for the remote side.
 */
#ifndef NF_ARMCI_MEMORY_H
#define NF_ARMCI_MEMORY_H

#include "armci_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over the world group; ptr_arr has one entry per process. Returns 0. */
ARMCI_PROFILED(int, Malloc, (void **ptr_arr, armci_size_t bytes));
/* Collective over the world group; ptr is this process's address (NULL allowed). */
ARMCI_PROFILED(int, Free, (void *ptr));
/* Collective over group; ptr_arr has one entry per member, by group rank. */
int ARMCI_Malloc_group(void **ptr_arr, armci_size_t bytes, ARMCI_Group *group);
/* Collective over group; frees what ARMCI_Malloc_group returned. */
int ARMCI_Free_group(void *ptr, ARMCI_Group *group);
/* Local buffer suitable as the local side of any operation; NULL on failure. */
ARMCI_PROFILED(void *, Malloc_local, (armci_size_t bytes));
/* Frees what ARMCI_Malloc_local returned. Returns 0. */
ARMCI_PROFILED(int, Free_local, (void *ptr));

/*
 * Direct local access: between ARMCI_Access_begin(ptr) and ARMCI_Access_end(ptr) the
 * process may load and store its own ARMCI_Malloc memory around `ptr` while others
 * do RMA on it. Begin makes what completed remote operations wrote visible to the
 * loads, end makes the stores visible to later remote gets (each is a full memory
 * barrier). `ptr` must lie in one of this process's allocations, else the job aborts.
 */
ARMCI_PROFILED(void, Access_begin, (void *ptr));
ARMCI_PROFILED(void, Access_end, (void *ptr));

/*
 * Memory-device variants. Host memory is the only device: `device` may be NULL,
 * "" , "host" or "DDR"; any other name aborts with an error naming it.
 */
ARMCI_PROFILED(int, Malloc_memdev, (void **ptr_arr, armci_size_t bytes,
               const char *device));
ARMCI_PROFILED(int, Malloc_group_memdev, (void **ptr_arr, armci_size_t bytes,
               ARMCI_Group *group, const char *device));
ARMCI_PROFILED(int, Free_memdev, (void *ptr));

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_MEMORY_H */
