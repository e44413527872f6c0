/* Groups: what a collective runs on. A 1.5 team (csrc/team.c) and a 1.4 active set
 * (csrc/activeset.c) both become a struct nf_group, and every collective of
 * csrc/coll.c runs on one:
 *
 * 1. Member i is world PE list[i], or start + i * stride when list is NULL.
 * 2. Synchronisation is among the members only. A team whose members all share
 *    this host uses direct.c's barrier (dissemination, or a central counter
 *    with more PEs than CPUs) on its slot's counters (`direct` set). Otherwise
 *    the world team uses the rma layer's barrier, and any other group a central
 *    counter in two symmetric words psync[0..1] that rest at `idle` between
 *    calls (0 for a team slot, the program's SHMEM_SYNC_VALUE for a pSync):
 *      a. a member other than 0 adds 1 to psync[0] on member 0, waits until its
 *         own psync[1] leaves idle, and puts it back to idle;
 *      b. member 0 waits until its psync[0] is idle + size - 1, puts it back to
 *         idle, then sets psync[1] of every other member to idle + 1.
 *    Member 0 rests its counter before it releases anybody and a member rests
 *    its flag before it can arrive again, so back-to-back calls never see the
 *    previous call's values. The atomics are acquire / release, so what a member
 *    wrote before arriving is visible to every member after the release.
 * 3. `count` is one more symmetric word per member (collect's element count). */
#ifndef NF_SHMEM_TEAM_H
#define NF_SHMEM_TEAM_H

#include <stddef.h>

#include <shmem.h>

/* Same-host collectives (csrc/direct.c): one slot's symmetric counters, two
 * cache lines. */
#define NF_ROUNDS 16 /* barrier rounds: teams of up to 2^16 PEs */
struct nf_direct_sym {
    long flag[NF_ROUNDS]; /* barrier round r */
    long bcast;           /* broadcast: the root has arrived */
    long arrive;          /* counter barrier: arrivals, on member 0 (direct.c rule 7) */
    long pad1[6];
    long gen;             /* counter barrier: completed barriers, on member 0 */
    long vote;            /* counter barrier: this PE's vote for it (rule 7) */
    long pad2[6];
};
_Static_assert(sizeof(struct nf_direct_sym) == 256, "two lines per slot");

/* One per PE, after the slots' counters: broadcast's acknowledgements (members
 * that have read what this PE, as a root, offered) and the copy of a small
 * broadcast's source. */
#define NF_BOUNCE 4096
struct nf_bounce {
    long ack;
    long pad[7];
    char data[NF_BOUNCE];
};
/* A team whose members all share this host (direct.c rule 1). */
struct nf_direct {
    int ready;                  /* decided for the team in the slot */
    int on;                     /* every member mapped here: the rest is filled */
    int rounds;                 /* barrier rounds, ceil(log2 size) */
    struct nf_direct_sym **peer; /* every member's counters, mapped here */
    struct nf_bounce **bounce;  /* every member's bounce, mapped here */
    struct nf_direct_sym *mine; /* this PE's counters */
    long *seen;                 /* consumed adds: flag[0 ..], bcast (rule 2) */
    struct nf_bounce *my_bounce; /* this PE's bounce */
    long *acks;                 /* acks this PE's bounce->ack will reach (rule 4) */
    long spins;                 /* pauses before a wait yields (rule 6) */
    int counter;                /* barrier: -1 undecided, 0 dissemination, 1 counter (rule 7) */
};

/* Reductions of at most this many bytes per member read every source directly. */
#define NF_DIRECT_REDUCE 16384
/* Consumed counts per slot: the barrier's rounds, bcast. */
#define NF_SEEN (NF_ROUNDS + 1)

struct nf_group {
    int size;          /* members */
    int me;            /* this PE's member number */
    int start, stride; /* rule 1, when list is NULL */
    const int *list;   /* rule 1 */
    long *psync;       /* rule 2; NULL for the world team */
    long idle;         /* rule 2 */
    long *count;       /* rule 3 */
    struct nf_direct *direct; /* same-host collectives, or NULL (direct.c) */
};

/* World PE of member i. */
static inline int nf_group_pe(const struct nf_group *g, int i) {
    return g->list ? g->list[i] : g->start + i * g->stride;
}

/* Ends the job with `libshmem: PE me: call: <formatted message>`. */
void nf_fatalf(const char *call, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* Rule 2: every member has arrived. */
void nf_group_sync(const char *call, const struct nf_group *g);
/* This PE's puts complete, then nf_group_sync. */
void nf_group_barrier(const char *call, const struct nf_group *g);

/* The group of `team`, which must be a live team this PE belongs to (else the job
 * ends naming `call`). */
void nf_team_group(const char *call, shmem_team_t team, struct nf_group *g);
/* World PE of `team`'s PE `pe` (checked, naming `call`). */
int nf_team_world_pe(const char *call, shmem_team_t team, int pe);

/* The collectives (csrc/coll.c) over a group; PE numbers are member numbers.
 * `root_gets` says whether the root's dest receives the broadcast too (1.5: yes;
 * 1.4: no). */
void nf_coll_broadcast(const char *call, const struct nf_group *g, void *dest,
                       const void *source, size_t bytes, int root, int root_gets);
void nf_coll_collect(const char *call, const struct nf_group *g, void *dest,
                     const void *source, size_t bytes);
void nf_coll_fcollect(const char *call, const struct nf_group *g, void *dest,
                      const void *source, size_t bytes);
void nf_coll_alltoall(const char *call, const struct nf_group *g, void *dest,
                      const void *source, size_t bytes);
void nf_coll_alltoalls(const char *call, const struct nf_group *g, void *dest,
                       const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t elem,
                       size_t nelems);

/* acc[i] = acc[i] OP got[i] for i < n. */
typedef void (*nf_combine_fn)(void *acc, const void *got, size_t n);

/* direct.c: set up `d` for group `g` (this PE's counters `mine`, consumed counts
 * `seen`, NF_SEEN of them, its bounce, the count of acks it expects, and how many
 * PEs share this host); the barrier, broadcast and reduction on a group
 * whose `direct` is set (reduce returns 0, doing nothing, when it is too large). */
void nf_direct_setup(const char *call, struct nf_direct *d, const struct nf_group *g,
                     struct nf_direct_sym *mine, long *seen, struct nf_bounce *bounce,
                     long *acks, int local);
void nf_direct_sync(const char *call, const struct nf_group *g);
void nf_direct_broadcast(const char *call, const struct nf_group *g, void *dest,
                         const void *source, size_t bytes, int root, int root_gets);
int nf_direct_reduce(const char *call, const struct nf_group *g, void *dest,
                     const void *source, size_t nreduce, size_t elem, nf_combine_fn combine);
void nf_coll_reduce(const char *call, const struct nf_group *g, void *dest,
                    const void *source, size_t nreduce, size_t elem, nf_combine_fn combine);

/* Defines nf_combine_NAME over T with COMBINE(a, b), the new value of a. */
#define NF_COMBINE(T, NAME, COMBINE)                                                 \
    static void nf_combine_##NAME(void *acc_, const void *got_, size_t n) {          \
        T *acc = acc_;                                                               \
        const T *got = got_;                                                         \
        for (size_t i = 0; i < n; i++) {                                             \
            T a = acc[i], b = got[i];                                                \
            acc[i] = (T)(COMBINE);                                                   \
        }                                                                            \
    }

#endif
