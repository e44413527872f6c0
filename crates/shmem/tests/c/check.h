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

#endif
