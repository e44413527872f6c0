/* Global Arrays on libarmci: NGA_Read_inc tickets and GA_Lock-protected updates,
 * checked against what a serial run would give (no lost or duplicated update). */
#include "ga_harness.h"

enum { COUNTERS = 4, ROUNDS = 60 };

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void test_read_inc(void) {
    int dims[1] = {COUNTERS}, chunk[1] = {-1};
    int g = NGA_Create(C_LONG, 1, dims, "counters", chunk);
    GA_Zero(g);
    long got[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        int sub[1] = {r % COUNTERS};
        got[r] = NGA_Read_inc(g, sub, 1 + r % COUNTERS);
    }
    long *all = malloc(sizeof(long) * ROUNDS * (size_t)nproc);
    MPI_Allgather(got, ROUNDS, MPI_LONG, all, ROUNDS, MPI_LONG, MPI_COMM_WORLD);
    for (int c = 0; c < COUNTERS; c++) {
        /* counter c advanced by c + 1 each time: its tickets are 0, c+1, 2(c+1), ... */
        long tickets[ROUNDS * 64];
        int n = 0;
        for (int p = 0; p < nproc; p++)
            for (int r = c; r < ROUNDS; r += COUNTERS) tickets[n++] = all[p * ROUNDS + r];
        qsort(tickets, (size_t)n, sizeof(long), cmp_long);
        for (int i = 0; i < n; i++)
            CHECK(tickets[i] == (long)i * (c + 1), "counter %d ticket %d is %ld", c, i,
                  tickets[i]);
        long final = -1;
        int lo[1] = {c}, hi[1] = {c}, ld[1] = {1};
        NGA_Get(g, lo, hi, &final, ld);
        CHECK(final == (long)n * (c + 1), "counter %d ends at %ld", c, final);
    }
    free(all);
    GA_Sync();
    GA_Destroy(g);
}

static void test_lock_counter(void) {
    int dims[1] = {2}, chunk[1] = {-1};
    int g = NGA_Create(C_DBL, 1, dims, "guarded", chunk);
    GA_Zero(g);
    CHECK(GA_Create_mutexes(2), "GA_Create_mutexes");
    for (int r = 0; r < ROUNDS; r++) {
        int m = r % 2, lo[1] = {m}, hi[1] = {m}, ld[1] = {1};
        GA_Lock(m);
        GA_Init_fence();
        double v;
        NGA_Get(g, lo, hi, &v, ld);
        v += 1.0;
        NGA_Put(g, lo, hi, &v, ld);
        GA_Fence();
        GA_Unlock(m);
    }
    GA_Sync();
    double v[2];
    int lo[1] = {0}, hi[1] = {1}, ld[1] = {2};
    NGA_Get(g, lo, hi, v, ld);
    CHECK(v[0] == nproc * ROUNDS / 2.0 && v[1] == nproc * ROUNDS / 2.0, "counters %g %g", v[0],
          v[1]);
    GA_Sync();
    CHECK(GA_Destroy_mutexes(), "GA_Destroy_mutexes");
    GA_Destroy(g);
}

int main(int argc, char **argv) {
    ga_init(&argc, &argv);
    CHECK(nproc <= 64, "at most 64 processes");
    RUN(test_read_inc);
    RUN(test_lock_counter);
    ga_done();
    return 0;
}
