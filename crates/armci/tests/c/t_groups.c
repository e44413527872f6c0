/* Groups: Group_create / create_child / free / rank / size / set_default /
 * get_default / get_world, Absolute_id, Malloc_group / Free_group, the group
 * message calls, and the group's communicator being a real MPI communicator. */
#include "harness.h"

static void test_world_group(void) {
    ARMCI_Group w;
    int r = -5, s = -5;
    ARMCI_Group_get_world(&w);
    CHECK(ARMCI_Group_rank(&w, &r) == 0 && r == me, "world rank %d", r);
    ARMCI_Group_size(&w, &s);
    CHECK(s == nproc, "world size %d", s);
    for (int i = 0; i < nproc; i++) CHECK(ARMCI_Absolute_id(&w, i) == i, "Absolute_id(%d)", i);
    int size = 0;
    MPI_Comm_size(w.comm, &size);
    CHECK(size == nproc, "the world group's comm has %d processes", size);
}

/* Even ranks form a group: ranks, sizes, translation, MPI on its comm, RMA in it. */
static void test_even_group(void) {
    int n = (nproc + 1) / 2, *list = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) list[i] = 2 * i;
    ARMCI_Group g = {0}; /* ARMCI-MPI leaves a non-member's tables unset */
    ARMCI_Group_create(n, list, &g);
    int r = -5;
    int member = ARMCI_Group_rank(&g, &r) == 0;
    CHECK(member == (me % 2 == 0), "membership of %d is %d", me, member);
    if (member) {
        int s = 0;
        ARMCI_Group_size(&g, &s);
        CHECK(s == n && r == me / 2, "rank %d size %d", r, s);
        for (int i = 0; i < n; i++)
            CHECK(ARMCI_Absolute_id(&g, i) == 2 * i, "Absolute_id(%d) = %d", i,
                  ARMCI_Absolute_id(&g, i));
        int sum = 0, one = 1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, g.comm);
        CHECK(sum == n, "MPI_Allreduce over the group's comm gave %d", sum);
        void **ptr = calloc((size_t)n, sizeof(void *));
        CHECK(ARMCI_Malloc_group(ptr, 128, &g) == 0, "Malloc_group");
        for (int i = 0; i < n; i++) CHECK(ptr[i] != NULL, "group pointer %d is NULL", i);
        memset(ptr[r], r + 1, 128);
        armci_msg_group_barrier(&g);
        int peer = (r + 1) % n;
        unsigned char buf[128];
        CHECK(ARMCI_Get(ptr[peer], buf, 128, ARMCI_Absolute_id(&g, peer)) == 0, "Get");
        CHECK(buf[0] == peer + 1 && buf[127] == peer + 1, "group segment of %d holds %d", peer,
              buf[0]);
        long v = me;
        CHECK(ARMCI_Put(&v, ptr[peer], sizeof v, ARMCI_Absolute_id(&g, peer)) == 0, "Put");
        ARMCI_AllFence();
        armci_msg_group_barrier(&g);
        int prev = (r + n - 1) % n;
        CHECK(*(long *)ptr[r] == 2 * prev, "put within the group: %ld", *(long *)ptr[r]);
        armci_msg_group_barrier(&g);
        CHECK(ARMCI_Free_group(ptr[r], &g) == 0, "Free_group");
        free(ptr);
    } else {
        CHECK(r < 0, "a non-member has rank %d", r);
    }
    ARMCI_Barrier();
    ARMCI_Group_free(&g);
    free(list);
}

static void test_group_messages(void) {
    int n = nproc / 2, *list = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) list[i] = nproc - 1 - i; /* the upper half, reversed */
    ARMCI_Group g = {0}; /* ARMCI-MPI leaves a non-member's tables unset */
    ARMCI_Group_create(n, list, &g);
    int r = -1;
    if (ARMCI_Group_rank(&g, &r) == 0) {
        int iv[2] = {me, 1};
        long lv[2] = {me, 1};
        long long llv[2] = {me, 1};
        float fv[2] = {(float)me, 1};
        double dv[2] = {me, 1};
        armci_msg_group_igop(iv, 2, "+", &g);
        armci_msg_group_lgop(lv, 2, "max", &g);
        armci_msg_group_llgop(llv, 2, "min", &g);
        armci_msg_group_fgop(fv, 2, "*", &g);
        armci_msg_group_dgop(dv, 2, "+", &g);
        int sum = 0;
        float prod = 1;
        for (int i = 0; i < n; i++) sum += list[i], prod *= (float)list[i];
        CHECK(iv[0] == sum && iv[1] == n, "igop %d %d", iv[0], iv[1]);
        CHECK(lv[0] == nproc - 1, "lgop max %ld", lv[0]);
        CHECK(llv[0] == nproc - n, "llgop min %lld", llv[0]);
        CHECK(fv[0] == prod && fv[1] == 1, "fgop * %g", fv[0]);
        CHECK(dv[0] == sum && dv[1] == n, "dgop %g", dv[0]);
        long x = me;
        armci_msg_group_gop_scope(SCOPE_ALL, &x, 1, "+", ARMCI_LONG, &g);
        CHECK(x == sum, "gop_scope %ld", x);
        int b = me == list[n - 1] ? 4242 : 0;
        armci_msg_group_bcast_scope(SCOPE_ALL, &b, sizeof b, list[n - 1], &g);
        CHECK(b == 4242, "group broadcast from world rank %d gave %d", list[n - 1], b);
        armci_msg_group_barrier(&g);
    }
    ARMCI_Barrier();
    ARMCI_Group_free(&g);
    free(list);
}

/* Two groups of half the processes each (at 4 or more ranks on one host: part of a
 * node, which libarmci runs through blocks of the group's own), each taking its own
 * number of steps per round (the upper half an extra barrier and broadcast), between
 * world collectives: group barriers order puts, group gops of one step and of several
 * (4800 bytes), group broadcasts from every member, short (some back to back) and of
 * several steps. */
enum { PN_ROUNDS = 40, PN_LONG = 600 };

static void test_part_node_groups_between_world_collectives(void) {
    int half = nproc / 2, upper = me >= half;
    int n = upper ? nproc - half : half, first = upper ? half : 0;
    int *list = malloc(sizeof(int) * (size_t)nproc);
    ARMCI_Group g[2] = {{0}, {0}};
    for (int k = 0; k < 2; k++) { /* every process makes both, in the same order */
        int kn = k ? nproc - half : half, kfirst = k ? half : 0;
        for (int i = 0; i < kn; i++) list[i] = kfirst + i;
        if (kn > 0) ARMCI_Group_create(kn, list, &g[k]);
    }
    ARMCI_Group *mine = &g[upper];
    int r = -1;
    CHECK(n > 0 && ARMCI_Group_rank(mine, &r) == 0 && r == me - first, "rank %d in my half",
          r);
    /* One int per member; a member puts into the next member's before a barrier. */
    void **bases = malloc(sizeof(void *) * (size_t)n);
    ARMCI_Malloc_group(bases, sizeof(int), mine);
    int *slot = bases[r];
    double *v = malloc(sizeof(double) * PN_LONG);
    char *text = malloc(5000);
    for (int round = 0; round < PN_ROUNDS; round++) {
        int to = first + (r + 1) % n, from_rank = (r + n - 1) % n, val = round * 1000 + me;
        ARMCI_Put(&val, bases[(r + 1) % n], sizeof val, to);
        ARMCI_Fence(to);
        armci_msg_group_barrier(mine);
        CHECK(*(volatile int *)slot == round * 1000 + first + from_rank,
              "round %d: my slot holds %d after the group barrier", round, *slot);
        for (int i = 0; i < PN_LONG; i++) v[i] = me * (i + 1) + round;
        armci_msg_group_dgop(v, PN_LONG, "+", mine);
        double members = 0;
        for (int i = 0; i < n; i++) members += first + i;
        for (int i = 0; i < PN_LONG; i += 97)
            CHECK(v[i] == members * (i + 1) + (double)n * round, "round %d: dgop[%d] %g",
                  round, i, v[i]);
        long x = me;
        armci_msg_group_lgop(&x, 1, "max", mine);
        CHECK(x == first + n - 1, "round %d: lgop max %ld", round, x);
        int root = first + round % n, b = me == root ? round : -1;
        armci_msg_group_bcast_scope(SCOPE_ALL, &b, sizeof b, root, mine);
        CHECK(b == round, "round %d: broadcast from %d gave %d", round, root, b);
        for (int j = 0; j < 20; j++) { /* back to back: the root waits for nobody */
            int c = me == root ? round * 10 + j : -1;
            armci_msg_group_bcast_scope(SCOPE_ALL, &c, sizeof c, root, mine);
            CHECK(c == round * 10 + j, "round %d: broadcast %d gave %d", round, j, c);
        }
        if (upper) { /* steps the lower half does not take */
            armci_msg_group_barrier(mine);
            for (int i = 0; i < 5000; i++) text[i] = me == root ? (char)(i + round) : 0;
            armci_msg_group_bcast_scope(SCOPE_ALL, text, 5000, root, mine);
            int same = 1;
            for (int i = 0; i < 5000; i++) same &= text[i] == (char)(i + round);
            CHECK(same, "round %d: a 5000-byte broadcast from %d differs", round, root);
        }
        /* The world's collectives in between. */
        double w = 1;
        armci_msg_dgop(&w, 1, "+");
        CHECK(w == nproc, "round %d: world dgop %g", round, w);
        armci_msg_barrier();
        armci_msg_group_barrier(mine); /* nobody puts into a slot still being checked */
    }
    ARMCI_Free_group(slot, mine);
    free(text);
    free(v);
    free(bases);
    ARMCI_Barrier();
    for (int k = 0; k < 2; k++) ARMCI_Group_free(&g[k]);
    free(list);
}

/* A child of a child; the default group changes where Group_create takes ranks from. */
static void test_default_and_child(void) {
    ARMCI_Group def, world, upper = {0}, child = {0};
    ARMCI_Group_get_default(&def);
    ARMCI_Group_get_world(&world);
    CHECK(def.comm == world.comm, "the default group is not the world at first");
    int n = nproc - 1, *list = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) list[i] = i + 1; /* everyone but 0 */
    ARMCI_Group_create(n, list, &upper);
    int r = -1;
    if (ARMCI_Group_rank(&upper, &r) == 0) {
        ARMCI_Group_set_default(&upper);
        ARMCI_Group got;
        ARMCI_Group_get_default(&got);
        CHECK(got.comm == upper.comm, "get_default did not return the group just set");
        int first = 0; /* rank 0 of `upper` = world rank 1 */
        ARMCI_Group_create(1, &first, &child);
        int cr = -1;
        if (ARMCI_Group_rank(&child, &cr) == 0) {
            CHECK(me == 1 && cr == 0, "child member %d rank %d", me, cr);
            CHECK(ARMCI_Absolute_id(&child, 0) == 1, "child's rank 0 is world %d",
                  ARMCI_Absolute_id(&child, 0));
        } else {
            CHECK(me != 1, "world rank 1 is not in the child");
        }
        ARMCI_Group_free(&child);
        ARMCI_Group_set_default(&world);
        /* the same through create_child with an explicit parent (a fresh struct:
         * ARMCI-MPI leaves a freed non-member's table pointers dangling) */
        memset(&child, 0, sizeof child);
        int last = n - 1;
        ARMCI_Group_create_child(1, &last, &child, &upper);
        if (ARMCI_Group_rank(&child, &cr) == 0)
            CHECK(me == nproc - 1, "explicit child holds world rank %d", me);
        ARMCI_Group_free(&child);
        armci_msg_group_barrier(&upper);
    }
    ARMCI_Barrier();
    ARMCI_Group_free(&upper);
    ARMCI_Group_get_default(&def);
    CHECK(def.comm == world.comm, "the default group was not restored");
    free(list);
}

/* Every process, in reverse order: a group of whole nodes on any layout (on two hosts
 * it spans both), whose collectives and allocations libarmci runs on the nodes' shared
 * memory with MPI among the nodes' leaders; the results must be those of the group's
 * ranks, not the world's. */
static void test_whole_nodes_reversed(void) {
    int *list = malloc(sizeof(int) * (size_t)nproc);
    for (int i = 0; i < nproc; i++) list[i] = nproc - 1 - i;
    ARMCI_Group g = {0};
    ARMCI_Group_create(nproc, list, &g);
    int r = -1, n = nproc;
    CHECK(ARMCI_Group_rank(&g, &r) == 0 && r == nproc - 1 - me, "rank %d of world %d", r, me);
    for (int k = 0; k < 3; k++) {
        long x[3] = {r, 1, r == k % n ? 7 : 0};
        armci_msg_group_lgop(x, 3, "+", &g);
        CHECK(x[0] == (long)n * (n - 1) / 2 && x[1] == n && x[2] == 7, "lgop %ld %ld %ld", x[0],
              x[1], x[2]);
        double d = r;
        armci_msg_group_dgop(&d, 1, "max", &g);
        CHECK(d == n - 1, "dgop max %g", d);
        long node = me;
        armci_msg_group_gop_scope(SCOPE_NODE, &node, 1, "min", ARMCI_LONG, &g);
        CHECK(node <= me && ARMCI_Same_node((int)node), "SCOPE_NODE min %ld", node);
        for (int root = 0; root < n; root++) {
            int b = me == root ? 1000 + root : -1;
            armci_msg_group_bcast_scope(SCOPE_ALL, &b, sizeof b, root, &g);
            CHECK(b == 1000 + root, "broadcast from world rank %d gave %d", root, b);
        }
        armci_msg_group_barrier(&g);
    }
    /* A fresh allocation each round (sizes by group rank), and one taken back. */
    for (int k = 0; k < 3; k++) {
        void **ptr = calloc((size_t)n, sizeof(void *));
        armci_size_t bytes = 256 + 64 * (armci_size_t)r + (k == 2 ? 0 : 8 * k);
        CHECK(ARMCI_Malloc_group(ptr, bytes, &g) == 0, "Malloc_group round %d", k);
        for (int i = 0; i < n; i++) CHECK(ptr[i] != NULL, "group pointer %d is NULL", i);
        long v = 100 * k + me;
        int peer = (r + 1) % n;
        CHECK(ARMCI_Put(&v, ptr[peer], sizeof v, ARMCI_Absolute_id(&g, peer)) == 0, "Put");
        ARMCI_AllFence();
        armci_msg_group_barrier(&g);
        int prev = ARMCI_Absolute_id(&g, (r + n - 1) % n);
        CHECK(*(long *)ptr[r] == 100 * k + prev, "round %d: my part holds %ld, not %d's", k,
              *(long *)ptr[r], prev);
        armci_msg_group_barrier(&g);
        CHECK(ARMCI_Free_group(ptr[r], &g) == 0, "Free_group");
        free(ptr);
    }
    ARMCI_Group_free(&g);
    free(list);
}

/* Every process but the last: at 4 ranks on one host a group holding part of the node;
 * on two hosts x 2 one holding the first host whole and one process of the second,
 * whose collectives libarmci runs on the group's team on each node's shared memory,
 * MPI among the nodes' leaders (the Rust driver checks the path through
 * NF_ARMCI_STATS). Barriers order puts; gops of one step and of several; a sum whose
 * value depends on the fold order is the same on every member (and, in ninefold, the
 * documented order's: by node, then ascending rank); broadcasts from every member,
 * short and of several steps. */
enum { ABL_ROUNDS = 10, ABL_LONG = 5000 };

static void test_all_but_last(void) {
    int n = nproc - 1;
    int *list = malloc(sizeof(int) * (size_t)nproc);
    for (int i = 0; i < n; i++) list[i] = i;
    ARMCI_Group g = {0}; /* ARMCI-MPI leaves a non-member's tables unset */
    ARMCI_Group_create(n, list, &g);
    int r = -1;
    if (ARMCI_Group_rank(&g, &r) == 0) {
        CHECK(r == me, "rank %d in the group of all but the last", r);
        void **bases = malloc(sizeof(void *) * (size_t)n);
        ARMCI_Malloc_group(bases, sizeof(int), &g);
        long *v = malloc(sizeof(long) * ABL_LONG);
        char *text = malloc(12000);
        for (int round = 0; round < ABL_ROUNDS; round++) {
            int val = round * 1000 + me;
            ARMCI_Put(&val, bases[(r + 1) % n], sizeof val, (r + 1) % n);
            ARMCI_Fence((r + 1) % n);
            armci_msg_group_barrier(&g);
            int from = (r + n - 1) % n;
            CHECK(*(volatile int *)bases[r] == round * 1000 + from,
                  "round %d: my slot holds %d after the group barrier", round,
                  *(int *)bases[r]);
            long x[2] = {me, 1};
            armci_msg_group_lgop(x, 2, "+", &g);
            CHECK(x[0] == (long)n * (n - 1) / 2 && x[1] == n, "round %d: lgop %ld %ld", round,
                  x[0], x[1]);
            /* 1 + 1e16 rounds to 1e16: (1 + 1e16) - 1e16 is 0, (1e16 - 1e16) + 1 is 1. */
            double d = r == 0 ? 1.0 : r == 1 ? 1e16 : r == 2 ? -1e16 : 0.0;
            armci_msg_group_dgop(&d, 1, "+", &g);
            double lo = d, hi = d;
            armci_msg_group_dgop(&lo, 1, "min", &g);
            armci_msg_group_dgop(&hi, 1, "max", &g);
            CHECK(lo == d && hi == d, "round %d: members' sums differ: %g .. %g", round, lo, hi);
#ifdef ARMCI_NINEFOLD
            if (n >= 3) CHECK(d == 0.0, "round %d: sum %g, not by node then rank", round, d);
#endif
            for (int i = 0; i < ABL_LONG; i++) v[i] = me * (i + 1) + round;
            armci_msg_group_lgop(v, ABL_LONG, "+", &g); /* 40000 bytes: two steps */
            long members = (long)n * (n - 1) / 2;
            for (int i = 0; i < ABL_LONG; i += 499)
                CHECK(v[i] == members * (i + 1) + (long)n * round, "round %d: lgop[%d] %ld",
                      round, i, v[i]);
            for (int root = 0; root < n; root++) {
                int b = me == root ? round * 10 + root : -1;
                armci_msg_group_bcast_scope(SCOPE_ALL, &b, sizeof b, root, &g);
                CHECK(b == round * 10 + root, "round %d: broadcast from %d gave %d", round, root,
                      b);
                for (int i = 0; i < 12000; i++) text[i] = me == root ? (char)(i + root) : 0;
                armci_msg_group_bcast_scope(SCOPE_ALL, text, 12000, root, &g);
                int same = 1;
                for (int i = 0; i < 12000; i++) same &= text[i] == (char)(i + root);
                CHECK(same, "round %d: a 12000-byte broadcast from %d differs", round, root);
            }
            armci_msg_group_barrier(&g); /* nobody puts into a slot still being checked */
        }
        ARMCI_Free_group(bases[r], &g);
        free(text);
        free(v);
        free(bases);
    }
    ARMCI_Barrier();
    ARMCI_Group_free(&g);
    free(list);
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_world_group);
    RUN(test_even_group);
    RUN(test_group_messages);
    RUN(test_default_and_child);
    RUN(test_whole_nodes_reversed);
    RUN(test_part_node_groups_between_world_collectives);
    RUN(test_all_but_last);
    harness_done();
    return 0;
}
