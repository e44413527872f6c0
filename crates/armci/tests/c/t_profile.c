/* The profiling interface: linked with wrap_put.c's library before libarmci, every
 * ARMCI_Put reaches the wrapper, which forwards to PARMCI_Put; the data lands as
 * without it, and calls the wrapper does not define (ARMCI_Get) are not counted. */
#include "harness.h"

int wrap_put_calls(void);

enum { PUTS = 5, N = 64 };

static void test_wrapped_put_counts_and_forwards(void) {
    void **ptr = alloc_all(PUTS * N);
    int right = (me + 1) % nproc, left = (me + nproc - 1) % nproc;
    unsigned char buf[N];
    int before = wrap_put_calls();
    for (int k = 0; k < PUTS; k++) {
        for (int i = 0; i < N; i++) buf[i] = pattern(me, (size_t)i, k);
        CHECK(ARMCI_Put(buf, (char *)ptr[right] + k * N, N, right) == 0, "ARMCI_Put");
    }
    ARMCI_Barrier();
    CHECK(wrap_put_calls() - before == PUTS, "the wrapper saw %d puts, want %d",
          wrap_put_calls() - before, PUTS);
    for (int k = 0; k < PUTS; k++) {
        ARMCI_Get((char *)ptr[me] + k * N, buf, N, me);
        for (int i = 0; i < N; i++)
            CHECK(buf[i] == pattern(left, (size_t)i, k), "put %d byte %d: %d", k, i, buf[i]);
    }
    CHECK(wrap_put_calls() - before == PUTS, "ARMCI_Get went through the put wrapper");
    ARMCI_Barrier();
    free_all(ptr);
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_wrapped_put_counts_and_forwards);
    harness_done();
    return 0;
}
