/* The typed and sized RMA families: each is one macro over a type table of shmem.h,
 * all ending in the Rust side's untyped put / get (internal.h).
 *
 * The _nbi forms complete before they return: the specification lets a
 * non-blocking call complete at any time up to the next shmem_quiet. */
#include <shmem.h>
#include <stdio.h>

#include "internal.h"

/* Put-with-signal: the data, then the signal word set or added on the same PE, in
 * that order as the target sees them (a fence to the PE between the two: on the same
 * host the copy is complete when issued and the atomic is a full barrier; through the
 * network the data is acknowledged before the atomic is sent). The _nbi forms are the
 * blocking ones, as for the other _nbi calls. */
static void nf_put_signal(const char *call, void *dest, const void *source, size_t bytes,
                          uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
    int op = sig_op == SHMEM_SIGNAL_SET ? NF_AMO_SET
           : sig_op == SHMEM_SIGNAL_ADD ? NF_AMO_ADD
                                        : -1;
    if (op < 0) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "sig_op %d is neither SHMEM_SIGNAL_SET (%d) nor SHMEM_SIGNAL_ADD (%d)",
                 sig_op, SHMEM_SIGNAL_SET, SHMEM_SIGNAL_ADD);
        nf_shmem_fatal(call, msg);
        return;
    }
    nf_put(call, dest, source, bytes, pe);
    nf_shmem_order(call, pe);
    (void)nf_amo(call, op, sig_addr, (int64_t)signal, 0, sizeof *sig_addr, pe);
}

#define NF_PUT_SIGNAL(NAME, T, ELEM)                                                 \
    void NAME(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,           \
              uint64_t signal, int sig_op, int pe) {                                 \
        nf_put_signal(#NAME, dest, source, nelems * (ELEM), sig_addr, signal, sig_op, \
                      pe);                                                           \
    }

#define NF_TYPED_RMA(T, N)                                                           \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe) {          \
        nf_put("shmem_" #N "_put", dest, source, nelems * sizeof(T), pe);            \
    }                                                                                \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe) {          \
        nf_get("shmem_" #N "_get", dest, source, nelems * sizeof(T), pe);            \
    }                                                                                \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe) {      \
        nf_put("shmem_" #N "_put_nbi", dest, source, nelems * sizeof(T), pe);        \
    }                                                                                \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe) {      \
        nf_get("shmem_" #N "_get_nbi", dest, source, nelems * sizeof(T), pe);        \
    }                                                                                \
    void shmem_##N##_p(T *dest, T value, int pe) {                                   \
        nf_put("shmem_" #N "_p", dest, &value, sizeof(T), pe);                       \
    }                                                                                \
    T shmem_##N##_g(const T *source, int pe) {                                       \
        T value;                                                                     \
        nf_get("shmem_" #N "_g", &value, source, sizeof(T), pe);                     \
        return value;                                                                \
    }                                                                                \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,    \
                          size_t nelems, int pe) {                                   \
        nf_shmem_iput("shmem_" #N "_iput", dest, source, dst, sst, sizeof(T), nelems, \
                      pe);                                                           \
    }                                                                                \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,    \
                          size_t nelems, int pe) {                                   \
        nf_shmem_iget("shmem_" #N "_iget", dest, source, dst, sst, sizeof(T), nelems, \
                      pe);                                                           \
    }
_NF_SHMEM_RMA_TYPES(NF_TYPED_RMA)

#define NF_TYPED_PUT_SIGNAL(T, N)                                                    \
    NF_PUT_SIGNAL(shmem_##N##_put_signal, T, sizeof(T))                              \
    NF_PUT_SIGNAL(shmem_##N##_put_signal_nbi, T, sizeof(T))
_NF_SHMEM_RMA_TYPES(NF_TYPED_PUT_SIGNAL)

#define NF_SIZED_RMA(BITS, BYTES)                                                    \
    void shmem_put##BITS(void *dest, const void *source, size_t nelems, int pe) {    \
        nf_put("shmem_put" #BITS, dest, source, nelems * BYTES, pe);                 \
    }                                                                                \
    void shmem_get##BITS(void *dest, const void *source, size_t nelems, int pe) {    \
        nf_get("shmem_get" #BITS, dest, source, nelems * BYTES, pe);                 \
    }                                                                                \
    void shmem_put##BITS##_nbi(void *dest, const void *source, size_t nelems,        \
                               int pe) {                                             \
        nf_put("shmem_put" #BITS "_nbi", dest, source, nelems * BYTES, pe);          \
    }                                                                                \
    void shmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems,        \
                               int pe) {                                             \
        nf_get("shmem_get" #BITS "_nbi", dest, source, nelems * BYTES, pe);          \
    }                                                                                \
    void shmem_iput##BITS(void *dest, const void *source, ptrdiff_t dst,             \
                          ptrdiff_t sst, size_t nelems, int pe) {                    \
        nf_shmem_iput("shmem_iput" #BITS, dest, source, dst, sst, BYTES, nelems, pe); \
    }                                                                                \
    void shmem_iget##BITS(void *dest, const void *source, ptrdiff_t dst,             \
                          ptrdiff_t sst, size_t nelems, int pe) {                    \
        nf_shmem_iget("shmem_iget" #BITS, dest, source, dst, sst, BYTES, nelems, pe); \
    }
_NF_SHMEM_SIZES(NF_SIZED_RMA)

#define NF_SIZED_PUT_SIGNAL(BITS, BYTES)                                             \
    NF_PUT_SIGNAL(shmem_put##BITS##_signal, void, BYTES)                             \
    NF_PUT_SIGNAL(shmem_put##BITS##_signal_nbi, void, BYTES)
_NF_SHMEM_SIZES(NF_SIZED_PUT_SIGNAL)
NF_PUT_SIGNAL(shmem_putmem_signal, void, 1)
NF_PUT_SIGNAL(shmem_putmem_signal_nbi, void, 1)

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    nf_put("shmem_putmem", dest, source, nelems, pe);
}
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe) {
    nf_get("shmem_getmem", dest, source, nelems, pe);
}
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    nf_put("shmem_putmem_nbi", dest, source, nelems, pe);
}
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    nf_get("shmem_getmem_nbi", dest, source, nelems, pe);
}
