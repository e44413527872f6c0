/* shmem.h: the OpenSHMEM 1.5 C interface of ninefold's libshmem.
 *
 * Written for ninefold from the OpenSHMEM 1.5 specification. What this version
 * provides is declared here; anything it did not provide would not be declared, so
 * a program using it fails to compile or link with the name in the message, never
 * at run time in silence.
 *
 * The typed families are generated from the type tables below (_NF_SHMEM_*_TYPES),
 * which the library's C side (the files of csrc/) uses to define them: one table, one
 * declaration and one definition per family. */
#ifndef NF_SHMEM_H
#define NF_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Library constants ---- */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "ninefold libshmem"

/* Deprecated spellings of the above (OpenSHMEM 1.4). */
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

/* Thread levels (shmem_init_thread, shmem_query_thread). */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Point-to-point comparison operators (wait_until, test). */
#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

/* Signal operators (put-with-signal). */
#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Memory hints (shmem_malloc_with_hints): accepted, none changes placement. */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* Sizes and initial value of the work arrays of the 1.4 active-set collectives. */
#define SHMEM_SYNC_VALUE (-1L)
#define SHMEM_BCAST_SYNC_SIZE 2
#define SHMEM_REDUCE_SYNC_SIZE 2
#define SHMEM_BARRIER_SYNC_SIZE 2
#define SHMEM_COLLECT_SYNC_SIZE 3
#define SHMEM_ALLTOALL_SYNC_SIZE 2
#define SHMEM_ALLTOALLS_SYNC_SIZE 2
#define SHMEM_SYNC_SIZE 3
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_SYNC_SIZE SHMEM_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ---- Teams and contexts: handles ---- */
typedef struct nf_shmem_team *shmem_team_t;
typedef struct nf_shmem_ctx *shmem_ctx_t;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_TEAM_WORLD ((shmem_team_t)1)
#define SHMEM_TEAM_SHARED ((shmem_team_t)2)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
#define SHMEM_CTX_DEFAULT ((shmem_ctx_t)1)
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

/* Team configuration (shmem_team_split_*, shmem_team_get_config): the fields a
 * config_mask selects; a field not selected takes its default (0). */
typedef struct {
    int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* ---- Setup, exit and query ---- */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* ---- Symmetric heap ---- */
void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);
void *shmem_malloc_with_hints(size_t size, long hints);

/* ---- Ordering, barriers, locks ---- */
void shmem_fence(void);
void shmem_quiet(void);
void shmem_barrier_all(void);
void shmem_sync_all(void);
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* ---- Type tables ----
 * X(TYPE, TYPENAME) for every type of a family, as the specification's tables name
 * them. Implementation names (leading underscore and a capital): not for programs. */

/* Standard RMA types (put, get, p, g, iput, iget, nbi). */
#define _NF_SHMEM_RMA_TYPES(X)                                                        \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char)        \
    X(signed char, schar) X(short, short) X(int, int) X(long, long)                   \
    X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)          \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)    \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)             \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)     \
    X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Sized RMA: X(BITS, BYTES). */
#define _NF_SHMEM_SIZES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

/* Standard AMO types (inc, add, compare_swap and their fetching forms). */
#define _NF_SHMEM_AMO_TYPES(X)                                                        \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)            \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)        \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)         \
    X(ptrdiff_t, ptrdiff)

/* Extended AMO types (fetch, set, swap): the standard ones and the floating point. */
#define _NF_SHMEM_EXT_AMO_TYPES(X) _NF_SHMEM_AMO_TYPES(X) X(float, float) X(double, double)

/* Bitwise AMO types (and, or, xor and their fetching forms). */
#define _NF_SHMEM_BITWISE_AMO_TYPES(X)                                                \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)    \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)

/* Point-to-point synchronization types (wait_until, test; short and ushort are the
 * deprecated 1.4 ones). */
#define _NF_SHMEM_P2P_TYPES(X) _NF_SHMEM_AMO_TYPES(X) X(short, short) X(unsigned short, ushort)

/* ---- RMA ---- */
#define _NF_SHMEM_DECL_RMA(T, N)                                                      \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);            \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);            \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);        \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);        \
    void shmem_##N##_p(T *dest, T value, int pe);                                     \
    T shmem_##N##_g(const T *source, int pe);                                         \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,     \
                          size_t nelems, int pe);                                     \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,     \
                          size_t nelems, int pe);
_NF_SHMEM_RMA_TYPES(_NF_SHMEM_DECL_RMA)

#define _NF_SHMEM_DECL_SIZED(BITS, BYTES)                                             \
    void shmem_put##BITS(void *dest, const void *source, size_t nelems, int pe);      \
    void shmem_get##BITS(void *dest, const void *source, size_t nelems, int pe);      \
    void shmem_put##BITS##_nbi(void *dest, const void *source, size_t nelems, int pe);\
    void shmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems, int pe);\
    void shmem_iput##BITS(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,\
                          size_t nelems, int pe);                                     \
    void shmem_iget##BITS(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,\
                          size_t nelems, int pe);
_NF_SHMEM_SIZES(_NF_SHMEM_DECL_SIZED)

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);

/* ---- Put with signal ---- */
#define _NF_SHMEM_DECL_PUT_SIGNAL(T, N)                                               \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems,              \
                                uint64_t *sig_addr, uint64_t signal, int sig_op,      \
                                int pe);                                              \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems,          \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op,  \
                                    int pe);
_NF_SHMEM_RMA_TYPES(_NF_SHMEM_DECL_PUT_SIGNAL)
#define _NF_SHMEM_DECL_SIZED_PUT_SIGNAL(BITS, BYTES)                                  \
    void shmem_put##BITS##_signal(void *dest, const void *source, size_t nelems,      \
                                  uint64_t *sig_addr, uint64_t signal, int sig_op,    \
                                  int pe);                                            \
    void shmem_put##BITS##_signal_nbi(void *dest, const void *source, size_t nelems,  \
                                      uint64_t *sig_addr, uint64_t signal,            \
                                      int sig_op, int pe);
_NF_SHMEM_SIZES(_NF_SHMEM_DECL_SIZED_PUT_SIGNAL)
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                         uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* ---- Atomic memory operations ---- */
#define _NF_SHMEM_DECL_EXT_AMO(T, N)                                                  \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                              \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                            \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                              \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);             \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);
_NF_SHMEM_EXT_AMO_TYPES(_NF_SHMEM_DECL_EXT_AMO)

#define _NF_SHMEM_DECL_AMO(T, N)                                                      \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);              \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                                  \
    void shmem_##N##_atomic_inc(T *dest, int pe);                                     \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);                         \
    void shmem_##N##_atomic_add(T *dest, T value, int pe);                            \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value,      \
                                             int pe);                                 \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                 \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe);
_NF_SHMEM_AMO_TYPES(_NF_SHMEM_DECL_AMO)

#define _NF_SHMEM_DECL_BITWISE_AMO(T, N)                                              \
    T shmem_##N##_atomic_fetch_and(T *dest, T value, int pe);                         \
    void shmem_##N##_atomic_and(T *dest, T value, int pe);                            \
    T shmem_##N##_atomic_fetch_or(T *dest, T value, int pe);                          \
    void shmem_##N##_atomic_or(T *dest, T value, int pe);                             \
    T shmem_##N##_atomic_fetch_xor(T *dest, T value, int pe);                         \
    void shmem_##N##_atomic_xor(T *dest, T value, int pe);                            \
    void shmem_##N##_atomic_fetch_and_nbi(T *fetch, T *dest, T value, int pe);        \
    void shmem_##N##_atomic_fetch_or_nbi(T *fetch, T *dest, T value, int pe);         \
    void shmem_##N##_atomic_fetch_xor_nbi(T *fetch, T *dest, T value, int pe);
_NF_SHMEM_BITWISE_AMO_TYPES(_NF_SHMEM_DECL_BITWISE_AMO)

/* ---- Point-to-point synchronization ---- */
#define _NF_SHMEM_DECL_P2P(T, N)                                                      \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                       \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status,       \
                                    int cmp, T cmp_value);                            \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status,     \
                                      int cmp, T cmp_value);                          \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,      \
                                       const int *status, int cmp, T cmp_value);      \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems,                   \
                                           const int *status, int cmp,                \
                                           const T *cmp_values);                      \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems,                 \
                                             const int *status, int cmp,              \
                                             const T *cmp_values);                    \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems,                \
                                              size_t *indices, const int *status,     \
                                              int cmp, const T *cmp_values);          \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                              \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp,     \
                             T cmp_value);                                            \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp,  \
                                T cmp_value);                                         \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,            \
                                 const int *status, int cmp, T cmp_value);            \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status,       \
                                    int cmp, const T *cmp_values);                    \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status,    \
                                       int cmp, const T *cmp_values);                 \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,     \
                                        const int *status, int cmp,                   \
                                        const T *cmp_values);                         \
    void shmem_##N##_wait(T *ivar, T cmp_value);
_NF_SHMEM_P2P_TYPES(_NF_SHMEM_DECL_P2P)

/* ---- C11 generic forms ----
 * Selected on the type of the object the first pointer points to (lvalue
 * conversion drops its qualifiers); only the basic C types are listed, as the
 * fixed-width and size types are typedefs of them.
 *
 * Every generic with a context form (OpenSHMEM 1.5 section 9: RMA, put-with-signal,
 * atomics) takes an optional shmem_ctx_t first: shmem_put(ctx, dest, src, n, pe)
 * or shmem_put(dest, src, n, pe). How one macro tells them apart:
 * 1. The outer selection is on the type of the first argument: shmem_ctx_t picks
 *    the table of shmem_ctx_TYPENAME_OP, anything else the table of
 *    shmem_TYPENAME_OP; the call then passes every argument unchanged.
 * 2. Both tables select on one typed object, _NF_SHMEM_OBJ: the second argument
 *    when the first is a context, else the first. The branch not taken must still
 *    be a valid expression (C11 6.5.1.1), so neither table dereferences an
 *    argument that may not be a pointer (shmem_p's value), and both list the same
 *    types: a type outside the family is a compile error in either form.
 * 3. Controlling expressions are not evaluated, so each argument is evaluated
 *    once, by the call. */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

/* The first and the second argument (an extra 0 keeps "..." non-empty). */
#define _NF_SHMEM_ARG0(...) _NF_SHMEM_ARG0_(__VA_ARGS__, 0)
#define _NF_SHMEM_ARG0_(a, ...) a
#define _NF_SHMEM_ARG1(...) _NF_SHMEM_ARG1_(__VA_ARGS__, 0, 0)
#define _NF_SHMEM_ARG1_(a, b, ...) b

/* Rule 2: the pointer the type is read from. */
#define _NF_SHMEM_OBJ(...)                                                            \
    _Generic((_NF_SHMEM_ARG0(__VA_ARGS__)), shmem_ctx_t: (_NF_SHMEM_ARG1(__VA_ARGS__)), \
             default: (_NF_SHMEM_ARG0(__VA_ARGS__)))

/* Rule 1: TABLE(obj, PFX, OP) with PFX shmem_ctx_ or shmem_, called with the
 * arguments as given. */
#define _NF_SHMEM_CTX_GENERIC(TABLE, OP, ...)                                         \
    _Generic((_NF_SHMEM_ARG0(__VA_ARGS__)),                                           \
             shmem_ctx_t: TABLE(_NF_SHMEM_OBJ(__VA_ARGS__), shmem_ctx_, OP),          \
             default: TABLE(_NF_SHMEM_OBJ(__VA_ARGS__), shmem_, OP))(__VA_ARGS__)

/* The type tables of the generic families: PFX##TYPENAME##OP for *(obj). */
#define _NF_SHMEM_GENERIC_RMA(obj, PFX, OP)                                           \
    _Generic(*(obj), float: PFX##float##OP, double: PFX##double##OP,                  \
             long double: PFX##longdouble##OP, char: PFX##char##OP,                   \
             signed char: PFX##schar##OP, short: PFX##short##OP,                      \
             int: PFX##int##OP, long: PFX##long##OP,                                  \
             long long: PFX##longlong##OP, unsigned char: PFX##uchar##OP,             \
             unsigned short: PFX##ushort##OP, unsigned int: PFX##uint##OP,            \
             unsigned long: PFX##ulong##OP, unsigned long long: PFX##ulonglong##OP)

#define _NF_SHMEM_GENERIC_AMO(obj, PFX, OP)                                           \
    _Generic(*(obj), int: PFX##int##OP, long: PFX##long##OP,                          \
             long long: PFX##longlong##OP, unsigned int: PFX##uint##OP,               \
             unsigned long: PFX##ulong##OP, unsigned long long: PFX##ulonglong##OP)

#define _NF_SHMEM_GENERIC_EXT_AMO(obj, PFX, OP)                                       \
    _Generic(*(obj), float: PFX##float##OP, double: PFX##double##OP,                  \
             int: PFX##int##OP, long: PFX##long##OP,                                  \
             long long: PFX##longlong##OP, unsigned int: PFX##uint##OP,               \
             unsigned long: PFX##ulong##OP, unsigned long long: PFX##ulonglong##OP)

#define _NF_SHMEM_GENERIC_BITWISE(obj, PFX, OP)                                       \
    _Generic(*(obj), unsigned int: PFX##uint##OP, unsigned long: PFX##ulong##OP,      \
             unsigned long long: PFX##ulonglong##OP, int: PFX##int32##OP,             \
             long: PFX##int64##OP)

#define _NF_SHMEM_GENERIC_P2P(obj, PFX, OP)                                           \
    _Generic(*(obj), short: PFX##short##OP, int: PFX##int##OP,                        \
             long: PFX##long##OP, long long: PFX##longlong##OP,                       \
             unsigned short: PFX##ushort##OP, unsigned int: PFX##uint##OP,            \
             unsigned long: PFX##ulong##OP, unsigned long long: PFX##ulonglong##OP)

/* RMA and put-with-signal, with or without a context. */
#define shmem_put(...) _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _put, __VA_ARGS__)
#define shmem_get(...) _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _get, __VA_ARGS__)
#define shmem_put_nbi(...) _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _get_nbi, __VA_ARGS__)
#define shmem_p(...) _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _p, __VA_ARGS__)
#define shmem_g(...) _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _g, __VA_ARGS__)
#define shmem_iput(...) _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _iput, __VA_ARGS__)
#define shmem_iget(...) _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _iget, __VA_ARGS__)
#define shmem_put_signal(...)                                                         \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...)                                                     \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_RMA, _put_signal_nbi, __VA_ARGS__)

/* Atomics, with or without a context. */
#define shmem_atomic_fetch(...)                                                       \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_EXT_AMO, _atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...)                                                         \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_EXT_AMO, _atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...)                                                        \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_EXT_AMO, _atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...)                                                   \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_EXT_AMO, _atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...)                                                    \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_EXT_AMO, _atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap(...)                                                \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_AMO, _atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...)                                                   \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_AMO, _atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...)                                                         \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_AMO, _atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...)                                                   \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_AMO, _atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...)                                                         \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_AMO, _atomic_add, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...)                                            \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_AMO, _atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...)                                               \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_AMO, _atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...)                                               \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_AMO, _atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and(...)                                                   \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_BITWISE, _atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...)                                                         \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_BITWISE, _atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...)                                                    \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_BITWISE, _atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...)                                                          \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_BITWISE, _atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...)                                                   \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_BITWISE, _atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...)                                                         \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_BITWISE, _atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...)                                               \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_BITWISE, _atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...)                                                \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_BITWISE, _atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...)                                               \
    _NF_SHMEM_CTX_GENERIC(_NF_SHMEM_GENERIC_BITWISE, _atomic_fetch_xor_nbi, __VA_ARGS__)

/* Point-to-point synchronization (no context forms). */
#define _NF_SHMEM_P2P(OP, ivar, ...) _NF_SHMEM_GENERIC_P2P(ivar, shmem_, OP)(ivar, __VA_ARGS__)
#define shmem_wait_until(ivar, ...) _NF_SHMEM_P2P(_wait_until, ivar, __VA_ARGS__)
#define shmem_wait_until_all(ivars, ...) _NF_SHMEM_P2P(_wait_until_all, ivars, __VA_ARGS__)
#define shmem_wait_until_any(ivars, ...) _NF_SHMEM_P2P(_wait_until_any, ivars, __VA_ARGS__)
#define shmem_wait_until_some(ivars, ...) _NF_SHMEM_P2P(_wait_until_some, ivars, __VA_ARGS__)
#define shmem_wait_until_all_vector(ivars, ...)                                       \
    _NF_SHMEM_P2P(_wait_until_all_vector, ivars, __VA_ARGS__)
#define shmem_wait_until_any_vector(ivars, ...)                                       \
    _NF_SHMEM_P2P(_wait_until_any_vector, ivars, __VA_ARGS__)
#define shmem_wait_until_some_vector(ivars, ...)                                      \
    _NF_SHMEM_P2P(_wait_until_some_vector, ivars, __VA_ARGS__)
#define shmem_test(ivar, ...) _NF_SHMEM_P2P(_test, ivar, __VA_ARGS__)
#define shmem_test_all(ivars, ...) _NF_SHMEM_P2P(_test_all, ivars, __VA_ARGS__)
#define shmem_test_any(ivars, ...) _NF_SHMEM_P2P(_test_any, ivars, __VA_ARGS__)
#define shmem_test_some(ivars, ...) _NF_SHMEM_P2P(_test_some, ivars, __VA_ARGS__)
#define shmem_test_all_vector(ivars, ...) _NF_SHMEM_P2P(_test_all_vector, ivars, __VA_ARGS__)
#define shmem_test_any_vector(ivars, ...) _NF_SHMEM_P2P(_test_any_vector, ivars, __VA_ARGS__)
#define shmem_test_some_vector(ivars, ...)                                            \
    _NF_SHMEM_P2P(_test_some_vector, ivars, __VA_ARGS__)

#endif /* C11 */

/* ---- Teams (OpenSHMEM 1.5 section 9.4) ----
 * A team is an ordered list of PEs; team PE numbers (a root, the order of a collect,
 * a context's PEs) count in it. Splits are collective over the parent team; a PE
 * outside a new team gets SHMEM_TEAM_INVALID. At most 62 teams besides the two
 * predefined ones are live at once (a split beyond that prints why and returns
 * nonzero); using a destroyed team ends the job naming the call. */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* ---- Collectives on teams: every member calls; only members take part ---- */
int shmem_sync(shmem_team_t team);
int shmem_team_sync(shmem_team_t team); /* shmem_sync's other name */

#define _NF_SHMEM_DECL_COLL(T, N)                                                     \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source,            \
                              size_t nelems, int PE_root);                            \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source,              \
                            size_t nelems);                                           \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source,             \
                             size_t nelems);                                          \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source,             \
                             size_t nelems);                                          \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source,            \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems);
_NF_SHMEM_RMA_TYPES(_NF_SHMEM_DECL_COLL)
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);

/* Reduction types: bitwise (and, or, xor), ordered (max, min), arithmetic (sum, prod). */
#define _NF_SHMEM_BITWISE_REDUCE_TYPES(X)                                             \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)           \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)          \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)           \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)
#define _NF_SHMEM_ORDERED_REDUCE_TYPES(X)                                             \
    X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)     \
    X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar)              \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)           \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)                \
    X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)         \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float)           \
    X(double, double) X(long double, longdouble)
#ifndef __cplusplus
#define _NF_SHMEM_ARITH_REDUCE_TYPES(X)                                               \
    _NF_SHMEM_ORDERED_REDUCE_TYPES(X) X(double _Complex, complexd) X(float _Complex, complexf)
#else
#define _NF_SHMEM_ARITH_REDUCE_TYPES(X) _NF_SHMEM_ORDERED_REDUCE_TYPES(X)
#endif

#define _NF_SHMEM_DECL_REDUCE(T, N, OP)                                               \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,        \
                                  size_t nreduce);
#define _NF_SHMEM_DECL_BITWISE_REDUCE(T, N)                                           \
    _NF_SHMEM_DECL_REDUCE(T, N, and) _NF_SHMEM_DECL_REDUCE(T, N, or)                  \
    _NF_SHMEM_DECL_REDUCE(T, N, xor)
#define _NF_SHMEM_DECL_ORDERED_REDUCE(T, N)                                           \
    _NF_SHMEM_DECL_REDUCE(T, N, max) _NF_SHMEM_DECL_REDUCE(T, N, min)
#define _NF_SHMEM_DECL_ARITH_REDUCE(T, N)                                             \
    _NF_SHMEM_DECL_REDUCE(T, N, sum) _NF_SHMEM_DECL_REDUCE(T, N, prod)
_NF_SHMEM_BITWISE_REDUCE_TYPES(_NF_SHMEM_DECL_BITWISE_REDUCE)
_NF_SHMEM_ORDERED_REDUCE_TYPES(_NF_SHMEM_DECL_ORDERED_REDUCE)
_NF_SHMEM_ARITH_REDUCE_TYPES(_NF_SHMEM_DECL_ARITH_REDUCE)

/* ---- Active-set collectives (OpenSHMEM 1.4, deprecated) ----
 * The active set is the PEs PE_start + i * 2^logPE_stride, i < PE_size; PE_root
 * counts in it. pSync is a symmetric array of the _SYNC_SIZE longs, every element
 * SHMEM_SYNC_VALUE before the first call and again on return; pWrk is accepted and
 * unused. */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
#define _NF_SHMEM_DECL_ACTIVE_SET(BITS)                                               \
    void shmem_broadcast##BITS(void *dest, const void *source, size_t nelems,         \
                               int PE_root, int PE_start, int logPE_stride,           \
                               int PE_size, long *pSync);                             \
    void shmem_collect##BITS(void *dest, const void *source, size_t nelems,           \
                             int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void shmem_fcollect##BITS(void *dest, const void *source, size_t nelems,          \
                              int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void shmem_alltoall##BITS(void *dest, const void *source, size_t nelems,          \
                              int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void shmem_alltoalls##BITS(void *dest, const void *source, ptrdiff_t dst,         \
                               ptrdiff_t sst, size_t nelems, int PE_start,            \
                               int logPE_stride, int PE_size, long *pSync);
_NF_SHMEM_DECL_ACTIVE_SET(32)
_NF_SHMEM_DECL_ACTIVE_SET(64)

/* The 1.4 reduction types: bitwise, ordered (max, min), arithmetic (sum, prod). */
#define _NF_SHMEM_OLD_BITWISE_TYPES(X)                                                \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define _NF_SHMEM_OLD_ORDERED_TYPES(X)                                                \
    _NF_SHMEM_OLD_BITWISE_TYPES(X) X(float, float) X(double, double)                  \
    X(long double, longdouble)
#ifndef __cplusplus
#define _NF_SHMEM_OLD_ARITH_TYPES(X)                                                  \
    _NF_SHMEM_OLD_ORDERED_TYPES(X) X(float _Complex, complexf) X(double _Complex, complexd)
#else
#define _NF_SHMEM_OLD_ARITH_TYPES(X) _NF_SHMEM_OLD_ORDERED_TYPES(X)
#endif
#define _NF_SHMEM_DECL_TO_ALL(T, N, OP)                                               \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce,             \
                                   int PE_start, int logPE_stride, int PE_size,       \
                                   T *pWrk, long *pSync);
#define _NF_SHMEM_DECL_OLD_BITWISE(T, N)                                              \
    _NF_SHMEM_DECL_TO_ALL(T, N, and) _NF_SHMEM_DECL_TO_ALL(T, N, or)                  \
    _NF_SHMEM_DECL_TO_ALL(T, N, xor)
#define _NF_SHMEM_DECL_OLD_ORDERED(T, N)                                              \
    _NF_SHMEM_DECL_TO_ALL(T, N, max) _NF_SHMEM_DECL_TO_ALL(T, N, min)
#define _NF_SHMEM_DECL_OLD_ARITH(T, N)                                                \
    _NF_SHMEM_DECL_TO_ALL(T, N, sum) _NF_SHMEM_DECL_TO_ALL(T, N, prod)
_NF_SHMEM_OLD_BITWISE_TYPES(_NF_SHMEM_DECL_OLD_BITWISE)
_NF_SHMEM_OLD_ORDERED_TYPES(_NF_SHMEM_DECL_OLD_ORDERED)
_NF_SHMEM_OLD_ARITH_TYPES(_NF_SHMEM_DECL_OLD_ARITH)

/* ---- C11 generic collectives: selected on the type dest points to ---- */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

#define _NF_SHMEM_GENERIC_BITWISE_REDUCE(obj, OP)                                     \
    _Generic(*(obj), unsigned char: shmem_uchar_##OP, unsigned short: shmem_ushort_##OP, \
             unsigned int: shmem_uint_##OP, unsigned long: shmem_ulong_##OP,          \
             unsigned long long: shmem_ulonglong_##OP, signed char: shmem_int8_##OP,  \
             short: shmem_int16_##OP, int: shmem_int32_##OP, long: shmem_int64_##OP)

#define _NF_SHMEM_GENERIC_ORDERED_REDUCE(obj, OP)                                     \
    _Generic(*(obj), char: shmem_char_##OP, signed char: shmem_schar_##OP,            \
             short: shmem_short_##OP, int: shmem_int_##OP, long: shmem_long_##OP,     \
             long long: shmem_longlong_##OP, unsigned char: shmem_uchar_##OP,         \
             unsigned short: shmem_ushort_##OP, unsigned int: shmem_uint_##OP,        \
             unsigned long: shmem_ulong_##OP, unsigned long long: shmem_ulonglong_##OP, \
             float: shmem_float_##OP, double: shmem_double_##OP,                      \
             long double: shmem_longdouble_##OP)

#define _NF_SHMEM_GENERIC_ARITH_REDUCE(obj, OP)                                       \
    _Generic(*(obj), char: shmem_char_##OP, signed char: shmem_schar_##OP,            \
             short: shmem_short_##OP, int: shmem_int_##OP, long: shmem_long_##OP,     \
             long long: shmem_longlong_##OP, unsigned char: shmem_uchar_##OP,         \
             unsigned short: shmem_ushort_##OP, unsigned int: shmem_uint_##OP,        \
             unsigned long: shmem_ulong_##OP, unsigned long long: shmem_ulonglong_##OP, \
             float: shmem_float_##OP, double: shmem_double_##OP,                      \
             long double: shmem_longdouble_##OP,                                      \
             float _Complex: shmem_complexf_##OP, double _Complex: shmem_complexd_##OP)

#define shmem_broadcast(team, dest, ...)                                              \
    _NF_SHMEM_GENERIC_RMA(dest, shmem_, _broadcast)(team, dest, __VA_ARGS__)
#define shmem_collect(team, dest, ...)                                                \
    _NF_SHMEM_GENERIC_RMA(dest, shmem_, _collect)(team, dest, __VA_ARGS__)
#define shmem_fcollect(team, dest, ...)                                               \
    _NF_SHMEM_GENERIC_RMA(dest, shmem_, _fcollect)(team, dest, __VA_ARGS__)
#define shmem_alltoall(team, dest, ...)                                               \
    _NF_SHMEM_GENERIC_RMA(dest, shmem_, _alltoall)(team, dest, __VA_ARGS__)
#define shmem_alltoalls(team, dest, ...)                                              \
    _NF_SHMEM_GENERIC_RMA(dest, shmem_, _alltoalls)(team, dest, __VA_ARGS__)
#define shmem_and_reduce(team, dest, ...)                                             \
    _NF_SHMEM_GENERIC_BITWISE_REDUCE(dest, and_reduce)(team, dest, __VA_ARGS__)
#define shmem_or_reduce(team, dest, ...)                                              \
    _NF_SHMEM_GENERIC_BITWISE_REDUCE(dest, or_reduce)(team, dest, __VA_ARGS__)
#define shmem_xor_reduce(team, dest, ...)                                             \
    _NF_SHMEM_GENERIC_BITWISE_REDUCE(dest, xor_reduce)(team, dest, __VA_ARGS__)
#define shmem_max_reduce(team, dest, ...)                                             \
    _NF_SHMEM_GENERIC_ORDERED_REDUCE(dest, max_reduce)(team, dest, __VA_ARGS__)
#define shmem_min_reduce(team, dest, ...)                                             \
    _NF_SHMEM_GENERIC_ORDERED_REDUCE(dest, min_reduce)(team, dest, __VA_ARGS__)
#define shmem_sum_reduce(team, dest, ...)                                             \
    _NF_SHMEM_GENERIC_ARITH_REDUCE(dest, sum_reduce)(team, dest, __VA_ARGS__)
#define shmem_prod_reduce(team, dest, ...)                                            \
    _NF_SHMEM_GENERIC_ARITH_REDUCE(dest, prod_reduce)(team, dest, __VA_ARGS__)

#endif /* C11 */

/* ---- Contexts: every context shares the default's path; shmem_ctx_quiet and
 * shmem_ctx_fence complete all of this PE's operations (at least what the context
 * issued, as the specification asks). The PEs a context made by
 * shmem_team_create_ctx names are its team's PE numbers. ---- */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_ctx_fence(shmem_ctx_t ctx);

#define _NF_SHMEM_DECL_CTX_RMA(T, N)                                                  \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                             int pe);                                                 \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                             int pe);                                                 \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source,           \
                                 size_t nelems, int pe);                              \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source,           \
                                 size_t nelems, int pe);                              \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);                    \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, \
                              ptrdiff_t sst, size_t nelems, int pe);                  \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, \
                              ptrdiff_t sst, size_t nelems, int pe);
_NF_SHMEM_RMA_TYPES(_NF_SHMEM_DECL_CTX_RMA)
#define _NF_SHMEM_DECL_CTX_SIZED(BITS, BYTES)                                         \
    void shmem_ctx_put##BITS(shmem_ctx_t ctx, void *dest, const void *source,         \
                             size_t nelems, int pe);                                  \
    void shmem_ctx_get##BITS(shmem_ctx_t ctx, void *dest, const void *source,         \
                             size_t nelems, int pe);                                  \
    void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void *dest, const void *source,   \
                                   size_t nelems, int pe);                            \
    void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void *dest, const void *source,   \
                                   size_t nelems, int pe);                            \
    void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void *dest, const void *source,        \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);   \
    void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void *dest, const void *source,        \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);
_NF_SHMEM_SIZES(_NF_SHMEM_DECL_CTX_SIZED)
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                      int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                      int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe);

#define _NF_SHMEM_DECL_CTX_EXT_AMO(T, N)                                              \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);         \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);       \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);        \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, \
                                          int pe);                                    \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, \
                                         int pe);
_NF_SHMEM_EXT_AMO_TYPES(_NF_SHMEM_DECL_CTX_EXT_AMO)
#define _NF_SHMEM_DECL_CTX_AMO(T, N)                                                  \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value,  \
                                          int pe);                                    \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);             \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);                \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe);    \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe);       \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest,  \
                                                 T cond, T value, int pe);            \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest,     \
                                              int pe);                                \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest,     \
                                              T value, int pe);
_NF_SHMEM_AMO_TYPES(_NF_SHMEM_DECL_CTX_AMO)
#define _NF_SHMEM_DECL_CTX_BITWISE_AMO(T, N)                                          \
    T shmem_ctx_##N##_atomic_fetch_and(shmem_ctx_t ctx, T *dest, T value, int pe);    \
    void shmem_ctx_##N##_atomic_and(shmem_ctx_t ctx, T *dest, T value, int pe);       \
    T shmem_ctx_##N##_atomic_fetch_or(shmem_ctx_t ctx, T *dest, T value, int pe);     \
    void shmem_ctx_##N##_atomic_or(shmem_ctx_t ctx, T *dest, T value, int pe);        \
    T shmem_ctx_##N##_atomic_fetch_xor(shmem_ctx_t ctx, T *dest, T value, int pe);    \
    void shmem_ctx_##N##_atomic_xor(shmem_ctx_t ctx, T *dest, T value, int pe);       \
    void shmem_ctx_##N##_atomic_fetch_and_nbi(shmem_ctx_t ctx, T *fetch, T *dest,     \
                                              T value, int pe);                       \
    void shmem_ctx_##N##_atomic_fetch_or_nbi(shmem_ctx_t ctx, T *fetch, T *dest,      \
                                             T value, int pe);                        \
    void shmem_ctx_##N##_atomic_fetch_xor_nbi(shmem_ctx_t ctx, T *fetch, T *dest,     \
                                              T value, int pe);
_NF_SHMEM_BITWISE_AMO_TYPES(_NF_SHMEM_DECL_CTX_BITWISE_AMO)

#define _NF_SHMEM_DECL_CTX_PUT_SIGNAL(T, N)                                           \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source,        \
                                    size_t nelems, uint64_t *sig_addr,                \
                                    uint64_t signal, int sig_op, int pe);             \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source,    \
                                        size_t nelems, uint64_t *sig_addr,            \
                                        uint64_t signal, int sig_op, int pe);
_NF_SHMEM_RMA_TYPES(_NF_SHMEM_DECL_CTX_PUT_SIGNAL)
#define _NF_SHMEM_DECL_CTX_SIZED_PUT_SIGNAL(BITS, BYTES)                              \
    void shmem_ctx_put##BITS##_signal(shmem_ctx_t ctx, void *dest, const void *source,\
                                      size_t nelems, uint64_t *sig_addr,              \
                                      uint64_t signal, int sig_op, int pe);           \
    void shmem_ctx_put##BITS##_signal_nbi(shmem_ctx_t ctx, void *dest,                \
                                          const void *source, size_t nelems,          \
                                          uint64_t *sig_addr, uint64_t signal,        \
                                          int sig_op, int pe);
_NF_SHMEM_SIZES(_NF_SHMEM_DECL_CTX_SIZED_PUT_SIGNAL)
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source,
                             size_t nelems, uint64_t *sig_addr, uint64_t signal,
                             int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                                 size_t nelems, uint64_t *sig_addr, uint64_t signal,
                                 int sig_op, int pe);

/* ---- Deprecated names (OpenSHMEM 1.4 and before), kept for old programs ---- */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);

/* The 1.4 atomic names on the types 1.4 had them for. */
#define _NF_SHMEM_OLD_AMO_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
#define _NF_SHMEM_OLD_EXT_AMO_TYPES(X) _NF_SHMEM_OLD_AMO_TYPES(X) X(float, float) X(double, double)
#define _NF_SHMEM_DECL_OLD_AMO(T, N)                                                  \
    T shmem_##N##_finc(T *dest, int pe);                                              \
    void shmem_##N##_inc(T *dest, int pe);                                            \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                     \
    void shmem_##N##_add(T *dest, T value, int pe);                                   \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);
_NF_SHMEM_OLD_AMO_TYPES(_NF_SHMEM_DECL_OLD_AMO)
#define _NF_SHMEM_DECL_OLD_EXT_AMO(T, N)                                              \
    T shmem_##N##_swap(T *dest, T value, int pe);                                     \
    T shmem_##N##_fetch(const T *source, int pe);                                     \
    void shmem_##N##_set(T *dest, T value, int pe);
_NF_SHMEM_OLD_EXT_AMO_TYPES(_NF_SHMEM_DECL_OLD_EXT_AMO)

/* The profiling interface's control (section 10): no profiler is built in, so it does
 * nothing; a tool that defines it sees the program's calls. */
void shmem_pcontrol(int level, ...);

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
/* The C11 generic forms 1.4 deprecated: the old atomic names on their old types, and
 * the generic wait (shmem_wait_until with SHMEM_CMP_NE). */
#define _NF_SHMEM_GENERIC_OLD_AMO(obj, OP)                                            \
    _Generic(*(obj), int: shmem_int##OP, long: shmem_long##OP,                        \
             long long: shmem_longlong##OP)
#define _NF_SHMEM_GENERIC_OLD_EXT_AMO(obj, OP)                                        \
    _Generic(*(obj), int: shmem_int##OP, long: shmem_long##OP,                        \
             long long: shmem_longlong##OP, float: shmem_float##OP,                   \
             double: shmem_double##OP)
#define shmem_finc(dest, ...) _NF_SHMEM_GENERIC_OLD_AMO(dest, _finc)(dest, __VA_ARGS__)
#define shmem_inc(dest, ...) _NF_SHMEM_GENERIC_OLD_AMO(dest, _inc)(dest, __VA_ARGS__)
#define shmem_fadd(dest, ...) _NF_SHMEM_GENERIC_OLD_AMO(dest, _fadd)(dest, __VA_ARGS__)
#define shmem_add(dest, ...) _NF_SHMEM_GENERIC_OLD_AMO(dest, _add)(dest, __VA_ARGS__)
#define shmem_cswap(dest, ...) _NF_SHMEM_GENERIC_OLD_AMO(dest, _cswap)(dest, __VA_ARGS__)
#define shmem_swap(dest, ...) _NF_SHMEM_GENERIC_OLD_EXT_AMO(dest, _swap)(dest, __VA_ARGS__)
#define shmem_fetch(source, ...)                                                      \
    _NF_SHMEM_GENERIC_OLD_EXT_AMO(source, _fetch)(source, __VA_ARGS__)
#define shmem_set(dest, ...) _NF_SHMEM_GENERIC_OLD_EXT_AMO(dest, _set)(dest, __VA_ARGS__)
#define shmem_wait(ivar, cmp_value) _NF_SHMEM_P2P(_wait, ivar, cmp_value)
#endif /* C11 */

/* Cache management, deprecated since 1.3: coherent on every machine ninefold runs on,
 * so each does nothing, as in other implementations. */
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

/* Symmetric data objects are the symmetric heap and the executable's global and
 * static variables (data and bss, initialised or not, file- or function-static);
 * both are remotely accessible. Variables of shared libraries, the stack and
 * malloc'd memory are not. Between shmem_init and shmem_finalize the executable's
 * data is shared memory: a child fork()ed meanwhile shares it with its parent
 * instead of getting a copy. */

#ifdef __cplusplus
}
#endif

#endif /* NF_SHMEM_H */
