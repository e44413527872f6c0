/* Atomics: Rmw (fetch-and-add and swap, int and long), accumulate atomicity, mutexes
 * (Create_mutexes / Lock / Unlock / Destroy_mutexes) guarding a shared counter. */
#include "harness.h"

enum { K = 200 };

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Every fetched value is unique and together they are 0, s, 2s, ...: no lost update. */
static void check_tickets(long *mine, int k, long step, const char *what) {
    long *all = malloc(sizeof(long) * (size_t)k * (size_t)nproc);
    MPI_Allgather(mine, k, MPI_LONG, all, k, MPI_LONG, MPI_COMM_WORLD);
    qsort(all, (size_t)k * (size_t)nproc, sizeof(long), cmp_long);
    for (long i = 0; i < (long)k * nproc; i++)
        CHECK(all[i] == i * step, "%s: ticket %ld is %ld", what, i, all[i]);
    free(all);
}

static void test_rmw_fetch_add_int(void) {
    void **ptr = alloc_all(sizeof(int));
    *(int *)ptr[me] = 0;
    ARMCI_Barrier();
    long got[K];
    for (int k = 0; k < K; k++) {
        int old = -1;
        CHECK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &old, ptr[0], 1, 0) == 0, "Rmw");
        got[k] = old;
    }
    check_tickets(got, K, 1, "fetch-and-add int");
    ARMCI_Barrier();
    if (me == 0) CHECK(*(int *)ptr[0] == K * nproc, "final %d", *(int *)ptr[0]);
    ARMCI_Barrier();
    free_all(ptr);
}

static void test_rmw_fetch_add_long(void) {
    void **ptr = alloc_all(sizeof(long));
    *(long *)ptr[me] = 0;
    ARMCI_Barrier();
    long got[K];
    int last = nproc - 1;
    for (int k = 0; k < K; k++) {
        long old = -1;
        CHECK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &old, ptr[last], 3, last) == 0, "Rmw");
        got[k] = old;
    }
    check_tickets(got, K, 3, "fetch-and-add long");
    ARMCI_Barrier();
    free_all(ptr);
}

/* Swaps pass a set of tokens around: none is lost or duplicated. */
static void test_rmw_swap(void) {
    void **ptr = alloc_all(2 * sizeof(long));
    int *ival = ptr[me];
    long *lval = (long *)ptr[me] + 1;
    *ival = -1;
    *lval = -1;
    ARMCI_Barrier();
    long ti = me, tl = me + 5000000000L;
    int vi = me;
    CHECK(ARMCI_Rmw(ARMCI_SWAP, &vi, ptr[0], 0, 0) == 0, "Rmw swap");
    CHECK(ARMCI_Rmw(ARMCI_SWAP_LONG, &tl, (long *)ptr[0] + 1, 0, 0) == 0, "Rmw swap long");
    ti = vi;
    ARMCI_Barrier();
    long seen[2] = {ti, tl}, final[2] = {0, 0};
    if (me == 0) {
        final[0] = *ival;
        final[1] = *lval;
    }
    MPI_Bcast(final, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    long *all = malloc(sizeof(long) * 2 * (size_t)nproc);
    MPI_Allgather(seen, 2, MPI_LONG, all, 2, MPI_LONG, MPI_COMM_WORLD);
    /* the tokens held by everybody plus the one left behind = -1 and every rank */
    long *ints = malloc(sizeof(long) * ((size_t)nproc + 1));
    long *longs = malloc(sizeof(long) * ((size_t)nproc + 1));
    for (int p = 0; p < nproc; p++) {
        ints[p] = all[2 * p];
        longs[p] = all[2 * p + 1];
    }
    ints[nproc] = final[0];
    longs[nproc] = final[1];
    qsort(ints, (size_t)nproc + 1, sizeof(long), cmp_long);
    qsort(longs, (size_t)nproc + 1, sizeof(long), cmp_long);
    CHECK(ints[0] == -1 && longs[0] == -1, "the initial value was lost");
    for (int p = 0; p < nproc; p++) {
        CHECK(ints[p + 1] == p, "int token %d is %ld", p, ints[p + 1]);
        CHECK(longs[p + 1] == p + 5000000000L, "long token %d is %ld", p, longs[p + 1]);
    }
    free(all);
    free(ints);
    free(longs);
    ARMCI_Barrier();
    free_all(ptr);
}

/* All processes accumulate into the same elements at once: the sums are exact. */
static void test_acc_atomicity(void) {
    enum { E = 32, REPS = 300 };
    void **ptr = alloc_all(E * sizeof(double) + E * sizeof(long));
    double *d = ptr[me];
    long *l = (long *)((double *)ptr[me] + E);
    for (int i = 0; i < E; i++) d[i] = 0, l[i] = 0;
    ARMCI_Barrier();
    double one[E], dscale = 1.0;
    long lone[E], lscale = 1;
    for (int i = 0; i < E; i++) one[i] = 1.0, lone[i] = i + 1;
    for (int r = 0; r < REPS; r++) {
        CHECK(ARMCI_Acc(ARMCI_ACC_DBL, &dscale, one, ptr[0], (int)sizeof one, 0) == 0, "Acc");
        CHECK(ARMCI_Acc(ARMCI_ACC_LNG, &lscale, lone, (double *)ptr[0] + E, (int)sizeof lone,
                        0) == 0,
              "Acc");
    }
    ARMCI_AllFence();
    ARMCI_Barrier();
    if (me == 0)
        for (int i = 0; i < E; i++) {
            CHECK(d[i] == (double)REPS * nproc, "double element %d: %g", i, d[i]);
            CHECK(l[i] == (long)REPS * nproc * (i + 1), "long element %d: %ld", i, l[i]);
        }
    ARMCI_Barrier();
    free_all(ptr);
}

/* A counter read, incremented and written back under a mutex: no update is lost. */
static void test_mutex_counter(void) {
    enum { MUTEXES = 3, ROUNDS = 50 };
    void **ptr = alloc_all(MUTEXES * sizeof(long));
    long *mine = ptr[me];
    for (int m = 0; m < MUTEXES; m++) mine[m] = 0;
    CHECK(ARMCI_Create_mutexes(MUTEXES) == 0, "Create_mutexes");
    ARMCI_Barrier();
    for (int r = 0; r < ROUNDS; r++) {
        int m = (me + r) % MUTEXES, owner = (r + m) % nproc;
        ARMCI_Lock(m, owner);
        long v;
        ARMCI_Get((long *)ptr[owner] + m, &v, sizeof v, owner);
        v += 1;
        ARMCI_Put(&v, (long *)ptr[owner] + m, sizeof v, owner);
        ARMCI_Fence(owner);
        ARMCI_Unlock(m, owner);
    }
    ARMCI_Barrier();
    long total = 0, sum = 0;
    for (int m = 0; m < MUTEXES; m++) total += mine[m];
    MPI_Allreduce(&total, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == (long)ROUNDS * nproc, "counters add up to %ld, want %ld", sum,
          (long)ROUNDS * nproc);
    CHECK(ARMCI_Destroy_mutexes() == 0, "Destroy_mutexes");
    ARMCI_Barrier();
    free_all(ptr);
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_rmw_fetch_add_int);
    RUN(test_rmw_fetch_add_long);
    RUN(test_rmw_swap);
    RUN(test_acc_atomicity);
    RUN(test_mutex_counter);
    harness_done();
    return 0;
}
