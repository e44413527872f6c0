/*
 * ninefold libarmci, internal: the C side's shared state and the boundary with
 * the Rust side (src/ffi.rs mirrors every declaration in the second half).
 *
 * Who owns what:
 * - C (this folder) owns everything that touches MPI types: init / finalize, the
 *   world and its groups (real communicators), node topology, armci_msg_*,
 *   armci_tcgmsg_*, aborting. It never moves RMA data.
 * - Rust (src/) owns the RMA side: segments, put / get / accumulate, handles,
 *   fences, atomics, mutexes. It reaches MPI only through `struct nfa_wireup`
 *   callbacks and aborts only through nfa_fatal.
 */
#ifndef NFA_INTERNAL_H
#define NFA_INTERNAL_H

#include <stddef.h>

#include <mpi.h>

#include "armci.h"

/* ---- C side ------------------------------------------------------------ */

/* A team (coll.c): a communicator whose collectives may take the nodes' shared
 * memory; whole nodes (the node's collectives) or part of some node (its own). */
struct nfa_team {
    MPI_Comm comm;        /* the team's communicator (the key) */
    MPI_Comm leaders;     /* its nodes' leaders, in node order (MPI_COMM_NULL elsewhere,
                             and with one node) */
    int *leader_rank;     /* node -> its leader's rank in `leaders`; -1: not the team's */
    int shm;              /* some node of the team holds 2+ of its processes */
    void *steps;          /* a part-node team: its nf_rma::NodeTeam (src/coll.rs);
                             NULL for whole-node teams */
    struct nfa_team *next;
};

/* The paths of coll.c's collectives, counted for NF_ARMCI_STATS. */
enum nfa_coll_path { NFA_PATH_MPI, NFA_PATH_NODE, NFA_PATH_TEAM, NFA_PATHS };

/* Process-wide state, valid between ARMCI_Init and ARMCI_Finalize. */
struct nfa_state {
    int init_count;       /* ARMCI_Init calls not yet matched by ARMCI_Finalize */
    MPI_Comm node_comm;   /* the world's processes on this node (made on first use) */
    struct nfa_team world_team; /* the world's collectives on shared memory (coll.c) */
    struct nfa_team *teams;/* the groups of whole nodes, likewise, and of part of a
                              node (their own collectives) */
    unsigned long coll_paths[NFA_PATHS]; /* coll.c's collectives by path */
    long reduce_max;      /* all-reduces and broadcasts longer than these many bytes */
    long bcast_max;       /* stay on MPI (NF_ARMCI_COLL_MAX sets both) */
    int node_count;       /* nodes in the job */
    int *node_of;         /* node of each world rank */
    int *node_first;      /* node_count + 1 offsets into node_members */
    int *node_members;    /* world ranks grouped by node, ascending within a node */
    int tcg_started_mpi;  /* armci_tcgmsg_pbeginf called MPI_Init */
    int tcg_started_armci;/* armci_tcgmsg_pbeginf called ARMCI_Init */
};

extern struct nfa_state nfa;

/* The world group (comm: a duplicate of MPI_COMM_WORLD, or of the communicator given
 * to ARMCI_Init_thread_comm) and the default group (a copy of the world until
 * changed); exported under ARMCI-MPI's names. */
extern ARMCI_Group ARMCI_GROUP_WORLD, ARMCI_GROUP_DEFAULT;

/* Aborts the job if ARMCI_Init has not run; `call` names the caller. */
void nfa_require_init(const char *call);

/*
 * Prints "libarmci: rank R: CALL: MESSAGE" on stderr and aborts the whole job with
 * ARMCI_NF_ABORT_CODE. Every bad argument ends here.
 */
_Noreturn void nfa_fatal(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Fills a group's rank, size and translation tables from its `comm` field. */
void nfa_group_fill(ARMCI_Group *group);
/* Releases what nfa_group_fill allocated and the communicator. */
void nfa_group_release(ARMCI_Group *group);
/* Checks that group is non-NULL and the caller is a member; aborts naming `call`. */
void nfa_group_check(const char *call, const ARMCI_Group *group);
/* Group rank of world rank `abs` in group, or -1. */
int nfa_group_rank_of(const ARMCI_Group *group, int abs);

/* Tags of the communicators made at ARMCI_Init among some processes only. */
#define NFA_TAG_NODE_COMM 0x6e66
#define NFA_TAG_LEADERS_COMM 0x6e67
#define NFA_TAG_GROUP_CREATE 0x6e68
#define NFA_TAG_GROUP_LEADERS 0x6e69
/* A communicator of the world ranks members[0..n) (the caller among them), made by
 * them alone (MPI_Comm_create_group): the world's other processes take no part, so
 * it costs no round across the nodes they are on. */
MPI_Comm nfa_comm_of_members(const int *members, int n, int tag);

/* Works out the node tables (from Rust's domains) and the leaders' communicator
 * (collective). */
void nfa_topology_init(void);
void nfa_topology_free(void);

/* Communicator of `scope` within group (SCOPE_NODE: the group's node share). */
MPI_Comm nfa_scope_comm(const char *call, int scope, const ARMCI_Group *group,
                        int *must_free);

/* Element-wise all-reduce of x over comm; `call` names the caller for errors. */
void nfa_allreduce(const char *call, void *x, int n, const char *op, int type,
                   MPI_Comm comm);

/* The armci_msg_*gop operators (msg_reduce.c parses their names; src/reduce.rs
 * mirrors this order). */
enum nfa_gop { GOP_SUM, GOP_PROD, GOP_MAX, GOP_MIN, GOP_ABSMAX, GOP_ABSMIN, GOP_LAND,
               GOP_LOR, GOP_BAND, GOP_BOR };

/* Collectives over a communicator, on the node's shared memory where coll.c's rules
 * allow, else MPI (collective over comm; `call` names the caller for errors). */
void nfa_coll_init(void);
void nfa_coll_free(void);
/* Registers a new group as a team when it holds whole nodes, or part of a node with
 * two or more members on some node (its own collectives); collective over its
 * members (makes its leaders' communicator among them); `call` names the caller. */
void nfa_coll_group_add(const char *call, ARMCI_Group *group);
/* Forgets the team of comm, if any: collective over the members of `group` (comm's)
 * when that team holds part of a node, local with group NULL (ARMCI_Finalize). */
void nfa_coll_group_remove(MPI_Comm comm, ARMCI_Group *group);
/* The team of comm (whole nodes, or part of a node), or NULL. */
const struct nfa_team *nfa_team_of(MPI_Comm comm);
void nfa_barrier(const char *call, MPI_Comm comm);
/* Broadcast from `root`, a world rank, whose rank in comm is `comm_root`. */
void nfa_bcast(const char *call, void *buf, int len, int root, int comm_root,
               MPI_Comm comm);
/* All-reduce of a checked vector over comm on shared memory; 0 when that path does not
 * apply (the caller uses MPI with dt and mop). */
int nfa_allreduce_shm(const char *call, void *x, int n, int type, enum nfa_gop op,
                      MPI_Datatype dt, MPI_Op mop, MPI_Comm comm);

/* The user reduction operations, under ARMCI-MPI's exported names (msg_reduce.c). */
extern MPI_Op ARMCI_MPI_ABSMAX_OP, ARMCI_MPI_ABSMIN_OP, ARMCI_MPI_SELMAX_OP,
    ARMCI_MPI_SELMIN_OP;

/* Sets up / frees the TCGMSG counter (collective, inside ARMCI_Init / _Finalize). */
void nfa_tcgmsg_init(void);
void nfa_tcgmsg_free(void);

/* ---- boundary with Rust ------------------------------------------------- */

/*
 * Collective operations of one group, handed to Rust as its wire-up: Rust calls
 * them (all members in the same order) to exchange segment addresses and to
 * synchronise. Both return 0, or an MPI error code.
 */
struct nfa_wireup {
    void *ctx;           /* the group's MPI_Comm, opaque to Rust */
    int rank;            /* the caller's rank in the group */
    int size;            /* members */
    const int *members;  /* world rank of each group rank */
    int (*allgather)(void *ctx, const void *mine, void *all, size_t bytes);
    int (*barrier)(void *ctx);
};

/* A wire-up over group (valid while group is). */
struct nfa_wireup nfa_wireup_of(ARMCI_Group *group);

/* Rust: starts the RMA side over the world wire-up; 0, or non-zero with a reason in err. */
int nf_armci_rs_init(const struct nfa_wireup *world, char *err, size_t errlen);
/* Rust: node_of[r] = the node (shared-memory domain) of world rank r, for n ranks. */
int nf_armci_rs_node_of(int *node_of, int n);
/* Rust: completes everything and releases every segment (collective). */
int nf_armci_rs_finalize(const struct nfa_wireup *world);
/* Rust: releases shared resources without talking to anyone. */
void nf_armci_rs_cleanup(void);
/* Rust: collective allocation over `group` (ptr_arr by group rank); aborts on error. */
int nf_armci_rs_malloc(const char *call, const struct nfa_wireup *group, long bytes,
                       void **ptr_arr);
/* Rust: collective free of the allocation whose local address is ptr (may be NULL). */
int nf_armci_rs_free(const char *call, const struct nfa_wireup *group, void *ptr);
/* Rust: a local buffer usable by every transport; NULL when out of memory. */
void *nf_armci_rs_malloc_local(long bytes);
int nf_armci_rs_free_local(const char *call, void *ptr);
/* Rust: the cap of ARMCI_Set_shm_limit (0: none). */
void nf_armci_rs_set_limit(unsigned long long bytes);

/* The step among the nodes' leaders of a shared-memory collective (src/coll.rs): runs
 * in place on `bytes` bytes at buf; 0, or an MPI error code. NULL step: none. */
struct nfa_across {
    void *ctx;
    int (*step)(void *ctx, void *buf, size_t bytes);
};

/* Rust: the collectives of a group holding part of a node (an nf_rma::NodeTeam), made
 * collectively over the group's (MPI) wire-up. */
void *nf_armci_rs_team_new(const char *call, const struct nfa_wireup *wu);
/* Rust: frees them; with the group's wire-up its slots too (collective), with NULL
 * (ARMCI_Finalize) only this process's bookkeeping. */
void nf_armci_rs_team_free(const char *call, void *team, const struct nfa_wireup *wu);

/* Rust: the barrier of the node (team NULL) or of a part-node team around `across`
 * (NULL: this node only). */
int nf_armci_rs_barrier(const char *call, void *team, const struct nfa_across *across);
/* Rust: all-reduce of n elements of ARMCI type `type` with operator `op` in place. */
int nf_armci_rs_allreduce(const char *call, void *team, void *x, int n, int type, int op,
                          const struct nfa_across *across);
/* Rust: broadcast of len bytes from world rank root. */
int nf_armci_rs_bcast(const char *call, void *team, void *buf, int len, int root,
                      const struct nfa_across *across);

/* Rust calls this to abort: like nfa_fatal with a ready message. */
_Noreturn void nfa_fatal_msg(const char *call, const char *msg);
/* Rust calls this to learn the caller's world rank for messages (-1 before init). */
int nfa_world_rank(void);

#endif /* NFA_INTERNAL_H */
