/* Collectives back to back, where a barrier that let a PE through early, a
 * broadcast root that returned while others still read its source, or a counter
 * left over from a team's previous occupant of a slot would show: on one host they
 * run on direct load / store (csrc/direct.c; with more PEs than CPUs its barrier is
 * rule 7's central counter), through the service threads on the counter barrier.
 * Each round checks what every PE stored before the barrier. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include <sched.h>
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Rounds of each loop: 2000, or T_DIRECT_ROUNDS. The service threads' path is not
 * built for speed, and 2000 rounds of it at 4 PEs outlast the job limit on a busy
 * 2-core machine; its runs take fewer. */
static int ROUNDS = 2000;

/* ROUNDS barriers of `team` (world PEs pe_of[0 .. n)): each round every member
 * stores the round into its word on every member, then `sync`, then checks every
 * word. Two arrays alternate, so a member one round ahead never overwrites what a
 * slower one still checks. */
static void rounds(shmem_team_t team, int t, int n, const int *pe_of, long *words,
                   int how) {
    for (int k = 1; k <= ROUNDS; k++) {
        long *w = words + (k & 1) * 64;
        for (int p = 0; p < n; p++) shmem_long_p(w + t, k, pe_of[p]);
        if (how == 0) {
            shmem_barrier_all();
        } else if (how == 1) {
            shmem_quiet();
            shmem_sync_all();
        } else {
            shmem_quiet();
            shmem_team_sync(team);
        }
        for (int p = 0; p < n; p++)
            CHECK(w[p] == k, "round %d (%s): member %d's word is %ld", k,
                  how == 0 ? "barrier_all" : how == 1 ? "sync_all" : "team sync", p, w[p]);
    }
}

/* Broadcasts from every member in turn, then from the last one again and again
 * (a root a round ahead of a slow member must not overwrite what it still reads):
 * the root changes its source as soon as the call returns, and each member clears
 * its dest just before the call. */
static void broadcasts(shmem_team_t team, int t, int n, long *src, long *dst) {
    for (int k = 0; k < 2 * ROUNDS; k++) {
        int root = k < ROUNDS ? k % n : n - 1;
        if (t == root)
            for (int i = 0; i < 4; i++) src[i] = k * 10 + i;
        memset(dst, 0, 4 * sizeof(long));
        shmem_long_broadcast(team, dst, src, 4, root);
        for (int i = 0; i < 4; i++)
            CHECK(dst[i] == k * 10 + i, "broadcast %d from %d: [%d] = %ld", k, root, i, dst[i]);
        if (t == root) memset(src, 0xff, 4 * sizeof(long));
    }
}

/* In-place sum reductions: each member's source is its dest, and changes right
 * after the call. */
static void reductions(shmem_team_t team, int t, int n, const int *pe_of, long *x) {
    long want0 = 0;
    for (int p = 0; p < n; p++) want0 += pe_of[p];
    for (int k = 0; k < ROUNDS; k++) {
        x[0] = pe_of[t] + k;
        x[1] = 1;
        shmem_long_sum_reduce(team, x, x, 2);
        CHECK(x[0] == want0 + (long)n * k && x[1] == n, "reduce %d: %ld %ld", k, x[0], x[1]);
        x[0] = x[1] = -7;
    }
}

/* Every check on `team`. */
static void on(shmem_team_t team, long *words, long *a, long *b) {
    int t = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    int pe_of[64];
    for (int p = 0; p < n; p++) pe_of[p] = shmem_team_translate_pe(team, p, SHMEM_TEAM_WORLD);
    rounds(team, t, n, pe_of, words, 2);
    broadcasts(team, t, n, a, b);
    reductions(team, t, n, pe_of, a);
}

/* With T_DIRECT_PIN_RANK=R the PE of rank R (nf run's NF_RANK) keeps only the first
 * CPU it may use, before shmem_init: it alone counts its host as oversubscribed,
 * and the team's PEs must still agree on one kind of barrier (direct.c rule 7). */
static void pin_if_asked(void) {
    const char *pin = getenv("T_DIRECT_PIN_RANK"), *rank = getenv("NF_RANK");
    cpu_set_t cpus;
    if (!pin || !rank || atoi(pin) != atoi(rank) || sched_getaffinity(0, sizeof cpus, &cpus))
        return;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &cpus)) {
            CPU_ZERO(&cpus);
            CPU_SET(c, &cpus);
            CHECK(sched_setaffinity(0, sizeof cpus, &cpus) == 0, "sched_setaffinity");
            return;
        }
}

int main(void) {
    const char *r = getenv("T_DIRECT_ROUNDS");
    if (r && atoi(r) > 0) ROUNDS = atoi(r);
    pin_if_asked();
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *words = shmem_calloc(256, sizeof(long));
    long *a = shmem_calloc(8, sizeof(long)), *b = shmem_calloc(8, sizeof(long));
    int world[64];
    for (int p = 0; p < npes; p++) world[p] = p;

    rounds(SHMEM_TEAM_WORLD, me, npes, world, words, 0);
    rounds(SHMEM_TEAM_WORLD, me, npes, world, words, 1);
    PASS("barrier_all_and_sync_all_rounds");
    on(SHMEM_TEAM_WORLD, words, a, b);
    PASS("world_team_rounds_broadcasts_reductions");

    /* A team that is not the world: the odd PEs (PE 0 alone on one PE). */
    shmem_team_t odd;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, npes > 1 ? 1 : 0, 2, npes > 1 ? npes / 2 : 1,
                             NULL, 0, &odd);
    if (odd != SHMEM_TEAM_INVALID) on(odd, words + 128, a + 4, b + 4);
    if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
    shmem_barrier_all();
    PASS("split_team_rounds_broadcasts_reductions");

    /* Slots reused by teams whose members synchronised different numbers of times
     * before: rows of a 2d split share one slot, columns another; row r syncs r + 1
     * extra times (the rows take the odd team's slot). Then both are destroyed and
     * the next split takes the rows' slot with PEs from different rows. */
    shmem_team_t row, col;
    shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &row, NULL, 0, &col);
    for (int k = 0; k <= me / 2; k++) shmem_team_sync(row);
    shmem_team_sync(col);
    shmem_team_destroy(row);
    shmem_team_destroy(col);
    shmem_barrier_all();
    shmem_team_t evens;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &evens);
    if (evens != SHMEM_TEAM_INVALID) {
        on(evens, words, a, b);
        shmem_team_destroy(evens);
    }
    shmem_barrier_all();
    PASS("reused_slots_after_uneven_syncs");

    shmem_free(b);
    shmem_free(a);
    shmem_free(words);
    shmem_finalize();
    return 0;
}
