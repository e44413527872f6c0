/* shmem_global_exit(status) on the last PE while the others wait in a barrier that
 * cannot complete: the job must end with that status, every PE stopped. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int status = argc > 1 ? atoi(argv[1]) : 0;
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    if (me == npes - 1) {
        printf("PE %d ends the job with %d\n", me, status);
        fflush(stdout);
        shmem_global_exit(status);
        printf("PE %d: shmem_global_exit returned\n", me);
        return 99;
    }
    shmem_barrier_all();
    printf("PE %d: passed a barrier a PE never reached\n", me);
    return 98;
}
