/* Same-host collectives by load / store (csrc/team.h, struct nf_direct): when every
 * member of a team has its heap mapped here (shmem_ptr reaches it), the team's
 * barrier, broadcast and small reductions touch the members' symmetric memory
 * directly instead of going through the rma layer or its barrier.
 *
 * 1. Whether a team is direct is decided once per team, from shmem_ptr to every
 *    member: sharing a host is an equivalence, so every member decides alike.
 * 2. Each slot owns NF_ROUNDS + 1 symmetric counters (struct nf_direct_sym):
 *    flag[r] for round r of the barrier, bcast for broadcast. Writers only ever
 *    add 1 (a release atomic); a reader waits until its counter reaches how many
 *    adds it has consumed so far, plus one (acquire), then counts it consumed.
 *    The consumed counts live on the reader (nf_direct.seen) per slot and survive
 *    the slot's teams: a team ends with every add to this PE consumed (each one is
 *    awaited inside the collective that made it), so a later team in the slot
 *    starts level without any reset, and a writer running one collective ahead only
 *    raises the count further.
 * 3. Barrier: dissemination. In round r member i adds 1 to flag[r] of member
 *    i + 2^r (mod size) and waits for its own flag[r]; after ceil(log2 size) rounds
 *    every member has, transitively, heard from every other. Release / acquire make
 *    whatever a member stored before arriving visible to all after.
 * 4. Broadcast: the root offers the data, adds 1 to every other member's bcast,
 *    and expects size - 1 more adds to its ack (a per-PE counter: `acks` counts
 *    what it will reach); a member waits for its bcast, copies what the root
 *    offers (mapped here) into its own dest, and adds 1 to the root's ack. Each PE
 *    writes only its own dest, inside its own call (a program may still be
 *    clearing dest when the root arrives). Up to NF_BOUNCE bytes the root offers a
 *    copy in its bounce and returns at once; it waits for the previous
 *    broadcast's acks only before it offers again (its bounce is then free).
 *    Larger, it offers its source and returns once every member has read it. A
 *    member's i-th bcast may come from a later root, but that root has finished
 *    broadcast i, so broadcast i's root has arrived: no barrier.
 * 5. Small reductions (at most NF_DIRECT_REDUCE bytes per member): a barrier (every
 *    source is ready), each member combines every member's source, read where it
 *    is mapped, in member order (the same bits on every PE) into a private buffer,
 *    a barrier (nobody reads a source any more: dest may be a source), then copies
 *    the result into its dest. Larger ones keep coll.c's reduce-scatter.
 * 6. Waiting: while this host has no more PEs than this process may run on, a
 *    wait spins up to NF_SPINS pauses before it yields (a peer is running and
 *    will answer within a cache miss or two; a yield on a busy machine gives the
 *    CPU to another process for a whole time slice). With more PEs than CPUs it
 *    yields at once, not a pause first: the peer it waits for may need this CPU.
 *    On the 2-core VM, 4 PEs, load 7: a barrier took 8-15 us when the 64 pauses
 *    of nf_shmem_pause (about 8 us) came first, 3.1-4.8 us yielding at once, and
 *    20 us sleeping on a futex of the counter that the add woke (a wake-up costs
 *    more than the yields it saves there). A pause is about
 *    130 ns on the 2-core VM of bench/README.md, so the budget is about 13 ms,
 *    longer than a time slice: on that VM at load 12 to 15 a 2-PE barrier took a
 *    median of 13 us yielding after 64 pauses, 0.47 us after 10^4, 0.23 us after
 *    10^5 (OSHMEM, which polls without yielding: 0.6 us). The budget adapts: a
 *    wait that spun it all halves it (down to NF_SPINS_LEAST, about 0.5 ms: down
 *    to 64 it stayed low at load 18-20 and a barrier took 6.7 us; a CPU quota, or
 *    namespace "hosts" sharing one machine, can make PEs share CPUs unseen), one
 *    answered while spinning doubles it back.
 * 7. Barrier with more PEs than CPUs: a central counter instead of rule 3's
 *    rounds, each of which can cost a PE a wait for a peer that is not running.
 *    Member 0's `arrive` rests at 0 between barriers; each member reads member 0's
 *    `gen`, adds 1 to `arrive` (acq_rel), and waits, yielding, until `gen` moves.
 *    The member whose add brought `arrive` to size - 1 rests it at 0 and then adds
 *    1 to `gen` (release): nobody adds again before it sees `gen` move, so the next
 *    barrier starts from 0, and a later team in the slot, with another member 0
 *    perhaps, finds every `arrive` at rest. `gen` only grows, so a member that
 *    looks late still sees it moved. Every member must take the same kind of
 *    barrier, and rule 6's decision is per PE (its CPU affinity): the team's first
 *    barrier stores this PE's vote (1: oversubscribed) in its `vote`, takes rule 3's
 *    barrier, reads every member's vote, and takes rule 3's barrier again (nobody
 *    stores a vote for a later team in the slot before every member has read this
 *    team's); the counter is used from then on only if every vote was 1. */
#define NF_SPINS 100000
#define NF_SPINS_LEAST 4096
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "team.h"

/* One step of a busy wait. */
static inline void nf_spin_hint(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Rule 6: the spin budget now, adapted to what waits took. */
static long nf_spin_now = NF_SPINS;

/* Rule 6: spins before a wait yields, for `local` PEs on this host. */
static long nf_spin_budget(int local) {
    cpu_set_t cpus;
    int n = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    return local <= n ? NF_SPINS : 0;
}

/* Rule 1: fills `d` for the team of group `g` whose slot's words are `mine`. */
void nf_direct_setup(const char *call, struct nf_direct *d, const struct nf_group *g,
                     struct nf_direct_sym *mine, long *seen, struct nf_bounce *bounce,
                     long *acks, int local) {
    free(d->peer);
    free(d->bounce);
    memset(d, 0, sizeof *d);
    d->ready = 1;
    d->mine = mine;
    d->seen = seen;
    d->my_bounce = bounce;
    d->acks = acks;
    d->spins = nf_spin_budget(local);
    d->counter = -1;
    int rounds = 0;
    while ((1L << rounds) < g->size) rounds++;
    if (rounds > NF_ROUNDS) return; /* a team this large keeps the other path */
    d->rounds = rounds;
    d->peer = malloc((size_t)g->size * sizeof *d->peer);
    d->bounce = malloc((size_t)g->size * sizeof *d->bounce);
    if (!d->peer || !d->bounce)
        nf_fatalf(call, "out of local memory for a team of %d PEs", g->size);
    for (int i = 0; i < g->size; i++) {
        d->peer[i] = shmem_ptr(mine, nf_group_pe(g, i));
        d->bounce[i] = shmem_ptr(bounce, nf_group_pe(g, i));
        if (!d->peer[i] || !d->bounce[i]) return; /* off: freed at the next setup */
    }
    d->on = 1;
}

/* Rule 2: waits for the next `n` adds to `counter`, whose consumed count is
 * `*seen`. */
static void nf_direct_wait(const struct nf_direct *d, const char *call, long *counter,
                           long *seen, long n) {
    long want = *seen += n;
    if (!d->spins) { /* not through nf_shmem_pause: it spins before it yields */
        while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want) sched_yield();
        return;
    }
    for (long i = 0; i < d->spins && i < nf_spin_now; i++) {
        if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) >= want) {
            if (nf_spin_now < NF_SPINS) nf_spin_now *= 2;
            return;
        }
        nf_spin_hint();
    }
    if (nf_spin_now > NF_SPINS_LEAST) nf_spin_now /= 2;
    unsigned round = 0;
    while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want) nf_shmem_pause(call, &round);
}

static void nf_direct_add(long *counter) {
    __atomic_fetch_add(counter, 1, __ATOMIC_RELEASE);
}

/* Rule 3. */
static void nf_direct_rounds(const char *call, const struct nf_direct *d,
                             const struct nf_group *g) {
    for (int r = 0; r < d->rounds; r++) {
        nf_direct_add(&d->peer[(g->me + (1 << r)) % g->size]->flag[r]);
        nf_direct_wait(d, call, &d->mine->flag[r], &d->seen[r], 1);
    }
}

/* Rule 7: the counter barrier. */
static void nf_direct_counter(const char *call, const struct nf_group *g) {
    struct nf_direct_sym *root = g->direct->peer[0];
    long gen = __atomic_load_n(&root->gen, __ATOMIC_ACQUIRE);
    if (__atomic_fetch_add(&root->arrive, 1, __ATOMIC_ACQ_REL) == g->size - 1) {
        __atomic_store_n(&root->arrive, 0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&root->gen, 1, __ATOMIC_RELEASE);
        return;
    }
    (void)call; /* as rule 6's yielding wait, which does not pause through the Rust side */
    while (__atomic_load_n(&root->gen, __ATOMIC_ACQUIRE) == gen) sched_yield();
}

void nf_direct_sync(const char *call, const struct nf_group *g) {
    struct nf_direct *d = g->direct;
    if (d->counter > 0) {
        nf_direct_counter(call, g);
        return;
    }
    if (d->counter < 0) { /* the team's first barrier: rule 7's vote */
        __atomic_store_n(&d->mine->vote, d->spins == 0, __ATOMIC_RELAXED);
        nf_direct_rounds(call, d, g);
        int all = 1;
        for (int i = 0; i < g->size; i++)
            all &= __atomic_load_n(&d->peer[i]->vote, __ATOMIC_RELAXED) == 1;
        d->counter = all;
    }
    nf_direct_rounds(call, d, g);
}

void nf_direct_broadcast(const char *call, const struct nf_group *g, void *dest,
                         const void *source, size_t bytes, int root, int root_gets) {
    const struct nf_direct *d = g->direct;
    int small = bytes <= NF_BOUNCE;
    if (g->me != root) {
        nf_direct_wait(d, call, &d->mine->bcast, &d->seen[NF_ROUNDS], 1);
        if (small)
            memcpy(dest, d->bounce[root]->data, bytes);
        else
            nf_get(call, dest, source, bytes, nf_group_pe(g, root));
        nf_direct_add(&d->bounce[root]->ack);
        return;
    }
    long had = *d->acks;
    nf_direct_wait(d, call, &d->my_bounce->ack, &had, 0); /* the bounce is free */
    *d->acks += g->size - 1;
    if (small) memcpy(d->my_bounce->data, source, bytes);
    for (int k = 1; k < g->size; k++) nf_direct_add(&d->peer[(root + k) % g->size]->bcast);
    if (root_gets && dest != source) memmove(dest, source, bytes);
    if (!small) nf_direct_wait(d, call, &d->my_bounce->ack, d->acks, 0);
}

int nf_direct_reduce(const char *call, const struct nf_group *g, void *dest,
                     const void *source, size_t nreduce, size_t elem, nf_combine_fn combine) {
    size_t bytes = nreduce * elem;
    if (bytes > NF_DIRECT_REDUCE) return 0;
    char small[512];
    char *acc = bytes <= sizeof small ? small : malloc(bytes);
    if (!acc) nf_shmem_fatal(call, "out of local memory for the result");
    shmem_quiet();
    nf_direct_sync(call, g);
    for (int i = 0; i < g->size; i++) {
        const void *theirs = i == g->me ? source : shmem_ptr(source, nf_group_pe(g, i));
        if (!theirs) { /* not symmetric: the get names the call and the address */
            nf_shmem_get(call, acc, source, bytes, nf_group_pe(g, i));
            nf_shmem_fatal(call, "source is not mapped on a same-host PE");
        }
        if (i == 0)
            memcpy(acc, theirs, bytes);
        else
            combine(acc, theirs, nreduce);
    }
    nf_direct_sync(call, g);
    memcpy(dest, acc, bytes);
    if (acc != small) free(acc);
    return 1;
}
