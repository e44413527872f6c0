/* Contiguous operations: Put, Get, Acc (all six types), Fence, AllFence, Barrier,
 * Put_flag, the value calls, ARMCI_Copy. */
#include <complex.h>

#include "harness.h"

static const int sizes[] = {1, 7, 8, 64, 100, 4096, 65536 + 5, 1 << 20};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define SLOT ((1 << 20) + 64)

/* Every process puts to its right neighbour at an odd offset, in every size. */
static void test_put(void) {
    void **ptr = alloc_all(SLOT);
    unsigned char *src = malloc(SLOT);
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    for (int s = 0; s < NSIZES; s++) {
        int n = sizes[s];
        for (int i = 0; i < n; i++) src[i] = pattern(me, (size_t)i, s);
        CHECK(ARMCI_Put(src, (char *)ptr[to] + 3, n, to) == 0, "Put %d B failed", n);
        ARMCI_Fence(to);
        ARMCI_Barrier();
        unsigned char *mine = (unsigned char *)ptr[me] + 3;
        for (int i = 0; i < n; i++)
            CHECK(mine[i] == pattern(from, (size_t)i, s), "%d B put: byte %d is %d, want %d",
                  n, i, mine[i], pattern(from, (size_t)i, s));
        ARMCI_Barrier();
    }
    free(src);
    free_all(ptr);
}

/* Every process gets every other process's data, in every size, at odd offsets. */
static void test_get(void) {
    void **ptr = alloc_all(SLOT);
    for (int i = 0; i < SLOT; i++) ((unsigned char *)ptr[me])[i] = pattern(me, (size_t)i, 9);
    ARMCI_Barrier();
    unsigned char *dst = malloc(SLOT);
    for (int p = 0; p < nproc; p++) {
        for (int s = 0; s < NSIZES; s++) {
            int n = sizes[s];
            memset(dst, 0, (size_t)n + 8);
            CHECK(ARMCI_Get((char *)ptr[p] + 5, dst + 1, n, p) == 0, "Get %d B failed", n);
            for (int i = 0; i < n; i++)
                CHECK(dst[1 + i] == pattern(p, (size_t)i + 5, 9), "%d B from %d: byte %d", n, p,
                      i);
            CHECK(dst[0] == 0 && dst[1 + n] == 0, "Get wrote outside its %d bytes", n);
        }
    }
    ARMCI_Barrier();
    free(dst);
    free_all(ptr);
}

/* Put then Get to the same target without a fence: per-target order holds. */
static void test_put_then_get_ordered(void) {
    void **ptr = alloc_all(4096);
    int to = (me + 1) % nproc;
    for (int k = 0; k < 50; k++) {
        int v[64], w[64];
        for (int i = 0; i < 64; i++) v[i] = me * 1000 + k * 64 + i;
        CHECK(ARMCI_Put(v, (int *)ptr[to] + 64 * (me % 8), (int)sizeof v, to) == 0, "Put");
        CHECK(ARMCI_Get((int *)ptr[to] + 64 * (me % 8), w, (int)sizeof w, to) == 0, "Get");
        CHECK(!memcmp(v, w, sizeof v), "get after put (round %d) saw old data", k);
    }
    ARMCI_Barrier();
    free_all(ptr);
}

/* Everybody accumulates into everybody; the result is the serial sum. */
#define ACC_TEST(NAME, T, KIND, SCALE, VALUE)                                             \
    static void NAME(void) {                                                              \
        enum { N = 300 };                                                                 \
        void **ptr = alloc_all(N * sizeof(T));                                            \
        T *mine = ptr[me];                                                                \
        for (int i = 0; i < N; i++) mine[i] = (T)(i);                                     \
        ARMCI_Barrier();                                                                  \
        T src[N], scale = SCALE;                                                          \
        for (int i = 0; i < N; i++) src[i] = VALUE(me, i);                                \
        for (int p = 0; p < nproc; p++)                                                   \
            CHECK(ARMCI_Acc(KIND, &scale, src, ptr[p], (int)sizeof src, p) == 0, "Acc");  \
        ARMCI_AllFence();                                                                 \
        ARMCI_Barrier();                                                                  \
        for (int i = 0; i < N; i++) {                                                     \
            T want = (T)(i);                                                              \
            for (int p = 0; p < nproc; p++) want += scale * VALUE(p, i);                  \
            CHECK(mine[i] == want, "element %d differs from the serial sum", i);          \
        }                                                                                 \
        ARMCI_Barrier();                                                                  \
        free_all(ptr);                                                                    \
    }

#define V_INT(p, i) ((p) * 3 + (i) % 17)
#define V_FLT(p, i) ((float)((p) + 1) * 0.5f + (float)((i) % 5))
#define V_CPL(p, i) ((float)(p) + (float)(i) * 0.25f * I)
#define V_DCP(p, i) ((double)(p) * 0.5 + (double)((i) % 9) * I)

ACC_TEST(test_acc_int, int, ARMCI_ACC_INT, 3, V_INT)
ACC_TEST(test_acc_long, long, ARMCI_ACC_LNG, 5, V_INT)
ACC_TEST(test_acc_float, float, ARMCI_ACC_FLT, 2.0f, V_FLT)
ACC_TEST(test_acc_double, double, ARMCI_ACC_DBL, -1.5, V_FLT)
ACC_TEST(test_acc_complex, float complex, ARMCI_ACC_CPL, 2.0f - 1.0f * I, V_CPL)
ACC_TEST(test_acc_dcomplex, double complex, ARMCI_ACC_DCP, 0.5 + 2.0 * I, V_DCP)

/* Puts without a fence are complete after ARMCI_Barrier (it fences everything). */
static void test_barrier_completes(void) {
    void **ptr = alloc_all((size_t)nproc * sizeof(long));
    for (int p = 0; p < nproc; p++) {
        long v = me * 100 + p;
        ARMCI_Put(&v, (long *)ptr[p] + me, sizeof v, p);
    }
    ARMCI_Barrier();
    for (int p = 0; p < nproc; p++)
        CHECK(((long *)ptr[me])[p] == p * 100 + me, "slot %d", p);
    ARMCI_Barrier();
    free_all(ptr);
}

/* ARMCI_AllFence then a message barrier also makes puts visible. */
static void test_allfence(void) {
    void **ptr = alloc_all((size_t)nproc * sizeof(long));
    for (int p = 0; p < nproc; p++) {
        long v = me * 7 + p;
        ARMCI_Put(&v, (long *)ptr[p] + me, sizeof v, p);
    }
    ARMCI_AllFence();
    armci_msg_barrier();
    for (int p = 0; p < nproc; p++) CHECK(((long *)ptr[me])[p] == p * 7 + me, "slot %d", p);
    ARMCI_Barrier();
    free_all(ptr);
}

/* Put_flag: the target spins on its own flag, then finds the data in place. */
static void test_put_flag(void) {
    enum { N = 1000 };
    void **ptr = alloc_all(2 * sizeof(int) + N * sizeof(double));
    volatile int *flag = ptr[me];
    *flag = 0;
    ARMCI_Barrier();
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    double data[N];
    for (int i = 0; i < N; i++) data[i] = me + i * 0.5;
    /* (the return value is not checked: ARMCI-MPI's flag calls return 1) */
    ARMCI_Put_flag(data, (int *)ptr[to] + 2, (int)sizeof data, ptr[to], 42, to);
    double t0 = now_s();
    while (*flag != 42) CHECK(now_s() - t0 < 60, "flag never arrived");
    double *got = (double *)((int *)ptr[me] + 2);
    for (int i = 0; i < N; i++) CHECK(got[i] == from + i * 0.5, "element %d", i);
    ARMCI_Barrier();
    free_all(ptr);
}

static void test_value_ops(void) {
    void **ptr = alloc_all(64);
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    char *t = ptr[to];
    CHECK(ARMCI_PutValueInt(me + 1, t, to) == 0, "PutValueInt");
    CHECK(ARMCI_PutValueLong(-(long)me - 5000000000L, t + 8, to) == 0, "PutValueLong");
    CHECK(ARMCI_PutValueFloat(me + 0.25f, t + 16, to) == 0, "PutValueFloat");
    CHECK(ARMCI_PutValueDouble(me + 0.125, t + 24, to) == 0, "PutValueDouble");
    ARMCI_Barrier();
    /* what this process put is in its right neighbour's memory; the left one's in mine */
    CHECK(ARMCI_GetValueInt(t, to) == me + 1, "GetValueInt");
    CHECK(ARMCI_GetValueLong(t + 8, to) == -(long)me - 5000000000L, "GetValueLong");
    CHECK(ARMCI_GetValueFloat(t + 16, to) == me + 0.25f, "GetValueFloat");
    CHECK(ARMCI_GetValueDouble(t + 24, to) == me + 0.125, "GetValueDouble");
    CHECK(*(int *)ptr[me] == from + 1, "value from the left: %d", *(int *)ptr[me]);
    ARMCI_Barrier();
    free_all(ptr);
}

static void test_self(void) {
    void **ptr = alloc_all(256);
    char a[256], b[256];
    for (int i = 0; i < 256; i++) a[i] = (char)pattern(me, (size_t)i, 4);
    CHECK(ARMCI_Put(a, ptr[me], 256, me) == 0, "Put to self");
    ARMCI_Fence(me);
    CHECK(ARMCI_Get(ptr[me], b, 256, me) == 0, "Get from self");
    CHECK(!memcmp(a, b, 256), "self put/get differ");
    ARMCI_Copy(a, b + 1, 100);
    CHECK(!memcmp(a, b + 1, 100), "ARMCI_Copy");
    ARMCI_Barrier();
    free_all(ptr);
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_put);
    RUN(test_get);
    RUN(test_put_then_get_ordered);
    RUN(test_acc_int);
    RUN(test_acc_long);
    RUN(test_acc_float);
    RUN(test_acc_double);
    RUN(test_acc_complex);
    RUN(test_acc_dcomplex);
    RUN(test_barrier_completes);
    RUN(test_allfence);
    RUN(test_put_flag);
    RUN(test_value_ops);
    RUN(test_self);
    harness_done();
    return 0;
}
