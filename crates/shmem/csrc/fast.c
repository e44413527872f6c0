/* The same-host fast path's table (internal.h, struct nf_fast), written by the Rust
 * side at shmem_init and emptied at shmem_finalize (src/state.rs). */
#include <shmem.h>

#include "internal.h"

struct nf_fast nf_shmem_fast;

/* Rule 1 of internal.h: everything first, then `npes`, released. */
void nf_shmem_fast_publish(uintptr_t base, size_t size, const uintptr_t *map, int npes,
                           void *team_area, int any_thread) {
    nf_shmem_fast.base = base;
    nf_shmem_fast.size = size;
    nf_shmem_fast.map = map;
    nf_shmem_fast.owner = pthread_self();
    nf_shmem_fast.any_thread = any_thread;
    nf_shmem_fast.rma_used = 1; /* start-up used it */
    nf_shmem_fast.team_area = team_area;
    __atomic_store_n(&nf_shmem_fast.npes, npes, __ATOMIC_RELEASE);
}

void nf_shmem_fast_clear(void) {
    __atomic_store_n(&nf_shmem_fast.npes, 0, __ATOMIC_RELEASE);
}

/* Rule 4. Relaxed: another thread may read it (and then takes the Rust path). */
void nf_shmem_fast_rma_used(int used) {
    __atomic_store_n(&nf_shmem_fast.rma_used, used, __ATOMIC_RELAXED);
}

/* Rule 4: a fence alone when nothing can be outstanding in the rma layer, on the
 * thread of shmem_init of a running library; else the Rust side's quiet. */
static void nf_quiet(const char *call) {
    const struct nf_fast *f = &nf_shmem_fast;
    if (__atomic_load_n(&f->npes, __ATOMIC_ACQUIRE) > 0 &&
        !__atomic_load_n(&f->rma_used, __ATOMIC_RELAXED) && nf_fast_thread_ok(f)) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        return;
    }
    nf_shmem_quiet(call);
}

void shmem_quiet(void) {
    nf_quiet("shmem_quiet");
}

/* Ordering puts per PE is weaker than completing them: done as shmem_quiet. */
void shmem_fence(void) {
    nf_quiet("shmem_fence");
}
