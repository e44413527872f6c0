/*
 * ninefold libarmci: process groups.
 *
 * A group is an ARMCI_Group (armci_types.h) holding a real MPI communicator of its
 * members. Creation is collective over the parent group; `pid_list` names members
 * by their rank in the parent. Processes outside the new group get a group whose
 * `comm` is MPI_COMM_NULL, rank -1 and size 0. One-sided calls always take absolute
 * (world) ranks: translate with ARMCI_Absolute_id.
 */
#ifndef NF_ARMCI_GROUPS_H
#define NF_ARMCI_GROUPS_H

#include "armci_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over the default group (the world group until changed). */
void ARMCI_Group_create(int grp_size, int *pid_list, ARMCI_Group *group_out);
/* Collective over group_parent. */
void ARMCI_Group_create_child(int grp_size, int *pid_list, ARMCI_Group *group_out,
                              ARMCI_Group *group_parent);
/* Collective over the group's members; non-members may call it too (no effect). */
void ARMCI_Group_free(ARMCI_Group *group);
/* Stores the caller's rank in group; returns 0, or 1 for a non-member (rank -1). */
int ARMCI_Group_rank(ARMCI_Group *group, int *rank);
void ARMCI_Group_size(ARMCI_Group *group, int *size);
/* The group that ARMCI_Group_create takes as its parent. */
void ARMCI_Group_set_default(ARMCI_Group *group);
void ARMCI_Group_get_default(ARMCI_Group *group_out);
void ARMCI_Group_get_world(ARMCI_Group *group_out);
/* The absolute (world) rank of group_rank in group. */
int ARMCI_Absolute_id(ARMCI_Group *group, int group_rank);

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_GROUPS_H */
