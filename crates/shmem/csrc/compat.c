/* The deprecated names of OpenSHMEM 1.4 and before, each a call of its 1.5
 * replacement (the atomics generated from the 1.4 type tables of shmem.h). */
#include <shmem.h>

void start_pes(int npes) {
    (void)npes; /* Ignored, as the specification says: the job decides. */
    shmem_init();
}
int _my_pe(void) { return shmem_my_pe(); }
int _num_pes(void) { return shmem_n_pes(); }
void *shmalloc(size_t size) { return shmem_malloc(size); }
void shfree(void *ptr) { shmem_free(ptr); }
void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }
void *shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }

#define NF_OLD_AMO(T, N)                                                             \
    T shmem_##N##_finc(T *dest, int pe) { return shmem_##N##_atomic_fetch_inc(dest, pe); } \
    void shmem_##N##_inc(T *dest, int pe) { shmem_##N##_atomic_inc(dest, pe); }     \
    T shmem_##N##_fadd(T *dest, T value, int pe) {                                   \
        return shmem_##N##_atomic_fetch_add(dest, value, pe);                        \
    }                                                                                \
    void shmem_##N##_add(T *dest, T value, int pe) {                                 \
        shmem_##N##_atomic_add(dest, value, pe);                                     \
    }                                                                                \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe) {                          \
        return shmem_##N##_atomic_compare_swap(dest, cond, value, pe);               \
    }
_NF_SHMEM_OLD_AMO_TYPES(NF_OLD_AMO)

#define NF_OLD_EXT_AMO(T, N)                                                         \
    T shmem_##N##_swap(T *dest, T value, int pe) {                                   \
        return shmem_##N##_atomic_swap(dest, value, pe);                             \
    }                                                                                \
    T shmem_##N##_fetch(const T *source, int pe) {                                   \
        return shmem_##N##_atomic_fetch(source, pe);                                 \
    }                                                                                \
    void shmem_##N##_set(T *dest, T value, int pe) { shmem_##N##_atomic_set(dest, value, pe); }
_NF_SHMEM_OLD_EXT_AMO_TYPES(NF_OLD_EXT_AMO)

void shmem_pcontrol(int level, ...) { (void)level; }

void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void *dest) { (void)dest; }
void shmem_set_cache_line_inv(void *dest) { (void)dest; }
void shmem_udcflush(void) {}
void shmem_udcflush_line(void *dest) { (void)dest; }
