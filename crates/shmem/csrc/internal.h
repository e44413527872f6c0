/* The boundary with libshmem's Rust side (src/ffi.rs defines these). Every call
 * passes its public name, so an error names the call the program made. */
#ifndef NF_SHMEM_INTERNAL_H
#define NF_SHMEM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

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

#endif
