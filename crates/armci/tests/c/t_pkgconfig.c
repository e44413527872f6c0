/* Built by tests/abi.rs from an installed libarmci with nothing but
 * `mpicc t_pkgconfig.c $(pkg-config --cflags --libs armci)`: one put and a reduction. */
#include <armci.h>
#include <armcix.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    ARMCI_Init();
    int me = armci_msg_me(), n = armci_msg_nproc();
    void **ptr = calloc((size_t)n, sizeof(void *));
    ARMCI_Malloc(ptr, sizeof(int));
    ARMCI_PutValueInt(me + 100, ptr[(me + 1) % n], (me + 1) % n);
    ARMCI_Barrier();
    int got = *(int *)ptr[me], ok = got == (me + n - 1) % n + 100;
    armci_msg_igop(&ok, 1, "&&");
    if (me == 0) printf(ok ? "installed libarmci works\n" : "wrong value\n");
    ARMCI_Free(ptr[me]);
    free(ptr);
    ARMCI_Finalize();
    MPI_Finalize();
    return ok ? 0 : 1;
}
