/* How many collective rounds across the whole world ARMCI_Init and a fresh
 * ARMCI_Malloc make (each one a step across every host, tens of ms on a loaded
 * network), and whether start-up loaded libfabric for a provider carried over
 * sockets.
 *
 * The program defines the MPI collectives itself and counts each call made on a
 * communicator (or, for MPI_Comm_create_group, a group) spanning the world before
 * passing it on to the PMPI_ name: libarmci.so calls MPI through its PLT, so these
 * definitions in the executable take its calls. Open MPI's own internals do not go
 * through them, so the counts are the library's calls.
 */
#include "harness.h"

static long world_rounds;
static int counting;

static void count_comm(MPI_Comm comm) {
    int size, world;
    if (!counting) return;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_size(MPI_COMM_WORLD, &world);
    if (size == world) world_rounds++;
}

int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm comm) {
    count_comm(comm);
    return PMPI_Allgather(s, sc, st, r, rc, rt, comm);
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
    count_comm(comm);
    return PMPI_Allreduce(s, r, n, t, op, comm);
}

int MPI_Barrier(MPI_Comm comm) {
    count_comm(comm);
    return PMPI_Barrier(comm);
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm) {
    count_comm(comm);
    return PMPI_Bcast(b, n, t, root, comm);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) {
    count_comm(comm);
    return PMPI_Comm_dup(comm, out);
}

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *out, MPI_Request *req) {
    count_comm(comm);
    return PMPI_Comm_idup(comm, out, req);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out) {
    count_comm(comm);
    return PMPI_Comm_split(comm, color, key, out);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group g, MPI_Comm *out) {
    count_comm(comm);
    return PMPI_Comm_create(comm, g, out);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group g, int tag, MPI_Comm *out) {
    int size, world;
    PMPI_Group_size(g, &size);
    PMPI_Comm_size(MPI_COMM_WORLD, &world);
    if (counting && size == world) world_rounds++;
    return PMPI_Comm_create_group(comm, g, tag, out);
}

static long init_rounds, malloc_rounds, group_rounds, whole_rounds;

/* MPI's rule: every process makes the same collectives, so every count agrees. */
static void test_every_rank_counts_alike(void) {
    long mine[2] = {init_rounds, malloc_rounds}, lo[2], hi[2];
    PMPI_Allreduce(mine, lo, 2, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(mine, hi, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo[0] == hi[0] && lo[1] == hi[1],
          "world rounds differ between ranks: init %ld..%ld, malloc %ld..%ld", lo[0], hi[0],
          lo[1], hi[1]);
    CHECK(init_rounds > 0, "no world round counted in ARMCI_Init: the counting is broken");
}

#ifdef ARMCI_NINEFOLD
/* Duplicating the world (overlapping the next) and one allgather of the processes'
 * introductions, which carry the service addresses and whether each would open native
 * RMA (no process would with the tcp provider, so that step makes no round); control
 * segment names go without a barrier. The TCGMSG counter's allocation runs on the node
 * collectives (below), the leaders' communicator is made among the leaders alone, the
 * node's on first use. */
static void test_init_rounds(void) {
    CHECK(init_rounds <= 2, "ARMCI_Init made %ld collective rounds across the world; "
                            "at most 2 expected", init_rounds);
}

/* A world allocation's steps (sizes, segments, mapped) run on the node collectives:
 * shared memory within a node, MPI among the nodes' leaders only. Without a node of
 * two processes there are no node collectives, and three rounds of MPI. */
static void test_fresh_malloc_rounds(void) {
    long most = armci_domain_nprocs(ARMCI_DOMAIN_SMP, armci_domain_my_id(ARMCI_DOMAIN_SMP)) > 1
                    ? 0
                    : 3;
    CHECK(malloc_rounds <= most, "a fresh ARMCI_Malloc made %ld collective rounds across "
                                 "the world; at most %ld expected", malloc_rounds, most);
}

/* A group of the lower half is made by its members alone: no round of the world. */
static void test_group_create_rounds(void) {
    if (nproc == 1) return; /* the lower half is the world */
    CHECK(group_rounds == 0, "ARMCI_Group_create of half the world made %ld collective "
                             "rounds across the world; none expected", group_rounds);
}

/* A group of every process in reverse order holds whole nodes: its collectives and a
 * fresh group allocation run on the nodes' shared memory, MPI only among the nodes'
 * leaders, like the world's (every layout here has a node of two processes). */
static void test_whole_node_group_rounds(void) {
    CHECK(whole_rounds == 0, "collectives and a fresh allocation over a group of whole "
                             "nodes made %ld collective rounds across it; none expected",
          whole_rounds);
}

/* With the default provider (tcp) NF_RMA_OFI=auto leaves native RMA alone, so start-up
 * does not load libfabric (seconds per process on a loaded host) even with peers on
 * another host. */
static void test_no_libfabric_for_a_socket_provider(void) {
    FILE *maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL, "cannot read /proc/self/maps");
    char line[4096];
    int loaded = 0;
    while (fgets(line, sizeof line, maps) != NULL)
        if (strstr(line, "nf_ofi_shim") != NULL || strstr(line, "libfabric") != NULL) loaded = 1;
    fclose(maps);
    CHECK(!loaded, "libfabric is mapped after ARMCI_Init with NF_RMA_OFI=auto and the tcp "
                   "provider");
}
#endif

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    counting = 1;
    ARMCI_Init();
    init_rounds = world_rounds;
    me = armci_msg_me();
    nproc = armci_msg_nproc();
    void **ptr = calloc((size_t)nproc, sizeof(void *));
    CHECK(ptr != NULL, "out of memory");
    world_rounds = 0;
    CHECK(ARMCI_Malloc(ptr, 12345) == 0, "ARMCI_Malloc failed");
    malloc_rounds = world_rounds;
    int half = nproc > 1 ? nproc / 2 : 1, lower[64];
    CHECK(nproc <= 128, "at most 128 processes");
    for (int i = 0; i < half; i++) lower[i] = i;
    ARMCI_Group group;
    world_rounds = 0;
    ARMCI_Group_create(half, lower, &group);
    group_rounds = world_rounds;
    counting = 0;
    int grank = -1;
    ARMCI_Group_rank(&group, &grank);
    CHECK((me < half) == (grank == me), "group rank %d of world rank %d (lower %d)", grank, me,
          half);
    ARMCI_Group_free(&group);
    /* A group of whole nodes: every process, in reverse order. */
    int *reversed = malloc(sizeof(int) * (size_t)nproc);
    CHECK(reversed != NULL, "out of memory");
    for (int i = 0; i < nproc; i++) reversed[i] = nproc - 1 - i;
    ARMCI_Group whole;
    ARMCI_Group_create(nproc, reversed, &whole);
    void **gptr = calloc((size_t)nproc, sizeof(void *));
    CHECK(gptr != NULL, "out of memory");
    long x = me;
    double d = me;
    counting = 1;
    world_rounds = 0;
    armci_msg_group_barrier(&whole);
    armci_msg_group_lgop(&x, 1, "+", &whole);
    armci_msg_group_dgop(&d, 1, "max", &whole);
    armci_msg_group_bcast_scope(SCOPE_ALL, &x, sizeof x, nproc - 1, &whole);
    CHECK(ARMCI_Malloc_group(gptr, 4321 + me, &whole) == 0, "ARMCI_Malloc_group failed");
    CHECK(ARMCI_Free_group(gptr[nproc - 1 - me], &whole) == 0, "ARMCI_Free_group failed");
    whole_rounds = world_rounds;
    counting = 0;
    CHECK(x == (long)nproc * (nproc - 1) / 2 && d == nproc - 1, "group sums %ld / %g", x, d);
    ARMCI_Group_free(&whole);
    free(gptr);
    free(reversed);
    RUN(test_every_rank_counts_alike);
#ifdef ARMCI_NINEFOLD
    RUN(test_init_rounds);
    RUN(test_fresh_malloc_rounds);
    RUN(test_group_create_rounds);
    RUN(test_whole_node_group_rounds);
    RUN(test_no_libfabric_for_a_socket_provider);
#endif
    CHECK(ARMCI_Free(ptr[me]) == 0, "ARMCI_Free failed");
    free(ptr);
    harness_done();
    return 0;
}
