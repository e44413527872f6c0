/* Global Arrays on libarmci: create / destroy regular and irregular arrays, their
 * distributions, put / get / acc patches (blocking and non-blocking), each result
 * checked against a serial model computed in the same program. */
#include "ga_harness.h"

enum { ROWS = 57, COLS = 43 };

/* Regular arrays of several types and shapes: created, filled, read back, destroyed. */
static void test_create_destroy_regular(void) {
    int types[3] = {C_DBL, C_INT, C_LONG};
    for (int t = 0; t < 3; t++) {
        int dims[3] = {ROWS, COLS, 3}, chunk[3] = {-1, -1, -1};
        int g = NGA_Create(types[t], 1 + t, dims, "regular", chunk);
        CHECK(g != 0, "NGA_Create failed for type %d", types[t]);
        /* Every element is owned by exactly one process. */
        long owned = 0, total = 1;
        for (int d = 0; d < 1 + t; d++) total *= dims[d];
        int lo[3], hi[3];
        NGA_Distribution(g, me, lo, hi);
        if (lo[0] >= 0 && hi[0] >= lo[0]) {
            owned = 1;
            for (int d = 0; d < 1 + t; d++) owned *= hi[d] - lo[d] + 1;
        }
        double sum = (double)owned;
        GA_Dgop(&sum, 1, "+");
        CHECK(sum == (double)total, "type %d: processes own %g of %ld elements", types[t], sum,
              total);
        GA_Destroy(g);
    }
    /* Many arrays alive at once, destroyed in another order. */
    int g[12];
    for (int k = 0; k < 12; k++) {
        int dims[2] = {10 + k, 7}, chunk[2] = {-1, -1};
        g[k] = NGA_Create(C_DBL, 2, dims, "many", chunk);
        double v = k;
        GA_Fill(g[k], &v);
    }
    for (int k = 0; k < 12; k++) {
        int lo[2] = {9 + k, 6}, hi[2] = {9 + k, 6}, ld[1] = {1};
        double v = -1;
        NGA_Get(g[k], lo, hi, &v, ld);
        CHECK(v == k, "array %d holds %g", k, v);
    }
    for (int k = 11; k >= 0; k -= 2) GA_Destroy(g[k]);
    for (int k = 0; k < 12; k += 2) GA_Destroy(g[k]);
}

/* An irregular distribution: blocks of given sizes, owners as the map says. */
static void test_irregular(void) {
    int dims[2] = {ROWS, COLS}, block[2] = {nproc, 1}, map[64];
    /* uneven row blocks: the first process gets few rows, the last many */
    int start = 0;
    for (int p = 0; p < nproc; p++) {
        map[p] = start;
        start += p == nproc - 1 ? 0 : 3 + p * 5;
    }
    map[nproc] = 0; /* one column block */
    int g = NGA_Create_irreg(C_DBL, 2, dims, "irregular", block, map);
    CHECK(g != 0, "NGA_Create_irreg failed");
    int lo[2], hi[2];
    NGA_Distribution(g, me, lo, hi);
    int want_hi = me == nproc - 1 ? ROWS - 1 : map[me + 1] - 1;
    CHECK(lo[0] == map[me] && hi[0] == want_hi && lo[1] == 0 && hi[1] == COLS - 1,
          "process %d owns rows %d..%d cols %d..%d", me, lo[0], hi[0], lo[1], hi[1]);
    /* write the whole array from process 0, read it back everywhere */
    double *all = malloc(sizeof(double) * ROWS * COLS);
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) all[i * COLS + j] = cell(1, i, j);
    int glo[2] = {0, 0}, ghi[2] = {ROWS - 1, COLS - 1}, ld[1] = {COLS};
    if (me == 0) NGA_Put(g, glo, ghi, all, ld);
    GA_Sync();
    double *mine;
    int mld[1];
    NGA_Access(g, lo, hi, &mine, mld);
    for (int i = lo[0]; i <= hi[0]; i++)
        for (int j = lo[1]; j <= hi[1]; j++)
            CHECK(mine[(i - lo[0]) * mld[0] + (j - lo[1])] == cell(1, i, j), "local (%d,%d)", i,
                  j);
    NGA_Release(g, lo, hi);
    GA_Sync();
    GA_Destroy(g);
    free(all);
}

/* Random patches: each process puts into its own rows' band of patches, gets
 * anywhere, accumulates everywhere; the model is replayed on every process. */
static void test_patches_put_get_acc(void) {
    int dims[2] = {ROWS, COLS}, chunk[2] = {-1, -1};
    int ga = NGA_Create(C_DBL, 2, dims, "patches", chunk);
    int gb = NGA_Create(C_DBL, 2, dims, "acc", chunk);
    GA_Zero(ga);
    GA_Zero(gb);
    static double model_a[ROWS][COLS], model_b[ROWS][COLS];
    memset(model_a, 0, sizeof model_a);
    memset(model_b, 0, sizeof model_b);
    double buf[ROWS * COLS];
    for (int round = 0; round < 6; round++) {
        for (int p = 0; p < nproc; p++) { /* everybody replays every process's draws */
            uint64_t s = 0x51ED270B1AULL + (uint64_t)(round * 64 + p);
            for (int k = 0; k < 5; k++) {
                /* put: rows i with i % nproc == p only (no two writers per element) */
                int r0 = p + nproc * rng_below(&s, (ROWS - p + nproc - 1) / nproc);
                int c0 = rng_below(&s, COLS), w = 1 + rng_below(&s, COLS - c0);
                int lo[2] = {r0, c0}, hi[2] = {r0, c0 + w - 1}, ld[1] = {w};
                for (int j = 0; j < w; j++) {
                    buf[j] = cell(round * 100 + p, r0, c0 + j + k);
                    model_a[r0][c0 + j] = buf[j];
                }
                if (p == me) NGA_Put(ga, lo, hi, buf, ld);
                /* acc: any 2-D patch, with a scale */
                int a0 = rng_below(&s, ROWS), b0 = rng_below(&s, COLS);
                int h = 1 + rng_below(&s, ROWS - a0), wd = 1 + rng_below(&s, COLS - b0);
                double alpha = 0.5 * (1 + rng_below(&s, 4));
                int alo[2] = {a0, b0}, ahi[2] = {a0 + h - 1, b0 + wd - 1}, ald[1] = {wd};
                for (int i = 0; i < h; i++)
                    for (int j = 0; j < wd; j++) {
                        buf[i * wd + j] = cell(p + 3, a0 + i, b0 + j);
                        model_b[a0 + i][b0 + j] += alpha * buf[i * wd + j];
                    }
                if (p == me) NGA_Acc(gb, alo, ahi, buf, ald, &alpha);
            }
        }
        GA_Sync();
        /* get random patches of both and compare with the model */
        uint64_t s = 0xC0FFEEULL + (uint64_t)(round * 64 + me);
        for (int k = 0; k < 8; k++) {
            int a0 = rng_below(&s, ROWS), b0 = rng_below(&s, COLS);
            int h = 1 + rng_below(&s, ROWS - a0), wd = 1 + rng_below(&s, COLS - b0);
            int lo[2] = {a0, b0}, hi[2] = {a0 + h - 1, b0 + wd - 1}, ld[1] = {wd};
            NGA_Get(ga, lo, hi, buf, ld);
            for (int i = 0; i < h; i++)
                for (int j = 0; j < wd; j++)
                    CHECK(buf[i * wd + j] == model_a[a0 + i][b0 + j], "round %d: A(%d,%d) %g/%g",
                          round, a0 + i, b0 + j, buf[i * wd + j], model_a[a0 + i][b0 + j]);
            NGA_Get(gb, lo, hi, buf, ld);
            for (int i = 0; i < h; i++)
                for (int j = 0; j < wd; j++)
                    CHECK(buf[i * wd + j] == model_b[a0 + i][b0 + j], "round %d: B(%d,%d) %g/%g",
                          round, a0 + i, b0 + j, buf[i * wd + j], model_b[a0 + i][b0 + j]);
        }
        GA_Sync();
    }
    GA_Destroy(ga);
    GA_Destroy(gb);
}

/* Non-blocking patch transfers: several in flight, then waited for. */
static void test_nonblocking_patches(void) {
    int dims[2] = {ROWS, COLS}, chunk[2] = {-1, -1};
    int g = NGA_Create(C_DBL, 2, dims, "nb", chunk);
    GA_Zero(g);
    static double row[4][COLS];
    ga_nbhdl_t h[4];
    for (int k = 0; k < 4; k++) {
        int r = (me * 4 + k) % ROWS;
        for (int j = 0; j < COLS; j++) row[k][j] = cell(9, r, j);
        int lo[2] = {r, 0}, hi[2] = {r, COLS - 1}, ld[1] = {COLS};
        NGA_NbPut(g, lo, hi, row[k], ld, &h[k]);
    }
    for (int k = 0; k < 4; k++) NGA_NbWait(&h[k]);
    GA_Sync();
    static double got[4][COLS];
    for (int k = 0; k < 4; k++) {
        int r = ((me + 1) % nproc * 4 + k) % ROWS;
        int lo[2] = {r, 0}, hi[2] = {r, COLS - 1}, ld[1] = {COLS};
        NGA_NbGet(g, lo, hi, got[k], ld, &h[k]);
    }
    for (int k = 0; k < 4; k++) {
        NGA_NbWait(&h[k]);
        int r = ((me + 1) % nproc * 4 + k) % ROWS;
        for (int j = 0; j < COLS; j++) CHECK(got[k][j] == cell(9, r, j), "row %d col %d", r, j);
    }
    GA_Sync();
    GA_Destroy(g);
}

int main(int argc, char **argv) {
    ga_init(&argc, &argv);
    CHECK(nproc <= 60, "at most 60 processes");
    RUN(test_create_destroy_regular);
    RUN(test_irregular);
    RUN(test_patches_put_get_acc);
    RUN(test_nonblocking_patches);
    ga_done();
    return 0;
}
