/* A few lines every test program shares: CHECK stops the PE with the file, line
 * and a message (the job then fails naming that PE); PASS prints one line per test
 * on PE 0, which the Rust driver counts. */
#ifndef NF_SHMEM_TEST_CHECK_H
#define NF_SHMEM_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAIL PE %d %s:%d: %s: ", shmem_my_pe(), __FILE__,        \
                    __LINE__, #cond);                                                 \
            fprintf(stderr, __VA_ARGS__);                                             \
            fprintf(stderr, "\n");                                                    \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

#define PASS(name)                                                                    \
    do {                                                                              \
        shmem_barrier_all();                                                          \
        if (shmem_my_pe() == 0) printf("ok %s\n", name);                              \
        fflush(stdout);                                                               \
    } while (0)

/* The end of this PE's symmetric heap (one past its last byte), found from `inside`,
 * any heap address, with shmem_addr_accessible: a doubling search for an address
 * outside, then a bisection (the heap is one contiguous range; nothing symmetric
 * lies just past it). */
static inline char *heap_end(void *inside) {
    char *in = inside;
    size_t lo = 0, hi = 64; /* in + lo is inside; in + hi is outside once found */
    while (shmem_addr_accessible(in + hi, shmem_my_pe())) {
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (shmem_addr_accessible(in + mid, shmem_my_pe()))
            lo = mid;
        else
            hi = mid;
    }
    return in + hi;
}

#endif
