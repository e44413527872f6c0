/* Point-to-point synchronization on every p2p type: wait_until, test and their
 * _all / _any / _some / _vector forms, one macro over a type table of shmem.h.
 *
 * The ivars are this PE's own symmetric memory; other PEs change them with puts and
 * atomics that land without this PE's help (load / store on the same host, the rma
 * service thread from other hosts), so waiting is reading: an acquire load per test,
 * and the Rust side's pause between rounds (spin, then yield). */
#include <shmem.h>

#include "internal.h"

/* Whether `a cmp b` holds; an unknown operator is an error naming `call`. */
#define NF_CMP(a, cmp, b, ok)                                                        \
    switch (cmp) {                                                                   \
    case SHMEM_CMP_EQ: ok = (a) == (b); break;                                       \
    case SHMEM_CMP_NE: ok = (a) != (b); break;                                       \
    case SHMEM_CMP_GT: ok = (a) > (b); break;                                        \
    case SHMEM_CMP_GE: ok = (a) >= (b); break;                                       \
    case SHMEM_CMP_LT: ok = (a) < (b); break;                                        \
    case SHMEM_CMP_LE: ok = (a) <= (b); break;                                       \
    default: nf_shmem_bad_cmp(call, cmp); ok = 0;                                    \
    }

void nf_shmem_bad_cmp(const char *call, int cmp);

/* Where the next _any scan starts: each call one further, so repeated calls with
 * several variables ready return each of them in turn, not always the first. */
static size_t nf_any_start(size_t nelems) {
    static unsigned long turn;
    return (size_t)(__atomic_fetch_add(&turn, 1, __ATOMIC_RELAXED) % nelems);
}

#define NF_P2P(T, N)                                                                 \
    /* Whether ivars[i] satisfies the comparison (values: NULL for one value). */    \
    static int nf_##N##_holds(const char *call, T *ivars, size_t i, int cmp, T value, \
                              const T *values) {                                     \
        T now = __atomic_load_n(&ivars[i], __ATOMIC_ACQUIRE);                        \
        T want = values ? values[i] : value;                                         \
        int ok;                                                                      \
        NF_CMP(now, cmp, want, ok)                                                   \
        return ok;                                                                   \
    }                                                                                \
    /* One pass over the unmasked ivars: marks those that hold in `done` (when not   \
     * NULL), writes their indices, returns how many hold now. */                    \
    static size_t nf_##N##_scan(const char *call, T *ivars, size_t nelems,           \
                                const int *status, int cmp, T value, const T *values, \
                                size_t *indices, size_t *first) {                    \
        size_t n = 0;                                                                \
        *first = SIZE_MAX;                                                           \
        for (size_t i = 0; i < nelems; i++) {                                        \
            if (status && status[i]) continue;                                       \
            if (nf_##N##_holds(call, ivars, i, cmp, value, values)) {                \
                if (indices) indices[n] = i;                                         \
                if (*first == SIZE_MAX) *first = i;                                  \
                n++;                                                                 \
            }                                                                        \
        }                                                                            \
        return n;                                                                    \
    }                                                                                \
    static size_t nf_##N##_active(size_t nelems, const int *status) {                \
        size_t n = 0;                                                                \
        for (size_t i = 0; i < nelems; i++) n += !(status && status[i]);             \
        return n;                                                                    \
    }                                                                                \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value) {                            \
        const char *call = "shmem_" #N "_test";                                      \
        return nf_##N##_holds(call, ivar, 0, cmp, cmp_value, NULL);                  \
    }                                                                                \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value) {                     \
        const char *call = "shmem_" #N "_wait_until";                                \
        unsigned round = 0;                                                          \
        while (!nf_##N##_holds(call, ivar, 0, cmp, cmp_value, NULL))                 \
            nf_shmem_pause(call, &round);                                            \
    }                                                                                \
    void shmem_##N##_wait(T *ivar, T cmp_value) {                                    \
        shmem_##N##_wait_until(ivar, SHMEM_CMP_NE, cmp_value);                       \
    }                                                                                \
    static int nf_##N##_all(const char *call, T *ivars, size_t nelems,               \
                            const int *status, int cmp, T value, const T *values) {  \
        size_t first;                                                                \
        return nf_##N##_scan(call, ivars, nelems, status, cmp, value, values, NULL,  \
                             &first) == nf_##N##_active(nelems, status);             \
    }                                                                                \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp,    \
                             T cmp_value) {                                          \
        return nf_##N##_all("shmem_" #N "_test_all", ivars, nelems, status, cmp,     \
                            cmp_value, NULL);                                        \
    }                                                                                \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status,      \
                                    int cmp, const T *cmp_values) {                  \
        return nf_##N##_all("shmem_" #N "_test_all_vector", ivars, nelems, status,   \
                            cmp, 0, cmp_values);                                     \
    }                                                                                \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status,      \
                                    int cmp, T cmp_value) {                          \
        const char *call = "shmem_" #N "_wait_until_all";                            \
        unsigned round = 0;                                                          \
        while (!nf_##N##_all(call, ivars, nelems, status, cmp, cmp_value, NULL))     \
            nf_shmem_pause(call, &round);                                            \
    }                                                                                \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems,                  \
                                           const int *status, int cmp,               \
                                           const T *cmp_values) {                    \
        const char *call = "shmem_" #N "_wait_until_all_vector";                     \
        unsigned round = 0;                                                          \
        while (!nf_##N##_all(call, ivars, nelems, status, cmp, 0, cmp_values))       \
            nf_shmem_pause(call, &round);                                            \
    }                                                                                \
    static size_t nf_##N##_any(const char *call, T *ivars, size_t nelems,            \
                               const int *status, int cmp, T value, const T *values, \
                               int wait) {                                           \
        unsigned round = 0;                                                          \
        if (nf_##N##_active(nelems, status) == 0) return SIZE_MAX;                   \
        for (;;) {                                                                   \
            size_t start = nf_any_start(nelems);                                     \
            for (size_t k = 0; k < nelems; k++) {                                    \
                size_t i = (start + k) % nelems;                                     \
                if (status && status[i]) continue;                                   \
                if (nf_##N##_holds(call, ivars, i, cmp, value, values)) return i;    \
            }                                                                        \
            if (!wait) return SIZE_MAX;                                              \
            nf_shmem_pause(call, &round);                                            \
        }                                                                            \
    }                                                                                \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, \
                                T cmp_value) {                                       \
        return nf_##N##_any("shmem_" #N "_test_any", ivars, nelems, status, cmp,     \
                            cmp_value, NULL, 0);                                     \
    }                                                                                \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status,   \
                                       int cmp, const T *cmp_values) {               \
        return nf_##N##_any("shmem_" #N "_test_any_vector", ivars, nelems, status,   \
                            cmp, 0, cmp_values, 0);                                  \
    }                                                                                \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status,    \
                                      int cmp, T cmp_value) {                        \
        return nf_##N##_any("shmem_" #N "_wait_until_any", ivars, nelems, status,    \
                            cmp, cmp_value, NULL, 1);                                \
    }                                                                                \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems,                \
                                             const int *status, int cmp,             \
                                             const T *cmp_values) {                  \
        return nf_##N##_any("shmem_" #N "_wait_until_any_vector", ivars, nelems,     \
                            status, cmp, 0, cmp_values, 1);                          \
    }                                                                                \
    static size_t nf_##N##_some(const char *call, T *ivars, size_t nelems,           \
                                size_t *indices, const int *status, int cmp,         \
                                T value, const T *values, int wait) {                \
        unsigned round = 0;                                                          \
        if (nf_##N##_active(nelems, status) == 0) return 0;                          \
        for (;;) {                                                                   \
            size_t first;                                                            \
            size_t n = nf_##N##_scan(call, ivars, nelems, status, cmp, value, values, \
                                     indices, &first);                               \
            if (n > 0 || !wait) return n;                                            \
            nf_shmem_pause(call, &round);                                            \
        }                                                                            \
    }                                                                                \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,           \
                                 const int *status, int cmp, T cmp_value) {          \
        return nf_##N##_some("shmem_" #N "_test_some", ivars, nelems, indices,       \
                             status, cmp, cmp_value, NULL, 0);                       \
    }                                                                                \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,    \
                                        const int *status, int cmp,                  \
                                        const T *cmp_values) {                       \
        return nf_##N##_some("shmem_" #N "_test_some_vector", ivars, nelems,         \
                             indices, status, cmp, 0, cmp_values, 0);                \
    }                                                                                \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,     \
                                       const int *status, int cmp, T cmp_value) {    \
        return nf_##N##_some("shmem_" #N "_wait_until_some", ivars, nelems, indices, \
                             status, cmp, cmp_value, NULL, 1);                       \
    }                                                                                \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems,               \
                                              size_t *indices, const int *status,    \
                                              int cmp, const T *cmp_values) {        \
        return nf_##N##_some("shmem_" #N "_wait_until_some_vector", ivars, nelems,   \
                             indices, status, cmp, 0, cmp_values, 1);                \
    }
_NF_SHMEM_P2P_TYPES(NF_P2P)

/* The signal word of put-with-signal is this PE's own uint64_t: fetching it is an
 * acquire load, waiting on it is the wait loop above on one word, returning the value
 * that satisfied the comparison. */
uint64_t shmem_signal_fetch(const uint64_t *sig_addr) {
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value) {
    const char *call = "shmem_signal_wait_until";
    unsigned round = 0;
    for (;;) {
        uint64_t now = __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
        int ok;
        NF_CMP(now, cmp, cmp_value, ok)
        if (ok) return now;
        nf_shmem_pause(call, &round);
    }
}
