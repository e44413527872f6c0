/* Contexts. Every context shares the default's path (the library orders and
 * completes all of a PE's operations together), so a context is a checked handle
 * and each _ctx_ call is its context-free twin; shmem_ctx_quiet completes every
 * operation of this PE, which includes the context's, as the specification asks.
 * A context made by shmem_team_create_ctx takes its team's PE numbers: each call
 * translates the PE to the world's before its twin. */
#include <shmem.h>
#include <stdlib.h>

#include "internal.h"
#include "team.h"


/* What a created context points at (a distinct address per context). */
struct nf_shmem_ctx {
    long options;
    shmem_team_t team; /* whose PE numbers the context's calls take */
};

static void nf_ctx(const char *call, shmem_ctx_t ctx) {
    if (ctx == SHMEM_CTX_INVALID) nf_shmem_fatal(call, "ctx is SHMEM_CTX_INVALID");
}

/* The world PE of the context's PE `pe` (checked, naming `call`). */
static int nf_ctx_pe(const char *call, shmem_ctx_t ctx, int pe) {
    nf_ctx(call, ctx);
    if (ctx == SHMEM_CTX_DEFAULT || ctx->team == SHMEM_TEAM_WORLD) return pe;
    return nf_team_world_pe(call, ctx->team, pe);
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx) {
    *ctx = SHMEM_CTX_INVALID;
    if (team == SHMEM_TEAM_INVALID) return 1;
    struct nf_group g; /* checks the team is live and has this PE */
    nf_team_group("shmem_team_create_ctx", team, &g);
    struct nf_shmem_ctx *c = malloc(sizeof *c);
    if (!c) return 1;
    c->options = options;
    c->team = team;
    *ctx = c;
    return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx) {
    return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team) {
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return 1;
    }
    *team = ctx == SHMEM_CTX_DEFAULT ? SHMEM_TEAM_WORLD : ctx->team;
    return 0;
}

/* Destroying, quieting or fencing SHMEM_CTX_INVALID does nothing (the specification
 * says so: a handle set to it marks "no context"); RMA and atomics on it are errors. */
void shmem_ctx_destroy(shmem_ctx_t ctx) {
    if (ctx == SHMEM_CTX_INVALID) return;
    nf_ctx("shmem_ctx_destroy", ctx);
    if (ctx == SHMEM_CTX_DEFAULT) nf_shmem_fatal("shmem_ctx_destroy", "ctx is SHMEM_CTX_DEFAULT");
    shmem_quiet();
    free(ctx);
}

void shmem_ctx_quiet(shmem_ctx_t ctx) {
    if (ctx == SHMEM_CTX_INVALID) return;
    nf_ctx("shmem_ctx_quiet", ctx);
    shmem_quiet();
}

void shmem_ctx_fence(shmem_ctx_t ctx) {
    if (ctx == SHMEM_CTX_INVALID) return;
    nf_ctx("shmem_ctx_fence", ctx);
    shmem_fence();
}

#define NF_CTX_RMA(T, N)                                                             \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                             int pe) {                                               \
        pe = nf_ctx_pe("shmem_ctx_" #N "_put", ctx, pe);                                         \
        shmem_##N##_put(dest, source, nelems, pe);                                   \
    }                                                                                \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                             int pe) {                                               \
        pe = nf_ctx_pe("shmem_ctx_" #N "_get", ctx, pe);                                         \
        shmem_##N##_get(dest, source, nelems, pe);                                   \
    }                                                                                \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source,          \
                                 size_t nelems, int pe) {                            \
        pe = nf_ctx_pe("shmem_ctx_" #N "_put_nbi", ctx, pe);                                     \
        shmem_##N##_put_nbi(dest, source, nelems, pe);                               \
    }                                                                                \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source,          \
                                 size_t nelems, int pe) {                            \
        pe = nf_ctx_pe("shmem_ctx_" #N "_get_nbi", ctx, pe);                                     \
        shmem_##N##_get_nbi(dest, source, nelems, pe);                               \
    }                                                                                \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe) {              \
        pe = nf_ctx_pe("shmem_ctx_" #N "_p", ctx, pe);                                           \
        shmem_##N##_p(dest, value, pe);                                              \
    }                                                                                \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe) {                  \
        pe = nf_ctx_pe("shmem_ctx_" #N "_g", ctx, pe);                                           \
        return shmem_##N##_g(source, pe);                                            \
    }                                                                                \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source,             \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) { \
        pe = nf_ctx_pe("shmem_ctx_" #N "_iput", ctx, pe);                                        \
        shmem_##N##_iput(dest, source, dst, sst, nelems, pe);                        \
    }                                                                                \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source,             \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) { \
        pe = nf_ctx_pe("shmem_ctx_" #N "_iget", ctx, pe);                                        \
        shmem_##N##_iget(dest, source, dst, sst, nelems, pe);                        \
    }
_NF_SHMEM_RMA_TYPES(NF_CTX_RMA)

#define NF_CTX_SIZED_RMA(BITS, BYTES)                                                \
    void shmem_ctx_put##BITS(shmem_ctx_t ctx, void *dest, const void *source,        \
                             size_t nelems, int pe) {                                \
        pe = nf_ctx_pe("shmem_ctx_put" #BITS, ctx, pe);                              \
        shmem_put##BITS(dest, source, nelems, pe);                                   \
    }                                                                                \
    void shmem_ctx_get##BITS(shmem_ctx_t ctx, void *dest, const void *source,        \
                             size_t nelems, int pe) {                                \
        pe = nf_ctx_pe("shmem_ctx_get" #BITS, ctx, pe);                              \
        shmem_get##BITS(dest, source, nelems, pe);                                   \
    }                                                                                \
    void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void *dest, const void *source,  \
                                   size_t nelems, int pe) {                          \
        pe = nf_ctx_pe("shmem_ctx_put" #BITS "_nbi", ctx, pe);                       \
        shmem_put##BITS##_nbi(dest, source, nelems, pe);                             \
    }                                                                                \
    void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void *dest, const void *source,  \
                                   size_t nelems, int pe) {                          \
        pe = nf_ctx_pe("shmem_ctx_get" #BITS "_nbi", ctx, pe);                       \
        shmem_get##BITS##_nbi(dest, source, nelems, pe);                             \
    }                                                                                \
    void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void *dest, const void *source,       \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) { \
        pe = nf_ctx_pe("shmem_ctx_iput" #BITS, ctx, pe);                             \
        shmem_iput##BITS(dest, source, dst, sst, nelems, pe);                        \
    }                                                                                \
    void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void *dest, const void *source,       \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) { \
        pe = nf_ctx_pe("shmem_ctx_iget" #BITS, ctx, pe);                             \
        shmem_iget##BITS(dest, source, dst, sst, nelems, pe);                        \
    }
_NF_SHMEM_SIZES(NF_CTX_SIZED_RMA)

void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                      int pe) {
    pe = nf_ctx_pe("shmem_ctx_putmem", ctx, pe);
    shmem_putmem(dest, source, nelems, pe);
}
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                      int pe) {
    pe = nf_ctx_pe("shmem_ctx_getmem", ctx, pe);
    shmem_getmem(dest, source, nelems, pe);
}
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe) {
    pe = nf_ctx_pe("shmem_ctx_putmem_nbi", ctx, pe);
    shmem_putmem_nbi(dest, source, nelems, pe);
}
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe) {
    pe = nf_ctx_pe("shmem_ctx_getmem_nbi", ctx, pe);
    shmem_getmem_nbi(dest, source, nelems, pe);
}

#define NF_CTX_EXT_AMO(T, N)                                                         \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe) {       \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_fetch", ctx, pe);                                \
        return shmem_##N##_atomic_fetch(source, pe);                                 \
    }                                                                                \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe) {     \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_set", ctx, pe);                                  \
        shmem_##N##_atomic_set(dest, value, pe);                                     \
    }                                                                                \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe) {       \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_swap", ctx, pe);                                 \
        return shmem_##N##_atomic_swap(dest, value, pe);                             \
    }                                                                                \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, \
                                          int pe) {                                  \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_fetch_nbi", ctx, pe);                \
        shmem_##N##_atomic_fetch_nbi(fetch, source, pe);                             \
    }                                                                                \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, \
                                         int pe) {                                   \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_swap_nbi", ctx, pe);                 \
        shmem_##N##_atomic_swap_nbi(fetch, dest, value, pe);                         \
    }
_NF_SHMEM_EXT_AMO_TYPES(NF_CTX_EXT_AMO)

#define NF_CTX_AMO(T, N)                                                             \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, \
                                          int pe) {                                  \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_compare_swap", ctx, pe);                         \
        return shmem_##N##_atomic_compare_swap(dest, cond, value, pe);               \
    }                                                                                \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe) {           \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_fetch_inc", ctx, pe);                            \
        return shmem_##N##_atomic_fetch_inc(dest, pe);                               \
    }                                                                                \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe) {              \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_inc", ctx, pe);                                  \
        shmem_##N##_atomic_inc(dest, pe);                                            \
    }                                                                                \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe) {  \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_fetch_add", ctx, pe);                            \
        return shmem_##N##_atomic_fetch_add(dest, value, pe);                        \
    }                                                                                \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe) {     \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_add", ctx, pe);                                  \
        shmem_##N##_atomic_add(dest, value, pe);                                     \
    }                                                                                \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, \
                                                 T cond, T value, int pe) {          \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_compare_swap_nbi", ctx, pe);         \
        shmem_##N##_atomic_compare_swap_nbi(fetch, dest, cond, value, pe);           \
    }                                                                                \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest,    \
                                              int pe) {                              \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_fetch_inc_nbi", ctx, pe);            \
        shmem_##N##_atomic_fetch_inc_nbi(fetch, dest, pe);                           \
    }                                                                                \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest,    \
                                              T value, int pe) {                     \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_fetch_add_nbi", ctx, pe);            \
        shmem_##N##_atomic_fetch_add_nbi(fetch, dest, value, pe);                    \
    }
_NF_SHMEM_AMO_TYPES(NF_CTX_AMO)

#define NF_CTX_BITWISE_ONE(T, N, OP)                                                 \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value, int pe) { \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_fetch_" #OP, ctx, pe);                           \
        return shmem_##N##_atomic_fetch_##OP(dest, value, pe);                       \
    }                                                                                \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value, int pe) {    \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_" #OP, ctx, pe);                                 \
        shmem_##N##_atomic_##OP(dest, value, pe);                                    \
    }                                                                                \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, T *dest, \
                                                 T value, int pe) {                  \
        pe = nf_ctx_pe("shmem_ctx_" #N "_atomic_fetch_" #OP "_nbi", ctx, pe);        \
        shmem_##N##_atomic_fetch_##OP##_nbi(fetch, dest, value, pe);                 \
    }
#define NF_CTX_BITWISE_AMO(T, N)                                                     \
    NF_CTX_BITWISE_ONE(T, N, and) NF_CTX_BITWISE_ONE(T, N, or)                       \
    NF_CTX_BITWISE_ONE(T, N, xor)
_NF_SHMEM_BITWISE_AMO_TYPES(NF_CTX_BITWISE_AMO)

/* Put-with-signal through a context: the context-free put-with-signal, whose fence
 * to the PE orders the data before the signal on every path. */
#define NF_CTX_PUT_SIGNAL(T, N)                                                      \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source,       \
                                    size_t nelems, uint64_t *sig_addr,               \
                                    uint64_t signal, int sig_op, int pe) {           \
        pe = nf_ctx_pe("shmem_ctx_" #N "_put_signal", ctx, pe);                      \
        shmem_##N##_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe);  \
    }                                                                                \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source,   \
                                        size_t nelems, uint64_t *sig_addr,           \
                                        uint64_t signal, int sig_op, int pe) {       \
        pe = nf_ctx_pe("shmem_ctx_" #N "_put_signal_nbi", ctx, pe);                  \
        shmem_##N##_put_signal_nbi(dest, source, nelems, sig_addr, signal, sig_op,   \
                                   pe);                                              \
    }
_NF_SHMEM_RMA_TYPES(NF_CTX_PUT_SIGNAL)

#define NF_CTX_SIZED_PUT_SIGNAL(BITS, BYTES)                                         \
    void shmem_ctx_put##BITS##_signal(shmem_ctx_t ctx, void *dest, const void *source, \
                                      size_t nelems, uint64_t *sig_addr,             \
                                      uint64_t signal, int sig_op, int pe) {         \
        pe = nf_ctx_pe("shmem_ctx_put" #BITS "_signal", ctx, pe);                    \
        shmem_put##BITS##_signal(dest, source, nelems, sig_addr, signal, sig_op, pe); \
    }                                                                                \
    void shmem_ctx_put##BITS##_signal_nbi(shmem_ctx_t ctx, void *dest,               \
                                          const void *source, size_t nelems,         \
                                          uint64_t *sig_addr, uint64_t signal,       \
                                          int sig_op, int pe) {                      \
        pe = nf_ctx_pe("shmem_ctx_put" #BITS "_signal_nbi", ctx, pe);                \
        shmem_put##BITS##_signal_nbi(dest, source, nelems, sig_addr, signal, sig_op, \
                                     pe);                                            \
    }
_NF_SHMEM_SIZES(NF_CTX_SIZED_PUT_SIGNAL)

void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source,
                             size_t nelems, uint64_t *sig_addr, uint64_t signal,
                             int sig_op, int pe) {
    pe = nf_ctx_pe("shmem_ctx_putmem_signal", ctx, pe);
    shmem_putmem_signal(dest, source, nelems, sig_addr, signal, sig_op, pe);
}
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                                 size_t nelems, uint64_t *sig_addr, uint64_t signal,
                                 int sig_op, int pe) {
    pe = nf_ctx_pe("shmem_ctx_putmem_signal_nbi", ctx, pe);
    shmem_putmem_signal_nbi(dest, source, nelems, sig_addr, signal, sig_op, pe);
}
