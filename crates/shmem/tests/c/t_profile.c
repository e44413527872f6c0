/* The profiling interface as a tool uses it: the tool's own shmem_long_p counts the
 * calls and reaches the library through pshmem_long_p (pshmem.h); shmem_pcontrol
 * exists and does nothing. */
#include <pshmem.h>
#include <shmem.h>

#include "check.h"

static int counted;

void shmem_long_p(long *dest, long value, int pe) {
    counted++;
    pshmem_long_p(dest, value, pe);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *x = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    shmem_pcontrol(1);
    shmem_long_p(x, me + 1, (me + 1) % npes);
    shmem_pcontrol(0, "levels and extra arguments are the tool's");
    shmem_barrier_all();
    CHECK(*x == (me + npes - 1) % npes + 1, "the put through pshmem_long_p: %ld", *x);
    CHECK(counted == 1, "the wrapper counted %d calls", counted);
    CHECK(pshmem_n_pes() == npes, "pshmem_n_pes");
    PASS("a_tool_wraps_shmem_long_p");
    shmem_free(x);
    shmem_finalize();
    return 0;
}
