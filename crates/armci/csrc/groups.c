/*
 * ninefold libarmci: process groups over MPI communicators.
 *
 * Global Arrays copies ARMCI_Group values around and reads their fields, so a
 * group is entirely described by its struct: `comm` (MPI_Comm_create_group among
 * the members, a real communicator GA can call MPI on), rank / size, and the
 * rank translation tables, allocated here and released by ARMCI_Group_free. A group
 * holding whole nodes is also a team of coll.c (found by its `comm`), whose
 * collectives and allocations take the nodes' shared memory like the world's; so is
 * a group holding part of a node, through an nf_rma::NodeTeam of its own (coll.c).
 * The world and default groups live in `nfa` (setup.c).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void nfa_group_fill(ARMCI_Group *group) {
    group->grp_to_abs = NULL;
    group->abs_to_grp = NULL;
    group->noncoll_pgroup_comm = MPI_COMM_NULL;
    if (group->comm == MPI_COMM_NULL) {
        group->rank = -1;
        group->size = 0;
        return;
    }
    MPI_Comm_rank(group->comm, &group->rank);
    MPI_Comm_size(group->comm, &group->size);
    /* The world's tables are filled while ARMCI_GROUP_WORLD is being set up. */
    int is_world = group == &ARMCI_GROUP_WORLD;
    int world_size = is_world ? group->size : ARMCI_GROUP_WORLD.size;
    MPI_Group world_grp, grp;
    MPI_Comm_group(is_world ? group->comm : ARMCI_GROUP_WORLD.comm, &world_grp);
    MPI_Comm_group(group->comm, &grp);
    int *ids = malloc(sizeof(int) * (size_t)world_size);
    group->grp_to_abs = malloc(sizeof(int) * (size_t)group->size);
    group->abs_to_grp = malloc(sizeof(int) * (size_t)world_size);
    if (!ids || !group->grp_to_abs || !group->abs_to_grp)
        nfa_fatal("ARMCI_Group_create", "out of memory for the rank tables of a group of %d",
                  group->size);
    for (int i = 0; i < world_size; i++) ids[i] = i;
    MPI_Group_translate_ranks(grp, group->size, ids, world_grp, group->grp_to_abs);
    MPI_Group_translate_ranks(world_grp, world_size, ids, grp, group->abs_to_grp);
    for (int i = 0; i < world_size; i++)
        if (group->abs_to_grp[i] == MPI_UNDEFINED) group->abs_to_grp[i] = -1;
    free(ids);
    MPI_Group_free(&world_grp);
    MPI_Group_free(&grp);
}

void nfa_group_release(ARMCI_Group *group) {
    nfa_coll_group_remove(group->comm, group);
    if (group->comm != MPI_COMM_NULL) MPI_Comm_free(&group->comm);
    free(group->grp_to_abs);
    free(group->abs_to_grp);
    group->comm = MPI_COMM_NULL;
    group->grp_to_abs = NULL;
    group->abs_to_grp = NULL;
    group->rank = -1;
    group->size = 0;
}

void nfa_group_check(const char *call, const ARMCI_Group *group) {
    nfa_require_init(call);
    if (group == NULL) nfa_fatal(call, "argument 'group' is NULL");
    if (group->comm == MPI_COMM_NULL || group->rank < 0)
        nfa_fatal(call, "argument 'group': this process is not a member of the group "
                        "(or the group was freed)");
}

int nfa_group_rank_of(const ARMCI_Group *group, int abs) {
    if (abs < 0 || abs >= ARMCI_GROUP_WORLD.size) return -1;
    if (group->comm == ARMCI_GROUP_WORLD.comm || group->abs_to_grp == NULL) return abs;
    return group->abs_to_grp[abs];
}

MPI_Comm nfa_comm_of_members(const int *members, int n, int tag) {
    MPI_Group world, sub;
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_group(ARMCI_GROUP_WORLD.comm, &world);
    MPI_Group_incl(world, n, members, &sub);
    MPI_Comm_create_group(ARMCI_GROUP_WORLD.comm, sub, tag, &comm);
    MPI_Group_free(&sub);
    MPI_Group_free(&world);
    return comm;
}

/* The wire-up's context is the group (valid during the call that made it). */
static int allgather_cb(void *ctx, const void *mine, void *all, size_t bytes) {
    return MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                         ((ARMCI_Group *)ctx)->comm);
}

static int barrier_cb(void *ctx) {
    return MPI_Barrier(((ARMCI_Group *)ctx)->comm);
}

/* What a failure inside a team's allocation steps is reported as. */
static const char TEAM_ALLOC[] = "ARMCI_Malloc / ARMCI_Free (or their _group forms)";

/* The allgather of a whole-node team (coll.c; the world once the node collectives run,
 * a group of whole nodes): every member ORs its bytes into its own slot of a zeroed
 * table, and the table is all-reduced with bitwise or through the nodes' shared
 * memory, MPI only among the team's leaders, instead of a round of MPI across every
 * host. A table over the shared-memory limit (or NF_ARMCI_COLL_MAX=0) takes
 * MPI_Allgather. */
static int team_allgather_cb(void *ctx, const void *mine, void *all, size_t bytes) {
    const ARMCI_Group *group = ctx;
    size_t n = (size_t)group->size, slot = (bytes + 7) / 8 * 8;
    long words = (long)(slot / 8 * n);
    if (bytes > 0 && words <= nfa.reduce_max / 8) {
        long *table = calloc((size_t)words, sizeof(long));
        if (table == NULL) nfa_fatal(TEAM_ALLOC, "out of memory for a table of %ld words", words);
        memcpy((char *)table + slot * (size_t)group->rank, mine, bytes);
        if (nfa_allreduce_shm(TEAM_ALLOC, table, (int)words, ARMCI_LONG, GOP_BOR, MPI_LONG,
                              MPI_BOR, group->comm)) {
            for (size_t i = 0; i < n; i++)
                memcpy((char *)all + bytes * i, (char *)table + slot * i, bytes);
            free(table);
            return 0;
        }
        free(table);
    }
    return allgather_cb(ctx, mine, all, bytes);
}

/* A team's barrier, a whole-node team's or a part-node one's (coll.c chooses the path). */
static int team_barrier_cb(void *ctx) {
    nfa_barrier(TEAM_ALLOC, ((ARMCI_Group *)ctx)->comm);
    return 0;
}

struct nfa_wireup nfa_wireup_of(ARMCI_Group *group) {
    struct nfa_wireup wu = {
        .ctx = group,
        .rank = group->rank,
        .size = group->size,
        .members = group->grp_to_abs,
        .allgather = allgather_cb,
        .barrier = barrier_cb,
    };
    /* A team (whole nodes, or part of a node with its own collectives) once
     * ARMCI_Init's topology step has run (not the wire-up that starts the rma layer,
     * which keeps MPI's: the node collectives need that layer running). */
    if (nfa.node_of != NULL && nfa_team_of(group->comm) != NULL) {
        wu.allgather = team_allgather_cb;
        wu.barrier = team_barrier_cb;
    }
    return wu;
}

void ARMCI_Group_create_child(int grp_size, int *pid_list, ARMCI_Group *group_out,
                              ARMCI_Group *group_parent) {
    const char *call = "ARMCI_Group_create";
    nfa_group_check(call, group_parent);
    if (group_out == NULL) nfa_fatal(call, "argument 'group_out' is NULL");
    if (grp_size < 1 || grp_size > group_parent->size)
        nfa_fatal(call, "argument 'grp_size' is %d; it must be 1 .. %d (the parent's size)",
                  grp_size, group_parent->size);
    if (pid_list == NULL) nfa_fatal(call, "argument 'pid_list' is NULL");
    for (int i = 0; i < grp_size; i++) {
        if (pid_list[i] < 0 || pid_list[i] >= group_parent->size)
            nfa_fatal(call, "argument 'pid_list[%d]' is %d; parent ranks are 0 .. %d", i,
                      pid_list[i], group_parent->size - 1);
        for (int j = 0; j < i; j++)
            if (pid_list[j] == pid_list[i])
                nfa_fatal(call, "argument 'pid_list' names rank %d twice (entries %d and %d)",
                          pid_list[i], j, i);
    }
    /* Made by its members alone (MPI_Comm_create_group): every process of the parent
     * calls this in the same order, so the members meet, and the others, who get
     * MPI_COMM_NULL as from MPI_Comm_create, take no round across the parent. */
    int member = 0;
    for (int i = 0; i < grp_size; i++) member |= pid_list[i] == group_parent->rank;
    group_out->comm = MPI_COMM_NULL;
    if (member) {
        MPI_Group parent, child;
        MPI_Comm_group(group_parent->comm, &parent);
        MPI_Group_incl(parent, grp_size, pid_list, &child);
        MPI_Comm_create_group(group_parent->comm, child, NFA_TAG_GROUP_CREATE,
                              &group_out->comm);
        MPI_Group_free(&parent);
        MPI_Group_free(&child);
    }
    nfa_group_fill(group_out);
    nfa_coll_group_add(call, group_out);
}

void ARMCI_Group_create(int grp_size, int *pid_list, ARMCI_Group *group_out) {
    ARMCI_Group_create_child(grp_size, pid_list, group_out, &ARMCI_GROUP_DEFAULT);
}

void ARMCI_Group_free(ARMCI_Group *group) {
    nfa_require_init("ARMCI_Group_free");
    if (group == NULL) nfa_fatal("ARMCI_Group_free", "argument 'group' is NULL");
    if (group->comm == ARMCI_GROUP_WORLD.comm && group->comm != MPI_COMM_NULL)
        nfa_fatal("ARMCI_Group_free", "argument 'group' is the world group, which "
                                      "ARMCI_Finalize frees");
    if (group->comm == ARMCI_GROUP_DEFAULT.comm && group->comm != MPI_COMM_NULL)
        /* a freed default falls back to the world */
        ARMCI_GROUP_DEFAULT = ARMCI_GROUP_WORLD;
    nfa_group_release(group);
}

int ARMCI_Group_rank(ARMCI_Group *group, int *rank) {
    if (group == NULL) nfa_fatal("ARMCI_Group_rank", "argument 'group' is NULL");
    if (rank == NULL) nfa_fatal("ARMCI_Group_rank", "argument 'rank' is NULL");
    *rank = group->rank;
    return group->rank >= 0 ? 0 : 1;
}

void ARMCI_Group_size(ARMCI_Group *group, int *size) {
    if (group == NULL) nfa_fatal("ARMCI_Group_size", "argument 'group' is NULL");
    if (size == NULL) nfa_fatal("ARMCI_Group_size", "argument 'size' is NULL");
    *size = group->size;
}

void ARMCI_Group_set_default(ARMCI_Group *group) {
    nfa_group_check("ARMCI_Group_set_default", group);
    ARMCI_GROUP_DEFAULT = *group;
}

void ARMCI_Group_get_default(ARMCI_Group *group_out) {
    nfa_require_init("ARMCI_Group_get_default");
    if (group_out == NULL)
        nfa_fatal("ARMCI_Group_get_default", "argument 'group_out' is NULL");
    *group_out = ARMCI_GROUP_DEFAULT;
}

void ARMCI_Group_get_world(ARMCI_Group *group_out) {
    nfa_require_init("ARMCI_Group_get_world");
    if (group_out == NULL) nfa_fatal("ARMCI_Group_get_world", "argument 'group_out' is NULL");
    *group_out = ARMCI_GROUP_WORLD;
}

int ARMCI_Absolute_id(ARMCI_Group *group, int group_rank) {
    const char *call = "ARMCI_Absolute_id";
    nfa_require_init(call);
    if (group == NULL) nfa_fatal(call, "argument 'group' is NULL");
    if (group_rank < 0 || group_rank >= group->size)
        nfa_fatal(call, "argument 'group_rank' is %d; the group's ranks are 0 .. %d",
                  group_rank, group->size - 1);
    if (group->grp_to_abs == NULL) return group_rank;
    return group->grp_to_abs[group_rank];
}
