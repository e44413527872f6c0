/* Non-blocking operations: NbPut / NbGet / NbAcc, their S and V forms, Wait, Test,
 * WaitProc, WaitAll, ARMCI_INIT_HANDLE. */
#include "harness.h"

enum { N = 64, ELEMS = 512 };

/* Many gets in flight at once, each completed by its own Wait. */
static void test_nbget_wait(void) {
    void **ptr = alloc_all(ELEMS * sizeof(long));
    long *mine = ptr[me];
    for (int i = 0; i < ELEMS; i++) mine[i] = me * 100000L + i;
    ARMCI_Barrier();
    static long dst[N][8];
    armci_hdl_t h[N];
    for (int k = 0; k < N; k++) {
        int p = (me + k) % nproc;
        ARMCI_INIT_HANDLE(&h[k]);
        CHECK(ARMCI_NbGet((long *)ptr[p] + k * 8, dst[k], 8 * sizeof(long), p, &h[k]) == 0,
              "NbGet");
    }
    for (int k = N - 1; k >= 0; k--) CHECK(ARMCI_Wait(&h[k]) == 0, "Wait");
    for (int k = 0; k < N; k++)
        for (int i = 0; i < 8; i++)
            CHECK(dst[k][i] == ((me + k) % nproc) * 100000L + k * 8 + i, "get %d elem %d", k, i);
    ARMCI_Barrier();
    free_all(ptr);
}

/* NbPut with a handle; Test until complete; the buffer may be reused afterwards. */
static void test_nbput_test(void) {
    void **ptr = alloc_all(ELEMS * sizeof(long));
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    long src[ELEMS];
    for (int i = 0; i < ELEMS; i++) src[i] = me * 7L + i;
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    CHECK(ARMCI_NbPut(src, ptr[to], (int)sizeof src, to, &h) == 0, "NbPut");
    double t0 = now_s();
    while (ARMCI_Test(&h) != 0) CHECK(now_s() - t0 < 60, "NbPut never completed");
    memset(src, 0, sizeof src); /* locally complete: reuse allowed */
    ARMCI_Fence(to);
    ARMCI_Barrier();
    long *mine = ptr[me];
    for (int i = 0; i < ELEMS; i++) CHECK(mine[i] == from * 7L + i, "element %d", i);
    ARMCI_Barrier();
    free_all(ptr);
}

/* Implicit (NULL) handles, completed by WaitAll / WaitProc; NbAcc from everyone. */
static void test_implicit_waitall_waitproc(void) {
    void **ptr = alloc_all(ELEMS * sizeof(double));
    double *mine = ptr[me];
    for (int i = 0; i < ELEMS; i++) mine[i] = 0;
    ARMCI_Barrier();
    double src[ELEMS], scale = 1.0;
    for (int i = 0; i < ELEMS; i++) src[i] = me + 1;
    for (int p = 0; p < nproc; p++) {
        CHECK(ARMCI_NbAcc(ARMCI_ACC_DBL, &scale, src, ptr[p], (int)sizeof src, p, NULL) == 0,
              "NbAcc");
        CHECK(ARMCI_WaitProc(p) == 0, "WaitProc");
    }
    for (int p = 0; p < nproc; p++)
        CHECK(ARMCI_NbAcc(ARMCI_ACC_DBL, &scale, src, ptr[p], (int)sizeof src, p, NULL) == 0,
              "NbAcc");
    CHECK(ARMCI_WaitAll() == 0, "WaitAll");
    ARMCI_AllFence();
    ARMCI_Barrier();
    double want = 0;
    for (int p = 0; p < nproc; p++) want += 2.0 * (p + 1);
    for (int i = 0; i < ELEMS; i++) CHECK(mine[i] == want, "element %d: %g", i, mine[i]);
    ARMCI_Barrier();
    free_all(ptr);
}

/* Strided and vector non-blocking forms. */
static void test_nb_strided_vector(void) {
    void **ptr = alloc_all(4096);
    memset(ptr[me], 0, 4096);
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    unsigned char src[256], got[256];
    for (int i = 0; i < 256; i++) src[i] = pattern(me, (size_t)i, 5);
    int count[2] = {32, 8}, sst[1] = {32}, dst[1] = {100};
    armci_hdl_t h1, h2, h3;
    ARMCI_INIT_HANDLE(&h1);
    ARMCI_INIT_HANDLE(&h2);
    ARMCI_INIT_HANDLE(&h3);
    ARMCI_Barrier();
    CHECK(ARMCI_NbPutS(src, sst, ptr[to], dst, count, 1, to, &h1) == 0, "NbPutS");
    ARMCI_Wait(&h1);
    ARMCI_Fence(to);
    ARMCI_Barrier();
    unsigned char *mine = ptr[me];
    for (int r = 0; r < 8; r++)
        for (int k = 0; k < 32; k++)
            CHECK(mine[r * 100 + k] == pattern(from, (size_t)(r * 32 + k), 5), "r%d k%d", r, k);
    CHECK(ARMCI_NbGetS(ptr[to], dst, got, sst, count, 1, to, &h2) == 0, "NbGetS");
    ARMCI_Wait(&h2);
    CHECK(!memcmp(got, src, 256), "NbGetS differs");
    /* vector: three 16-byte pieces into offsets 2000, 2100, 2200 */
    void *sp[3], *dp[3];
    for (int i = 0; i < 3; i++) {
        sp[i] = src + 16 * i;
        dp[i] = (char *)ptr[to] + 2000 + 100 * i;
    }
    armci_giov_t iov = {.src_ptr_array = sp, .dst_ptr_array = dp, .bytes = 16, .ptr_array_len = 3};
    CHECK(ARMCI_NbPutV(&iov, 1, to, &h3) == 0, "NbPutV");
    ARMCI_Wait(&h3);
    ARMCI_Fence(to);
    ARMCI_Barrier();
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 16; k++)
            CHECK(mine[2000 + 100 * i + k] == pattern(from, (size_t)(16 * i + k), 5), "v%d", i);
    memset(got, 0, sizeof got);
    for (int i = 0; i < 3; i++) {
        sp[i] = (char *)ptr[to] + 2000 + 100 * i;
        dp[i] = got + 16 * i;
    }
    ARMCI_INIT_HANDLE(&h3);
    CHECK(ARMCI_NbGetV(&iov, 1, to, &h3) == 0, "NbGetV");
    ARMCI_Wait(&h3);
    CHECK(!memcmp(got, src, 48), "NbGetV differs");
    /* NbAccS and NbAccV of doubles into the zeroed tail of the neighbour */
    double one[4] = {1, 1, 1, 1}, scale = 3.0;
    int dc[2] = {16, 2}, ds[1] = {16}, dd[1] = {64};
    ARMCI_INIT_HANDLE(&h1);
    CHECK(ARMCI_NbAccS(ARMCI_ACC_DBL, &scale, one, ds, (char *)ptr[to] + 3000, dd, dc, 1, to,
                       &h1) == 0,
          "NbAccS");
    void *asp[1] = {one}, *adp[1] = {(char *)ptr[to] + 3200};
    armci_giov_t aiov = {.src_ptr_array = asp, .dst_ptr_array = adp, .bytes = 32, .ptr_array_len = 1};
    ARMCI_INIT_HANDLE(&h2);
    CHECK(ARMCI_NbAccV(ARMCI_ACC_DBL, &scale, &aiov, 1, to, &h2) == 0, "NbAccV");
    ARMCI_Wait(&h1);
    ARMCI_Wait(&h2);
    ARMCI_Fence(to);
    ARMCI_Barrier();
    double *d = (double *)(mine + 3000);
    CHECK(d[0] == 3.0 && d[1] == 3.0 && d[2] == 0.0 && d[8] == 3.0 && d[9] == 3.0,
          "NbAccS result %g %g %g %g %g", d[0], d[1], d[2], d[8], d[9]);
    double *v = (double *)(mine + 3200);
    CHECK(v[0] == 3.0 && v[3] == 3.0 && v[4] == 0.0, "NbAccV result %g %g %g", v[0], v[3], v[4]);
    ARMCI_Barrier();
    free_all(ptr);
}

/* An aggregate handle collects several operations; one Wait completes them all. */
static void test_aggregate_handle(void) {
    void **ptr = alloc_all(ELEMS * sizeof(long));
    long *mine = ptr[me];
    for (int i = 0; i < ELEMS; i++) mine[i] = me * 1000L + i;
    ARMCI_Barrier();
    int peer = (me + 1) % nproc;
    static long got[8][16];
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    ARMCI_SET_AGGREGATE_HANDLE(&h);
    for (int k = 0; k < 8; k++)
        CHECK(ARMCI_NbGet((long *)ptr[peer] + 16 * k, got[k], 16 * sizeof(long), peer, &h) == 0,
              "NbGet %d on the aggregate handle", k);
    CHECK(ARMCI_Wait(&h) == 0, "Wait on the aggregate handle");
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < 16; i++)
            CHECK(got[k][i] == peer * 1000L + 16 * k + i, "get %d element %d", k, i);
    ARMCI_UNSET_AGGREGATE_HANDLE(&h);
    ARMCI_INIT_HANDLE(&h);
    ARMCI_Barrier();
    free_all(ptr);
}

/* Waiting on a handle that holds nothing returns at once. */
static void test_init_handle(void) {
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    CHECK(ARMCI_Wait(&h) == 0, "Wait on an empty handle");
    CHECK(ARMCI_Test(&h) == 0, "Test on an empty handle says in flight");
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_nbget_wait);
    RUN(test_nbput_test);
    RUN(test_implicit_waitall_waitproc);
    RUN(test_nb_strided_vector);
    RUN(test_aggregate_handle);
    RUN(test_init_handle);
    harness_done();
    return 0;
}
