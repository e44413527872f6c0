/*
 * ninefold libarmci: which path a collective of armci_msg_* takes, and the leaders'
 * steps of the shared-memory path.
 *
 * Every process decides alike, from what all of them know (the node tables, the
 * communicator, the message's length):
 * 1. Over the world's communicator (the world group; the default group while it is
 *    the world; SCOPE_ALL and SCOPE_MASTERS), when some node holds two or more
 *    processes and the message is short enough (below): the node's shared
 *    memory (src/coll.rs over nf-rma's node collectives), and with several nodes MPI
 *    among the nodes' leaders (leaders_comm: each node's lowest rank) in the middle,
 *    before the node's processes read the result.
 * 2. Over the node's communicator (SCOPE_NODE of the world), same condition: the
 *    node's shared memory alone.
 * 3. Otherwise (other groups, armci_msg_reduce to one process, armci_msg_sel, longer
 *    messages, every process on a node of its own): MPI on the communicator.
 *
 * Short enough: barriers always; all-reduces up to NFA_REDUCE_MAX bytes, broadcasts up
 * to NFA_BCAST_MAX, where shared memory stops beating MPI with a CPU per process
 * (measured at 2 ranks, docs/architecture.md: past them Open MPI's single-copy
 * transfers win over two copies through 32 KiB buffers). NF_ARMCI_COLL_MAX (bytes;
 * 0: always MPI) replaces both; it is read once at ARMCI_Init, and every process must
 * see the same value, as with any setting of the job.
 */
#include <limits.h>
#include <stdlib.h>

#include "internal.h"

/* Longest all-reduce / broadcast on the shared-memory path by default. */
#define NFA_REDUCE_MAX (128L * 1024)
#define NFA_BCAST_MAX (16L * 1024)

void nfa_coll_init(void) {
    int me = ARMCI_GROUP_WORLD.rank;
    nfa.shm_coll = 0;
    for (int d = 0; d < nfa.node_count; d++)
        if (nfa.node_first[d + 1] - nfa.node_first[d] > 1) nfa.shm_coll = 1;
    nfa.reduce_max = NFA_REDUCE_MAX;
    nfa.bcast_max = NFA_BCAST_MAX;
    const char *max = getenv("NF_ARMCI_COLL_MAX");
    if (max != NULL && *max != '\0') {
        char *end;
        long v = strtol(max, &end, 10);
        if (*end != '\0' || v < 0)
            nfa_fatal("ARMCI_Init", "NF_ARMCI_COLL_MAX is \"%s\"; give a byte count >= 0 "
                                    "(0: collectives always over MPI)",
                      max);
        nfa.reduce_max = nfa.bcast_max = v;
    }
    nfa.leaders_comm = MPI_COMM_NULL;
    if (nfa.shm_coll && nfa.node_count > 1 &&
        nfa.node_members[nfa.node_first[nfa.node_of[me]]] == me) {
        /* Among the leaders alone: the others take no part. */
        int *leaders = calloc((size_t)nfa.node_count, sizeof(int));
        if (leaders == NULL) nfa_fatal("ARMCI_Init", "out of memory for the leaders' table");
        for (int d = 0; d < nfa.node_count; d++) leaders[d] = nfa.node_members[nfa.node_first[d]];
        nfa.leaders_comm = nfa_comm_of_members(leaders, nfa.node_count, NFA_TAG_LEADERS_COMM);
        free(leaders);
    }
}

void nfa_coll_free(void) {
    if (nfa.leaders_comm != MPI_COMM_NULL) MPI_Comm_free(&nfa.leaders_comm);
}

/* Which shared-memory path a collective of `bytes` (at most `max`) over comm takes:
 * 1 (rule 1), 2 (rule 2), or 0 (rule 3). */
static int shm_path(MPI_Comm comm, size_t bytes, long max) {
    if (!nfa.shm_coll || max == 0 || bytes > (size_t)max) return 0;
    if (comm == ARMCI_GROUP_WORLD.comm) return 1;
    if (comm == nfa.node_comm) return 2;
    return 0;
}

/* The leaders' step for path `path` with context ctx, or none. */
static struct nfa_across across_of(int path, void *ctx,
                                   int (*step)(void *, void *, size_t)) {
    struct nfa_across a = {NULL, NULL};
    if (path == 1 && nfa.leaders_comm != MPI_COMM_NULL) {
        a.ctx = ctx;
        a.step = step;
    }
    return a;
}

static int leaders_barrier(void *ctx, void *buf, size_t bytes) {
    (void)ctx;
    (void)buf;
    (void)bytes;
    return MPI_Barrier(nfa.leaders_comm);
}

void nfa_barrier(const char *call, MPI_Comm comm) {
    int path = shm_path(comm, 0, nfa.reduce_max);
    if (!path) {
        MPI_Barrier(comm);
        return;
    }
    struct nfa_across a = across_of(path, NULL, leaders_barrier);
    nf_armci_rs_barrier(call, &a);
}

/* The leaders' broadcast: from the leader of the root's node (leaders rank = node). */
static int leaders_bcast(void *ctx, void *buf, size_t bytes) {
    int root_node = *(int *)ctx;
    return MPI_Bcast(buf, (int)bytes, MPI_BYTE, root_node, nfa.leaders_comm);
}

void nfa_bcast(const char *call, void *buf, int len, int root, int comm_root,
               MPI_Comm comm) {
    int path = shm_path(comm, (size_t)len, nfa.bcast_max);
    if (!path) {
        MPI_Bcast(buf, len, MPI_BYTE, comm_root, comm);
        return;
    }
    int root_node = nfa.node_of[root];
    struct nfa_across a = across_of(path, &root_node, leaders_bcast);
    nf_armci_rs_bcast(call, buf, len, root, &a);
}

/* The leaders' all-reduce of whole elements. */
struct reduce_ctx {
    MPI_Datatype dt;
    MPI_Op op;
    int elem;
};

static int leaders_allreduce(void *ctx, void *buf, size_t bytes) {
    struct reduce_ctx *r = ctx;
    return MPI_Allreduce(MPI_IN_PLACE, buf, (int)(bytes / (size_t)r->elem), r->dt, r->op,
                         nfa.leaders_comm);
}

int nfa_allreduce_shm(const char *call, void *x, int n, int type, enum nfa_gop op,
                      MPI_Datatype dt, MPI_Op mop, MPI_Comm comm) {
    int elem;
    MPI_Type_size(dt, &elem);
    int path = shm_path(comm, (size_t)n * (size_t)elem, nfa.reduce_max);
    if (!path) return 0;
    struct reduce_ctx ctx = {dt, mop, elem};
    struct nfa_across a = across_of(path, &ctx, leaders_allreduce);
    nf_armci_rs_allreduce(call, x, n, type, (int)op, &a);
    return 1;
}
