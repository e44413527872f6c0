/* Strided operations: PutS / GetS / AccS with 0 to 4 stride levels and different
 * source and destination strides, PutS_flag, armci_read/write_strided. */
#include "harness.h"

#define MAXL 4

struct layout {
    int levels;
    int count[MAXL + 1];
    int src[MAXL];
    int dst[MAXL];
};

/* Bytes from the first to one past the last byte of a strided layout. */
static size_t extent(const int *stride, const int *count, int levels) {
    size_t e = (size_t)count[0];
    for (int l = 1; l <= levels; l++) e += (size_t)(count[l] - 1) * (size_t)stride[l - 1];
    return e;
}

/* Calls fn(offset in layout A, offset in layout B, bytes) for every contiguous piece. */
static void for_each_piece(const int *a, const int *b, const int *count, int levels,
                           void (*fn)(size_t, size_t, int, void *), void *ctx) {
    int idx[MAXL + 1] = {0};
    for (;;) {
        size_t oa = 0, ob = 0;
        for (int l = 1; l <= levels; l++) {
            oa += (size_t)idx[l] * (size_t)a[l - 1];
            ob += (size_t)idx[l] * (size_t)b[l - 1];
        }
        fn(oa, ob, count[0], ctx);
        int l = 1;
        while (l <= levels && ++idx[l] == count[l]) idx[l++] = 0;
        if (l > levels) return;
    }
}

struct cmp_ctx {
    const unsigned char *a, *b;
    int bad;
};

static void cmp_piece(size_t oa, size_t ob, int n, void *p) {
    struct cmp_ctx *c = p;
    if (memcmp(c->a + oa, c->b + ob, (size_t)n)) c->bad = 1;
}

static void mark_piece(size_t oa, size_t ob, int n, void *p) {
    (void)oa;
    memset((unsigned char *)p + ob, 1, (size_t)n);
}

static const struct layout cases[] = {
    {0, {40}, {0}, {0}},
    {1, {24, 5}, {24}, {40}},
    {1, {8, 10}, {16}, {8}},
    {1, {65536, 8}, {65536}, {70000}},
    {2, {16, 3, 4}, {16, 48}, {32, 128}},
    {2, {12, 5, 3}, {20, 100}, {12, 60}},
    {3, {8, 2, 3, 2}, {8, 16, 48}, {24, 64, 256}},
    {4, {12, 2, 2, 3, 2}, {12, 24, 48, 144}, {16, 40, 96, 320}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* PutS a case to the right neighbour; it checks every piece and every gap; then GetS
 * it back into the source layout and compare. */
static void put_get_case(const struct layout *c) {
    size_t se = extent(c->src, c->count, c->levels), de = extent(c->dst, c->count, c->levels);
    void **ptr = alloc_all(de);
    memset(ptr[me], 0, de);
    unsigned char *src = malloc(se), *back = calloc(1, se), *want = calloc(1, de);
    for (size_t i = 0; i < se; i++) src[i] = pattern(me, i, c->levels);
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    ARMCI_Barrier();
    CHECK(ARMCI_PutS(src, (int *)c->src, ptr[to], (int *)c->dst, (int *)c->count, c->levels,
                     to) == 0,
          "PutS failed");
    ARMCI_Fence(to);
    ARMCI_Barrier();
    /* Serial model: the neighbour's source pieces land at the destination offsets. */
    unsigned char *from_src = malloc(se), *covered = calloc(1, de);
    for (size_t i = 0; i < se; i++) from_src[i] = pattern(from, i, c->levels);
    for_each_piece(c->src, c->dst, c->count, c->levels, mark_piece, covered);
    struct cmp_ctx cc = {from_src, ptr[me], 0};
    for_each_piece(c->src, c->dst, c->count, c->levels, cmp_piece, &cc);
    CHECK(!cc.bad, "levels %d: a piece differs from the model", c->levels);
    for (size_t i = 0; i < de; i++)
        CHECK(covered[i] || ((unsigned char *)ptr[me])[i] == 0,
              "levels %d: gap byte %zu was written", c->levels, i);
    ARMCI_Barrier();
    CHECK(ARMCI_GetS(ptr[to], (int *)c->dst, back, (int *)c->src, (int *)c->count, c->levels,
                     to) == 0,
          "GetS failed");
    struct cmp_ctx cb = {src, back, 0};
    for_each_piece(c->src, c->src, c->count, c->levels, cmp_piece, &cb);
    CHECK(!cb.bad, "levels %d: GetS returned something else than was put", c->levels);
    ARMCI_Barrier();
    free(src);
    free(back);
    free(want);
    free(from_src);
    free(covered);
    free_all(ptr);
}

static void test_puts_gets_levels(void) {
    for (int i = 0; i < NCASES; i++) put_get_case(&cases[i]);
}

static const struct layout acc_cases[] = {
    {0, {64}, {0}, {0}},
    {1, {16, 4}, {16}, {24}},
    {2, {8, 3, 2}, {8, 24}, {16, 64}},
    {3, {24, 2, 2, 2}, {24, 48, 96}, {32, 80, 200}},
    {4, {8, 2, 2, 2, 2}, {8, 16, 32, 64}, {16, 40, 96, 200}},
};

struct acc_ctx {
    const double *src;
    double *model;
    double scale;
};

static void acc_piece(size_t os, size_t od, int n, void *p) {
    struct acc_ctx *a = p;
    for (int k = 0; k < n / 8; k++)
        a->model[od / 8 + (size_t)k] += a->scale * a->src[os / 8 + (size_t)k];
}

/* Every process AccS-es into every process twice; each checks the serial model. */
static void test_accs_levels(void) {
    for (int ci = 0; ci < (int)(sizeof acc_cases / sizeof acc_cases[0]); ci++) {
        const struct layout *c = &acc_cases[ci];
        size_t se = extent(c->src, c->count, c->levels);
        size_t de = extent(c->dst, c->count, c->levels);
        void **ptr = alloc_all(de);
        double *mine = ptr[me], *model = calloc(de / 8, sizeof(double));
        for (size_t i = 0; i < de / 8; i++) mine[i] = model[i] = (double)i;
        double *src = malloc(se);
        double scale = 0.5;
        ARMCI_Barrier();
        for (int p = 0; p < nproc; p++) {
            for (size_t i = 0; i < se / 8; i++) src[i] = (double)(me + 1) * (double)(i % 13);
            for (int rep = 0; rep < 2; rep++)
                CHECK(ARMCI_AccS(ARMCI_ACC_DBL, &scale, src, (int *)c->src, ptr[p],
                                 (int *)c->dst, (int *)c->count, c->levels, p) == 0,
                      "AccS failed");
        }
        ARMCI_AllFence();
        ARMCI_Barrier();
        for (int p = 0; p < nproc; p++) {
            for (size_t i = 0; i < se / 8; i++) src[i] = (double)(p + 1) * (double)(i % 13);
            struct acc_ctx a = {src, model, scale};
            for (int rep = 0; rep < 2; rep++)
                for_each_piece(c->src, c->dst, c->count, c->levels, acc_piece, &a);
        }
        for (size_t i = 0; i < de / 8; i++)
            CHECK(mine[i] == model[i], "levels %d: element %zu is %g, model %g", c->levels, i,
                  mine[i], model[i]);
        ARMCI_Barrier();
        free(model);
        free(src);
        free_all(ptr);
    }
}

/* Integer AccS with one level, different strides. */
static void test_accs_int(void) {
    int count[2] = {12, 6}, sstride[1] = {12}, dstride[1] = {20};
    void **ptr = alloc_all(20 * 6);
    int *mine = ptr[me];
    memset(mine, 0, 120);
    int src[18];
    for (int i = 0; i < 18; i++) src[i] = i + 1;
    int scale = 2;
    ARMCI_Barrier();
    CHECK(ARMCI_AccS(ARMCI_ACC_INT, &scale, src, sstride, ptr[0], dstride, count, 1, 0) == 0,
          "AccS");
    ARMCI_AllFence();
    ARMCI_Barrier();
    if (me == 0)
        for (int r = 0; r < 6; r++)
            for (int k = 0; k < 3; k++)
                CHECK(mine[r * 5 + k] == 2 * nproc * (r * 3 + k + 1), "row %d col %d", r, k);
    ARMCI_Barrier();
    free_all(ptr);
}

static void test_puts_flag(void) {
    int count[2] = {16, 8}, sstride[1] = {16}, dstride[1] = {32};
    void **ptr = alloc_all(8 + 32 * 8);
    volatile int *flag = ptr[me];
    *flag = 0;
    ARMCI_Barrier();
    unsigned char src[128];
    for (int i = 0; i < 128; i++) src[i] = pattern(me, (size_t)i, 7);
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    /* (the return value is not checked: ARMCI-MPI's flag calls return 1) */
    ARMCI_PutS_flag(src, sstride, (char *)ptr[to] + 8, dstride, count, 1, ptr[to], 7, to);
    double t0 = now_s();
    while (*flag != 7) CHECK(now_s() - t0 < 60, "flag never arrived");
    unsigned char *got = (unsigned char *)ptr[me] + 8;
    for (int r = 0; r < 8; r++)
        for (int k = 0; k < 16; k++)
            CHECK(got[r * 32 + k] == pattern(from, (size_t)(r * 16 + k), 7), "row %d byte %d",
                  r, k);
    ARMCI_Barrier();
    free_all(ptr);
}

/* write_strided packs the strided layout at ptr into buf; read_strided unpacks buf
 * into it (ARMCI's names look from the buffer's side). */
static void test_read_write_strided(void) {
    int count[3] = {6, 4, 3}, stride[2] = {10, 50};
    unsigned char area[150], buf[72], back[150];
    for (int i = 0; i < 150; i++) area[i] = (unsigned char)(i + 1);
    armci_write_strided(area, 2, stride, count, (char *)buf);
    for (int b = 0; b < 3; b++)
        for (int r = 0; r < 4; r++)
            for (int k = 0; k < 6; k++)
                CHECK(buf[b * 24 + r * 6 + k] == b * 50 + r * 10 + k + 1,
                      "write_strided piece %d/%d byte %d", b, r, k);
    memset(back, 0, sizeof back);
    armci_read_strided(back, 2, stride, count, (char *)buf);
    for (int i = 0; i < 150; i++) {
        int in_piece = i % 50 < 40 && i % 10 < 6;
        CHECK(back[i] == (in_piece ? area[i] : 0), "read_strided byte %d is %d", i, back[i]);
    }
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_puts_gets_levels);
    RUN(test_accs_levels);
    RUN(test_accs_int);
    RUN(test_puts_flag);
    RUN(test_read_write_strided);
    harness_done();
    return 0;
}
