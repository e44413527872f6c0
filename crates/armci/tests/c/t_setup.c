/* Starting and stopping: Init, Init_args, Initialized, Finalize, Cleanup, me / nproc. */
#include "harness.h"

static int argc_saved;
static char **argv_saved;

static void test_initialized(void) {
    CHECK(ARMCI_Initialized() == 1, "ARMCI_Initialized() is %d after ARMCI_Init",
          ARMCI_Initialized());
}

static void test_msg_me_nproc(void) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(armci_msg_me() == rank, "armci_msg_me() %d, MPI rank %d", armci_msg_me(), rank);
    CHECK(armci_msg_nproc() == size, "armci_msg_nproc() %d, MPI size %d", armci_msg_nproc(),
          size);
}

/* A nested Init / Init_args only counts: one Finalize later the library still works. */
static void test_init_nested(void) {
    CHECK(ARMCI_Init() == 0, "second ARMCI_Init failed");
    CHECK(ARMCI_Init_args(&argc_saved, &argv_saved) == 0, "ARMCI_Init_args failed");
    CHECK(ARMCI_Initialized() == 1, "not initialised after nested init");
    CHECK(ARMCI_Finalize() == 0, "inner ARMCI_Finalize failed");
    CHECK(ARMCI_Finalize() == 0, "inner ARMCI_Finalize failed");
    CHECK(ARMCI_Initialized() == 1, "an inner Finalize ended the library");
    void **ptr = alloc_all(64);
    int peer = (me + 1) % nproc;
    char buf[64] = {0};
    CHECK(ARMCI_Get(ptr[peer], buf, 64, peer) == 0, "ARMCI_Get after nested init failed");
    free_all(ptr);
}

int main(int argc, char **argv) {
    argc_saved = argc;
    argv_saved = argv;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    CHECK(ARMCI_Initialized() == 0, "ARMCI_Initialized() is %d before ARMCI_Init",
          ARMCI_Initialized());
    CHECK(ARMCI_Init_args(&argc, &argv) == 0, "ARMCI_Init_args failed");
    nproc = armci_msg_nproc();
    RUN(test_initialized);
    RUN(test_msg_me_nproc);
    RUN(test_init_nested);
    CHECK(ARMCI_Finalize() == 0, "ARMCI_Finalize failed");
    CHECK(ARMCI_Initialized() == 0, "ARMCI_Initialized() is %d after ARMCI_Finalize",
          ARMCI_Initialized());
    ARMCI_Cleanup(); /* harmless after Finalize */
    if (me == 0) printf("ok test_finalize\n");
    MPI_Finalize();
    if (me == 0) printf("done\n");
    return 0;
}
