/* The entry points ARMCI-MPI added beyond classic ARMCI: ARMCI_Init_thread(_comm),
 * ARMCI_NbPutValue*, ARMCI_Access_begin / _end, and armcix.h's group split / dup,
 * mutex handles and ARMCIX_Progress, each checked for what it does.
 *
 * `t_armcix` initialises with ARMCI_Init_thread at the thread level MPI provides;
 * `t_armcix reversed` initialises with ARMCI_Init_thread_comm over a communicator
 * that ranks the processes backwards, which then is ARMCI's world. */
#include <armci.h>
#include <armcix.h>
#include <message.h>

#include "check.h"

static int world_rank, reversed;

static void harness_sync(void) {
    ARMCI_Barrier();
}

static void **alloc_all(size_t bytes) {
    void **ptr = calloc((size_t)nproc, sizeof(void *));
    CHECK(ptr != NULL, "out of memory");
    CHECK(ARMCI_Malloc(ptr, (armci_size_t)bytes) == 0, "ARMCI_Malloc(%zu) failed", bytes);
    return ptr;
}

static void free_all(void **ptr) {
    ARMCI_Free(ptr[me]);
    free(ptr);
}

/* Reads the long / int at `p` in this process's own segment, in an access epoch
 * (direct access outside one is not allowed under ARMCI-MPI). */
static long own_long(void *p) {
    ARMCI_Access_begin(p);
    long v = *(long *)p;
    ARMCI_Access_end(p);
    return v;
}

static int own_int(void *p) {
    ARMCI_Access_begin(p);
    int v = *(int *)p;
    ARMCI_Access_end(p);
    return v;
}

/* Zeroes `bytes` at `p` in this process's own segment, in an access epoch. */
static void own_zero(void *p, size_t bytes) {
    ARMCI_Access_begin(p);
    memset(p, 0, bytes);
    ARMCI_Access_end(p);
}

/* ARMCI's ranks are the communicator's: backwards in the reversed run. */
static void test_init_ranks(void) {
    CHECK(ARMCI_Initialized(), "ARMCI_Initialized after ARMCI_Init_thread");
    int want = reversed ? nproc - 1 - world_rank : world_rank;
    CHECK(me == want, "ARMCI rank %d, world rank %d", me, world_rank);
    /* A put to ARMCI rank r lands in the process MPI calls r's world rank. */
    void **ptr = alloc_all(sizeof(int));
    int right = (me + 1) % nproc;
    ARMCI_PutValueInt(world_rank, ptr[right], right);
    ARMCI_Barrier();
    int left = (me + nproc - 1) % nproc;
    int left_world = reversed ? nproc - 1 - left : left;
    int got = own_int(ptr[me]);
    CHECK(got == left_world, "from ARMCI rank %d: world rank %d, want %d", left, got,
          left_world);
    free_all(ptr);
}

/* Each process puts four values with the Nb calls into its right neighbour. */
static void test_nb_put_value(void) {
    struct vals {
        int i;
        long l;
        float f;
        double d;
    };
    void **ptr = alloc_all(sizeof(struct vals));
    int right = (me + 1) % nproc, left = (me + nproc - 1) % nproc;
    struct vals *there = ptr[right];
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    CHECK(ARMCI_NbPutValueInt(me + 1, &there->i, right, &h) == 0, "NbPutValueInt");
    ARMCI_Wait(&h);
    ARMCI_INIT_HANDLE(&h);
    CHECK(ARMCI_NbPutValueLong(-(long)me << 40, &there->l, right, &h) == 0, "NbPutValueLong");
    ARMCI_Wait(&h);
    ARMCI_INIT_HANDLE(&h);
    CHECK(ARMCI_NbPutValueFloat(me + 0.25f, &there->f, right, &h) == 0, "NbPutValueFloat");
    ARMCI_Wait(&h);
    ARMCI_INIT_HANDLE(&h);
    CHECK(ARMCI_NbPutValueDouble(me * 1e10 + 0.5, &there->d, right, &h) == 0,
          "NbPutValueDouble");
    ARMCI_Wait(&h);
    ARMCI_Barrier();
    struct vals *mine = ptr[me];
    ARMCI_Access_begin(mine);
    CHECK(mine->i == left + 1 && mine->l == -(long)left << 40 && mine->f == left + 0.25f &&
              mine->d == left * 1e10 + 0.5,
          "got %d %ld %g %g from %d", mine->i, mine->l, mine->f, mine->d, left);
    ARMCI_Access_end(mine);
    free_all(ptr);
}

enum { HALF = 512 };

/* Local stores in an access epoch while the left neighbour puts into the other half
 * of the same segment: afterwards the right neighbour's get sees the stores, and the
 * owner's loads (in a new epoch) see the put. */
static void test_access_begin_end(void) {
    void **ptr = alloc_all(2 * HALF);
    int right = (me + 1) % nproc, left = (me + nproc - 1) % nproc;
    unsigned char *mine = ptr[me], out[HALF], back[HALF];
    for (int i = 0; i < HALF; i++) out[i] = (unsigned char)(me * 29 + i * 3 + 7);
    ARMCI_Barrier();
    ARMCI_Put(out, (char *)ptr[right] + HALF, HALF, right); /* into right's second half */
    ARMCI_Access_begin(mine);
    for (int i = 0; i < HALF; i++) mine[i] = (unsigned char)(me * 13 + i + 1);
    ARMCI_Access_end(mine);
    ARMCI_Barrier();
    ARMCI_Get(ptr[right], back, HALF, right);
    for (int i = 0; i < HALF; i++)
        CHECK(back[i] == (unsigned char)(right * 13 + i + 1), "right's store %d: %d", i,
              back[i]);
    ARMCI_Access_begin(mine + HALF + 17); /* any address inside the segment */
    for (int i = 0; i < HALF; i++)
        CHECK(mine[HALF + i] == (unsigned char)(left * 29 + i * 3 + 7), "left's put %d: %d", i,
              mine[HALF + i]);
    ARMCI_Access_end(mine + HALF + 17);
    ARMCI_Barrier();
    free_all(ptr);
}

/* Split by parity with reversed keys, and dup of the world: sizes, ranks, absolute
 * ids, a group allocation and a group reduction all follow the new groups. */
static void test_group_split_dup(void) {
    ARMCI_Group world, half, copy;
    ARMCI_Group_get_world(&world);
    CHECK(ARMCIX_Group_split(&world, me % 2, -me, &half) == 0, "split");
    int size, rank;
    ARMCI_Group_size(&half, &size);
    ARMCI_Group_rank(&half, &rank);
    int want_size = (nproc + 1 - me % 2) / 2;
    int want_rank = want_size - 1 - me / 2; /* higher world ranks first */
    CHECK(size == want_size && rank == want_rank, "split: size %d rank %d, want %d %d", size,
          rank, want_size, want_rank);
    CHECK(ARMCI_Absolute_id(&half, rank) == me, "split: absolute id of own rank");
    long sum = 0;
    for (int p = me % 2; p < nproc; p += 2) sum += p;
#ifdef ARMCI_NINEFOLD
    /* Not under ARMCI-MPI: Open MPI's one-sided windows on the two halves of a split
     * share a shared-memory file (seen as one half's sum in the other's memory). */
    void **ptr = calloc((size_t)size, sizeof(void *));
    ARMCI_Malloc_group(ptr, sizeof(long), &half);
    own_zero(ptr[rank], sizeof(long));
    armci_msg_group_barrier(&half);
    long one = 1, total = me;
    ARMCI_Acc(ARMCI_ACC_LNG, &one, &total, ptr[0], sizeof(long), ARMCI_Absolute_id(&half, 0));
    ARMCI_AllFence();
    armci_msg_group_barrier(&half);
    if (rank == 0) CHECK(own_long(ptr[0]) == sum, "split: acc total %ld, want %ld",
                         own_long(ptr[0]), sum);
    armci_msg_group_barrier(&half);
    ARMCI_Free_group(ptr[rank], &half);
    free(ptr);
#endif
    long g = me;
    armci_msg_group_lgop(&g, 1, "+", &half);
    CHECK(g == sum, "split: group gop %ld, want %ld", g, sum);

    CHECK(ARMCIX_Group_dup(&world, &copy) == 0, "dup");
    ARMCI_Group_size(&copy, &size);
    ARMCI_Group_rank(&copy, &rank);
    CHECK(size == nproc && rank == me, "dup: size %d rank %d", size, rank);
    int x = me + 1;
    armci_msg_group_igop(&x, 1, "+", &copy);
    CHECK(x == nproc * (nproc + 1) / 2, "dup: group gop %d", x);
    ARMCI_Group_free(&half);
    ARMCI_Group_free(&copy);
}

enum { ROUNDS = 25 };

/* Two handles: a counter on process 0 raised under mutex 1 of the first, read-
 * modify-write with plain get / put, ends exact; (ninefold) trylock fails while
 * another process holds the mutex and succeeds after, and the second handle's
 * mutexes are independent of the first's (each process takes its own). */
static void test_mutex_handles(void) {
    ARMCI_Group world;
    ARMCI_Group_get_world(&world);
    armcix_mutex_hdl_t a = ARMCIX_Create_mutexes_hdl(2, &world);
    armcix_mutex_hdl_t b = ARMCIX_Create_mutexes_hdl(nproc, &world);
    CHECK(a != NULL && b != NULL, "ARMCIX_Create_mutexes_hdl");
    void **ptr = alloc_all(sizeof(long));
    own_zero(ptr[me], sizeof(long));
    ARMCI_Barrier();
    for (int k = 0; k < ROUNDS; k++) {
        ARMCIX_Lock_hdl(a, 1, 0);
        long v;
        ARMCI_Get(ptr[0], &v, sizeof v, 0);
        v++;
        ARMCI_Put(&v, ptr[0], sizeof v, 0);
        ARMCI_Fence(0);
        ARMCIX_Unlock_hdl(a, 1, 0);
    }
    ARMCI_Barrier();
    if (me == 0) CHECK(own_long(ptr[0]) == (long)ROUNDS * nproc, "counter %ld, want %ld",
                       own_long(ptr[0]), (long)ROUNDS * nproc);
#ifdef ARMCI_NINEFOLD
    /* Debian builds ARMCI-MPI's queue mutexes, whose trylock waits for the mutex. */
    int host = nproc - 1;
    if (me == 0) ARMCIX_Lock_hdl(a, 0, host);
    ARMCI_Barrier();
    if (me != 0) {
        CHECK(ARMCIX_Trylock_hdl(a, 0, host) != 0, "trylock took a held mutex");
        CHECK(ARMCIX_Trylock_hdl(b, me, host) == 0, "other handle's mutex %d was taken", me);
        ARMCIX_Unlock_hdl(b, me, host);
    }
    ARMCI_Barrier();
    if (me == 0) ARMCIX_Unlock_hdl(a, 0, host);
    ARMCI_Barrier();
    if (me == 1) {
        CHECK(ARMCIX_Trylock_hdl(a, 0, host) == 0, "trylock of a free mutex failed");
        ARMCIX_Unlock_hdl(a, 0, host);
    }
#endif
    ARMCI_Barrier();
    free_all(ptr);
    CHECK(ARMCIX_Destroy_mutexes_hdl(a) == 0 && ARMCIX_Destroy_mutexes_hdl(b) == 0, "destroy");
}

/* Process 0 waits for a flag the last process raises, calling only ARMCIX_Progress
 * and reading its own memory in access epochs. */
static void test_progress(void) {
    void **ptr = alloc_all(2 * sizeof(int));
    own_zero(ptr[me], 2 * sizeof(int));
    ARMCI_Barrier();
    if (me == nproc - 1) {
        int data = 4242;
        ARMCI_Put_flag(&data, ptr[0], sizeof data, (int *)ptr[0] + 1, 1, 0);
    }
    if (me == 0) {
        volatile int *flag = (int *)ptr[0] + 1;
        double deadline = now_s() + 60;
        int seen = 0;
        while (!seen) {
            ARMCIX_Progress();
            ARMCI_Access_begin(ptr[0]);
            seen = *flag == 1;
            ARMCI_Access_end(ptr[0]);
            CHECK(now_s() < deadline, "no flag within 60 s");
        }
        CHECK(own_int(ptr[0]) == 4242, "data before the flag: %d", own_int(ptr[0]));
    }
    ARMCI_Barrier();
    free_all(ptr);
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    reversed = argc > 1 && !strcmp(argv[1], "reversed");
    MPI_Comm comm = MPI_COMM_WORLD;
    if (reversed) MPI_Comm_split(MPI_COMM_WORLD, 0, nproc - 1 - world_rank, &comm);
    int rc = reversed ? ARMCI_Init_thread_comm(provided, comm) : ARMCI_Init_thread(provided);
    CHECK(rc == 0, "ARMCI_Init_thread%s returned %d", reversed ? "_comm" : "", rc);
    me = armci_msg_me();
    RUN(test_init_ranks);
    RUN(test_nb_put_value);
    RUN(test_access_begin_end);
    RUN(test_group_split_dup);
    RUN(test_mutex_handles);
    RUN(test_progress);
    ARMCI_Finalize();
    if (reversed) MPI_Comm_free(&comm);
    MPI_Finalize();
    if (me == 0) printf("done\n");
    fflush(stdout);
    return 0;
}
