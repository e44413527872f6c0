/* The symmetric heap: the same calls give the same offsets on every PE, freed
 * ranges are reused, calloc zeroes, align aligns, realloc keeps the contents. */
#include <shmem.h>
#include <string.h>

#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes;

    /* Offsets from the first block, gathered on every PE through PE 0's table. */
    char *first = shmem_malloc(100);
    char *a = shmem_malloc(1000);
    char *b = shmem_align(4096, 10);
    int *c = shmem_calloc(50, sizeof(int));
    long *table = shmem_calloc((size_t)npes * 3, sizeof(long));
    long mine[3] = {a - first, b - first, (char *)c - first};
    shmem_long_put(table + 3 * me, mine, 3, 0);
    shmem_barrier_all();
    if (me == 0)
        for (int pe = 0; pe < npes; pe++)
            for (int k = 0; k < 3; k++)
                CHECK(table[3 * pe + k] == mine[k], "PE %d block %d at offset %ld, PE 0 %ld",
                      pe, k, table[3 * pe + k], mine[k]);
    CHECK(((uintptr_t)b & 4095) == 0, "shmem_align(4096) gave %p", (void *)b);
    for (int i = 0; i < 50; i++) CHECK(c[i] == 0, "calloc [%d] = %d", i, c[i]);
    /* Alignments far past a page are addresses aligned, not only offsets: 8 B to 8 MiB
     * (the heap's mapping is aligned to its own size). */
    for (size_t align = 8; align <= (8u << 20); align <<= 1) {
        char *p = shmem_align(align, 100);
        CHECK(p != NULL && ((uintptr_t)p & (align - 1)) == 0, "shmem_align(%zu) gave %p",
              align, (void *)p);
        shmem_free(p);
    }
    /* An alignment larger than the heap is the spec's NULL (with the reason said). */
    CHECK(shmem_align((size_t)1 << 40, 8) == NULL, "shmem_align(2^40) gave a block");
    PASS("same_offsets_on_every_pe_align_calloc");

    /* A freed range comes back whole. */
    shmem_free(a);
    char *again = shmem_malloc(1000);
    CHECK(again == a, "a freed block is not reused: %p then %p", (void *)a, (void *)again);
    /* Two neighbours freed merge into one range that a bigger block fits. */
    char *x = shmem_malloc(4096);
    char *y = shmem_malloc(4096);
    shmem_free(x);
    shmem_free(y);
    char *xy = shmem_malloc(8192);
    CHECK(xy == x, "merged range not reused: %p, wanted %p", (void *)xy, (void *)x);
    /* The same, freed in the other order (the range merges with its successor). */
    char *u = shmem_malloc(4096);
    char *v = shmem_malloc(4096);
    char *w = shmem_malloc(64);
    shmem_free(v);
    shmem_free(u);
    char *uv = shmem_malloc(8192);
    CHECK(uv == u, "range merged with its successor not reused: %p, wanted %p", (void *)uv,
          (void *)u);
    shmem_free(w);
    PASS("freed_ranges_are_reused");

    /* realloc keeps the bytes, and the new block is remotely usable. */
    for (int i = 0; i < 1000; i++) again[i] = (char)(i * 3 + me);
    char *grown = shmem_realloc(again, 100000);
    for (int i = 0; i < 1000; i++) CHECK(grown[i] == (char)(i * 3 + me), "realloc [%d]", i);
    shmem_char_p(grown + 99999, (char)me, right);
    void *hinted = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE);
    CHECK(hinted != NULL, "malloc_with_hints");
    shmem_barrier_all();
    CHECK(grown[99999] == (char)((me + npes - 1) % npes), "put into a realloc'd block");
    CHECK(shmem_malloc(0) == NULL, "malloc(0) is not NULL");
    PASS("realloc_and_hints");

    /* Allocation and free many times over: nothing leaks. */
    void *round0 = NULL;
    for (int round = 0; round < 200; round++) {
        void *p = shmem_malloc((size_t)(round % 7 + 1) * 10000);
        if (round == 0) round0 = p;
        shmem_free(p);
    }
    void *after = shmem_malloc(10000);
    CHECK(after == round0, "200 malloc/free rounds moved the first free range: %p vs %p",
          after, round0);
    PASS("no_leak_over_rounds");

    shmem_finalize();
    return 0;
}
