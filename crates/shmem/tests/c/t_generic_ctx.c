/* The C11 generic forms with a context first (built with -std=c11): every family
 * that has shmem_ctx_TYPENAME_* forms (put, get, their _nbi, p, g, iput, iget,
 * put-with-signal and its _nbi, every atomic and the fetching _nbi atomics) called
 * as shmem_OP(ctx, dest, ...) on a created context, SHMEM_CTX_DEFAULT and a team's
 * context, on several element types; each PE writes to its right neighbour and
 * checks what its left one wrote. A team context names team PEs, so a call that
 * reached the context-free function instead would land on another PE. */
#include <shmem.h>
#include <string.h>

#include "check.h"

#define N 8

/* RMA on one type through `ctx`: put, put_nbi, p, iput to the right; get, get_nbi,
 * g, iget back from it. */
#define RMA_ON(T, ctx, me, right, left)                                               \
    do {                                                                              \
        T *dst = shmem_calloc(4 * N, sizeof(T));                                      \
        T src[2 * N], got[2 * N];                                                     \
        for (int i = 0; i < 2 * N; i++) src[i] = (T)((me) * 10 + i + 1);              \
        shmem_barrier_all();                                                          \
        shmem_put(ctx, dst, src, N, right);                                           \
        shmem_put_nbi(ctx, dst + N, src + 1, N, right);                               \
        shmem_p(ctx, dst + 2 * N, src[5], right);                                     \
        shmem_iput(ctx, dst + 3 * N, src, 2, 3, N / 2, right);                        \
        shmem_ctx_quiet(ctx);                                                         \
        shmem_barrier_all();                                                          \
        for (int i = 0; i < N; i++) {                                                 \
            CHECK(dst[i] == (T)((left) * 10 + i + 1), #T " put [%d]", i);             \
            CHECK(dst[N + i] == (T)((left) * 10 + i + 2), #T " put_nbi [%d]", i);     \
        }                                                                             \
        CHECK(dst[2 * N] == (T)((left) * 10 + 6), #T " p");                           \
        for (int i = 0; i < N / 2; i++)                                               \
            CHECK(dst[3 * N + 2 * i] == (T)((left) * 10 + 3 * i + 1), #T " iput [%d]", i); \
        memset(got, 0, sizeof got);                                                   \
        shmem_get(ctx, got, dst, N, right);                                           \
        shmem_get_nbi(ctx, got + N, dst + N, N, right);                               \
        shmem_ctx_quiet(ctx);                                                         \
        for (int i = 0; i < N; i++) {                                                 \
            CHECK(got[i] == (T)((me) * 10 + i + 1), #T " get [%d]", i);               \
            CHECK(got[N + i] == (T)((me) * 10 + i + 2), #T " get_nbi [%d]", i);       \
        }                                                                             \
        CHECK(shmem_g(ctx, dst + 2 * N, right) == (T)((me) * 10 + 6), #T " g");       \
        memset(got, 0, sizeof got);                                                   \
        shmem_iget(ctx, got, dst + 3 * N, 3, 2, N / 2, right);                        \
        for (int i = 0; i < N / 2; i++)                                               \
            CHECK(got[3 * i] == (T)((me) * 10 + 3 * i + 1), #T " iget [%d]", i);      \
        shmem_barrier_all();                                                          \
        shmem_free(dst);                                                              \
    } while (0)

static void rma(shmem_ctx_t ctx, int me, int right, int left) {
    RMA_ON(double, ctx, me, right, left);
    RMA_ON(float, ctx, me, right, left);
    RMA_ON(short, ctx, me, right, left);
    RMA_ON(unsigned char, ctx, me, right, left);
    RMA_ON(long long, ctx, me, right, left);
    RMA_ON(long double, ctx, me, right, left);
}

/* Put-with-signal, blocking then _nbi: the data is there once the signal is. */
static void signals(shmem_ctx_t ctx, int me, int right, int left) {
    int *box = shmem_calloc(2 * N, sizeof(int));
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    int mine[2 * N];
    for (int i = 0; i < 2 * N; i++) mine[i] = me * 100 + i;
    shmem_barrier_all();
    shmem_put_signal(ctx, box, mine, N, sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_put_signal_nbi(ctx, box + N, mine + N, N, sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_ctx_quiet(ctx);
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 2);
    for (int i = 0; i < 2 * N; i++) CHECK(box[i] == left * 100 + i, "put_signal [%d]", i);
    shmem_barrier_all();
    shmem_free(sig);
    shmem_free(box);
}

/* Every atomic through `ctx` on the right neighbour's words. */
static void atomics(shmem_ctx_t ctx, int me, int right, int left) {
    long *l = shmem_calloc(4, sizeof(long));
    double *d = shmem_calloc(2, sizeof(double));
    unsigned int *u = shmem_calloc(3, sizeof(unsigned int));
    int *i32 = shmem_calloc(1, sizeof(int));
    shmem_barrier_all();
    shmem_atomic_set(ctx, d, 1.5 + me, right);
    shmem_atomic_add(ctx, l, 3L, right);
    shmem_atomic_inc(ctx, l, right);
    shmem_ctx_quiet(ctx); /* non-fetching atomics complete before what reads them */
    CHECK(shmem_atomic_fetch_add(ctx, l, 10L, right) == 4, "fetch_add");
    CHECK(shmem_atomic_fetch_inc(ctx, l, right) == 14, "fetch_inc");
    CHECK(shmem_atomic_compare_swap(ctx, l, 15L, 100L, right) == 15, "compare_swap");
    CHECK(shmem_atomic_swap(ctx, l + 1, 7L, right) == 0, "swap");
    shmem_atomic_or(ctx, u, 0x0fu, right);
    shmem_ctx_fence(ctx); /* or, and, xor do not commute */
    shmem_atomic_and(ctx, u, 0x3cu, right);
    shmem_ctx_fence(ctx);
    shmem_atomic_xor(ctx, u, 0x01u, right);
    CHECK(shmem_atomic_fetch_or(ctx, u + 1, 0x30u, right) == 0, "fetch_or");
    CHECK(shmem_atomic_fetch_and(ctx, u + 1, 0x10u, right) == 0x30, "fetch_and");
    CHECK(shmem_atomic_fetch_xor(ctx, u + 1, 0x11u, right) == 0x10, "fetch_xor");
    shmem_atomic_or(ctx, i32, 6, right); /* int is the int32 bitwise family */
    long got[4] = {-1, -1, -1, -1};
    double dgot = -1;
    unsigned int ugot[3] = {9, 9, 9};
    shmem_atomic_fetch_nbi(ctx, &got[0], l + 1, right);
    shmem_atomic_swap_nbi(ctx, &dgot, d + 1, 2.25, right);
    shmem_atomic_fetch_add_nbi(ctx, &got[1], l + 2, 5L, right);
    shmem_atomic_fetch_inc_nbi(ctx, &got[2], l + 3, right);
    shmem_ctx_quiet(ctx);
    shmem_atomic_compare_swap_nbi(ctx, &got[3], l + 2, 5L, 50L, right);
    shmem_atomic_fetch_or_nbi(ctx, &ugot[0], u + 2, 0x6u, right);
    shmem_ctx_quiet(ctx);
    shmem_atomic_fetch_and_nbi(ctx, &ugot[1], u + 2, 0x4u, right);
    shmem_ctx_quiet(ctx);
    shmem_atomic_fetch_xor_nbi(ctx, &ugot[2], u + 2, 0x5u, right);
    shmem_ctx_quiet(ctx);
    CHECK(got[0] == 7 && dgot == 0 && got[1] == 0 && got[2] == 0 && got[3] == 5,
          "fetching nbi: %ld %g %ld %ld %ld", got[0], dgot, got[1], got[2], got[3]);
    CHECK(ugot[0] == 0 && ugot[1] == 6 && ugot[2] == 4, "bitwise nbi: %u %u %u", ugot[0],
          ugot[1], ugot[2]);
    shmem_barrier_all();
    CHECK(shmem_atomic_fetch(ctx, d, me) == 1.5 + left, "set / fetch (double)");
    CHECK(d[1] == 2.25, "swap_nbi (double)");
    CHECK(l[0] == 100 && l[1] == 7 && l[2] == 50 && l[3] == 1, "long words: %ld %ld %ld %ld",
          l[0], l[1], l[2], l[3]);
    CHECK(u[0] == 0x0d && u[1] == 0x01 && u[2] == 0x01, "uint words: %#x %#x %#x", u[0], u[1],
          u[2]);
    CHECK(*i32 == 6, "int or");
    shmem_barrier_all();
    shmem_free(i32);
    shmem_free(u);
    shmem_free(d);
    shmem_free(l);
}

/* A context of the team of world PEs 1 .. npes - 1 names them 0 .. npes - 2: a put
 * to its PE 0 lands on world PE 1, an atomic on its last PE on the last world PE. */
static void team_context(int me, int npes) {
    long *x = shmem_calloc(2, sizeof(long));
    shmem_team_t team;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, NULL, 0, &team);
    if (team != SHMEM_TEAM_INVALID) {
        shmem_ctx_t tctx;
        CHECK(shmem_team_create_ctx(team, 0, &tctx) == 0, "team_create_ctx");
        long v = 40 + me;
        shmem_put(tctx, x, &v, 1, 0);
        shmem_atomic_add(tctx, x + 1, 1L, npes - 2);
        shmem_ctx_quiet(tctx);
        shmem_ctx_destroy(tctx);
    }
    shmem_barrier_all();
    /* Every member put to world PE 1; the last one's value is some member's. */
    if (me == 1) CHECK(x[0] >= 41 && x[0] < 40 + npes, "team ctx put: %ld", x[0]);
    if (me != 1) CHECK(x[0] == 0, "team ctx put landed on world PE %d: %ld", me, x[0]);
    CHECK(x[1] == (me == npes - 1 ? npes - 1 : 0), "team ctx add: %ld", x[1]);
    if (team != SHMEM_TEAM_INVALID) shmem_team_destroy(team);
    shmem_barrier_all();
    shmem_free(x);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
    rma(ctx, me, right, left);
    rma(SHMEM_CTX_DEFAULT, me, right, left);
    PASS("generic_ctx_rma");
    signals(ctx, me, right, left);
    PASS("generic_ctx_put_signal");
    atomics(ctx, me, right, left);
    atomics(SHMEM_CTX_DEFAULT, me, right, left);
    PASS("generic_ctx_atomics");
    if (npes > 1) team_context(me, npes);
    PASS("generic_ctx_team");
    /* The context-free forms are unchanged beside them. */
    long *y = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    shmem_p(y, (long)me, right);
    shmem_atomic_add(y, 1L, right);
    shmem_barrier_all();
    CHECK(*y == left + 1 && shmem_g(y, me) == left + 1, "context-free forms");
    shmem_free(y);
    shmem_ctx_destroy(ctx);
    PASS("generic_no_ctx");
    shmem_finalize();
    return 0;
}
