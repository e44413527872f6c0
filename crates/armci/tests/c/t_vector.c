/* Vector (generalized I/O) operations: PutV, GetV, AccV. */
#include "harness.h"

enum { SEG = 4096 };

/* Two descriptors: 5 scattered 24-byte pieces and 3 scattered 96-byte pieces. */
static void build(armci_giov_t iov[2], void *local, void *remote, void *src_ptrs[8],
                  void *dst_ptrs[8], int put) {
    static const int off_a[5] = {0, 200, 56, 1000, 3000}, off_b[3] = {400, 2000, 3504};
    for (int i = 0; i < 5; i++) {
        void *l = (char *)local + i * 24, *r = (char *)remote + off_a[i];
        src_ptrs[i] = put ? l : r;
        dst_ptrs[i] = put ? r : l;
    }
    for (int i = 0; i < 3; i++) {
        void *l = (char *)local + 120 + i * 96, *r = (char *)remote + off_b[i];
        src_ptrs[5 + i] = put ? l : r;
        dst_ptrs[5 + i] = put ? r : l;
    }
    iov[0].src_ptr_array = src_ptrs;
    iov[0].dst_ptr_array = dst_ptrs;
    iov[0].bytes = 24;
    iov[0].ptr_array_len = 5;
    iov[1].src_ptr_array = src_ptrs + 5;
    iov[1].dst_ptr_array = dst_ptrs + 5;
    iov[1].bytes = 96;
    iov[1].ptr_array_len = 3;
}

static void test_putv_getv(void) {
    void **ptr = alloc_all(SEG);
    memset(ptr[me], 0, SEG);
    unsigned char local[408], back[408];
    for (int i = 0; i < 408; i++) local[i] = pattern(me, (size_t)i, 3);
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    void *sp[8], *dp[8];
    armci_giov_t iov[2];
    ARMCI_Barrier();
    build(iov, local, ptr[to], sp, dp, 1);
    CHECK(ARMCI_PutV(iov, 2, to) == 0, "PutV failed");
    ARMCI_Fence(to);
    ARMCI_Barrier();
    unsigned char *mine = ptr[me];
    static const int off_a[5] = {0, 200, 56, 1000, 3000}, off_b[3] = {400, 2000, 3504};
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 24; k++)
            CHECK(mine[off_a[i] + k] == pattern(from, (size_t)(i * 24 + k), 3), "a%d+%d", i, k);
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 96; k++)
            CHECK(mine[off_b[i] + k] == pattern(from, (size_t)(120 + i * 96 + k), 3), "b%d+%d",
                  i, k);
    CHECK(mine[24] == 0 && mine[199] == 0 && mine[500] == 0, "PutV wrote outside its pieces");
    memset(back, 0, sizeof back);
    build(iov, back, ptr[to], sp, dp, 0);
    CHECK(ARMCI_GetV(iov, 2, to) == 0, "GetV failed");
    CHECK(!memcmp(local, back, sizeof local), "GetV returned something else than was put");
    ARMCI_Barrier();
    free_all(ptr);
}

static void test_accv(void) {
    void **ptr = alloc_all(SEG);
    double *mine = ptr[me];
    for (int i = 0; i < SEG / 8; i++) mine[i] = 1.0;
    double local[51];
    for (int i = 0; i < 51; i++) local[i] = (double)(me + 1);
    void *sp[8], *dp[8];
    armci_giov_t iov[2];
    double scale = 2.0;
    ARMCI_Barrier();
    for (int p = 0; p < nproc; p++) {
        build(iov, local, ptr[p], sp, dp, 1);
        CHECK(ARMCI_AccV(ARMCI_ACC_DBL, &scale, iov, 2, p) == 0, "AccV failed");
    }
    ARMCI_AllFence();
    ARMCI_Barrier();
    double sum = 0;
    for (int p = 0; p < nproc; p++) sum += 2.0 * (p + 1);
    CHECK(mine[0] == 1.0 + sum && mine[2] == 1.0 + sum, "first piece: %g", mine[0]);
    CHECK(mine[3] == 1.0, "the gap after the first piece changed: %g", mine[3]);
    CHECK(mine[3504 / 8 + 1] == 1.0 + sum, "last piece: %g", mine[3504 / 8 + 1]);
    ARMCI_Barrier();
    free_all(ptr);
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_putv_getv);
    RUN(test_accv);
    harness_done();
    return 0;
}
