/* Teams (OpenSHMEM 1.5 section 9.4) and collectives on them: strided, 2d and
 * SHARED splits with translate_pe both ways, every collective family on a team
 * whose PE numbers differ from the world's (the world reversed) with a
 * team-relative root, two disjoint teams working at once, destroy and reuse of
 * slots past the table's size, a full table, team contexts. Every result is
 * checked against a computed answer. */
#include <shmem.h>
#include <string.h>

#include "check.h"

#define N 6

static void splits(int me, int npes, int *x) {
    /* The even world PEs. */
    shmem_team_t even;
    int esize = (npes + 1) / 2;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, esize, NULL, 0, &even) == 0,
          "split evens");
    if (me % 2 == 0) {
        CHECK(even != SHMEM_TEAM_INVALID, "even PE got no team");
        CHECK(shmem_team_my_pe(even) == me / 2, "even my_pe %d", shmem_team_my_pe(even));
        CHECK(shmem_team_n_pes(even) == esize, "even n_pes %d", shmem_team_n_pes(even));
        for (int t = 0; t < esize; t++) {
            CHECK(shmem_team_translate_pe(even, t, SHMEM_TEAM_WORLD) == 2 * t, "even->world %d", t);
            CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 2 * t, even) == t, "world->even %d", t);
        }
        CHECK(shmem_team_translate_pe(even, esize, SHMEM_TEAM_WORLD) == -1, "past the team");
        if (npes > 1)
            CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, even) == -1, "odd in evens");
        shmem_team_config_t cfg = {.num_contexts = 99};
        CHECK(shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &cfg) == 0 &&
                  cfg.num_contexts == 0,
              "default num_contexts %d", cfg.num_contexts);
        shmem_team_destroy(even);
    } else {
        CHECK(even == SHMEM_TEAM_INVALID, "odd PE got a team");
        CHECK(shmem_team_my_pe(even) == -1 && shmem_team_n_pes(even) == -1, "INVALID queries");
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, even) == -1, "into INVALID");
    }
    PASS("split_strided_translate_invalid");

    /* 2d: rows of 2 (x), columns (y); the config travels. */
    shmem_team_t xt, yt;
    shmem_team_config_t xc = {.num_contexts = 3}, yc = {.num_contexts = 5};
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, &xc, SHMEM_TEAM_NUM_CONTEXTS, &xt, &yc,
                              SHMEM_TEAM_NUM_CONTEXTS, &yt) == 0,
          "split_2d");
    int row = me / 2, col = me % 2;
    int xsize = npes - 2 * row < 2 ? npes - 2 * row : 2;
    int ysize = (npes - col + 1) / 2;
    CHECK(shmem_team_my_pe(xt) == col && shmem_team_n_pes(xt) == xsize, "x team %d of %d",
          shmem_team_my_pe(xt), shmem_team_n_pes(xt));
    CHECK(shmem_team_my_pe(yt) == row && shmem_team_n_pes(yt) == ysize, "y team %d of %d",
          shmem_team_my_pe(yt), shmem_team_n_pes(yt));
    for (int t = 0; t < ysize; t++)
        CHECK(shmem_team_translate_pe(yt, t, SHMEM_TEAM_WORLD) == col + 2 * t, "y->world %d", t);
    CHECK(shmem_team_translate_pe(xt, 0, yt) == (col == 0 ? row : -1), "x->y");
    shmem_team_config_t got;
    CHECK(shmem_team_get_config(xt, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 3,
          "x config");
    CHECK(shmem_team_get_config(yt, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 5,
          "y config");
    /* A barrier on each axis: only members take part. */
    shmem_sync(xt);
    shmem_sync(yt);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    PASS("split_2d");

    /* SHARED: exactly the PEs shmem_ptr reaches, in world order. */
    int ns = shmem_team_n_pes(SHMEM_TEAM_SHARED), seen = 0;
    for (int p = 0; p < npes; p++) {
        int t = shmem_team_translate_pe(SHMEM_TEAM_WORLD, p, SHMEM_TEAM_SHARED);
        int reach = p == me || shmem_ptr(x, p) != NULL;
        CHECK((t >= 0) == reach, "world PE %d: shared PE %d, shmem_ptr reach %d", p, t, reach);
        if (t >= 0) {
            CHECK(t == seen, "shared PE %d out of order", t);
            CHECK(shmem_team_translate_pe(SHMEM_TEAM_SHARED, t, SHMEM_TEAM_WORLD) == p, "back");
            seen++;
        }
    }
    CHECK(seen == ns, "shared has %d PEs, %d reachable", ns, seen);
    CHECK(shmem_team_my_pe(SHMEM_TEAM_SHARED) ==
              shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, SHMEM_TEAM_SHARED),
          "shared my_pe");
    long *s = shmem_malloc(sizeof(long)), *d = shmem_malloc(sizeof(long));
    *s = me;
    shmem_long_sum_reduce(SHMEM_TEAM_SHARED, d, s, 1);
    long want = 0;
    for (int t = 0; t < ns; t++) want += shmem_team_translate_pe(SHMEM_TEAM_SHARED, t, SHMEM_TEAM_WORLD);
    CHECK(*d == want, "shared sum %ld, want %ld", *d, want);
    shmem_free(d);
    shmem_free(s);
    PASS("team_shared");
}

/* Symmetric buffers of every family test, allocated once (shmem_malloc is a world
 * collective: allocating inside would synchronise the disjoint teams). */
static long *src, *dst;
static double *fs, *fd;

/* Every family on `team` (this PE is t of n; world PE of team PE i is pe_of[i]). */
static void families(shmem_team_t team, int t, int n, const int *pe_of) {
    for (int i = 0; i < 64 * N; i++) src[i] = pe_of[t] * 1000 + i;
    int root = n - 1;
    memset(dst, 0, 64 * N * sizeof(long));
    shmem_long_broadcast(team, dst, src, N, root);
    for (int i = 0; i < N; i++)
        CHECK(dst[i] == pe_of[root] * 1000 + i, "broadcast [%d] = %ld", i, dst[i]);
    shmem_long_fcollect(team, dst, src, N);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < N; i++)
            CHECK(dst[p * N + i] == pe_of[p] * 1000 + i, "fcollect [%d][%d]", p, i);
    /* Team PE p contributes p + 1 elements, in team order. */
    shmem_long_collect(team, dst, src, (size_t)t + 1);
    int at = 0;
    for (int p = 0; p < n; p++)
        for (int i = 0; i <= p; i++, at++)
            CHECK(dst[at] == pe_of[p] * 1000 + i, "collect [%d][%d]", p, i);
    shmem_long_alltoall(team, dst, src, N);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < N; i++)
            CHECK(dst[p * N + i] == pe_of[p] * 1000 + t * N + i, "alltoall [%d][%d]", p, i);
    memset(dst, 0, 64 * N * sizeof(long));
    shmem_long_alltoalls(team, dst, src, 3, 2, 2);
    for (int p = 0; p < n; p++)
        for (int k = 0; k < 2; k++)
            CHECK(dst[(p * 2 + k) * 3] == pe_of[p] * 1000 + (t * 2 + k) * 2, "alltoalls [%d][%d]",
                  p, k);
    /* Reductions: more elements than PEs and fewer, in place too. */
    for (size_t cnt = 1; cnt <= 2 * N + 1; cnt += 2 * N) {
        shmem_long_sum_reduce(team, dst, src, cnt);
        for (size_t i = 0; i < cnt; i++) {
            long want = 0;
            for (int p = 0; p < n; p++) want += pe_of[p] * 1000 + (long)i;
            CHECK(dst[i] == want, "sum [%zu] = %ld, want %ld", i, dst[i], want);
        }
        shmem_long_max_reduce(team, dst, src, cnt);
        int top = 0;
        for (int p = 0; p < n; p++) top = pe_of[p] > top ? pe_of[p] : top;
        for (size_t i = 0; i < cnt; i++) CHECK(dst[i] == top * 1000 + (long)i, "max [%zu]", i);
        shmem_int64_xor_reduce(team, src, src, cnt);
        for (size_t i = 0; i < cnt; i++) {
            long want = 0;
            for (int p = 0; p < n; p++) want ^= pe_of[p] * 1000 + (long)i;
            CHECK(src[i] == want, "in-place xor [%zu]", i);
        }
        for (size_t i = 0; i < cnt; i++) src[i] = pe_of[t] * 1000 + (long)i;
    }
    for (int i = 0; i < N; i++) fs[i] = 0.5 * (t + 1) + i;
    shmem_double_prod_reduce(team, fd, fs, N);
    for (int i = 0; i < N; i++) {
        double want = 1;
        for (int p = 0; p < n; p++) want *= 0.5 * (p + 1) + i;
        CHECK(fd[i] == want, "double prod [%d] = %g, want %g", i, fd[i], want);
    }
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int *x = shmem_calloc(64, sizeof(int));
    src = shmem_malloc(64 * N * sizeof(long));
    dst = shmem_malloc(64 * N * sizeof(long));
    fs = shmem_malloc(N * sizeof(double));
    fd = shmem_malloc(N * sizeof(double));
    splits(me, npes, x);

    /* The world reversed: team PE t is world PE npes - 1 - t. */
    shmem_team_t rev;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev);
    int pe_of[64];
    for (int t = 0; t < npes; t++) pe_of[t] = npes - 1 - t;
    CHECK(shmem_team_my_pe(rev) == npes - 1 - me, "reversed my_pe");
    families(rev, npes - 1 - me, npes, pe_of);
    PASS("every_family_on_a_reversed_team");

    /* The odd PEs of the reversed team (a split of a split). */
    shmem_team_t sub;
    int ssize = npes / 2 > 0 ? npes / 2 : 1;
    shmem_team_split_strided(rev, npes > 1 ? 1 : 0, 2, ssize, NULL, 0, &sub);
    int t_rev = npes - 1 - me;
    if (sub != SHMEM_TEAM_INVALID) {
        int spe[64];
        for (int t = 0; t < ssize; t++) spe[t] = pe_of[(npes > 1 ? 1 : 0) + 2 * t];
        families(sub, shmem_team_my_pe(sub), ssize, spe);
        shmem_team_destroy(sub);
    } else {
        CHECK(npes > 1 && t_rev % 2 == 0, "team PE %d of the reversed team left out", t_rev);
    }
    PASS("every_family_on_a_split_of_a_split");

    /* Two disjoint teams (the columns of a 2d split share a slot) working at once. */
    shmem_team_t row, colt;
    shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &row, NULL, 0, &colt);
    int cn = shmem_team_n_pes(colt), ct = shmem_team_my_pe(colt);
    int cpe[64];
    for (int t = 0; t < cn; t++) cpe[t] = shmem_team_translate_pe(colt, t, SHMEM_TEAM_WORLD);
    for (int round = 0; round < 30; round++) families(colt, ct, cn, cpe);
    shmem_team_destroy(row);
    shmem_team_destroy(colt);
    PASS("two_disjoint_teams_at_once");

    /* Destroy and reuse: more splits than the table has slots. */
    for (int k = 0; k < 150; k++) {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t) == 0, "split %d", k);
        int *w = shmem_malloc(sizeof(int));
        *w = k;
        int *r = shmem_malloc(sizeof(int));
        shmem_int_sum_reduce(t, r, w, 1);
        CHECK(*r == k * npes, "reuse %d: sum %d", k, *r);
        shmem_free(r);
        shmem_free(w);
        shmem_team_destroy(t);
    }
    PASS("destroy_then_reuse");

    /* A full table: the split says so and gives INVALID, on every PE. */
    shmem_team_t live[64];
    int made = 0;
    for (;;) {
        shmem_team_t t;
        int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
        if (rc != 0) {
            CHECK(t == SHMEM_TEAM_INVALID, "full table gave a team");
            break;
        }
        CHECK(made < 64, "the table never fills");
        live[made++] = t;
    }
    /* 64 slots: the world, SHARED and `rev` hold three. */
    CHECK(made == 61, "%d teams fit", made);
    for (int k = 0; k < made; k++) shmem_team_destroy(live[k]);
    PASS("full_table");

    /* A team context takes team PE numbers. */
    shmem_ctx_t ctx;
    CHECK(shmem_team_create_ctx(rev, 0, &ctx) == 0, "create ctx");
    shmem_team_t back;
    CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == rev, "ctx team");
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &back) == 0 && back == SHMEM_TEAM_WORLD,
          "default ctx team");
    /* Team PE 0 is world PE npes - 1: each PE writes its number into slot me there. */
    shmem_ctx_int_p(ctx, &x[me], me + 1, 0);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    if (me == npes - 1)
        for (int p = 0; p < npes; p++) CHECK(x[p] == p + 1, "ctx put from PE %d: %d", p, x[p]);
    shmem_ctx_destroy(ctx);
    shmem_team_t none = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_create_ctx(none, 0, &ctx) != 0 && ctx == SHMEM_CTX_INVALID, "INVALID ctx");
    shmem_team_destroy(rev);
    PASS("team_contexts");

    shmem_finalize();
    return 0;
}
