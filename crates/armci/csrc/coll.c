/*
 * ninefold libarmci: which path a collective of armci_msg_* (and a group allocation's
 * step) takes, and the leaders' steps of the shared-memory path.
 *
 * A *team* is a communicator whose collectives may run on the nodes' shared memory:
 * - a *whole-node team* holds every process of each node it has a process on: the
 *   world's, and those of groups made so (checked when the group is made; every
 *   member sees the same member list and node tables, so all agree). On each of its
 *   nodes every process takes part in every step, so it runs on the node's own
 *   collectives (nf-rma's Rma::node_*), whose step numbers stay alike only then (rule
 *   4 of nf-rma's shm/control.rs);
 * - a *part-node team* is a group holding part of some node, one node or several:
 *   its collectives run on an nf_rma::NodeTeam (src/coll.rs), made with the group,
 *   with slots and step numbers of its own.
 * A group gets a team only when some node holds two or more of its members (else
 * shared memory has nothing to do). Each team has a communicator of its nodes'
 * leaders (each node's lowest world rank among the team's members, in node order),
 * made among them alone.
 *
 * Every process decides alike, from what all of them know (the node tables, the
 * communicator, the message's length):
 * 1. Over a team's communicator (the world group; the default group while it is the
 *    world; SCOPE_ALL and SCOPE_MASTERS; a group of whole nodes; a group holding part
 *    of a node), when some node of the team holds two or more of its processes and
 *    the message is short enough (below): the node's shared memory among the team's
 *    processes there, and with several nodes MPI among the team's leaders in the
 *    middle, before the node's processes read the result. Results are the same bit
 *    for bit everywhere: each node's leader folds its node's parts in ascending world
 *    rank, then the leaders' MPI_Allreduce (in node order) gives every leader the
 *    same bytes, which its node copies.
 * 2. Over the node's communicator (SCOPE_NODE of the world or of a whole-node group),
 *    same condition: the node's shared memory alone.
 * 3. Otherwise (armci_msg_reduce to one process, armci_msg_sel, longer messages,
 *    every process of the communicator on a node of its own, SCOPE_NODE of a
 *    part-node group): MPI on the communicator.
 *
 * NF_ARMCI_STATS (set, any value) prints at ARMCI_Finalize how many collectives took
 * each path (MPI, the node's collectives, a part-node team's), for tests and tuning.
 *
 * Short enough: barriers always; all-reduces up to NFA_REDUCE_MAX bytes, broadcasts up
 * to NFA_BCAST_MAX, where shared memory stops beating MPI with a CPU per process
 * (measured at 2 ranks, docs/architecture.md: past them Open MPI's single-copy
 * transfers win over two copies through 32 KiB buffers). NF_ARMCI_COLL_MAX (bytes;
 * 0: always MPI) replaces both; it is read once at ARMCI_Init, and every process must
 * see the same value, as with any setting of the job.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* Longest all-reduce / broadcast on the shared-memory path by default. */
#define NFA_REDUCE_MAX (128L * 1024)
#define NFA_BCAST_MAX (16L * 1024)

static int node_size(int d) {
    return nfa.node_first[d + 1] - nfa.node_first[d];
}

/* The team's leaders' table and communicator, for the members[0..n) (world ranks;
 * NULL: 0..n): each node's leader is its lowest member; the leaders alone make the
 * communicator. Sets shm: some node holds two or more members. */
static void team_leaders(const char *call, struct nfa_team *t, const int *members, int n,
                         int tag) {
    int me = ARMCI_GROUP_WORLD.rank, count = 0, multi = 0;
    t->leaders = MPI_COMM_NULL;
    t->leader_rank = calloc((size_t)nfa.node_count, sizeof(int));
    int *lowest = calloc((size_t)nfa.node_count, sizeof(int));
    int *on_node = calloc((size_t)nfa.node_count, sizeof(int));
    int *leaders = calloc((size_t)nfa.node_count, sizeof(int));
    if (t->leader_rank == NULL || lowest == NULL || on_node == NULL || leaders == NULL)
        nfa_fatal(call, "out of memory for the leaders' table");
    for (int i = 0; i < n; i++) {
        int w = members ? members[i] : i, d = nfa.node_of[w];
        if (on_node[d]++ == 0 || w < lowest[d]) lowest[d] = w;
    }
    for (int d = 0; d < nfa.node_count; d++) {
        t->leader_rank[d] = -1;
        if (on_node[d] == 0) continue;
        multi |= on_node[d] > 1;
        leaders[count] = lowest[d];
        t->leader_rank[d] = count++;
    }
    t->shm = multi;
    if (multi && count > 1 && leaders[t->leader_rank[nfa.node_of[me]]] == me)
        t->leaders = nfa_comm_of_members(leaders, count, tag);
    free(leaders);
    free(on_node);
    free(lowest);
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
    for (int p = 0; p < NFA_PATHS; p++) nfa.coll_paths[p] = 0;
}

void nfa_coll_group_add(const char *call, ARMCI_Group *group) {
    if (group->comm == MPI_COMM_NULL || group->rank < 0) return;
    int *on_node = calloc((size_t)nfa.node_count, sizeof(int));
    if (on_node == NULL) nfa_fatal(call, "out of memory for the group's node counts");
    for (int i = 0; i < group->size; i++) on_node[nfa.node_of[group->grp_to_abs[i]]]++;
    int whole = 1, multi = 0;
    for (int d = 0; d < nfa.node_count; d++) {
        multi |= on_node[d] > 1;
        if (on_node[d] != 0 && on_node[d] != node_size(d)) whole = 0;
    }
    free(on_node);
    /* A part-node team when some node holds two or more members; every member sees
     * the same counts, so all decide alike, and the allocation runs over the group's
     * MPI wire-up (not a team yet). */
    void *steps = NULL;
    if (!whole) {
        if (!multi || nfa.reduce_max == 0) return;
        struct nfa_wireup wu = nfa_wireup_of(group);
        steps = nf_armci_rs_team_new(call, &wu);
    }
    struct nfa_team *t = calloc(1, sizeof *t);
    if (t == NULL) nfa_fatal(call, "out of memory for the group's collectives");
    t->comm = group->comm;
    t->steps = steps;
    team_leaders(call, t, group->grp_to_abs, group->size, NFA_TAG_GROUP_LEADERS);
    t->next = nfa.teams;
    nfa.teams = t;
}

void nfa_coll_group_remove(MPI_Comm comm, ARMCI_Group *group) {
    for (struct nfa_team **p = &nfa.teams; *p != NULL; p = &(*p)->next) {
        if ((*p)->comm != comm) continue;
        struct nfa_team *t = *p;
        *p = t->next;
        if (t->steps != NULL) {
            /* Off the list first, so the free's wire-up is MPI's, not these slots. */
            struct nfa_wireup wu;
            if (group != NULL) wu = nfa_wireup_of(group);
            nf_armci_rs_team_free("ARMCI_Group_free", t->steps, group != NULL ? &wu : NULL);
        }
        team_free(t);
        free(t);
        return;
    }
}

void nfa_coll_free(void) {
    if (getenv("NF_ARMCI_STATS") != NULL)
        fprintf(stderr,
                "libarmci: rank %d: ARMCI_Finalize: collectives: %lu over MPI, %lu on the "
                "node's shared memory, %lu on part-node teams\n",
                ARMCI_GROUP_WORLD.rank, nfa.coll_paths[NFA_PATH_MPI],
                nfa.coll_paths[NFA_PATH_NODE], nfa.coll_paths[NFA_PATH_TEAM]);
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

/* Which path a collective of `bytes` (at most `max`) over comm takes (rules 1-3; *team
 * is the team, NULL for the node's communicator), counted for NF_ARMCI_STATS. */
static enum nfa_coll_path coll_path(MPI_Comm comm, size_t bytes, long max,
                                    const struct nfa_team **team) {
    enum nfa_coll_path path = NFA_PATH_MPI;
    *team = NULL;
    if (max == 0 || bytes > (size_t)max || comm == MPI_COMM_NULL) {
        /* rule 3 */
    } else if (comm == nfa.node_comm) {
        if (node_size(nfa.node_of[ARMCI_GROUP_WORLD.rank]) > 1) path = NFA_PATH_NODE;
    } else {
        *team = nfa_team_of(comm);
        if (*team != NULL && (*team)->shm)
            path = (*team)->steps != NULL ? NFA_PATH_TEAM : NFA_PATH_NODE;
    }
    nfa.coll_paths[path]++;
    return path;
}

/* The steps of team: its part-node team's, or NULL (the node's). */
static void *steps_of(const struct nfa_team *team) {
    return team != NULL ? team->steps : NULL;
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
    if (coll_path(comm, 0, nfa.reduce_max, &team) == NFA_PATH_MPI) {
        MPI_Barrier(comm);
        return;
    }
    MPI_Comm leaders = team != NULL ? team->leaders : MPI_COMM_NULL;
    struct nfa_across a = across_of(team, &leaders, leaders_barrier);
    nf_armci_rs_barrier(call, steps_of(team), &a);
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
    if (coll_path(comm, (size_t)len, nfa.bcast_max, &team) == NFA_PATH_MPI) {
        MPI_Bcast(buf, len, MPI_BYTE, comm_root, comm);
        return;
    }
    struct bcast_ctx ctx = {MPI_COMM_NULL, 0};
    if (team != NULL) {
        ctx.leaders = team->leaders;
        ctx.root = team->leader_rank[nfa.node_of[root]];
    }
    struct nfa_across a = across_of(team, &ctx, leaders_bcast);
    nf_armci_rs_bcast(call, steps_of(team), buf, len, root, &a);
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
    if (coll_path(comm, (size_t)n * (size_t)elem, nfa.reduce_max, &team) == NFA_PATH_MPI)
        return 0;
    struct reduce_ctx ctx = {team != NULL ? team->leaders : MPI_COMM_NULL, dt, mop, elem};
    struct nfa_across a = across_of(team, &ctx, leaders_allreduce);
    nf_armci_rs_allreduce(call, steps_of(team), x, n, type, (int)op, &a);
    return 1;
}
