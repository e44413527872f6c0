/* The atomic families on every AMO type: each is one macro over a type table of
 * shmem.h, ending in the Rust side's one untyped atomic (internal.h), which applies
 * it as a 4- or 8-byte integer operation of the rma layer. Floating-point values
 * travel as their bits (fetch, set and swap only move bits). */
#include <shmem.h>
#include <string.h>

#include "internal.h"

/* The bits of a 4- or 8-byte value as an int64_t (4 bytes sign-extended). */
static int64_t nf_bits(const void *v, size_t size) {
    if (size == 4) {
        int32_t w;
        memcpy(&w, v, 4);
        return w;
    }
    int64_t w;
    memcpy(&w, v, 8);
    return w;
}

/* The inverse of nf_bits. */
static void nf_unbits(void *out, int64_t bits, size_t size) {
    if (size == 4) {
        int32_t w = (int32_t)bits;
        memcpy(out, &w, 4);
    } else {
        memcpy(out, &bits, 8);
    }
}

/* One atomic on T: operand `value`, condition `cond`; the old value. */
#define NF_AMO_CALL(T, N, NAME, OP, dest, value, cond)                               \
    T old, v = (value), c = (cond);                                                  \
    nf_unbits(&old,                                                                  \
              nf_amo("shmem_" #N "_atomic_" NAME, OP, (void *)(dest),                \
                           nf_bits(&v, sizeof(T)), nf_bits(&c, sizeof(T)),           \
                           sizeof(T), pe),                                           \
              sizeof(T))

#define NF_EXT_AMO(T, N)                                                             \
    T shmem_##N##_atomic_fetch(const T *source, int pe) {                            \
        NF_AMO_CALL(T, N, "fetch", NF_AMO_FETCH, source, 0, 0);                      \
        (void)v; (void)c;                                                            \
        return old;                                                                  \
    }                                                                                \
    void shmem_##N##_atomic_set(T *dest, T value, int pe) {                          \
        NF_AMO_CALL(T, N, "set", NF_AMO_SET, dest, value, 0);                        \
        (void)old;                                                                   \
    }                                                                                \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe) {                            \
        NF_AMO_CALL(T, N, "swap", NF_AMO_SWAP, dest, value, 0);                      \
        return old;                                                                  \
    }                                                                                \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe) {           \
        NF_AMO_CALL(T, N, "fetch_nbi", NF_AMO_FETCH, source, 0, 0);                  \
        *fetch = old;                                                                \
    }                                                                                \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe) {           \
        NF_AMO_CALL(T, N, "swap_nbi", NF_AMO_SWAP, dest, value, 0);                  \
        *fetch = old;                                                                \
    }
_NF_SHMEM_EXT_AMO_TYPES(NF_EXT_AMO)

#define NF_STD_AMO(T, N)                                                             \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe) {            \
        NF_AMO_CALL(T, N, "compare_swap", NF_AMO_CSWAP, dest, value, cond);          \
        return old;                                                                  \
    }                                                                                \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe) {                                \
        NF_AMO_CALL(T, N, "fetch_inc", NF_AMO_ADD, dest, 1, 0);                      \
        return old;                                                                  \
    }                                                                                \
    void shmem_##N##_atomic_inc(T *dest, int pe) {                                   \
        NF_AMO_CALL(T, N, "inc", NF_AMO_ADD, dest, 1, 0);                            \
        (void)old;                                                                   \
    }                                                                                \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe) {                       \
        NF_AMO_CALL(T, N, "fetch_add", NF_AMO_ADD, dest, value, 0);                  \
        return old;                                                                  \
    }                                                                                \
    void shmem_##N##_atomic_add(T *dest, T value, int pe) {                          \
        NF_AMO_CALL(T, N, "add", NF_AMO_ADD, dest, value, 0);                        \
        (void)old;                                                                   \
    }                                                                                \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value,     \
                                             int pe) {                               \
        *fetch = shmem_##N##_atomic_compare_swap(dest, cond, value, pe);             \
    }                                                                                \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe) {               \
        *fetch = shmem_##N##_atomic_fetch_inc(dest, pe);                             \
    }                                                                                \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe) {      \
        *fetch = shmem_##N##_atomic_fetch_add(dest, value, pe);                      \
    }
_NF_SHMEM_AMO_TYPES(NF_STD_AMO)

#define NF_BITWISE_ONE(T, N, NAME, OP)                                               \
    T shmem_##N##_atomic_fetch_##NAME(T *dest, T value, int pe) {                    \
        NF_AMO_CALL(T, N, "fetch_" #NAME, OP, dest, value, 0);                       \
        return old;                                                                  \
    }                                                                                \
    void shmem_##N##_atomic_##NAME(T *dest, T value, int pe) {                       \
        NF_AMO_CALL(T, N, #NAME, OP, dest, value, 0);                                \
        (void)old;                                                                   \
    }                                                                                \
    void shmem_##N##_atomic_fetch_##NAME##_nbi(T *fetch, T *dest, T value, int pe) { \
        *fetch = shmem_##N##_atomic_fetch_##NAME(dest, value, pe);                   \
    }
#define NF_BITWISE_AMO(T, N)                                                         \
    NF_BITWISE_ONE(T, N, and, NF_AMO_AND)                                            \
    NF_BITWISE_ONE(T, N, or, NF_AMO_OR)                                              \
    NF_BITWISE_ONE(T, N, xor, NF_AMO_XOR)
_NF_SHMEM_BITWISE_AMO_TYPES(NF_BITWISE_AMO)
