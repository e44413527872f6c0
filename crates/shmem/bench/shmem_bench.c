/*
 * shmem_bench: OpenSHMEM latency and bandwidth between PE 0 and PE 1, and the cost
 * of the collectives over every PE; written against the standard shmem.h only, so the
 * same source builds against ninefold's libshmem (`nf bench shmem`, nfshcc) and any
 * other implementation (Open MPI's oshcc: bench/compare-shmem.sh).
 *
 * Measuring, in the manner of the OSU OpenSHMEM benchmarks:
 *   1. Every size starts with a barrier of all PEs, then WARMUP untimed operations.
 *   2. Point-to-point operations (put, get, fetch-add, put-signal, put-bw) are issued
 *      by PE 0 to PE 1 in BATCHES timed batches; a sample is one batch's time
 *      divided by its operations (one clock read per batch, not per operation, so
 *      the clock does not weigh on 8-byte operations). Puts end each batch with
 *      shmem_quiet inside the timing (their remote completion is part of the cost).
 *      put-bw issues WINDOW non-blocking puts, then shmem_quiet, per iteration; its
 *      sample is per put, so size / time is the bandwidth.
 *   3. Collectives (barrier, broadcast from PE 0, sum reduction of longs) run on
 *      every PE; each call is timed alone and followed by an untimed barrier (a
 *      collective that returns early on one PE cannot overlap the next), and PE 0's
 *      calls are summed into the same batches.
 *   4. Iterations per size: ITERS up to 64 KiB, then ITERS * 64 KiB / size (at least
 *      20), as nf_bench's ping-pong rule; warm-up min(WARMUP, that).
 *   5. After every size's samples, fetch-add checks PE 1's counter (a wrong count is
 *      an error, exit 1), and broadcast and reduce check PE 1's result.
 *
 * The collectives use the OpenSHMEM 1.5 team calls where the header declares 1.5 or
 * later, else the 1.4 active-set calls (pSync arrays, alternated); put-signal needs
 * 1.5 and is skipped (saying so) before it.
 *
 * Output (stdout, PE 0 only), parsed by `nf bench shmem` (nf_bench::shmem):
 *   # shmem_bench pes N spec MAJOR.MINOR vendor NAME
 *   R OP SIZE ITERS S1 S2 ... (µs per operation, one per batch)
 *   # skip OP: WHY
 *   # done
 * usage: shmem_bench [--ops put,get,...] [--sizes 8,64,...] [--iters N] [--warmup W]
 *                    [--batches B] [--window W]
 */
#define _POSIX_C_SOURCE 200809L

#include <shmem.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION >= 105
#define BENCH_TEAMS 1
#else
#define BENCH_TEAMS 0
#endif

#define MAX_SIZES 64
#define FULL_UP_TO (64L * 1024L)
#define MIN_ITERS 20L

enum op { PUT, GET, FADD, PUT_SIGNAL, PUT_BW, BARRIER, BROADCAST, REDUCE, NOPS };

static const char *const op_names[NOPS] = {"put",     "get",       "fetch-add", "put-signal",
                                           "put-bw",  "barrier",   "broadcast", "reduce"};

/* Default sizes: the largest of each operation's powers of two from 8 B (0 for the
 * barrier, which moves no data; fetch-add is always one long). */
static const long largest[NOPS] = {4L << 20, 4L << 20, 8, 1L << 20, 4L << 20, 0, 1L << 20, 1L << 20};

struct opts {
    int ops[NOPS], nops;
    long sizes[MAX_SIZES];
    int nsizes;
    long iters, warmup, batches, window;
};

/* The symmetric buffers and the scratch of the 1.4 collectives. */
struct bufs {
    char *src, *dst;
    long *counter;
    uint64_t *sig;
    long *psync[2], *pwrk;
    long max_bytes, nwrk;
};

static int me, npes;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void die(const char *what) {
    fprintf(stderr, "shmem_bench: PE %d: %s\n", me, what);
    exit(1);
}

static long parse_pos(const char *s, int zero_ok) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || (v == 0 && !zero_ok))
        return -1;
    return v;
}

static void parse(int argc, char **argv, struct opts *o) {
    *o = (struct opts){.iters = 10000, .warmup = 1000, .batches = 10, .window = 64};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            die("every option takes a value (see the usage in shmem_bench.c)");
        i++;
        char *list = strdup(v), *save = NULL;
        if (!list)
            die("out of memory");
        if (!strcmp(a, "--ops") || !strcmp(a, "--sizes")) {
            int ops = !strcmp(a, "--ops");
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (ops) {
                    int k = 0;
                    while (k < NOPS && strcmp(t, op_names[k]))
                        k++;
                    if (k == NOPS || o->nops == NOPS)
                        die("--ops: unknown operation (put, get, fetch-add, put-signal, "
                            "put-bw, barrier, broadcast, reduce)");
                    o->ops[o->nops++] = k;
                } else {
                    long s = parse_pos(t, 0);
                    if (s < 0 || o->nsizes == MAX_SIZES)
                        die("--sizes: sizes are positive byte counts, at most 64 of them");
                    o->sizes[o->nsizes++] = s;
                }
            }
        } else {
            long n = parse_pos(v, !strcmp(a, "--warmup"));
            if (n < 0)
                die("--iters, --batches and --window take a positive count, --warmup a count");
            if (!strcmp(a, "--iters"))
                o->iters = n;
            else if (!strcmp(a, "--warmup"))
                o->warmup = n;
            else if (!strcmp(a, "--batches"))
                o->batches = n;
            else if (!strcmp(a, "--window"))
                o->window = n;
            else
                die("unknown option (see the usage in shmem_bench.c)");
        }
        free(list);
    }
    if (o->nops == 0)
        for (int k = 0; k < NOPS; k++)
            o->ops[o->nops++] = k;
}

static long iters_for(long size, long iters) {
    if (size <= FULL_UP_TO)
        return iters;
    long n = iters * FULL_UP_TO / size;
    return n < MIN_ITERS ? (iters < MIN_ITERS ? iters : MIN_ITERS) : n;
}

static int collective(int op) { return op == BARRIER || op == BROADCAST || op == REDUCE; }

/* The sizes of operation `op`: the given ones (broadcast and reduce: whole longs
 * only, as the 1.4 calls move 64-bit elements), else its
 * defaults. Returns how many. */
static int sizes_of(const struct opts *o, int op, long *out) {
    int n = 0;
    if (op == FADD) {
        out[0] = sizeof(long);
        return 1;
    }
    if (op == BARRIER) {
        out[0] = 0;
        return 1;
    }
    if (o->nsizes) {
        for (int i = 0; i < o->nsizes; i++)
            if (!collective(op) || o->sizes[i] % sizeof(long) == 0)
                out[n++] = o->sizes[i];
        return n;
    }
    for (long s = 8; s <= largest[op]; s *= 2)
        out[n++] = s;
    return n;
}

/* One timed operation of `op` on `size` bytes; `round` alternates the 1.4 pSync. */
static void once(int op, long size, struct bufs *b, long round) {
    (void)round; /* only the 1.4 collectives use it */
    switch (op) {
    case PUT:
        shmem_putmem(b->dst, b->src, size, 1);
        break;
    case GET:
        shmem_getmem(b->dst, b->src, size, 1);
        break;
    case FADD:
        (void)shmem_long_atomic_fetch_add(b->counter, 1, 1);
        break;
    case PUT_SIGNAL:
#if BENCH_TEAMS
        shmem_putmem_signal(b->dst, b->src, size, b->sig, 1, SHMEM_SIGNAL_ADD, 1);
#endif
        break;
    case BARRIER:
        shmem_barrier_all();
        break;
    case BROADCAST:
#if BENCH_TEAMS
        shmem_broadcastmem(SHMEM_TEAM_WORLD, b->dst, b->src, size, 0);
#else
        shmem_broadcast64(b->dst, b->src, size / 8, 0, 0, 0, npes, b->psync[round & 1]);
#endif
        break;
    case REDUCE:
#if BENCH_TEAMS
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, (long *)b->dst, (long *)b->src,
                              size / sizeof(long));
#else
        shmem_long_sum_to_all((long *)b->dst, (long *)b->src, size / sizeof(long), 0, 0, npes,
                              b->pwrk, b->psync[round & 1]);
#endif
        break;
    }
}

/* `n` operations of `op`; returns their time in µs (PE 0's, for collectives only
 * the calls themselves, not the barriers between them). */
static double run_ops(int op, long size, struct bufs *b, long n, long window) {
    double total = 0;
    if (collective(op)) {
        for (long i = 0; i < n; i++) {
            double t = now_us();
            once(op, size, b, i);
            total += now_us() - t;
            if (op != BARRIER)
                shmem_barrier_all();
        }
        return total;
    }
    if (me != 0)
        return 0;
    double t = now_us();
    if (op == PUT_BW) {
        for (long i = 0; i < n; i++) {
            for (long w = 0; w < window; w++)
                shmem_putmem_nbi(b->dst, b->src, size, 1);
            shmem_quiet();
        }
    } else {
        for (long i = 0; i < n; i++)
            once(op, size, b, i);
        if (op == PUT || op == PUT_SIGNAL)
            shmem_quiet();
    }
    return now_us() - t;
}

/* Checks what the operations left on PE 1 (rule 5); collective over every PE. */
static void check(int op, long size, struct bufs *b, long expected_adds) {
    shmem_barrier_all();
    if (me == 1 && op == FADD && *b->counter != expected_adds) {
        fprintf(stderr, "shmem_bench: PE 1: fetch-add counted %ld, expected %ld\n", *b->counter,
                expected_adds);
        exit(1);
    }
    if (me == 1 && (op == BROADCAST || op == REDUCE)) {
        long *got = (long *)b->dst, want = op == BROADCAST ? 0x5a5a5a5a5a5a5a5aL : npes;
        for (long i = 0; i < size / (long)sizeof(long); i++)
            if (got[i] != want) {
                fprintf(stderr, "shmem_bench: PE 1: %s of %ld B: element %ld is %ld, not %ld\n",
                        op_names[op], size, i, got[i], want);
                exit(1);
            }
    }
    shmem_barrier_all();
}

static void measure(const struct opts *o, int op, struct bufs *b) {
    long sizes[MAX_SIZES];
    int nsizes = sizes_of(o, op, sizes);
    for (int s = 0; s < nsizes; s++) {
        long size = sizes[s];
        if (size > b->max_bytes)
            die("a size is larger than the buffers (4 MiB)");
        /* Broadcast's source holds a pattern, reduce's ones: rule 5 checks them. */
        memset(b->src, 0x5a, size);
        if (op == REDUCE)
            for (long i = 0; i < size / (long)sizeof(long); i++)
                ((long *)b->src)[i] = 1;
        *b->counter = 0;
        shmem_barrier_all();
        long iters = iters_for(size, o->iters);
        long per = iters / o->batches > 0 ? iters / o->batches : 1;
        long nb = iters / per;
        long warm = o->warmup < iters ? o->warmup : iters;
        if (op == PUT_BW)
            warm = warm / o->window + 1;
        run_ops(op, size, b, warm, o->window);
        shmem_barrier_all();
        double samples[1024];
        if (nb > 1024)
            nb = 1024;
        for (long k = 0; k < nb; k++)
            samples[k] = run_ops(op, size, b, per, o->window) / (per * (op == PUT_BW ? o->window : 1));
        check(op, size, b, op == FADD ? warm + nb * per : 0);
        if (me == 0) {
            printf("R %s %ld %ld", op_names[op], size, nb * per);
            for (long k = 0; k < nb; k++)
                printf(" %.5f", samples[k]);
            printf("\n");
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    struct opts o;
    parse(argc, argv, &o);
    if (npes < 2)
        die("run at least 2 PEs (put, get and the atomics go from PE 0 to PE 1)");
    char vendor[SHMEM_MAX_NAME_LEN + 1] = "";
    int major = 0, minor = 0;
    shmem_info_get_name(vendor);
    shmem_info_get_version(&major, &minor);
    for (char *c = vendor; *c; c++)
        if (*c == ' ')
            *c = '_';

    struct bufs b = {.max_bytes = 4L << 20};
    b.nwrk = b.max_bytes / sizeof(long) / 2 + 1;
    if (b.nwrk < SHMEM_REDUCE_MIN_WRKDATA_SIZE)
        b.nwrk = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    b.src = shmem_malloc(b.max_bytes);
    b.dst = shmem_malloc(b.max_bytes);
    b.counter = shmem_malloc(sizeof(long));
    b.sig = shmem_malloc(sizeof(uint64_t));
    b.pwrk = shmem_malloc(b.nwrk * sizeof(long));
    long nsync = SHMEM_REDUCE_SYNC_SIZE > SHMEM_BCAST_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE
                                                                 : SHMEM_BCAST_SYNC_SIZE;
    for (int i = 0; i < 2; i++) {
        b.psync[i] = shmem_malloc(nsync * sizeof(long));
        if (b.psync[i])
            for (long k = 0; k < nsync; k++)
                b.psync[i][k] = SHMEM_SYNC_VALUE;
    }
    if (!b.src || !b.dst || !b.counter || !b.sig || !b.pwrk || !b.psync[0] || !b.psync[1])
        die("shmem_malloc of the 8 MiB of buffers failed");
    *b.sig = 0;
    memset(b.src, 0, b.max_bytes);
    shmem_barrier_all();

    if (me == 0)
        printf("# shmem_bench pes %d spec %d.%d vendor %s\n", npes, major, minor, vendor);
    for (int i = 0; i < o.nops; i++) {
        if (o.ops[i] == PUT_SIGNAL && !BENCH_TEAMS) {
            if (me == 0)
                printf("# skip put-signal: needs OpenSHMEM 1.5 (this header is %d.%d)\n",
                       SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
            continue;
        }
        measure(&o, o.ops[i], &b);
    }
    if (me == 0) {
        printf("# done\n");
        fflush(stdout);
    }
    shmem_barrier_all();
    shmem_free(b.src);
    shmem_free(b.dst);
    shmem_free(b.counter);
    shmem_free(b.sig);
    shmem_free(b.pwrk);
    shmem_free(b.psync[0]);
    shmem_free(b.psync[1]);
    shmem_finalize();
    return 0;
}
