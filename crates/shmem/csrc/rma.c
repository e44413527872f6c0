/* The typed and sized RMA families: each is one macro over a type table of shmem.h,
 * all ending in the Rust side's untyped put / get (internal.h).
 *
 * The _nbi forms complete before they return: the specification lets a
 * non-blocking call complete at any time up to the next shmem_quiet. */
#include <shmem.h>

#include "internal.h"

#define NF_TYPED_RMA(T, N)                                                           \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe) {          \
        nf_shmem_put("shmem_" #N "_put", dest, source, nelems * sizeof(T), pe);      \
    }                                                                                \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe) {          \
        nf_shmem_get("shmem_" #N "_get", dest, source, nelems * sizeof(T), pe);      \
    }                                                                                \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe) {      \
        nf_shmem_put("shmem_" #N "_put_nbi", dest, source, nelems * sizeof(T), pe);  \
    }                                                                                \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe) {      \
        nf_shmem_get("shmem_" #N "_get_nbi", dest, source, nelems * sizeof(T), pe);  \
    }                                                                                \
    void shmem_##N##_p(T *dest, T value, int pe) {                                   \
        nf_shmem_put("shmem_" #N "_p", dest, &value, sizeof(T), pe);                 \
    }                                                                                \
    T shmem_##N##_g(const T *source, int pe) {                                       \
        T value;                                                                     \
        nf_shmem_get("shmem_" #N "_g", &value, source, sizeof(T), pe);               \
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

#define NF_SIZED_RMA(BITS, BYTES)                                                    \
    void shmem_put##BITS(void *dest, const void *source, size_t nelems, int pe) {    \
        nf_shmem_put("shmem_put" #BITS, dest, source, nelems * BYTES, pe);           \
    }                                                                                \
    void shmem_get##BITS(void *dest, const void *source, size_t nelems, int pe) {    \
        nf_shmem_get("shmem_get" #BITS, dest, source, nelems * BYTES, pe);           \
    }                                                                                \
    void shmem_put##BITS##_nbi(void *dest, const void *source, size_t nelems,        \
                               int pe) {                                             \
        nf_shmem_put("shmem_put" #BITS "_nbi", dest, source, nelems * BYTES, pe);    \
    }                                                                                \
    void shmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems,        \
                               int pe) {                                             \
        nf_shmem_get("shmem_get" #BITS "_nbi", dest, source, nelems * BYTES, pe);    \
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

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    nf_shmem_put("shmem_putmem", dest, source, nelems, pe);
}
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe) {
    nf_shmem_get("shmem_getmem", dest, source, nelems, pe);
}
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    nf_shmem_put("shmem_putmem_nbi", dest, source, nelems, pe);
}
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    nf_shmem_get("shmem_getmem_nbi", dest, source, nelems, pe);
}
