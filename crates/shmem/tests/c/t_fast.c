/* The same-host fast path (csrc/internal.h): PE 0 does N of each small operation on
 * PE 1's heap (shmem_long_p, 8-byte shmem_putmem, shmem_long_g, fetch-add, then a
 * shmem_quiet), the last 8 bytes of the heap included, and M puts to a global
 * variable (static data: always the Rust path); then M barriers on every PE. Every value is checked; the Rust driver (tests/c_api.rs)
 * runs it with NF_SHMEM_STATS=1 and checks how many calls reached the Rust path:
 * on one host only the M static puts (and the library's own few), with every PE
 * its own domain all of them. */
#include <shmem.h>
#include <string.h>

#include "check.h"

#define N 1000
#define M 100

long global_word;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *x = shmem_malloc(4 * sizeof(long));
    char *end = heap_end(x);
    long *last = (long *)(void *)(end - sizeof(long));
    memset(x, 0, 4 * sizeof(long));
    *last = 0;
    shmem_barrier_all();
    if (me == 0 && npes > 1) {
        long sum = 0;
        for (long i = 1; i <= N; i++) {
            shmem_long_p(&x[0], i, 1);
            long v = 2 * i;
            shmem_putmem(&x[1], &v, sizeof v, 1);
            sum += shmem_long_g(&x[1], 1);
            CHECK(shmem_long_atomic_fetch_add(&x[2], i, 1) == i * (i - 1) / 2,
                  "fetch-add %ld", i);
            shmem_quiet();
        }
        CHECK(sum == (long)N * (N + 1), "the gets summed %ld", sum);
        long v = 77;
        shmem_putmem(last, &v, sizeof v, 1);
        CHECK(shmem_long_g(last, 1) == 77, "the heap's last word");
        for (long i = 1; i <= M; i++) shmem_long_p(&global_word, i, 1);
        shmem_quiet();
    }
    shmem_barrier_all();
    if (me == 1) {
        CHECK(x[0] == N, "p left %ld", x[0]);
        CHECK(x[1] == 2 * N, "putmem left %ld", x[1]);
        CHECK(x[2] == (long)N * (N + 1) / 2, "fetch-add left %ld", x[2]);
        CHECK(*last == 77, "the heap's last word is %ld", *last);
        CHECK(global_word == M, "the global is %ld", global_word);
    }
    PASS("fast_path_values");
    /* A same-host barrier is a quiet and the direct barrier, all in C. */
    for (int i = 0; i < M; i++) shmem_barrier_all();
    PASS("barriers");
    shmem_free(x);
    shmem_finalize();
    return 0;
}
