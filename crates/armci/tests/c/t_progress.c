/* Progress: process 0 computes for seconds without calling the library while the
 * others get from (and finally put a flag into) its memory. Their operations must
 * complete during that time: process 0 only stops computing once every flag has
 * arrived (or a 60 s deadline says the operations stalled). */
#include "harness.h"

enum { WORDS = 4096, GETS = 300 };

static void test_target_computing(void) {
    void **ptr = alloc_all(WORDS * sizeof(long) + (size_t)nproc * sizeof(long));
    long *data = ptr[me];
    volatile long *flags = data + WORDS;
    for (int i = 0; i < WORDS; i++) data[i] = i * 3 + 1;
    for (int p = 0; p < nproc; p++) flags[p] = 0;
    ARMCI_Barrier();
    if (me == 0) {
        double t0 = now_s(), x = 1.0;
        int arrived = 0;
        /* compute: no ARMCI or MPI call until every flag is in (at least 2 s) */
        while (arrived < nproc - 1 || now_s() - t0 < 2.0) {
            for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 1e-9;
            arrived = 0;
            for (int p = 1; p < nproc; p++) arrived += flags[p] == 1;
            CHECK(now_s() - t0 < 60.0,
                  "only %d of %d processes finished their gets while the target computed",
                  arrived, nproc - 1);
        }
        CHECK(x > 0, "the computation");
    } else {
        long buf[64];
        for (int k = 0; k < GETS; k++) {
            int off = (k * 61) % (WORDS - 64);
            CHECK(ARMCI_Get((long *)ptr[0] + off, buf,
                            (int)sizeof buf, 0) == 0,
                  "Get");
            for (int i = 0; i < 64; i++) CHECK(buf[i] == (off + i) * 3 + 1, "get %d word %d", k, i);
        }
        long one = 1;
        CHECK(ARMCI_Put(&one, (long *)ptr[0] + WORDS + me, sizeof one, 0) == 0, "Put");
        ARMCI_Fence(0);
    }
    ARMCI_Barrier();
    free_all(ptr);
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_target_computing);
    harness_done();
    return 0;
}
