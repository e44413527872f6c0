/* Setup, query and RMA: every typed put / get / p / g / iput / iget / nbi, the sized
 * and mem forms, the C11 generic forms, shmem_ptr on the same host. Each PE writes
 * to its right neighbour a pattern naming itself, and checks what its left one
 * wrote. */
#include <shmem.h>
#include <string.h>

#include "check.h"

#define N 16

/* Value i of the pattern PE `pe` sends (fits every type, even char). */
#define PAT(pe, i) ((pe) * 20 + (i) + 1)

#define TYPED(T, NAME)                                                                \
    static void typed_##NAME(int me, int npes) {                                     \
        int right = (me + 1) % npes, left = (me + npes - 1) % npes;                  \
        T *dst = shmem_malloc(4 * N * sizeof(T));                                    \
        T src[2 * N];                                                                \
        for (int i = 0; i < 2 * N; i++) src[i] = (T)PAT(me, i);                      \
        memset(dst, 0, 4 * N * sizeof(T));                                           \
        shmem_barrier_all();                                                         \
        shmem_##NAME##_put(dst, src, N, right);                                      \
        shmem_##NAME##_put_nbi(dst + N, src + 1, N - 1, right);                      \
        shmem_##NAME##_p(dst + 2 * N, src[3], right);                                \
        /* iput: every other element of src to every third of dst. */                \
        shmem_##NAME##_iput(dst + 3 * N, src, 3, 2, N / 4, right);                   \
        shmem_quiet();                                                               \
        shmem_barrier_all();                                                         \
        for (int i = 0; i < N; i++)                                                  \
            CHECK(dst[i] == (T)PAT(left, i), #NAME " put [%d]", i);                  \
        for (int i = 0; i < N - 1; i++)                                              \
            CHECK(dst[N + i] == (T)PAT(left, i + 1), #NAME " put_nbi [%d]", i);      \
        CHECK(dst[2 * N] == (T)PAT(left, 3), #NAME " p");                            \
        for (int i = 0; i < N / 4; i++)                                              \
            CHECK(dst[3 * N + 3 * i] == (T)PAT(left, 2 * i), #NAME " iput [%d]", i);  \
        /* Reads back from the right neighbour what we wrote there. */               \
        T got[N];                                                                    \
        memset(got, 0, sizeof got);                                                  \
        shmem_##NAME##_get(got, dst, N, right);                                      \
        for (int i = 0; i < N; i++)                                                  \
            CHECK(got[i] == (T)PAT(me, i), #NAME " get [%d]", i);                    \
        memset(got, 0, sizeof got);                                                  \
        shmem_##NAME##_get_nbi(got, dst + N, N - 1, right);                          \
        shmem_quiet();                                                               \
        CHECK(got[0] == (T)PAT(me, 1), #NAME " get_nbi");                            \
        CHECK(shmem_##NAME##_g(dst + 2 * N, right) == (T)PAT(me, 3), #NAME " g");     \
        memset(got, 0, sizeof got);                                                  \
        shmem_##NAME##_iget(got, dst, 2, 3, N / 4, right);                           \
        for (int i = 0; i < N / 4; i++)                                              \
            CHECK(got[2 * i] == (T)PAT(me, 3 * i), #NAME " iget [%d]", i);            \
        shmem_barrier_all();                                                         \
        shmem_free(dst);                                                             \
    }
_NF_SHMEM_RMA_TYPES(TYPED)

#define RUN_TYPED(T, NAME) typed_##NAME(me, npes);

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    CHECK(npes >= 1 && me >= 0 && me < npes, "me %d of %d", me, npes);

    int major = 0, minor = 0;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    CHECK(major == 1 && minor == 5, "version %d.%d", major, minor);
    CHECK(strlen(name) > 0, "empty name");
    int level = -1;
    shmem_query_thread(&level);
    CHECK(level == SHMEM_THREAD_FUNNELED, "thread level %d", level);
    CHECK(shmem_pe_accessible(right) && !shmem_pe_accessible(npes), "pe_accessible");
    PASS("setup_and_query");

    _NF_SHMEM_RMA_TYPES(RUN_TYPED)
    PASS("typed_put_get_p_g_iput_iget_nbi");

    /* Sized and mem forms. */
    unsigned char *buf = shmem_malloc(1024);
    unsigned char src[1024];
    for (int i = 0; i < 1024; i++) src[i] = (unsigned char)(me * 7 + i);
    shmem_barrier_all();
    shmem_put8(buf, src, 16, right);
    shmem_put16(buf + 16, src + 16, 8, right);
    shmem_put32(buf + 32, src + 32, 4, right);
    shmem_put64(buf + 48, src + 48, 2, right);
    shmem_put128(buf + 64, src + 64, 4, right);
    shmem_putmem(buf + 128, src + 128, 896, right);
    shmem_barrier_all();
    for (int i = 0; i < 1024; i++)
        CHECK(buf[i] == (unsigned char)(left * 7 + i), "sized put byte %d", i);
    unsigned char got[1024];
    shmem_getmem(got, buf, 1024, right);
    CHECK(memcmp(got, src, 1024) == 0, "getmem");
    shmem_get64(got, buf, 2, left);
    CHECK(got[0] == (unsigned char)((left + npes - 1) % npes * 7), "get64");
    uint64_t strided[8] = {0};
    shmem_iget64(strided, buf, 2, 1, 4, right);
    CHECK(memcmp(&strided[2], src + 8, 8) == 0, "iget64");
    PASS("sized_and_mem");

    /* C11 generic forms. */
    long *l = shmem_calloc(4, sizeof(long));
    double *d = shmem_calloc(4, sizeof(double));
    long lv[4] = {me, me + 1, me + 2, me + 3};
    shmem_put(l, lv, 4, right);
    shmem_p(d, 0.5 + me, right);
    shmem_barrier_all();
    CHECK(l[3] == left + 3, "generic put");
    CHECK(shmem_g(d, me) == 0.5 + left, "generic g");
    const long *cl = l;
    CHECK(shmem_g(cl + 1, right) == me + 1, "generic g on const");
    PASS("c11_generic");

    /* shmem_ptr: every PE here is on this host, so a load through it sees the peer. */
    long *peer = shmem_ptr(l, right);
    CHECK(peer != NULL, "shmem_ptr to a same-host PE is NULL");
    CHECK(peer[0] == me, "load through shmem_ptr: %ld", peer[0]);
    CHECK(shmem_ptr(l, me) == l, "shmem_ptr to myself");
    CHECK(shmem_addr_accessible(l, right) && !shmem_addr_accessible(src, right),
          "addr_accessible");
    PASS("shmem_ptr_same_host");

    /* Zero bytes move nothing, whatever the addresses (NULL included). */
    shmem_putmem(NULL, NULL, 0, right);
    shmem_getmem(NULL, NULL, 0, right);
    shmem_putmem_nbi(NULL, NULL, 0, right);
    shmem_getmem_nbi(NULL, NULL, 0, right);
    shmem_int_iput(NULL, NULL, 1, 1, 0, right);
    shmem_int_iget(NULL, NULL, 1, 1, 0, right);
    shmem_quiet();
    PASS("zero_length_rma");

    shmem_free(d);
    shmem_free(l);
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
