/* The ceiling of a same-host put of SIZE bytes (default 1 MiB): one copy between two
 * buffers of one process, by memcpy and by non-temporal (streaming) stores, into a
 * hot destination (the same buffer every time, as shmem_bench's put-bw loop) and a
 * cold one (64 buffers in turn, past a 32 MiB last-level cache), with what reading
 * the destination right after the copy then costs (a put's target reading it next).
 * Best of 5 rounds of ITERS copies each.
 *
 *   cc -O2 -o copy_ceiling bench/c/copy_ceiling.c && ./copy_ceiling [SIZE [ITERS]]
 *
 * x86-64 only (SSE2 streaming stores). */
#include <emmintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COLD_BUFFERS 64

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Copies n bytes (a multiple of 64, both 16-byte aligned) with streaming stores,
 * which skip the read-for-ownership of the destination's lines. */
static void stream_copy(void *dest, const void *src, size_t n) {
    __m128i *d = dest;
    const __m128i *s = src;
    for (size_t i = 0; i < n / 16; i += 4) {
        __m128i a = _mm_load_si128(s + i), b = _mm_load_si128(s + i + 1);
        __m128i c = _mm_load_si128(s + i + 2), e = _mm_load_si128(s + i + 3);
        _mm_stream_si128(d + i, a);
        _mm_stream_si128(d + i + 1, b);
        _mm_stream_si128(d + i + 2, c);
        _mm_stream_si128(d + i + 3, e);
    }
    _mm_sfence();
}

static long sum(const long *p, size_t n) {
    long s = 0;
    for (size_t i = 0; i < n / sizeof(long); i++) s += p[i];
    return s;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1 << 20;
    long iters = argc > 2 ? atol(argv[2]) : 640;
    if (n == 0 || n % 64 || iters < 1) {
        fprintf(stderr, "usage: copy_ceiling [SIZE (a multiple of 64) [ITERS]]\n");
        return 2;
    }
    char *src = aligned_alloc(64, n), *dst = aligned_alloc(64, n * COLD_BUFFERS);
    if (!src || !dst) return 1;
    memset(src, 1, n);
    memset(dst, 2, n * COLD_BUFFERS);
    volatile long sink = 0;
    for (int cold = 0; cold < 2; cold++)
        for (int stream = 0; stream < 2; stream++) {
            double copy = 1e9, read = 1e9;
            for (int round = 0; round < 5; round++) {
                double tc = 0, tr = 0;
                for (long i = 0; i < iters; i++) {
                    char *d = dst + (cold ? (size_t)(i % COLD_BUFFERS) * n : 0);
                    double t0 = now_s();
                    if (stream)
                        stream_copy(d, src, n);
                    else
                        memcpy(d, src, n);
                    double t1 = now_s();
                    sink += sum((const long *)d, n);
                    tc += t1 - t0;
                    tr += now_s() - t1;
                }
                if (tc / iters < copy) copy = tc / iters;
                if (tr / iters < read) read = tr / iters;
            }
            printf("%zu B, %s destination, %-7s: copy %6.2f GB/s (%7.1f us), reading it after "
                   "%7.1f us\n",
                   n, cold ? "cold" : "hot", stream ? "stream" : "memcpy", (double)n / copy / 1e9,
                   copy * 1e6, read * 1e6);
        }
    free(src);
    free(dst);
    return 0;
}
