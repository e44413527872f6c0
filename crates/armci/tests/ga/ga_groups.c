/* Global Arrays on libarmci: processor groups (GA_Pgroup_create), arrays on a group
 * (NGA_Create_config, and NGA_Create under GA_Pgroup_set_default), put / get / acc
 * and group reductions inside it, checked against serial models. */
#include "ga_harness.h"

enum { ROWS = 31, COLS = 17 };

static void test_array_on_group(void) {
    int n = (nproc + 1) / 2, list[64];
    for (int i = 0; i < n; i++) list[i] = 2 * i; /* the even processes */
    int grp = GA_Pgroup_create(list, n);
    if (me % 2 == 0) {
        CHECK(GA_Pgroup_nnodes(grp) == n && GA_Pgroup_nodeid(grp) == me / 2,
              "group of %d: I am %d", GA_Pgroup_nnodes(grp), GA_Pgroup_nodeid(grp));
        int dims[2] = {ROWS, COLS}, chunk[2] = {-1, -1};
        int g = NGA_Create_config(C_DBL, 2, dims, "on-group", chunk, grp);
        CHECK(g != 0, "NGA_Create_config failed");
        GA_Zero(g);
        int gme = GA_Pgroup_nodeid(grp);
        /* each member puts its rows (i % n == gme), everybody accumulates row 0 */
        double row[COLS];
        for (int i = gme; i < ROWS; i += n) {
            for (int j = 0; j < COLS; j++) row[j] = cell(2, i, j);
            int lo[2] = {i, 0}, hi[2] = {i, COLS - 1}, ld[1] = {COLS};
            NGA_Put(g, lo, hi, row, ld);
        }
        GA_Pgroup_sync(grp);
        double one[COLS], alpha = 2.0;
        for (int j = 0; j < COLS; j++) one[j] = j;
        int lo0[2] = {0, 0}, hi0[2] = {0, COLS - 1}, ld0[1] = {COLS};
        NGA_Acc(g, lo0, hi0, one, ld0, &alpha);
        GA_Pgroup_sync(grp);
        static double all[ROWS * COLS];
        int lo[2] = {0, 0}, hi[2] = {ROWS - 1, COLS - 1}, ld[1] = {COLS};
        NGA_Get(g, lo, hi, all, ld);
        for (int i = 0; i < ROWS; i++)
            for (int j = 0; j < COLS; j++) {
                double want = cell(2, i, j) + (i == 0 ? 2.0 * j * n : 0.0);
                CHECK(all[i * COLS + j] == want, "(%d,%d) %g, serial %g", i, j, all[i * COLS + j],
                      want);
            }
        double x[2] = {me, 1};
        GA_Pgroup_dgop(grp, x, 2, "+");
        double sum = 0;
        for (int i = 0; i < n; i++) sum += list[i];
        CHECK(x[0] == sum && x[1] == n, "group dgop %g %g", x[0], x[1]);
        double dot = GA_Ddot(g, g), serial = 0;
        for (int i = 0; i < ROWS * COLS; i++) serial += all[i] * all[i];
        CHECK(dot == serial, "GA_Ddot on the group's array %g, serial %g", dot, serial);
        GA_Pgroup_sync(grp);
        GA_Destroy(g);
    }
    GA_Sync();
}

/* The default group: arrays created while it is set live on it. */
static void test_default_group(void) {
    int n = nproc / 2, list[64];
    for (int i = 0; i < n; i++) list[i] = nproc - n + i; /* the upper half */
    int grp = GA_Pgroup_create(list, n);
    int world = GA_Pgroup_get_world();
    if (me >= nproc - n) {
        GA_Pgroup_set_default(grp);
        CHECK(GA_Nnodes() == n && GA_Nodeid() == me - (nproc - n),
              "under the default group: %d of %d", GA_Nodeid(), GA_Nnodes());
        int dims[1] = {100}, chunk[1] = {-1};
        int g = NGA_Create(C_INT, 1, dims, "default", chunk);
        GA_Zero(g);
        int one = 1;
        int lo[1] = {0}, hi[1] = {99}, ld[1] = {100}, ones[100];
        for (int i = 0; i < 100; i++) ones[i] = 1;
        NGA_Acc(g, lo, hi, ones, ld, &one);
        GA_Sync();
        int got[100];
        NGA_Get(g, lo, hi, got, ld);
        for (int i = 0; i < 100; i++) CHECK(got[i] == n, "element %d is %d, want %d", i, got[i], n);
        GA_Sync();
        GA_Destroy(g);
        GA_Pgroup_set_default(world);
    }
    GA_Sync();
    me = GA_Nodeid();
    CHECK(GA_Nnodes() == nproc, "the world is back: %d", GA_Nnodes());
}

int main(int argc, char **argv) {
    ga_init(&argc, &argv);
    CHECK(nproc <= 64, "at most 64 processes");
    RUN(test_array_on_group);
    RUN(test_default_group);
    ga_done();
    return 0;
}
