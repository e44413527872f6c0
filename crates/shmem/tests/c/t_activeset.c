/* The OpenSHMEM 1.4 active-set collectives: barrier, broadcast, collect, fcollect,
 * alltoall(s) in 32 and 64 bits, and the _to_all reductions, on the whole world
 * and on the even PEs (PE_start 0, logPE_stride 1), checked against computed
 * answers; pSync is back at SHMEM_SYNC_VALUE once every PE has left. */
#include <shmem.h>
#include <string.h>

#include "check.h"

#define N 5

/* Symmetric buffers, allocated once: shmem_malloc is a world collective, which
 * the even PEs alone cannot call. */
static int64_t *s64, *d64;
static int32_t *s32, *d32;
static long *ls, *ld;
static double *ds, *dd;
static short *ss, *sd;

static void psync_rests(long *ps, const char *what) {
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        CHECK(ps[i] == SHMEM_SYNC_VALUE, "%s: pSync[%d] = %ld", what, i, ps[i]);
}

/* The active set (start, logstride, size); this PE is member t. */
static void active_set(long *ps, int start, int logstride, int size, int t) {
    int stride = 1 << logstride;
    int me = shmem_my_pe();
    /* Only this PE's gets write d64 and d32 (never another PE), so this is safe. */
    memset(d64, 0, 8 * N * 64);
    memset(d32, 0, 4 * N * 64);
    for (int i = 0; i < N * 64; i++) {
        s64[i] = me * 1000 + i;
        s32[i] = me * 1000 + i;
    }
    shmem_barrier(start, logstride, size, ps);

    int root = size - 1, rootpe = start + root * stride;
    shmem_broadcast64(d64, s64, N, root, start, logstride, size, ps);
    for (int i = 0; i < N; i++)
        CHECK(d64[i] == (t == root ? 0 : rootpe * 1000 + i), "broadcast64 [%d] = %ld", i,
              (long)d64[i]);
    shmem_broadcast32(d32, s32, N, 0, start, logstride, size, ps);
    for (int i = 0; i < N; i++)
        CHECK(d32[i] == (t == 0 ? 0 : start * 1000 + i), "broadcast32 [%d]", i);

    shmem_fcollect64(d64, s64, N, start, logstride, size, ps);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < N; i++)
            CHECK(d64[p * N + i] == (start + p * stride) * 1000 + i, "fcollect64 [%d][%d]", p, i);
    shmem_collect32(d32, s32, (size_t)t + 1, start, logstride, size, ps);
    int at = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i <= p; i++, at++)
            CHECK(d32[at] == (start + p * stride) * 1000 + i, "collect32 [%d][%d]", p, i);

    shmem_alltoall64(d64, s64, N, start, logstride, size, ps);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < N; i++)
            CHECK(d64[p * N + i] == (start + p * stride) * 1000 + t * N + i, "alltoall64");
    memset(d32, 0, 4 * N * 64);
    shmem_alltoalls32(d32, s32, 3, 2, 2, start, logstride, size, ps);
    for (int p = 0; p < size; p++)
        for (int k = 0; k < 2; k++)
            CHECK(d32[(p * 2 + k) * 3] == (start + p * stride) * 1000 + (t * 2 + k) * 2,
                  "alltoalls32 [%d][%d]", p, k);

    /* Reductions with pWrk and pSync. */
    long wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
    for (int i = 0; i < N; i++) ls[i] = me + i + 1;
    shmem_long_sum_to_all(ld, ls, N, start, logstride, size, wrk, ps);
    for (int i = 0; i < N; i++) {
        long want = 0;
        for (int p = 0; p < size; p++) want += start + p * stride + i + 1;
        CHECK(ld[i] == want, "long sum_to_all [%d] = %ld, want %ld", i, ld[i], want);
    }
    shmem_long_max_to_all(ld, ls, N, start, logstride, size, wrk, ps);
    for (int i = 0; i < N; i++) CHECK(ld[i] == rootpe + i + 1, "long max_to_all [%d]", i);
    shmem_long_or_to_all(ls, ls, N, start, logstride, size, wrk, ps);
    for (int i = 0; i < N; i++) {
        long want = 0;
        for (int p = 0; p < size; p++) want |= start + p * stride + i + 1;
        CHECK(ls[i] == want, "in-place long or_to_all [%d]", i);
    }
    double dw[N];
    for (int i = 0; i < N; i++) ds[i] = 0.25 * (me + 1) + i;
    shmem_double_prod_to_all(dd, ds, N, start, logstride, size, dw, ps);
    for (int i = 0; i < N; i++) {
        double want = 1;
        for (int p = 0; p < size; p++) want *= 0.25 * (start + p * stride + 1) + i;
        CHECK(dd[i] == want, "double prod_to_all [%d]", i);
    }
    short sw[N];
    for (int i = 0; i < N; i++) ss[i] = (short)(me + 3 * i);
    shmem_short_min_to_all(sd, ss, N, start, logstride, size, sw, ps);
    for (int i = 0; i < N; i++) CHECK(sd[i] == start + 3 * i, "short min_to_all [%d]", i);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *ps = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++) ps[i] = SHMEM_SYNC_VALUE;
    s64 = shmem_malloc(8 * N * 64);
    d64 = shmem_malloc(8 * N * 64);
    s32 = shmem_malloc(4 * N * 64);
    d32 = shmem_malloc(4 * N * 64);
    ls = shmem_malloc(N * sizeof(long));
    ld = shmem_malloc(N * sizeof(long));
    ds = shmem_malloc(N * sizeof(double));
    dd = shmem_malloc(N * sizeof(double));
    ss = shmem_malloc(N * sizeof(short));
    sd = shmem_malloc(N * sizeof(short));
    shmem_barrier_all();
    for (int k = 0; k < 3; k++) active_set(ps, 0, 0, npes, me);
    /* Only once every PE has left (another may already be in the next call). */
    shmem_barrier_all();
    psync_rests(ps, "world");
    PASS("active_set_world");

    /* The even PEs, while the odd ones (a disjoint set with the same pSync) do the
     * same on theirs. */
    if (me % 2 == 0)
        for (int k = 0; k < 3; k++) active_set(ps, 0, 1, (npes + 1) / 2, me / 2);
    else
        for (int k = 0; k < 3; k++) active_set(ps, 1, 1, npes / 2, me / 2);
    shmem_barrier_all();
    psync_rests(ps, "evens and odds");
    PASS("active_set_evens_and_odds");
    shmem_finalize();
    return 0;
}
