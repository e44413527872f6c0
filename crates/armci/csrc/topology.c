/*
 * ninefold libarmci: nodes ("SMP domains") and the queries on them.
 *
 * A node is a domain of the rma layer: the processes that share memory (equal host
 * identity: host name, boot id and network namespace, or NF_HOST). Taking the
 * rma layer's word keeps ARMCI_Same_node true exactly where data moves by load /
 * store. nfa_topology_init (collective over the world, after the Rust side is up):
 * 1. ask the Rust side for every world rank's domain;
 * 2. renumber nodes by their lowest world rank and list members by world rank (a
 *    counting sort);
 * 3. (nothing: the node's communicator, for SCOPE_NODE collectives of the world and
 *    of groups of whole nodes, is made by the first of them, among the node's
 *    processes alone, which all make that call: a program that never asks for it
 *    pays nothing at start-up);
 * 4. choose the collectives' paths and make the leaders' communicator (coll.c).
 */
#include <stdlib.h>

#include "internal.h"

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) nfa_fatal("ARMCI_Init", "out of memory for the node tables");
    return p;
}

void nfa_topology_init(void) {
    int n = ARMCI_GROUP_WORLD.size;
    int *domain = xcalloc((size_t)n, sizeof(int)); /* 1 */
    nf_armci_rs_node_of(domain, n);
    int *renum = xcalloc((size_t)n, sizeof(int)); /* 2: domain id -> node, by first rank */
    for (int d = 0; d < n; d++) renum[d] = -1;
    nfa.node_count = 0;
    for (int r = 0; r < n; r++) {
        if (domain[r] < 0 || domain[r] >= n)
            nfa_fatal("ARMCI_Init", "the rma layer put rank %d in no domain", r);
        if (renum[domain[r]] < 0) renum[domain[r]] = nfa.node_count++;
    }
    nfa.node_of = xcalloc((size_t)n, sizeof(int));
    nfa.node_first = xcalloc((size_t)nfa.node_count + 1, sizeof(int));
    nfa.node_members = xcalloc((size_t)n, sizeof(int));
    for (int r = 0; r < n; r++) {
        nfa.node_of[r] = renum[domain[r]];
        nfa.node_first[nfa.node_of[r] + 1]++;
    }
    for (int d = 0; d < nfa.node_count; d++) nfa.node_first[d + 1] += nfa.node_first[d];
    int *fill = xcalloc((size_t)nfa.node_count, sizeof(int));
    for (int r = 0; r < n; r++) {
        int d = nfa.node_of[r];
        nfa.node_members[nfa.node_first[d] + fill[d]++] = r;
    }
    nfa.node_comm = MPI_COMM_NULL; /* 3 */
    free(fill);
    free(renum);
    free(domain);
    nfa_coll_init(); /* 4 */
}

void nfa_topology_free(void) {
    nfa_coll_free();
    if (nfa.node_comm != MPI_COMM_NULL) MPI_Comm_free(&nfa.node_comm);
    free(nfa.node_of);
    free(nfa.node_first);
    free(nfa.node_members);
    nfa.node_of = nfa.node_first = nfa.node_members = NULL;
    nfa.node_count = 0;
}

static void check_domain(const char *call, armci_domain_t domain) {
    nfa_require_init(call);
    if (domain != ARMCI_DOMAIN_SMP)
        nfa_fatal(call, "argument 'domain' is %d; the only domain is ARMCI_DOMAIN_SMP (%d)",
                  domain, ARMCI_DOMAIN_SMP);
}

static void check_node(const char *call, int id) {
    if (id < 0 || id >= nfa.node_count)
        nfa_fatal(call, "argument 'id' is %d; nodes are 0 .. %d", id, nfa.node_count - 1);
}

static void check_proc(const char *call, const char *name, int proc) {
    if (proc < 0 || proc >= ARMCI_GROUP_WORLD.size)
        nfa_fatal(call, "argument '%s' is %d; processes are 0 .. %d", name, proc,
                  ARMCI_GROUP_WORLD.size - 1);
}

int armci_domain_nprocs(armci_domain_t domain, int id) {
    check_domain("armci_domain_nprocs", domain);
    check_node("armci_domain_nprocs", id);
    return nfa.node_first[id + 1] - nfa.node_first[id];
}

int armci_domain_id(armci_domain_t domain, int glob_proc_id) {
    check_domain("armci_domain_id", domain);
    check_proc("armci_domain_id", "glob_proc_id", glob_proc_id);
    return nfa.node_of[glob_proc_id];
}

int armci_domain_glob_proc_id(armci_domain_t domain, int id, int loc_proc_id) {
    const char *call = "armci_domain_glob_proc_id";
    check_domain(call, domain);
    check_node(call, id);
    int count = nfa.node_first[id + 1] - nfa.node_first[id];
    if (loc_proc_id < 0 || loc_proc_id >= count)
        nfa_fatal(call, "argument 'loc_proc_id' is %d; node %d has processes 0 .. %d",
                  loc_proc_id, id, count - 1);
    return nfa.node_members[nfa.node_first[id] + loc_proc_id];
}

int armci_domain_my_id(armci_domain_t domain) {
    check_domain("armci_domain_my_id", domain);
    return nfa.node_of[ARMCI_GROUP_WORLD.rank];
}

int armci_domain_count(armci_domain_t domain) {
    check_domain("armci_domain_count", domain);
    return nfa.node_count;
}

int armci_domain_same_id(armci_domain_t domain, int proc) {
    check_domain("armci_domain_same_id", domain);
    check_proc("armci_domain_same_id", "proc", proc);
    return nfa.node_of[proc] == nfa.node_of[ARMCI_GROUP_WORLD.rank];
}

int ARMCI_Same_node(int proc) {
    nfa_require_init("ARMCI_Same_node");
    check_proc("ARMCI_Same_node", "proc", proc);
    return nfa.node_of[proc] == nfa.node_of[ARMCI_GROUP_WORLD.rank];
}

int ARMCI_Uses_shm(void) {
    return 0;
}

int ARMCI_Uses_shm_grp(ARMCI_Group *group) {
    if (group == NULL) nfa_fatal("ARMCI_Uses_shm_grp", "argument 'group' is NULL");
    return 0;
}

void ARMCI_Set_shm_limit(unsigned long shmemlimit) {
    nf_armci_rs_set_limit(shmemlimit);
}

MPI_Comm nfa_scope_comm(const char *call, int scope, const ARMCI_Group *group,
                        int *must_free) {
    *must_free = 0;
    switch (scope) {
    case SCOPE_ALL:
    case SCOPE_MASTERS:
        return group->comm;
    case SCOPE_NODE:
        /* A whole-node team's share of this node is the node. */
        if (nfa_team_of(group->comm) != NULL) {
            if (nfa.node_comm == MPI_COMM_NULL) { /* rule 3 of nfa_topology_init */
                int d = nfa.node_of[ARMCI_GROUP_WORLD.rank];
                nfa.node_comm = nfa_comm_of_members(&nfa.node_members[nfa.node_first[d]],
                                                    nfa.node_first[d + 1] - nfa.node_first[d],
                                                    NFA_TAG_NODE_COMM);
            }
            return nfa.node_comm;
        }
        MPI_Comm node;
        MPI_Comm_split(group->comm, nfa.node_of[ARMCI_GROUP_WORLD.rank], group->rank,
                       &node);
        *must_free = 1;
        return node;
    default:
        nfa_fatal(call, "argument 'scope' is %d; it must be SCOPE_ALL (%d), SCOPE_NODE (%d) "
                        "or SCOPE_MASTERS (%d)",
                  scope, SCOPE_ALL, SCOPE_NODE, SCOPE_MASTERS);
    }
}
