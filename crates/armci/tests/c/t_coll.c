/* The collectives of armci_msg_* and ARMCI_Barrier against plain computation: every
 * gop type x operator at lengths of one shared-memory step and of several, broadcast
 * from every root at every size, SCOPE_NODE, barrier ordering (plain stores to
 * node-shared memory before armci_msg_barrier seen by the node after it; puts before
 * ARMCI_Barrier seen by their targets after it).
 *
 * Modes "kill" / "kill-leader": after one barrier the last process (the first, which
 * leads its node) dies by SIGKILL while the others wait in the next one; the driver
 * checks that the job ends, naming it (tests/c_api.rs). Mode "kill-group": the same in
 * the barriers of a group of every process in reverse order (whole nodes, which
 * libarmci runs on the nodes' shared memory), the group's first rank the victim. Mode
 * "kill-part": the same in a group of every process but the first (part of the node:
 * its own team's collectives), the last process the victim, while the first waits in
 * a world barrier. */
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

/* Lengths in elements: one step, and (9000 doubles = 72000 B) several. */
static const int lens[] = {1, 3, 1000, 9000};
#define NLENS (int)(sizeof lens / sizeof lens[0])

/* Process p's element i: small integers, so every result is exact in every type. */
static long input(int p, int i, int salt) {
    return (long)((p * 7 + i * 3 + salt) % 11) - 5;
}

#define ABS(v) ((v) < 0 ? -(v) : (v))

/* check_T(op, n, salt): gop of n elements of T with op against a serial fold of every
 * process's input; BITS(a, b, and) is the bitwise fold (integers) or a (floating). */
#define DEFINE_CHECK(T, NAME, GOP, FMT, BITS)                                             \
    static T fold_##NAME(const char *op, T a, T b) {                                      \
        if (!strcmp(op, "+")) return a + b;                                               \
        if (!strcmp(op, "*")) return a * b;                                               \
        if (!strcmp(op, "max")) return a > b ? a : b;                                     \
        if (!strcmp(op, "min")) return a < b ? a : b;                                     \
        if (!strcmp(op, "absmax")) return ABS(a) > ABS(b) ? ABS(a) : ABS(b);              \
        if (!strcmp(op, "absmin")) return ABS(a) < ABS(b) ? ABS(a) : ABS(b);              \
        if (!strcmp(op, "&&")) return (T)(a != 0 && b != 0);                              \
        if (!strcmp(op, "||")) return (T)(a != 0 || b != 0);                              \
        if (!strcmp(op, "&")) return BITS(a, b, 1);                                       \
        if (!strcmp(op, "|")) return BITS(a, b, 0);                                       \
        CHECK(0, "no serial fold for %s", op);                                            \
        return a;                                                                         \
    }                                                                                     \
    static void check_##NAME(const char *op, int n, int salt) {                           \
        T *x = malloc(sizeof(T) * (size_t)n);                                             \
        CHECK(x != NULL, "out of memory");                                                \
        for (int i = 0; i < n; i++) x[i] = (T)input(me, i, salt);                         \
        GOP(x, n, (char *)op);                                                            \
        int is_abs = !strncmp(op, "abs", 3);                                              \
        for (int i = 0; i < n; i++) {                                                     \
            T want = (T)input(0, i, salt);                                                \
            if (is_abs) want = ABS(want);                                                 \
            for (int p = 1; p < nproc; p++) want = fold_##NAME(op, want, (T)input(p, i, salt)); \
            CHECK(x[i] == want, #T " %s, %d elements: element %d is " FMT ", not " FMT, op, n, \
                  i, x[i], want);                                                         \
        }                                                                                 \
        free(x);                                                                          \
    }

#define INT_BITS(a, b, and) ((and) ? ((a) & (b)) : ((a) | (b)))
#define NO_BITS(a, b, and) (a)

DEFINE_CHECK(int, int, armci_msg_igop, "%d", INT_BITS)
DEFINE_CHECK(long, long, armci_msg_lgop, "%ld", INT_BITS)
DEFINE_CHECK(long long, llong, armci_msg_llgop, "%lld", INT_BITS)
DEFINE_CHECK(float, float, armci_msg_fgop, "%g", NO_BITS)
DEFINE_CHECK(double, double, armci_msg_dgop, "%g", NO_BITS)

/* Every type with every operator in `ops` (bitwise ones on integer types only). */
static void check_ops(const char *const *ops, int nops, int integers_only) {
    for (int k = 0; k < nops; k++)
        for (int l = 0; l < NLENS; l++) {
            int n = lens[l], salt = k * 5 + l;
            check_int(ops[k], n, salt);
            check_long(ops[k], n, salt);
            check_llong(ops[k], n, salt);
            if (integers_only) continue;
            check_float(ops[k], n, salt);
            check_double(ops[k], n, salt);
        }
}

static void test_gop_every_type_and_operator(void) {
    static const char *const all[] = {"+", "*", "max", "min"};
    static const char *const ints[] = {"&&", "||", "&", "|"};
    check_ops(all, 4, 0);
    check_ops(ints, 4, 1);
}

#ifdef ARMCI_NINEFOLD
/* absmax / absmin on every type and logical operators on floating types (ARMCI-MPI
 * has neither). */
static void test_gop_abs_and_floating_logical(void) {
    static const char *const abs_ops[] = {"absmax", "absmin"};
    static const char *const logical[] = {"&&", "||"};
    check_ops(abs_ops, 2, 0);
    for (int l = 0; l < NLENS; l++) {
        check_float(logical[l % 2], lens[l], l);
        check_double(logical[(l + 1) % 2], lens[l], l);
    }
}

/* SCOPE_NODE: the sum over this node's processes only. */
static void test_gop_scope_node(void) {
    int node = armci_domain_my_id(ARMCI_DOMAIN_SMP);
    int here = armci_domain_nprocs(ARMCI_DOMAIN_SMP, node);
    long want = 0;
    for (int k = 0; k < here; k++) want += armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, node, k);
    long x[600];
    for (int i = 0; i < 600; i++) x[i] = me + i;
    armci_msg_gop_scope(SCOPE_NODE, x, 600, "+", ARMCI_LONG);
    for (int i = 0; i < 600; i++)
        CHECK(x[i] == want + (long)here * i, "SCOPE_NODE element %d is %ld", i, x[i]);
    int last = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, node, here - 1);
    int v = me == last ? 4242 : 0;
    armci_msg_bcast_scope(SCOPE_NODE, &v, sizeof v, last);
    CHECK(v == 4242, "SCOPE_NODE broadcast from %d gave %d", last, v);
}
#endif

/* Broadcast from every root at lengths of one step and of several (100000 B). */
static void test_bcast_every_root(void) {
    static const int sizes[] = {0, 1, 8, 1000, 100000};
    unsigned char *buf = malloc(100000);
    CHECK(buf != NULL, "out of memory");
    for (int root = 0; root < nproc; root++)
        for (int s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); s++) {
            int len = sizes[s];
            for (int i = 0; i < len; i++)
                buf[i] = me == root ? pattern(root, (size_t)i, s) : (unsigned char)0xee;
            if (s % 2) armci_msg_bcast(buf, len, root);
            else armci_msg_brdcst(buf, len, root);
            for (int i = 0; i < len; i++)
                CHECK(buf[i] == pattern(root, (size_t)i, s), "root %d, %d bytes: byte %d is %u",
                      root, len, i, buf[i]);
        }
    free(buf);
}

/* Plain stores into memory the node's processes share (a file of their own, not
 * ARMCI's) before armci_msg_barrier are seen by every process of the node after it;
 * a late writer each round. */
static void test_barrier_orders_plain_stores(void) {
    int node = armci_domain_my_id(ARMCI_DOMAIN_SMP);
    int nn = armci_domain_nprocs(ARMCI_DOMAIN_SMP, node), nme = -1;
    for (int k = 0; k < nn; k++)
        if (armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, node, k) == me) nme = k;
    CHECK(nme >= 0, "not among the processes of my own node");
    long token = (long)getpid(); /* rank 0's pid names the job's files */
    MPI_Bcast(&token, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    char path[96];
    snprintf(path, sizeof path, "/dev/shm/t_coll-%ld-node%d", token, node);
    const int pad = 16; /* longs per slot: a cache line or more each */
    size_t bytes = sizeof(long) * (size_t)(pad * nn);
    if (nme == 0) {
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
        CHECK(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0, "create %s", path);
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0, "open %s", path);
    volatile long *slots = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(slots != MAP_FAILED, "map %s", path);
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (nme == 0) unlink(path);
    for (int r = 1; r <= 200; r++) {
        if (r % nn == nme) usleep(300);
        slots[nme * pad] = r;
        armci_msg_barrier();
        for (int q = 0; q < nn; q++)
            CHECK(slots[q * pad] == r, "round %d: node process %d's store reads %ld", r, q,
                  slots[q * pad]);
        armci_msg_barrier();
    }
    munmap((void *)slots, bytes);
}

/* Puts to every process before ARMCI_Barrier are complete at their targets after it. */
static void test_armci_barrier_completes_puts(void) {
    void **ptr = alloc_all(sizeof(long) * (size_t)nproc);
    volatile long *mine = ptr[me];
    for (int r = 1; r <= 50; r++) {
        for (int q = 0; q < nproc; q++) {
            long v = r * 1000L + me;
            ARMCI_Put(&v, (long *)ptr[q] + me, sizeof v, q);
        }
        ARMCI_Barrier();
        for (int p = 0; p < nproc; p++)
            CHECK(mine[p] == r * 1000L + p, "round %d: slot of %d reads %ld", r, p, mine[p]);
        armci_msg_barrier();
    }
    free_all(ptr);
}

/* A random run of broadcasts (every root), all-reduces and barriers, each with a
 * process that comes late or leaves late, so that buffers are reused while a slow
 * reader may still be behind: every result must still be right. */
static void test_mixed_sequence_with_late_processes(void) {
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    enum { MOST = 5000 }; /* doubles: one step of 32 KiB and more */
    double *x = malloc(sizeof(double) * MOST);
    CHECK(x != NULL, "out of memory");
    for (int round = 0; round < 400; round++) {
        int kind = rng_below(&rng, 3), root = rng_below(&rng, nproc);
        int n = rng_below(&rng, 4) == 0 ? 1 + rng_below(&rng, MOST) : 1 + rng_below(&rng, 16);
        int late = rng_below(&rng, nproc), when = rng_below(&rng, 2);
        int pause = 20 + rng_below(&rng, 200);
        if (me == late && when == 0) usleep((useconds_t)pause);
        if (kind == 0) {
            for (int i = 0; i < n; i++) x[i] = me == root ? round * 1000.0 + i : -1.0;
            armci_msg_bcast(x, (int)sizeof(double) * n, root);
            for (int i = 0; i < n; i++)
                CHECK(x[i] == round * 1000.0 + i, "round %d: bcast from %d, %d doubles: "
                      "element %d is %g", round, root, n, i, x[i]);
        } else if (kind == 1) {
            for (int i = 0; i < n; i++) x[i] = (double)(me + 1) * (i % 7 + round);
            armci_msg_dgop(x, n, "+");
            double ranks = (double)nproc * (nproc + 1) / 2;
            for (int i = 0; i < n; i++)
                CHECK(x[i] == ranks * (i % 7 + round), "round %d: dgop of %d: element %d is %g",
                      round, n, i, x[i]);
        } else {
            armci_msg_barrier();
        }
        if (me == late && when == 1) usleep((useconds_t)pause);
    }
    free(x);
}

/* Modes kill / kill-leader / kill-group: see the top. */
static void die_in_a_barrier(int victim, ARMCI_Group *group) {
    if (group) armci_msg_group_barrier(group);
    else armci_msg_barrier();
    if (me == victim) {
        fprintf(stderr, "t_coll: rank %d dies now\n", me);
        fflush(NULL);
        raise(SIGKILL);
    }
    if (group) armci_msg_group_barrier(group);
    else armci_msg_barrier();
    printf("rank %d passed a barrier without rank %d\n", me, victim);
    fflush(stdout);
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    if (argc > 1) {
        if (!strcmp(argv[1], "kill-group")) {
            int *list = malloc(sizeof(int) * (size_t)nproc);
            CHECK(list != NULL, "out of memory");
            for (int i = 0; i < nproc; i++) list[i] = nproc - 1 - i;
            ARMCI_Group g;
            ARMCI_Group_create(nproc, list, &g);
            die_in_a_barrier(nproc - 1, &g);
        }
        if (!strcmp(argv[1], "kill-part")) {
            int *list = malloc(sizeof(int) * (size_t)nproc);
            CHECK(list != NULL, "out of memory");
            for (int i = 1; i < nproc; i++) list[i - 1] = i;
            ARMCI_Group g = {0};
            ARMCI_Group_create(nproc - 1, list, &g);
            int r = -1;
            if (ARMCI_Group_rank(&g, &r) == 0) die_in_a_barrier(nproc - 1, &g);
            armci_msg_barrier();
            return 3; /* never reached: the job ends in the barriers */
        }
        CHECK(!strcmp(argv[1], "kill") || !strcmp(argv[1], "kill-leader"),
              "unknown mode %s", argv[1]);
        die_in_a_barrier(!strcmp(argv[1], "kill") ? nproc - 1 : 0, NULL);
        return 3; /* never reached: the job ends in the barrier */
    }
    RUN(test_gop_every_type_and_operator);
#ifdef ARMCI_NINEFOLD
    RUN(test_gop_abs_and_floating_logical);
    RUN(test_gop_scope_node);
#endif
    RUN(test_bcast_every_root);
    RUN(test_mixed_sequence_with_late_processes);
    RUN(test_barrier_orders_plain_stores);
    RUN(test_armci_barrier_completes_puts);
    harness_done();
    return 0;
}
