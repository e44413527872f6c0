/* The boundary with libshmem's Rust side (src/ffi.rs defines these). Every call
 * passes its public name, so an error names the call the program made. */
#ifndef NF_SHMEM_INTERNAL_H
#define NF_SHMEM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Contiguous put / get of `bytes` bytes; `dest` (put) or `src` (get) is symmetric. */
void nf_shmem_put(const char *call, void *dest, const void *src, size_t bytes, int pe);
void nf_shmem_get(const char *call, void *dest, const void *src, size_t bytes, int pe);

/* Strided: `nelems` elements of `elem` bytes, strides in elements. */
void nf_shmem_iput(const char *call, void *dest, const void *src, ptrdiff_t dst,
                   ptrdiff_t sst, size_t elem, size_t nelems, int pe);
void nf_shmem_iget(const char *call, void *dest, const void *src, ptrdiff_t dst,
                   ptrdiff_t sst, size_t elem, size_t nelems, int pe);

/* Atomic operations (src/amo.rs): the operand and the old value travel as the
 * integer of the same bits, sign-extended from 4 bytes. */
enum nf_amo {
    NF_AMO_FETCH = 0,
    NF_AMO_SET = 1,
    NF_AMO_SWAP = 2,
    NF_AMO_CSWAP = 3,
    NF_AMO_ADD = 4,
    NF_AMO_AND = 5,
    NF_AMO_OR = 6,
    NF_AMO_XOR = 7,
};
int64_t nf_shmem_amo(const char *call, int op, void *dest, int64_t value, int64_t cond,
                     size_t size, int pe);

/* Orders this PE's puts to `pe` before what it sends `pe` next (src/sync.rs). */
void nf_shmem_order(const char *call, int pe);

/* The world's barriers through the rma layer (src/sync.rs): with completion of
 * this PE's puts (shmem_barrier_all's), and without (shmem_sync_all's). */
void nf_shmem_world_barrier(const char *call);
void nf_shmem_world_sync(const char *call);

/* Ends the job with `libshmem: PE me: call: msg` (src/error.rs). */
void nf_shmem_fatal(const char *call, const char *msg) __attribute__((noreturn));

/* One step of a wait loop: spin, then yield, as the waiting policy says; checks
 * that the library is running (naming `call` otherwise). `*round` counts steps. */
void nf_shmem_pause(const char *call, unsigned *round);

/* The team area (src/team.rs): this PE's symmetric words of the team table;
 * `*bytes` receives its size. */
void *nf_shmem_team_area(const char *call, size_t *bytes);
/* Writes the PEs of SHMEM_TEAM_SHARED (room for every PE); returns how many. */
int nf_shmem_team_shared(int *out);
/* Prints `libshmem: PE me: call: msg` without ending the job. */
void nf_shmem_say(const char *call, const char *msg);

/* The same-host fast path (csrc/fast.c, published by src/state.rs): put, get and
 * atomics on a same-host PE's heap as a load / store on its mapping, without
 * crossing into Rust.
 *
 * 1. The table: this PE's heap base and size, the number of PEs, the thread that
 *    called shmem_init, and per PE the address where its heap is mapped here (0:
 *    not mapped, reached by the rma routes). The heap is one fixed allocation from
 *    shmem_init to shmem_finalize (shmem_malloc and shmem_realloc carve it, never
 *    move it), and the set of mapped PEs is fixed at shmem_init, so the table is
 *    written once, before `npes` is released, and emptied (`npes` = 0) first thing
 *    in shmem_finalize, before anything is unmapped: a reader that sees npes > 0
 *    sees a whole, live table.
 * 2. The checks, all in C, all needed before a pointer is formed: the library is
 *    running (npes > 0), the caller may call (any thread where the program was
 *    granted SHMEM_THREAD_SERIALIZED or _MULTIPLE, else only the thread of
 *    shmem_init: another thread must get the Rust side's error, never a silent
 *    store), 0 <= pe < npes, [addr, addr + len) inside this PE's heap (an unsigned
 *    offset, compared without overflow), and the PE mapped.
 * 3. Anything else (another host, static data, out of range, a bad PE, another
 *    thread, before shmem_init) goes to the Rust side unchanged, which reports the
 *    errors by name; the fast path decides nothing the Rust path would refuse.
 * 4. Quiet: the fast path's stores and atomics are complete when issued, so only
 *    operations of the Rust side can be outstanding. Every call into the Rust side
 *    sets `rma_used` (src/state.rs `with`), its quiet clears it after
 *    Rma::all_fence; while it is clear, shmem_quiet and shmem_fence are one
 *    sequentially consistent fence, as all_fence begins with (csrc/fast.c). */
struct nf_fast {
    uintptr_t base;        /* this PE's heap base */
    size_t size;           /* heap bytes per PE */
    const uintptr_t *map;  /* per PE: where its heap is mapped here, 0 if not */
    pthread_t owner;       /* the thread that called shmem_init */
    int any_thread;        /* granted SHMEM_THREAD_SERIALIZED or _MULTIPLE */
    int npes;              /* 0 while the library is not running */
    int rma_used;          /* a call reached the Rust side since its last quiet */
    void *team_area;       /* this PE's team area (src/team.rs) */
};
extern struct nf_fast nf_shmem_fast __attribute__((visibility("hidden")));

/* The Rust side's calls (src/state.rs): fill the table and release it; empty it. */
void nf_shmem_fast_publish(uintptr_t base, size_t size, const uintptr_t *map, int npes,
                           void *team_area, int any_thread);
void nf_shmem_fast_clear(void);
void nf_shmem_fast_rma_used(int used);

/* shmem_quiet's Rust side (src/sync.rs): Rma::all_fence. */
void nf_shmem_quiet(const char *call);

/* Rule 2's thread check: any thread where granted, else the thread of shmem_init. */
static inline int nf_fast_thread_ok(const struct nf_fast *f) {
    return f->any_thread || pthread_equal(pthread_self(), f->owner);
}

/* Rule 2: where `len` bytes at symmetric `addr` of `pe` are mapped here, else NULL
 * (the caller then takes the Rust path). */
static inline void *nf_fast_at(const void *addr, size_t len, int pe) {
    const struct nf_fast *f = &nf_shmem_fast;
    unsigned npes = (unsigned)__atomic_load_n(&f->npes, __ATOMIC_ACQUIRE);
    uintptr_t off = (uintptr_t)addr - f->base;
    if ((unsigned)pe >= npes || off > f->size || len > f->size - off) return NULL;
    /* The thread first: another thread's call may race shmem_finalize freeing map
     * (with any thread granted, the program ends its calls before shmem_finalize). */
    if (!nf_fast_thread_ok(f)) return NULL;
    uintptr_t at = f->map[pe];
    return at ? (void *)(at + off) : NULL;
}

/* The team area (csrc/team.c) when the library runs and this is its thread, else
 * NULL (then nf_shmem_team_area says why). Every team call asks: without the
 * table each would enter the Rust side, and so make the next quiet take it too
 * (rule 4). */
static inline void *nf_fast_team_area(void) {
    const struct nf_fast *f = &nf_shmem_fast;
    if (__atomic_load_n(&f->npes, __ATOMIC_ACQUIRE) <= 0 || !nf_fast_thread_ok(f))
        return NULL;
    return f->team_area;
}

/* Put and get: the fast path, else the Rust side. A PE may put to itself with
 * overlapping buffers, hence memmove (the Rust side's ptr::copy). */
static inline void nf_put(const char *call, void *dest, const void *src, size_t bytes,
                          int pe) {
    void *at = nf_fast_at(dest, bytes, pe);
    if (at) {
        memmove(at, src, bytes);
        return;
    }
    nf_shmem_put(call, dest, src, bytes, pe);
}

static inline void nf_get(const char *call, void *dest, const void *src, size_t bytes,
                          int pe) {
    const void *at = nf_fast_at(src, bytes, pe);
    if (at) {
        memmove(dest, at, bytes);
        return;
    }
    nf_shmem_get(call, dest, src, bytes, pe);
}

/* One hardware atomic on `size` bytes at `p`, the operations and orderings of the
 * Rust side's RmwOp::apply (AcqRel; a failed compare-and-swap Acquire), so both
 * paths and the rma layer's service thread mix on one word. */
#define NF_FAST_AMO(T, p, op, value, cond, out)                                      \
    do {                                                                             \
        T *w_ = (T *)(p), v_ = (T)(value), c_ = (T)(cond);                           \
        switch (op) {                                                                \
        case NF_AMO_FETCH: out = __atomic_fetch_add(w_, 0, __ATOMIC_ACQ_REL); break; \
        case NF_AMO_SET:                                                             \
        case NF_AMO_SWAP: out = __atomic_exchange_n(w_, v_, __ATOMIC_ACQ_REL); break; \
        case NF_AMO_CSWAP:                                                           \
            __atomic_compare_exchange_n(w_, &c_, v_, 0, __ATOMIC_ACQ_REL,            \
                                        __ATOMIC_ACQUIRE);                           \
            out = c_;                                                                \
            break;                                                                   \
        case NF_AMO_ADD: out = __atomic_fetch_add(w_, v_, __ATOMIC_ACQ_REL); break;  \
        case NF_AMO_AND: out = __atomic_fetch_and(w_, v_, __ATOMIC_ACQ_REL); break;  \
        case NF_AMO_OR: out = __atomic_fetch_or(w_, v_, __ATOMIC_ACQ_REL); break;    \
        default: out = __atomic_fetch_xor(w_, v_, __ATOMIC_ACQ_REL); break;          \
        }                                                                            \
    } while (0)

/* nf_shmem_amo with the fast path in front: a known operation on 4 or 8 bytes at
 * an aligned `dest` of a mapped PE (a misaligned one, or an unknown operation,
 * gets the Rust side's error). Inlined with constant `op` and `size`, the switch
 * folds to one instruction. */
static inline int64_t nf_amo(const char *call, int op, void *dest, int64_t value,
                             int64_t cond, size_t size, int pe) {
    if ((size == 4 || size == 8) && op >= NF_AMO_FETCH && op <= NF_AMO_XOR &&
        ((uintptr_t)dest & (size - 1)) == 0) {
        void *at = nf_fast_at(dest, size, pe);
        if (at) {
            int64_t out;
            if (size == 4) {
                int32_t old;
                NF_FAST_AMO(int32_t, at, op, value, cond, old);
                out = old;
            } else {
                NF_FAST_AMO(int64_t, at, op, value, cond, out);
            }
            return out;
        }
    }
    return nf_shmem_amo(call, op, dest, value, cond, size, pe);
}

#endif
