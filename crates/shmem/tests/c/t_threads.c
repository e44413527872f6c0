/* SHMEM_THREAD_MULTIPLE: shmem_init_thread grants it, and 4 threads of every PE put,
 * get, add atomically and quiet at once, each on its own words of every PE; what
 * lands is checked after the threads are joined. With NF_RMA_DIRECT=0 every call
 * goes through the Rust side, whose calls then take turns. */
#include <pthread.h>
#include <shmem.h>

#include "check.h"

#define THREADS 4
#define ROUNDS 200

static long *cells;   /* [THREADS][npes]: thread t of PE p puts p + 1 into [t][p] */
static long *counter; /* [THREADS]: every thread of every PE adds 1 ROUNDS times */
static int me, npes;

static void *work(void *arg) {
    int t = (int)(long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        int pe = (me + r) % npes;
        shmem_long_p(&cells[t * npes + me], me + 1, pe);
        shmem_long_atomic_add(&counter[t], 1, pe);
        long seen = shmem_long_g(&cells[t * npes + me], pe);
        if (seen != me + 1) return (void *)1;
    }
    shmem_quiet();
    return NULL;
}

int main(void) {
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread");
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "granted %d", provided);
    int queried = -1;
    shmem_query_thread(&queried);
    CHECK(queried == SHMEM_THREAD_MULTIPLE, "query_thread %d", queried);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    cells = shmem_calloc((size_t)THREADS * npes, sizeof(long));
    counter = shmem_calloc(THREADS, sizeof(long));
    shmem_barrier_all();
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, work, (void *)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++) {
        void *bad = NULL;
        pthread_join(th[t], &bad);
        CHECK(bad == NULL, "thread %d read back a put it had just made", t);
    }
    shmem_barrier_all();
    for (int t = 0; t < THREADS; t++) {
        for (int p = 0; p < npes; p++)
            CHECK(cells[t * npes + p] == p + 1, "cell [%d][%d] = %ld", t, p, cells[t * npes + p]);
        /* Every PE's thread t added ROUNDS times, spread round the PEs. */
        long want = 0;
        for (int p = 0; p < npes; p++)
            for (int r = 0; r < ROUNDS; r++) want += (p + r) % npes == me;
        CHECK(counter[t] == want, "counter[%d] = %ld, want %ld", t, counter[t], want);
    }
    PASS("threads_put_get_add_at_once");
    shmem_free(counter);
    shmem_free(cells);
    shmem_finalize();
    return 0;
}
