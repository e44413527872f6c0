/*
 * ninefold libarmci: which path a collective of armci_msg_* (and a group allocation's
 * step) takes, and the leaders' steps of the shared-memory path.
 *
 * A *whole-node team* is a communicator holding every process of each node it has a
 * process on: the world's, and those of groups made so (checked when the group is
 * made; every member sees the same member list and node tables, so all agree). Its
 * collectives may run on the nodes' shared memory: on each of its nodes every process
 * takes part in every step, so the node's step numbers stay alike on all of them
 * (rule 4 of nf-rma's shm/control.rs), which a group holding part of a node would
 * break. Each team has a communicator of its nodes' leaders (each node's lowest world
 * rank, in node order), made among them alone.
 *
 * Every process decides alike, from what all of them know (the node tables, the
 * communicator, the message's length):
 * 1. Over a whole-node team's communicator (the world group; the default group while
 *    it is the world; SCOPE_ALL and SCOPE_MASTERS; a group of whole nodes), when some
 *    node of the team holds two or more processes and the message is short enough
 *    (below): the node's shared memory (src/coll.rs over nf-rma's node collectives),
 *    and with several nodes MPI among the team's leaders in the middle, before the
 *    node's processes read the result.
 * 2. Over the node's communicator (SCOPE_NODE of the world or of a whole-node group),
 *    same condition: the node's shared memory alone.
 * 3. Over the communicator of a group holding part of one node (two or more of its
 *    processes, none elsewhere), same lengths: blocks of the group's own with step
 *    numbers of its own (src/gcoll.rs), allocated when the group is made.
 * 4. Otherwise (groups holding part of a node and processes on other nodes,
 *    armci_msg_reduce to one process, armci_msg_sel, longer messages, every process
 *    on a node of its own): MPI on the communicator.
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

static int node_size(int d) {
    return nfa.node_first[d + 1] - nfa.node_first[d];
}

/* The team's leaders' table and communicator, for the members[0..n) (world ranks;
 * NULL: 0..n) holding whole nodes; the leaders alone make the communicator. */
static void team_leaders(const char *call, struct nfa_team *t, const int *members, int n,
                         int tag) {
    int me = ARMCI_GROUP_WORLD.rank, count = 0, multi = 0;
    t->leaders = MPI_COMM_NULL;
    t->leader_rank = calloc((size_t)nfa.node_count, sizeof(int));
    int *leaders = calloc((size_t)nfa.node_count, sizeof(int));
    if (t->leader_rank == NULL || leaders == NULL)
        nfa_fatal(call, "out of memory for the leaders' table");
    for (int d = 0; d < nfa.node_count; d++) t->leader_rank[d] = -1;
    for (int i = 0; i < n; i++) t->leader_rank[nfa.node_of[members ? members[i] : i]] = 0;
    for (int d = 0; d < nfa.node_count; d++) {
        if (t->leader_rank[d] < 0) continue;
        multi |= node_size(d) > 1;
        leaders[count] = nfa.node_members[nfa.node_first[d]];
        t->leader_rank[d] = count++;
    }
    t->shm = multi;
    if (multi && count > 1 && leaders[t->leader_rank[nfa.node_of[me]]] == me)
        t->leaders = nfa_comm_of_members(leaders, count, tag);
    free(leaders);
}

static void team_free(struct nfa_team *t) {
    if (t->leaders != MPI_COMM_NULL) MPI_Comm_free(&t->leaders);
    free(t->leader_rank);
    t->leader_rank = NULL;
}

void nfa_coll_init(void) {
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
    nfa.world_team.comm = ARMCI_GROUP_WORLD.comm;
    team_leaders("ARMCI_Init", &nfa.world_team, NULL, ARMCI_GROUP_WORLD.size,
                 NFA_TAG_LEADERS_COMM);
    nfa.teams = NULL;
}

void nfa_coll_group_add(const char *call, ARMCI_Group *group) {
    if (group->comm == MPI_COMM_NULL || group->rank < 0) return;
    int *on_node = calloc((size_t)nfa.node_count, sizeof(int));
    if (on_node == NULL) nfa_fatal(call, "out of memory for the group's node counts");
    for (int i = 0; i < group->size; i++) on_node[nfa.node_of[group->grp_to_abs[i]]]++;
    int whole = 1, nodes = 0;
    for (int d = 0; d < nfa.node_count; d++) {
        nodes += on_node[d] != 0;
        if (on_node[d] != 0 && on_node[d] != node_size(d))
            whole = 0;
    }
    free(on_node);
    /* Rule 3: part of one node; every member sees the same counts, so all decide
     * alike, and the allocation runs over the group's MPI wire-up (not a team yet). */
    void *part = NULL;
    if (!whole && nodes == 1 && group->size > 1 && nfa.reduce_max > 0) {
        struct nfa_wireup wu = nfa_wireup_of(group);
        part = nf_armci_rs_gcoll_new(call, &wu);
    }
    if (!whole && part == NULL) return;
    struct nfa_team *t = calloc(1, sizeof *t);
    if (t == NULL) nfa_fatal(call, "out of memory for the group's collectives");
    t->comm = group->comm;
    t->part = part;
    if (part == NULL) {
        team_leaders(call, t, group->grp_to_abs, group->size, NFA_TAG_GROUP_LEADERS);
    } else {
        t->leaders = MPI_COMM_NULL;
        t->leader_rank = NULL;
    }
    t->next = nfa.teams;
    nfa.teams = t;
}

void nfa_coll_group_remove(MPI_Comm comm, ARMCI_Group *group) {
    for (struct nfa_team **p = &nfa.teams; *p != NULL; p = &(*p)->next) {
        if ((*p)->comm != comm) continue;
        struct nfa_team *t = *p;
        *p = t->next;
        if (t->part != NULL) {
            /* Off the list first, so the free's wire-up is MPI's, not these blocks. */
            struct nfa_wireup wu;
            if (group != NULL) wu = nfa_wireup_of(group);
            nf_armci_rs_gcoll_free("ARMCI_Group_free", t->part, group != NULL ? &wu : NULL);
        }
        team_free(t);
        free(t);
        return;
    }
}

void nfa_coll_free(void) {
    while (nfa.teams != NULL) nfa_coll_group_remove(nfa.teams->comm, NULL);
    team_free(&nfa.world_team);
    nfa.world_team.comm = MPI_COMM_NULL;
}

const struct nfa_team *nfa_team_of(MPI_Comm comm) {
    if (comm == MPI_COMM_NULL) return NULL;
    if (comm == nfa.world_team.comm) return &nfa.world_team;
    for (const struct nfa_team *t = nfa.teams; t != NULL; t = t->next)
        if (t->comm == comm) return t;
    return NULL;
}

/* Which shared-memory path a collective of `bytes` (at most `max`) over comm takes:
 * 1 (rule 1; *team is the team), 2 (rule 2), 3 (rule 3; *team is the group's), or
 * 0 (rule 4). */
static int shm_path(MPI_Comm comm, size_t bytes, long max, const struct nfa_team **team) {
    *team = NULL;
    if (max == 0 || bytes > (size_t)max || comm == MPI_COMM_NULL) return 0;
    if (comm == nfa.node_comm) return node_size(nfa.node_of[ARMCI_GROUP_WORLD.rank]) > 1 ? 2 : 0;
    *team = nfa_team_of(comm);
    if (*team != NULL && (*team)->part != NULL) return 3;
    return *team != NULL && (*team)->shm ? 1 : 0;
}

/* The leaders' step of team (NULL: none) with context ctx, or none. */
static struct nfa_across across_of(const struct nfa_team *team, void *ctx,
                                   int (*step)(void *, void *, size_t)) {
    struct nfa_across a = {NULL, NULL};
    if (team != NULL && team->leaders != MPI_COMM_NULL) {
        a.ctx = ctx;
        a.step = step;
    }
    return a;
}

static int leaders_barrier(void *ctx, void *buf, size_t bytes) {
    (void)buf;
    (void)bytes;
    return MPI_Barrier(*(MPI_Comm *)ctx);
}

void nfa_barrier(const char *call, MPI_Comm comm) {
    const struct nfa_team *team;
    int path = shm_path(comm, 0, nfa.reduce_max, &team);
    if (path == 0) {
        MPI_Barrier(comm);
        return;
    }
    if (path == 3) {
        nf_armci_rs_gcoll_barrier(call, team->part);
        return;
    }
    MPI_Comm leaders = team != NULL ? team->leaders : MPI_COMM_NULL;
    struct nfa_across a = across_of(team, &leaders, leaders_barrier);
    nf_armci_rs_barrier(call, &a);
}

/* The leaders' broadcast, from the leader of the root's node. */
struct bcast_ctx {
    MPI_Comm leaders;
    int root; /* the rank of the root's node in leaders */
};

static int leaders_bcast(void *ctx, void *buf, size_t bytes) {
    struct bcast_ctx *b = ctx;
    return MPI_Bcast(buf, (int)bytes, MPI_BYTE, b->root, b->leaders);
}

void nfa_bcast(const char *call, void *buf, int len, int root, int comm_root,
               MPI_Comm comm) {
    const struct nfa_team *team;
    int path = shm_path(comm, (size_t)len, nfa.bcast_max, &team);
    if (path == 0) {
        MPI_Bcast(buf, len, MPI_BYTE, comm_root, comm);
        return;
    }
    if (path == 3) {
        nf_armci_rs_gcoll_bcast(call, team->part, buf, len, root);
        return;
    }
    struct bcast_ctx ctx = {MPI_COMM_NULL, 0};
    if (team != NULL) {
        ctx.leaders = team->leaders;
        ctx.root = team->leader_rank[nfa.node_of[root]];
    }
    struct nfa_across a = across_of(team, &ctx, leaders_bcast);
    nf_armci_rs_bcast(call, buf, len, root, &a);
}

/* The leaders' all-reduce of whole elements. */
struct reduce_ctx {
    MPI_Comm leaders;
    MPI_Datatype dt;
    MPI_Op op;
    int elem;
};

static int leaders_allreduce(void *ctx, void *buf, size_t bytes) {
    struct reduce_ctx *r = ctx;
    return MPI_Allreduce(MPI_IN_PLACE, buf, (int)(bytes / (size_t)r->elem), r->dt, r->op,
                         r->leaders);
}

int nfa_allreduce_shm(const char *call, void *x, int n, int type, enum nfa_gop op,
                      MPI_Datatype dt, MPI_Op mop, MPI_Comm comm) {
    int elem;
    MPI_Type_size(dt, &elem);
    const struct nfa_team *team;
    int path = shm_path(comm, (size_t)n * (size_t)elem, nfa.reduce_max, &team);
    if (path == 0) return 0;
    if (path == 3) {
        nf_armci_rs_gcoll_allreduce(call, team->part, x, n, type, (int)op);
        return 1;
    }
    struct reduce_ctx ctx = {team != NULL ? team->leaders : MPI_COMM_NULL, dt, mop, elem};
    struct nfa_across a = across_of(team, &ctx, leaders_allreduce);
    nf_armci_rs_allreduce(call, x, n, type, (int)op, &a);
    return 1;
}
