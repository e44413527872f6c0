/* Randomized stress: every process issues random strided / vector / contiguous puts,
 * gets and accumulates (blocking and non-blocking) to random targets, epoch after
 * epoch with fences; the memory then equals a serial model's.
 *
 * Every process draws the same operation lists from a shared seed, so each one can
 * keep the model of the whole job. Races are ruled out by construction: in epoch e,
 * row `row` of every process's array A belongs to process (row + e) % (n + 1) (the
 * value n meaning nobody); puts only go to one's own rows, gets only read one's own
 * rows (which also tests per-target ordering: a get after a put to the same target
 * sees it) or nobody's; accumulates go anywhere in array B (they commute). */
#include "harness.h"

enum { ROWS = 64, COLS = 48, EPOCHS = 16, OPS = 14 };

static double *model_a; /* [nproc][ROWS][COLS] */
static long *model_b;   /* [nproc][ROWS][COLS] */
static void **seg;      /* per process: A then B */
static double *my_a;
static long *my_b;

#define A(t, r, c) model_a[((size_t)(t) * ROWS + (size_t)(r)) * COLS + (size_t)(c)]
#define B(t, r, c) model_b[((size_t)(t) * ROWS + (size_t)(r)) * COLS + (size_t)(c)]

static double value(int e, int p, int op, int i, int j) {
    return (double)(e * 100000 + p * 10000 + op * 100 + i * 7 + j) + 0.25;
}

/* A patch of rows r0, r0+step, ... (k1 * k2 of them) and columns c0 .. c0+w-1. */
struct patch {
    int r0, step, k1, k2, c0, w, levels;
};

static int row_of(const struct patch *p, int i1, int i2) {
    return p->r0 + p->step * (i1 + p->k1 * i2);
}

/* A random patch inside the rows with (row + e) % (n + 1) == cls. */
static struct patch draw_patch(uint64_t *s, int e, int cls) {
    struct patch p;
    p.step = nproc + 1;
    int first = ((cls - e) % p.step + p.step) % p.step; /* first row of the class */
    int in_class = (ROWS - 1 - first) / p.step + 1;
    p.levels = 1 + rng_below(s, 2);
    p.k1 = 1 + rng_below(s, in_class < 3 ? in_class : 3);
    p.k2 = p.levels == 2 ? 1 + rng_below(s, in_class / p.k1 < 2 ? 1 : 2) : 1;
    int span = p.k1 * p.k2;
    p.r0 = first + p.step * rng_below(s, in_class - span + 1);
    p.w = 1 + rng_below(s, 12);
    p.c0 = rng_below(s, COLS - p.w + 1);
    return p;
}

/* Strides and counts of a patch: remote (rows of COLS) and local (rows of w + pad). */
static void strides(const struct patch *p, int esize, int pad, int count[3], int rem[2],
                    int loc[2]) {
    count[0] = p->w * esize;
    count[1] = p->k1;
    count[2] = p->k2;
    rem[0] = p->step * COLS * esize;
    rem[1] = p->step * p->k1 * COLS * esize;
    loc[0] = (p->w + pad) * esize;
    loc[1] = loc[0] * p->k1 + 3 * esize;
}

static size_t local_index(const struct patch *p, int pad, int i1, int i2, int j) {
    return (size_t)((i2 * (p->k1 * (p->w + pad) + 3)) + i1 * (p->w + pad) + j);
}

/* One operation of process `who` (everyone replays everyone's; only `who` issues it). */
static void op(uint64_t *s, int e, int who, int k, armci_hdl_t *hdl, int *nb_used) {
    int kind = rng_below(s, 6), t = rng_below(s, nproc), pad = rng_below(s, 3);
    int issue = who == me;
    if (kind <= 1) { /* strided put (blocking or not) into own rows of A */
        struct patch p = draw_patch(s, e, who);
        int count[3], rem[2], loc[2];
        strides(&p, 8, pad, count, rem, loc);
        double *src = issue ? calloc(local_index(&p, pad, 0, p.k2, 0) + 1, 8) : NULL;
        for (int i2 = 0; i2 < p.k2; i2++)
            for (int i1 = 0; i1 < p.k1; i1++)
                for (int j = 0; j < p.w; j++) {
                    double v = value(e, who, k, i1 + p.k1 * i2, j);
                    A(t, row_of(&p, i1, i2), p.c0 + j) = v;
                    if (issue) src[local_index(&p, pad, i1, i2, j)] = v;
                }
        if (!issue) return;
        double *dst = (double *)seg[t] + (size_t)p.r0 * COLS + (size_t)p.c0;
        if (kind == 0) {
            CHECK(ARMCI_PutS(src, loc, dst, rem, count, p.levels, t) == 0, "PutS");
        } else {
            ARMCI_INIT_HANDLE(hdl);
            CHECK(ARMCI_NbPutS(src, loc, dst, rem, count, p.levels, t, hdl) == 0, "NbPutS");
            ARMCI_Wait(hdl);
            (*nb_used)++;
        }
        free(src);
    } else if (kind == 2) { /* strided get from own or nobody's rows, checked */
        int cls = rng_below(s, 2) ? who : nproc;
        struct patch p = draw_patch(s, e, cls);
        if (!issue) return;
        int count[3], rem[2], loc[2];
        strides(&p, 8, pad, count, rem, loc);
        size_t n = local_index(&p, pad, 0, p.k2, 0) + 1;
        double *dst = calloc(n, 8);
        double *src = (double *)seg[t] + (size_t)p.r0 * COLS + (size_t)p.c0;
        CHECK(ARMCI_GetS(src, rem, dst, loc, count, p.levels, t) == 0, "GetS");
        for (int i2 = 0; i2 < p.k2; i2++)
            for (int i1 = 0; i1 < p.k1; i1++)
                for (int j = 0; j < p.w; j++) {
                    int row = row_of(&p, i1, i2);
                    CHECK(dst[local_index(&p, pad, i1, i2, j)] == A(t, row, p.c0 + j),
                          "epoch %d op %d: get of %d row %d col %d: %g, model %g", e, k, t, row,
                          p.c0 + j, dst[local_index(&p, pad, i1, i2, j)],
                          A(t, row, p.c0 + j));
                }
        free(dst);
    } else if (kind == 3) { /* strided accumulate anywhere in B */
        struct patch p;
        p.step = 1;
        p.levels = 1 + rng_below(s, 2);
        p.k1 = 1 + rng_below(s, 5);
        p.k2 = p.levels == 2 ? 1 + rng_below(s, 3) : 1;
        p.r0 = rng_below(s, ROWS - p.k1 * p.k2 + 1);
        p.w = 1 + rng_below(s, 10);
        p.c0 = rng_below(s, COLS - p.w + 1);
        long scale = 1 + rng_below(s, 3);
        int count[3], rem[2], loc[2];
        strides(&p, 8, pad, count, rem, loc);
        long *src = issue ? calloc(local_index(&p, pad, 0, p.k2, 0) + 1, 8) : NULL;
        for (int i2 = 0; i2 < p.k2; i2++)
            for (int i1 = 0; i1 < p.k1; i1++)
                for (int j = 0; j < p.w; j++) {
                    long v = (long)value(e, who, k, i1 + p.k1 * i2, j);
                    B(t, row_of(&p, i1, i2), p.c0 + j) += scale * v;
                    if (issue) src[local_index(&p, pad, i1, i2, j)] = v;
                }
        if (!issue) return;
        long *dst = (long *)((double *)seg[t] + ROWS * COLS) + (size_t)p.r0 * COLS + p.c0;
        CHECK(ARMCI_AccS(ARMCI_ACC_LNG, &scale, src, loc, dst, rem, count, p.levels, t) == 0,
              "AccS");
        free(src);
    } else if (kind == 4) { /* vector put: one element in each of up to 6 own rows */
        struct patch p = draw_patch(s, e, who);
        int n = p.k1 * p.k2;
        double vals[6];
        void *sp[6], *dp[6];
        for (int i = 0; i < n; i++) {
            int row = row_of(&p, i % p.k1, i / p.k1), col = (p.c0 + i) % COLS;
            vals[i] = value(e, who, k, i, 99);
            A(t, row, col) = vals[i];
            sp[i] = &vals[i];
            dp[i] = (double *)seg[t] + (size_t)row * COLS + (size_t)col;
        }
        if (!issue) return;
        armci_giov_t iov = {.src_ptr_array = sp, .dst_ptr_array = dp, .bytes = 8,
                            .ptr_array_len = n};
        CHECK(ARMCI_PutV(&iov, 1, t) == 0, "PutV");
    } else { /* contiguous put of part of one own row, then a get of it back */
        struct patch p = draw_patch(s, e, who);
        double vals[12];
        for (int j = 0; j < p.w; j++) A(t, p.r0, p.c0 + j) = vals[j] = value(e, who, k, 0, j);
        if (!issue) return;
        double *dst = (double *)seg[t] + (size_t)p.r0 * COLS + (size_t)p.c0, back[12];
        CHECK(ARMCI_Put(vals, dst, p.w * 8, t) == 0, "Put");
        CHECK(ARMCI_Get(dst, back, p.w * 8, t) == 0, "Get");
        CHECK(!memcmp(vals, back, (size_t)p.w * 8), "epoch %d op %d: get after put", e, k);
    }
}

static void test_random_epochs(void) {
    size_t cells = (size_t)nproc * ROWS * COLS;
    model_a = calloc(cells, sizeof(double));
    model_b = calloc(cells, sizeof(long));
    seg = alloc_all(ROWS * COLS * (sizeof(double) + sizeof(long)));
    my_a = seg[me];
    my_b = (long *)(my_a + ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++) my_a[i] = 0, my_b[i] = 0;
    int nb_used = 0;
    armci_hdl_t hdl;
    for (int e = 0; e < EPOCHS; e++) {
        ARMCI_Barrier();
        for (int who = 0; who < nproc; who++) {
            uint64_t s = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)e << 20) ^ (uint64_t)(who + 1);
            for (int k = 0; k < OPS; k++) op(&s, e, who, k, &hdl, &nb_used);
        }
        ARMCI_AllFence();
        ARMCI_Barrier();
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++) {
                CHECK(my_a[r * COLS + c] == A(me, r, c), "epoch %d: A[%d][%d] = %g, model %g",
                      e, r, c, my_a[r * COLS + c], A(me, r, c));
                CHECK(my_b[r * COLS + c] == B(me, r, c), "epoch %d: B[%d][%d] = %ld, model %ld",
                      e, r, c, my_b[r * COLS + c], B(me, r, c));
            }
    }
    ARMCI_Barrier();
    free_all(seg);
    free(model_a);
    free(model_b);
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_random_epochs);
    harness_done();
    return 0;
}
