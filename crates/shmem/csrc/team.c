/* Teams (OpenSHMEM 1.5 section 9.4): a bounded table of live teams, the splits that
 * fill it, and the team barrier every collective on a team uses (csrc/team.h).
 *
 * 1. The table has NF_TEAM_SLOTS slots: 0 is SHMEM_TEAM_WORLD, 1 SHMEM_TEAM_SHARED
 *    (the PEs shmem_ptr reaches, src/team.rs), the others hold split teams. Each
 *    slot owns one line of the team area, symmetric words every PE reserved at
 *    shmem_init (the barrier's psync, collect's count, a split's arguments).
 * 2. A team is its members' world PEs in team order, and the inverse map.
 * 3. A handle is (generation << 8) | (slot + 1): the predefined teams are
 *    generation 0 (so the header's 1 and 2), and a slot's generation grows each
 *    time a split takes it, so a destroyed team's handle is told from the new
 *    team in its slot and refused, naming the call.
 * 4. A split is collective over the parent: every parent PE publishes its
 *    arguments and its free slots in the parent's line, a parent barrier, each
 *    checks its arguments against parent PE 0's (a difference ends the job naming
 *    both) and takes the lowest slot free on every parent PE, a parent barrier.
 *    All parent PEs pick the same slot, so the new team's words are the same
 *    symmetric line on each member; they rest idle (0) since the slot's previous
 *    team ended with a barrier. Disjoint teams of one split (2d) share a slot.
 * 5. A full table is the specification's failure: the split prints why, returns
 *    nonzero and gives SHMEM_TEAM_INVALID, on every parent PE alike.
 * 6. The table is set up at the first team call after shmem_init (nothing
 *    collective happens there: the area is already symmetric and idle). */
#include <shmem.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "team.h"

#define NF_TEAM_SLOTS 64
#define NF_SLOT_WORLD 0
#define NF_SLOT_SHARED 1

/* One slot's symmetric words: one cache line, so teams never share a line. */
struct nf_team_sym {
    long psync[2]; /* the team barrier (team.h rule 2), idle 0 */
    long count;    /* collect's element count */
    long split[4]; /* a split's free-slot mask and arguments (rule 4) */
    long pad;
};
_Static_assert(sizeof(struct nf_team_sym) == 64, "one line per slot");
_Static_assert(NF_TEAM_SLOTS <= 64, "the free slots travel as one 64-bit mask");

struct nf_team {
    unsigned gen;  /* rule 3 */
    int live;
    int size, me;  /* me is -1 on a PE outside the team (not kept) */
    int *members;  /* world PEs in team order */
    int *index_of; /* world PE -> team PE, or -1 */
    shmem_team_config_t config;
};

static struct nf_team teams[NF_TEAM_SLOTS];
static struct nf_team_sym *sym; /* this PE's team area; NULL before rule 6 */
static int world_n;
/* Same-host collectives (direct.c): each slot's counters follow the lines in the
 * team area; the decision and pointers are per team, the consumed counts per slot
 * (direct.c rule 2: they outlive the slot's teams). */
static struct nf_direct_sym *dsym;
static struct nf_direct directs[NF_TEAM_SLOTS];
static long seen[NF_TEAM_SLOTS][NF_SEEN];
static struct nf_bounce *bounce; /* after the counters (one per PE) */
static long acks;                /* what bounce->ack will reach (direct.c rule 4) */

void nf_fatalf(const char *call, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nf_shmem_fatal(call, msg);
}

static void *nf_alloc(const char *call, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) nf_fatalf(call, "out of local memory for a team of %zu B", bytes);
    return p;
}

/* Fills `slot` with the team of `members` (taken over), rule 2. */
static void nf_team_fill(const char *call, int slot, int *members, int size,
                         const shmem_team_config_t *config, long mask) {
    struct nf_team *t = &teams[slot];
    int me = shmem_my_pe();
    t->members = members;
    t->size = size;
    t->index_of = nf_alloc(call, (size_t)world_n * sizeof(int));
    for (int p = 0; p < world_n; p++) t->index_of[p] = -1;
    for (int i = 0; i < size; i++) t->index_of[members[i]] = i;
    t->me = t->index_of[me];
    memset(&t->config, 0, sizeof t->config);
    if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS)) t->config.num_contexts = config->num_contexts;
    t->live = 1;
    directs[slot].ready = 0;
}

static void nf_team_clear(struct nf_team *t) {
    free(t->members);
    free(t->index_of);
    t->members = t->index_of = NULL;
    t->live = 0;
}

/* Rule 6: the table for this shmem_init (a new area means a new job). */
static void nf_teams_ready(const char *call) {
    if (sym && nf_fast_team_area() == sym) return;
    size_t bytes;
    void *area = nf_shmem_team_area(call, &bytes);
    if (area == sym) return;
    size_t need = (sizeof(struct nf_team_sym) + sizeof(struct nf_direct_sym)) * NF_TEAM_SLOTS +
                  sizeof(struct nf_bounce);
    if (bytes < need)
        nf_fatalf(call, "the team area holds %zu B, the table needs %zu B", bytes, need);
    for (int s = 0; s < NF_TEAM_SLOTS; s++) nf_team_clear(&teams[s]);
    sym = area;
    dsym = (struct nf_direct_sym *)(sym + NF_TEAM_SLOTS);
    bounce = (struct nf_bounce *)(dsym + NF_TEAM_SLOTS);
    memset(seen, 0, sizeof seen); /* a fresh area's counters are 0 */
    acks = 0;
    world_n = shmem_n_pes();
    int *world = nf_alloc(call, (size_t)world_n * sizeof(int));
    for (int p = 0; p < world_n; p++) world[p] = p;
    nf_team_fill(call, NF_SLOT_WORLD, world, world_n, NULL, 0);
    int *shared = nf_alloc(call, (size_t)world_n * sizeof(int));
    int n = nf_shmem_team_shared(shared);
    nf_team_fill(call, NF_SLOT_SHARED, shared, n, NULL, 0);
}

static shmem_team_t nf_handle(int slot) {
    return (shmem_team_t)(((uintptr_t)teams[slot].gen << 8) | (uintptr_t)(slot + 1));
}

/* The live team of `team`: NULL for SHMEM_TEAM_INVALID; a handle of no live team
 * ends the job naming `call` (rule 3). */
static struct nf_team *nf_team_find(const char *call, shmem_team_t team, int *slot) {
    nf_teams_ready(call);
    if (team == SHMEM_TEAM_INVALID) return NULL;
    uintptr_t h = (uintptr_t)team;
    int s = (int)(h & 0xff) - 1;
    if (s < 0 || s >= NF_TEAM_SLOTS || !teams[s].live || teams[s].gen != (unsigned)(h >> 8))
        nf_fatalf(call,
                  "team %p is not a live team: it was destroyed, or never came from a "
                  "split on this PE",
                  (void *)team);
    if (slot) *slot = s;
    return &teams[s];
}

/* As nf_team_find, where SHMEM_TEAM_INVALID is an error too. */
static struct nf_team *nf_team_live(const char *call, shmem_team_t team, int *slot) {
    struct nf_team *t = nf_team_find(call, team, slot);
    if (!t) nf_shmem_fatal(call, "team is SHMEM_TEAM_INVALID");
    return t;
}

void nf_team_group(const char *call, shmem_team_t team, struct nf_group *g) {
    int slot;
    struct nf_team *t = nf_team_live(call, team, &slot);
    if (t->me < 0) nf_shmem_fatal(call, "this PE is not a member of the team");
    g->size = t->size;
    g->me = t->me;
    g->start = 0;
    g->stride = 1;
    g->list = t->members;
    g->psync = slot == NF_SLOT_WORLD ? NULL : sym[slot].psync;
    g->idle = 0;
    g->count = &sym[slot].count;
    g->direct = NULL;
    struct nf_direct *d = &directs[slot];
    if (!d->ready)
        nf_direct_setup(call, d, g, &dsym[slot], seen[slot], bounce, &acks,
                        teams[NF_SLOT_SHARED].size);
    if (d->on) g->direct = d;
}

int nf_team_world_pe(const char *call, shmem_team_t team, int pe) {
    struct nf_team *t = nf_team_live(call, team, NULL);
    if (pe < 0 || pe >= t->size)
        nf_fatalf(call, "PE %d does not exist in the team: it has %d PEs (0 ..= %d)", pe,
                  t->size, t->size - 1);
    return t->members[pe];
}

/* ---- The team barrier (team.h rule 2) ---- */

/* Waits until *word is (equal) or is not (!equal) `value`. */
static void nf_wait_word(const char *call, long *word, long value, int equal) {
    unsigned round = 0;
    while ((__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) != equal)
        nf_shmem_pause(call, &round);
}

void nf_group_sync(const char *call, const struct nf_group *g) {
    if (g->direct) {
        nf_direct_sync(call, g);
        return;
    }
    if (!g->psync) {
        nf_shmem_world_barrier(call);
        return;
    }
    if (g->size == 1) return;
    long *arrived = &g->psync[0], *released = &g->psync[1];
    /* Resting a word of this PE is a local atomic store: through the rma layer it
     * could land after the next call's first atomic (the service path completes
     * non-fetching atomics later). Others' atomics on the word are hardware atomics
     * too, so both mix. */
    if (g->me == 0) {
        nf_wait_word(call, arrived, g->idle + g->size - 1, 1);
        __atomic_store_n(arrived, g->idle, __ATOMIC_RELEASE);
        for (int i = 1; i < g->size; i++)
            nf_amo(call, NF_AMO_SET, released, g->idle + 1, 0, sizeof(long),
                   nf_group_pe(g, i));
    } else {
        nf_amo(call, NF_AMO_ADD, arrived, 1, 0, sizeof(long), nf_group_pe(g, 0));
        nf_wait_word(call, released, g->idle, 0);
        __atomic_store_n(released, g->idle, __ATOMIC_RELEASE);
    }
}

void nf_group_barrier(const char *call, const struct nf_group *g) {
    if (g->psync || g->direct) shmem_quiet();
    nf_group_sync(call, g);
}

void shmem_barrier_all(void) {
    struct nf_group g;
    nf_team_group("shmem_barrier_all", SHMEM_TEAM_WORLD, &g);
    nf_group_barrier("shmem_barrier_all", &g);
}

/* A barrier without completing puts: the world's wire-up barrier, or the direct one. */
void shmem_sync_all(void) {
    struct nf_group g;
    nf_team_group("shmem_sync_all", SHMEM_TEAM_WORLD, &g);
    if (g.direct)
        nf_direct_sync("shmem_sync_all", &g);
    else
        nf_shmem_world_sync("shmem_sync_all");
}

/* ---- Queries ---- */

int shmem_team_my_pe(shmem_team_t team) {
    struct nf_team *t = nf_team_find("shmem_team_my_pe", team, NULL);
    return t ? t->me : -1;
}

int shmem_team_n_pes(shmem_team_t team) {
    struct nf_team *t = nf_team_find("shmem_team_n_pes", team, NULL);
    return t ? t->size : -1;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config) {
    struct nf_team *t = nf_team_find("shmem_team_get_config", team, NULL);
    if (!t || !config) return -1;
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = t->config.num_contexts;
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
    const char *call = "shmem_team_translate_pe";
    struct nf_team *s = nf_team_find(call, src_team, NULL);
    struct nf_team *d = nf_team_find(call, dest_team, NULL);
    if (!s || !d || src_pe < 0 || src_pe >= s->size) return -1;
    return d->index_of[s->members[src_pe]];
}

int shmem_sync(shmem_team_t team) {
    struct nf_group g;
    nf_team_group("shmem_sync", team, &g);
    nf_group_sync("shmem_sync", &g);
    return 0;
}

int shmem_team_sync(shmem_team_t team) {
    struct nf_group g;
    nf_team_group("shmem_team_sync", team, &g);
    nf_group_sync("shmem_team_sync", &g);
    return 0;
}

/* ---- Splits (rule 4) ---- */

/* Rule 4 over the parent `pg` in `parent_slot`, for a split with `args`: fills
 * `slots` with `n` slots free on every parent PE; returns -1 when there are not
 * that many (rule 5). */
static int nf_agree(const char *call, const struct nf_group *pg, int parent_slot,
                    const long args[3], const char *const names[3], int n, int *slots) {
    long *mine = sym[parent_slot].split;
    uint64_t free_here = 0;
    for (int s = NF_SLOT_SHARED + 1; s < NF_TEAM_SLOTS; s++)
        if (!teams[s].live) free_here |= (uint64_t)1 << s;
    mine[0] = (long)free_here;
    memcpy(&mine[1], args, 3 * sizeof(long));
    nf_group_barrier(call, pg);
    long theirs[4];
    uint64_t free_all = free_here;
    for (int i = 0; i < pg->size; i++) {
        if (i == pg->me) continue;
        nf_get(call, theirs, mine, sizeof theirs, nf_group_pe(pg, i));
        free_all &= (uint64_t)theirs[0];
        for (int k = 0; i == 0 && k < 3; k++)
            if (names[k] && theirs[1 + k] != args[k])
                nf_fatalf(call,
                          "the parent team's PEs passed different arguments: this PE "
                          "%s = %ld, parent PE 0 (world PE %d) %s = %ld",
                          names[k], args[k], nf_group_pe(pg, 0), names[k], theirs[1 + k]);
    }
    nf_group_sync(call, pg);
    int got = 0;
    for (int s = 0; s < NF_TEAM_SLOTS && got < n; s++)
        if (free_all & ((uint64_t)1 << s)) slots[got++] = s;
    if (got == n) return 0;
    char msg[200];
    snprintf(msg, sizeof msg,
             "the team table is full (%d teams besides the world and shared teams, "
             "on some PE of the parent); shmem_team_destroy teams no longer used",
             NF_TEAM_SLOTS - 2);
    nf_shmem_say(call, msg);
    return -1;
}

/* The parent of a split: its group, or NULL for SHMEM_TEAM_INVALID. */
static struct nf_team *nf_parent(const char *call, shmem_team_t parent, struct nf_group *pg,
                                 int *slot) {
    struct nf_team *p = nf_team_find(call, parent, slot);
    if (p) nf_team_group(call, parent, pg);
    return p;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team) {
    const char *call = "shmem_team_split_strided";
    struct nf_group pg;
    int pslot;
    *new_team = SHMEM_TEAM_INVALID;
    struct nf_team *p = nf_parent(call, parent_team, &pg, &pslot);
    if (!p) return -1;
    /* An invalid triplet is no team, as the specification says: SHMEM_TEAM_INVALID and
     * a nonzero return on every PE of the parent (all pass the same triplet), with the
     * reason said. */
    char why[256] = "";
    long last = start + (long)(size - 1) * stride;
    if (size < 1)
        snprintf(why, sizeof why, "size = %d: a team has at least one PE", size);
    else if (stride == 0 && size > 1)
        snprintf(why, sizeof why,
                 "stride = 0 with size = %d would list one PE %d times (stride 0 is for size 1)",
                 size, size);
    else if (start < 0 || start >= p->size || last < 0 || last >= p->size)
        snprintf(why, sizeof why,
                 "start = %d, stride = %d, size = %d reach parent PEs %d ..= %ld, outside "
                 "the parent team of %d PEs (0 ..= %d)",
                 start, stride, size, start, last, p->size, p->size - 1);
    if (why[0]) {
        nf_shmem_say(call, why);
        return -1;
    }
    long args[3] = {start, stride, size};
    static const char *const names[3] = {"start", "stride", "size"};
    int slot;
    if (nf_agree(call, &pg, pslot, args, names, 1, &slot) != 0) return -1;
    long from = p->me - start;
    int member = stride == 0 ? from == 0
                             : from % stride == 0 && from / stride >= 0 && from / stride < size;
    if (!member) return 0;
    int *members = nf_alloc(call, (size_t)size * sizeof(int));
    for (int j = 0; j < size; j++) members[j] = p->members[start + j * stride];
    teams[slot].gen++;
    nf_team_fill(call, slot, members, size, config, config_mask);
    *new_team = nf_handle(slot);
    return 0;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team) {
    const char *call = "shmem_team_split_2d";
    struct nf_group pg;
    int pslot;
    *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
    struct nf_team *p = nf_parent(call, parent_team, &pg, &pslot);
    if (!p) return -1;
    if (xrange < 1) nf_fatalf(call, "xrange = %d: a row has at least one PE", xrange);
    long args[3] = {xrange, 0, 0};
    static const char *const names[3] = {"xrange", NULL, NULL};
    int slots[2];
    if (nf_agree(call, &pg, pslot, args, names, 2, slots) != 0) return -1;
    int x = xrange < p->size ? xrange : p->size;
    int row = p->me / x, col = p->me % x;
    /* The x team: this PE's row; the y team: its column (the last row may be short). */
    int row_start = row * x, row_size = p->size - row_start < x ? p->size - row_start : x;
    int col_size = (p->size - col + x - 1) / x;
    int *xs = nf_alloc(call, (size_t)row_size * sizeof(int));
    int *ys = nf_alloc(call, (size_t)col_size * sizeof(int));
    for (int j = 0; j < row_size; j++) xs[j] = p->members[row_start + j];
    for (int j = 0; j < col_size; j++) ys[j] = p->members[col + j * x];
    teams[slots[0]].gen++;
    nf_team_fill(call, slots[0], xs, row_size, xaxis_config, xaxis_mask);
    teams[slots[1]].gen++;
    nf_team_fill(call, slots[1], ys, col_size, yaxis_config, yaxis_mask);
    *xaxis_team = nf_handle(slots[0]);
    *yaxis_team = nf_handle(slots[1]);
    return 0;
}

void shmem_team_destroy(shmem_team_t team) {
    const char *call = "shmem_team_destroy";
    int slot;
    struct nf_team *t = nf_team_find(call, team, &slot);
    if (!t) return;
    if (slot == NF_SLOT_WORLD || slot == NF_SLOT_SHARED)
        nf_shmem_fatal(call, "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed");
    shmem_quiet();
    nf_team_clear(t);
}
