/* Global and local memory: Malloc / Free (with 0-byte pieces and many segments),
 * Malloc_local / Free_local, the memdev variants, a large segment. */
#include "harness.h"

/* Each process fills its piece; every process reads every piece back with Get. */
static void fill_and_read_all(void **ptr, size_t (*size_of)(int)) {
    for (size_t i = 0; i < size_of(me); i++) ((unsigned char *)ptr[me])[i] = pattern(me, i, 0);
    ARMCI_Barrier();
    for (int p = 0; p < nproc; p++) {
        size_t n = size_of(p);
        if (n == 0) {
            CHECK(ptr[p] == NULL, "process %d asked for 0 bytes but got %p", p, ptr[p]);
            continue;
        }
        unsigned char *buf = malloc(n);
        CHECK(ARMCI_Get(ptr[p], buf, (int)n, p) == 0, "Get from %d failed", p);
        for (size_t i = 0; i < n; i++)
            CHECK(buf[i] == pattern(p, i, 0), "process %d byte %zu: %d, want %d", p, i,
                  buf[i], pattern(p, i, 0));
        free(buf);
    }
    ARMCI_Barrier();
}

static size_t size_varied(int p) { return (size_t)(p + 1) * 64 + 3; }
static size_t size_one_empty(int p) { return p == 1 ? 0 : 256; }

static void test_malloc(void) {
    void **ptr = calloc((size_t)nproc, sizeof(void *));
    CHECK(ARMCI_Malloc(ptr, (armci_size_t)size_varied(me)) == 0, "ARMCI_Malloc failed");
    for (int p = 0; p < nproc; p++) CHECK(ptr[p] != NULL, "pointer of %d is NULL", p);
    fill_and_read_all(ptr, size_varied);
    CHECK(ARMCI_Free(ptr[me]) == 0, "ARMCI_Free failed");
    free(ptr);
}

/* A process that asks for 0 bytes gets NULL everywhere and frees NULL. */
static void test_malloc_zero_piece(void) {
    void **ptr = calloc((size_t)nproc, sizeof(void *));
    CHECK(ARMCI_Malloc(ptr, (armci_size_t)size_one_empty(me)) == 0, "ARMCI_Malloc failed");
    fill_and_read_all(ptr, size_one_empty);
    CHECK(ARMCI_Free(ptr[me]) == 0, "ARMCI_Free of %p failed", ptr[me]);
    free(ptr);
}

/* Many live segments; freed in an interleaved order, the same on every process. */
static void test_malloc_many(void) {
    enum { N = 24 };
    void **seg[N];
    for (int s = 0; s < N; s++) {
        seg[s] = alloc_all((size_t)(s + 1) * 40);
        memset(seg[s][me], s, (size_t)(s + 1) * 40);
    }
    ARMCI_Barrier();
    for (int s = 0; s < N; s++) {
        int p = (me + s) % nproc;
        unsigned char buf[N * 40];
        CHECK(ARMCI_Get(seg[s][p], buf, (s + 1) * 40, p) == 0, "Get failed");
        for (int i = 0; i < (s + 1) * 40; i++)
            CHECK(buf[i] == s, "segment %d of %d byte %d is %d", s, p, i, buf[i]);
    }
    ARMCI_Barrier();
    for (int s = 0; s < N; s += 2) free_all(seg[s]);
    for (int s = N - 1; s > 0; s -= 2) free_all(seg[s]);
}

static void test_malloc_local(void) {
    size_t n = 1 << 20;
    unsigned char *buf = ARMCI_Malloc_local((armci_size_t)n);
    CHECK(buf != NULL, "ARMCI_Malloc_local returned NULL");
    void **ptr = alloc_all(n);
    for (size_t i = 0; i < n; i++) buf[i] = pattern(me, i, 1);
    int peer = (me + 1) % nproc;
    CHECK(ARMCI_Put(buf, ptr[peer], (int)n, peer) == 0, "Put from a local buffer failed");
    ARMCI_Barrier();
    int from = (me + nproc - 1) % nproc;
    for (size_t i = 0; i < n; i++)
        CHECK(((unsigned char *)ptr[me])[i] == pattern(from, i, 1), "byte %zu", i);
    memset(buf, 0, n);
    CHECK(ARMCI_Get(ptr[peer], buf, (int)n, peer) == 0, "Get into a local buffer failed");
    for (size_t i = 0; i < n; i++) CHECK(buf[i] == pattern(me, i, 1), "byte %zu", i);
    ARMCI_Barrier();
    free_all(ptr);
    CHECK(ARMCI_Free_local(buf) == 0, "ARMCI_Free_local failed");
}

static void test_memdev(void) {
    void **ptr = calloc((size_t)nproc, sizeof(void *));
    CHECK(ARMCI_Malloc_memdev(ptr, 512, NULL) == 0, "ARMCI_Malloc_memdev failed");
    memset(ptr[me], me + 1, 512);
    ARMCI_Barrier();
    int peer = (me + 1) % nproc;
    unsigned char buf[512];
    CHECK(ARMCI_Get(ptr[peer], buf, 512, peer) == 0, "Get failed");
    CHECK(buf[0] == peer + 1 && buf[511] == peer + 1, "memdev segment of %d holds %d", peer,
          buf[0]);
    ARMCI_Barrier();
    CHECK(ARMCI_Free_memdev(ptr[me]) == 0, "ARMCI_Free_memdev failed");
    ARMCI_Group world;
    ARMCI_Group_get_world(&world);
    CHECK(ARMCI_Malloc_group_memdev(ptr, 256, &world, "DDR") == 0,
          "ARMCI_Malloc_group_memdev failed");
    CHECK(ptr[me] != NULL, "own pointer NULL");
    ARMCI_Barrier();
    CHECK(ARMCI_Free_group(ptr[me], &world) == 0, "ARMCI_Free_group failed");
    free(ptr);
}

static void test_large_segment(void) {
    size_t n = (size_t)32 << 20;
    void **ptr = alloc_all(n);
    unsigned char *mine = ptr[me];
    mine[0] = (unsigned char)me;
    mine[n - 1] = (unsigned char)(me + 100);
    ARMCI_Barrier();
    int peer = (me + 1) % nproc;
    unsigned char a = 0, b = 0;
    CHECK(ARMCI_Get(ptr[peer], &a, 1, peer) == 0, "Get failed");
    CHECK(ARMCI_Get((unsigned char *)ptr[peer] + n - 1, &b, 1, peer) == 0, "Get failed");
    CHECK(a == peer && b == peer + 100, "ends of %d's 32 MiB piece: %d %d", peer, a, b);
    ARMCI_Barrier();
    free_all(ptr);
}

#ifdef ARMCI_NINEFOLD
/* MemTotal of this host in bytes (0 if unknown). */
static long long mem_total(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long long kib = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "MemTotal: %lld kB", &kib) == 1) break;
    if (f != NULL) fclose(f);
    return kib * 1024;
}

/* GA's `enormous` on a host too small: twice the host's memory, asked for by every
   process of it, is refused on every process at once (non-zero, every pointer
   NULL, a message saying why), never left to the OOM killer; the job goes on.
   ARMCI-MPI aborts the job here instead. */
static void test_malloc_more_than_the_host_holds(void) {
    long long total = mem_total();
    CHECK(total > 0, "no MemTotal in /proc/meminfo");
    armci_size_t each = (armci_size_t)(2 * total / nproc + 4096);
    void **ptr = calloc((size_t)nproc, sizeof(void *));
    CHECK(ptr != NULL, "out of memory");
    for (int p = 0; p < nproc; p++) ptr[p] = (void *)ptr;
    int rc = ARMCI_Malloc(ptr, each);
    CHECK(rc != 0, "ARMCI_Malloc of %ld bytes on each of %d processes succeeded", (long)each,
          nproc);
    for (int p = 0; p < nproc; p++) CHECK(ptr[p] == NULL, "pointer %d set after a refusal", p);
    free(ptr);
    free_all(alloc_all(4096));
}
#endif

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_malloc);
    RUN(test_malloc_zero_piece);
    RUN(test_malloc_many);
    RUN(test_malloc_local);
    RUN(test_memdev);
    RUN(test_large_segment);
#ifdef ARMCI_NINEFOLD
    RUN(test_malloc_more_than_the_host_holds);
#endif
    harness_done();
    return 0;
}
