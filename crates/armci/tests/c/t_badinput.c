/* Bad input: `t_badinput CASE` makes process 0 call ARMCI wrongly; the library must
 * print an error naming the call and the argument and abort the job (non-zero exit).
 * The driver (tests/c_api.rs) holds the expected message and exit code per case. If
 * the bad call returns, this program says so and exits 3, which fails the case. */
#include "harness.h"

static void bad_call(const char *c, void **ptr, size_t seg) {
    char buf[64] = {0};
    int peer = nproc - 1;
    int count[10] = {8, 2, 2, 2, 2, 2, 2, 2, 2, 2}, stride[9] = {8, 16, 32, 64, 128, 256, 512,
                                                                 1024, 2048};
    if (!strcmp(c, "put-null-src")) ARMCI_Put(NULL, ptr[peer], 8, peer);
    else if (!strcmp(c, "get-null-dst")) ARMCI_Get(ptr[peer], NULL, 8, peer);
    else if (!strcmp(c, "put-outside")) ARMCI_Put(buf, (char *)ptr[peer] + seg + 4096, 8, peer);
    else if (!strcmp(c, "get-crosses-end")) ARMCI_Get((char *)ptr[peer] + seg - 4, buf, 8, peer);
    else if (!strcmp(c, "get-proc-range")) ARMCI_Get(ptr[0], buf, 8, nproc);
    else if (!strcmp(c, "put-negative-bytes")) ARMCI_Put(buf, ptr[peer], -8, peer);
    else if (!strcmp(c, "puts-too-many-levels"))
        ARMCI_PutS(buf, stride, ptr[peer], stride, count, 9, peer);
    else if (!strcmp(c, "gets-bad-count")) {
        count[1] = -1;
        ARMCI_GetS(ptr[peer], stride, buf, stride, count, 1, peer);
    } else if (!strcmp(c, "acc-bad-type")) {
        double s = 1;
        ARMCI_Acc(99, &s, buf, ptr[peer], 8, peer);
    } else if (!strcmp(c, "acc-null-scale")) ARMCI_Acc(ARMCI_ACC_DBL, NULL, buf, ptr[peer], 8, peer);
    else if (!strcmp(c, "malloc-null")) ARMCI_Malloc(NULL, 8);
    else if (!strcmp(c, "rmw-bad-op")) {
        int old;
        ARMCI_Rmw(17, &old, ptr[peer], 1, peer);
    } else if (!strcmp(c, "lock-bad-mutex")) ARMCI_Lock(5, 0);
    else if (!strcmp(c, "free-not-allocated")) ARMCI_Free(buf);
    else if (!strcmp(c, "group-bad-pid")) {
        int list[2] = {0, nproc + 3};
        ARMCI_Group g;
        ARMCI_Group_create(2, list, &g);
    } else if (!strcmp(c, "malloc-over-limit")) {
        void *p2[64];
        ARMCI_Set_shm_limit(1024);
        ARMCI_Malloc(p2, 4096);
    } else if (!strcmp(c, "memdev-unknown-device")) {
        void *p2[64];
        ARMCI_Malloc_memdev(p2, 64, "HBM");
    } else if (!strcmp(c, "wait-bad-handle")) {
        armci_hdl_t h;
        memset(&h, 0, sizeof h);
        ((int *)&h)[1] = 12345; /* a token never issued */
        ARMCI_Wait(&h);
    } else if (!strcmp(c, "error-call")) ARMCI_Error("the program gave up", 7);
    else if (!strcmp(c, "msg-abort")) armci_msg_abort(9);
    else if (!strcmp(c, "gop-unknown-op")) {
        int x = 1;
        armci_msg_igop(&x, 1, "xor");
    } else if (!strcmp(c, "gop-bitwise-double")) {
        double x = 1;
        armci_msg_dgop(&x, 1, "|");
    }
    else {
        fprintf(stderr, "t_badinput: unknown case '%s'\n", c);
        exit(4);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: t_badinput CASE\n");
        return 4;
    }
    if (!strcmp(argv[1], "init-before-mpi")) {
        ARMCI_Init();
        return 3;
    }
    harness_init(&argc, &argv);
    size_t seg = 256;
    void **ptr = alloc_all(seg);
    CHECK(ARMCI_Create_mutexes(2) == 0, "Create_mutexes");
    ARMCI_Barrier();
    if (me == 0) {
        bad_call(argv[1], ptr, seg);
        fprintf(stderr, "t_badinput: the bad call '%s' returned\n", argv[1]);
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    /* The others wait for the abort (bounded: the driver's deadline) */
    ARMCI_Barrier();
    return 0;
}
