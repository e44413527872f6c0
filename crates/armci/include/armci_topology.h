/*
 * ninefold libarmci: which processes share a node.
 *
 * A node ("SMP domain") is the set of processes MPI places on one host
 * (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED). Nodes are numbered 0 .. count-1
 * in the order of their lowest world rank; processes within a node by world rank.
 */
#ifndef NF_ARMCI_TOPOLOGY_H
#define NF_ARMCI_TOPOLOGY_H

#include "armci_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The only kind of domain. */
enum armci_domain_e { ARMCI_DOMAIN_SMP };
typedef int armci_domain_t;

/* Number of processes on node id. */
int armci_domain_nprocs(armci_domain_t domain, int id);
/* Node of world rank glob_proc_id. */
int armci_domain_id(armci_domain_t domain, int glob_proc_id);
/* World rank of the loc_proc_id-th process of node id. */
int armci_domain_glob_proc_id(armci_domain_t domain, int id, int loc_proc_id);
/* The caller's node. */
int armci_domain_my_id(armci_domain_t domain);
/* Number of nodes. */
int armci_domain_count(armci_domain_t domain);
/* 1 if proc is on the caller's node, else 0. */
int armci_domain_same_id(armci_domain_t domain, int proc);
/* 1 if proc is on the caller's node, else 0. */
int ARMCI_Same_node(int proc);

/*
 * 0: addresses that ARMCI_Malloc returns for other processes are theirs, never
 * pointers this process may dereference (same-node data moves through the
 * library, which maps the segments itself).
 */
int ARMCI_Uses_shm(void);
int ARMCI_Uses_shm_grp(ARMCI_Group *group);
/* Caps the bytes this process may hold in ARMCI_Malloc* segments (0: no cap). */
void ARMCI_Set_shm_limit(unsigned long shmemlimit);

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_TOPOLOGY_H */
