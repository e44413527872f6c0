/*
 * ninefold libarmci: armci_msg_* point-to-point messages, barriers, broadcasts
 * and the binary tree, over the world group's communicator (a duplicate of
 * MPI_COMM_WORLD, so these never match the program's own MPI messages); barriers
 * and broadcasts of the world take the nodes' shared memory where coll.c says.
 */
#include "internal.h"

int armci_msg_me(void) {
    nfa_require_init("armci_msg_me");
    return ARMCI_GROUP_WORLD.rank;
}

int armci_msg_nproc(void) {
    nfa_require_init("armci_msg_nproc");
    return ARMCI_GROUP_WORLD.size;
}

static void check_peer(const char *call, const char *name, int proc) {
    if (proc < 0 || proc >= ARMCI_GROUP_WORLD.size)
        nfa_fatal(call, "argument '%s' is %d; processes are 0 .. %d", name, proc,
                  ARMCI_GROUP_WORLD.size - 1);
}

static void check_buffer(const char *call, const void *buf, int len) {
    if (len < 0) nfa_fatal(call, "argument 'len' is %d; it must be >= 0", len);
    if (buf == NULL && len > 0) nfa_fatal(call, "argument 'buffer' is NULL");
}

static void check_tag(const char *call, int tag) {
    if (tag < 0) nfa_fatal(call, "argument 'tag' is %d; tags are >= 0", tag);
}

void armci_msg_snd(int tag, void *buffer, int len, int to) {
    const char *call = "armci_msg_snd";
    nfa_require_init(call);
    check_tag(call, tag);
    check_buffer(call, buffer, len);
    check_peer(call, "to", to);
    MPI_Send(buffer, len, MPI_BYTE, to, tag, ARMCI_GROUP_WORLD.comm);
}

/* Receives from `from` (MPI_ANY_SOURCE allowed) and checks the message fitted. */
static int receive(const char *call, int tag, void *buffer, int buflen, int *msglen,
                   int from) {
    MPI_Status st;
    int count = 0;
    check_tag(call, tag);
    check_buffer(call, buffer, buflen);
    MPI_Probe(from, tag, ARMCI_GROUP_WORLD.comm, &st);
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (count > buflen)
        nfa_fatal(call, "a %d-byte message (tag %d) from process %d does not fit the "
                        "%d-byte buffer (argument 'buflen')",
                  count, tag, st.MPI_SOURCE, buflen);
    MPI_Recv(buffer, buflen, MPI_BYTE, st.MPI_SOURCE, tag, ARMCI_GROUP_WORLD.comm, &st);
    if (msglen != NULL) *msglen = count;
    return st.MPI_SOURCE;
}

void armci_msg_rcv(int tag, void *buffer, int buflen, int *msglen, int from) {
    nfa_require_init("armci_msg_rcv");
    check_peer("armci_msg_rcv", "from", from);
    receive("armci_msg_rcv", tag, buffer, buflen, msglen, from);
}

int armci_msg_rcvany(int tag, void *buffer, int buflen, int *msglen) {
    nfa_require_init("armci_msg_rcvany");
    return receive("armci_msg_rcvany", tag, buffer, buflen, msglen, MPI_ANY_SOURCE);
}

void parmci_msg_barrier(void) {
    nfa_require_init("armci_msg_barrier");
    nfa_barrier("armci_msg_barrier", ARMCI_GROUP_WORLD.comm);
}

void parmci_msg_group_barrier(ARMCI_Group *group) {
    nfa_group_check("armci_msg_group_barrier", group);
    nfa_barrier("armci_msg_group_barrier", group->comm);
}

void armci_msg_bintree(int scope, int *Root, int *Up, int *Left, int *Right) {
    const char *call = "armci_msg_bintree";
    nfa_require_init(call);
    if (!Root || !Up || !Left || !Right)
        nfa_fatal(call, "an output argument (Root, Up, Left or Right) is NULL");
    int must_free = 0;
    MPI_Comm comm = nfa_scope_comm(call, scope, &ARMCI_GROUP_WORLD, &must_free);
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    /* Positions in the scope's communicator, reported as world ranks. */
    MPI_Group scope_grp, world_grp;
    MPI_Comm_group(comm, &scope_grp);
    MPI_Comm_group(ARMCI_GROUP_WORLD.comm, &world_grp);
    int pos[4] = {0, me == 0 ? -1 : (me - 1) / 2, 2 * me + 1, 2 * me + 2}, abs[4];
    for (int i = 0; i < 4; i++) {
        if (pos[i] < 0 || pos[i] >= n) {
            abs[i] = -1;
            continue;
        }
        MPI_Group_translate_ranks(scope_grp, 1, &pos[i], world_grp, &abs[i]);
    }
    MPI_Group_free(&scope_grp);
    MPI_Group_free(&world_grp);
    if (must_free) MPI_Comm_free(&comm);
    *Root = abs[0];
    *Up = abs[1];
    *Left = abs[2];
    *Right = abs[3];
}

void armci_msg_group_bcast_scope(int scope, void *buffer, int len, int root,
                                 ARMCI_Group *group) {
    const char *call = "armci_msg_bcast";
    nfa_group_check(call, group);
    check_buffer(call, buffer, len);
    check_peer(call, "root", root);
    int must_free = 0;
    MPI_Comm comm = nfa_scope_comm(call, scope, group, &must_free);
    /* The root's rank in the scope's communicator, from its world rank. */
    MPI_Group scope_grp, world_grp;
    int scope_root = MPI_UNDEFINED;
    MPI_Comm_group(comm, &scope_grp);
    MPI_Comm_group(ARMCI_GROUP_WORLD.comm, &world_grp);
    MPI_Group_translate_ranks(world_grp, 1, &root, scope_grp, &scope_root);
    MPI_Group_free(&scope_grp);
    MPI_Group_free(&world_grp);
    if (scope_root == MPI_UNDEFINED)
        nfa_fatal(call, "argument 'root' is process %d, which is not in the broadcast's "
                        "group and scope (%d)",
                  root, scope);
    nfa_bcast(call, buffer, len, root, scope_root, comm);
    if (must_free) MPI_Comm_free(&comm);
}

void armci_msg_bcast_scope(int scope, void *buffer, int len, int root) {
    nfa_require_init("armci_msg_bcast");
    armci_msg_group_bcast_scope(scope, buffer, len, root, &ARMCI_GROUP_WORLD);
}

void armci_msg_bcast(void *buffer, int len, int root) {
    armci_msg_bcast_scope(SCOPE_ALL, buffer, len, root);
}

void armci_msg_brdcst(void *buffer, int len, int root) {
    armci_msg_bcast_scope(SCOPE_ALL, buffer, len, root);
}

/* ARMCI's definition: every one-sided operation of every process is complete (each
 * fences its own), then a barrier. */
void PARMCI_Barrier(void) {
    nfa_require_init("ARMCI_Barrier");
    PARMCI_AllFence();
    nfa_barrier("ARMCI_Barrier", ARMCI_GROUP_WORLD.comm);
}
