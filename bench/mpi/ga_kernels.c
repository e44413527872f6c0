/*
 * Global Arrays kernels of the kinds that ran slow on libarmci on a 16-core machine
 * (packing, temporaries, GA_Sync), one per run: the GA programs of bench/compare-ga.sh besides bench/mpi/ga.c. Debian's ga.h only;
 * link as `ga-config --libs` says, with ARMCI-MPI or with libarmci in its place.
 *
 *   pack   --rounds R rounds over 1-D int arrays of --n N elements: GA_Patch_enum
 *          fills a source, GA_Pack keeps the elements under a mask (every third),
 *          GA_Unpack scatters them back, GA_Scan_add and GA_Scan_copy run over
 *          segments; counts and sums are checked against a serial model
 *   temps  --rounds R temporaries: a 2-D double array of a new shape every round
 *          (GA_Create, GA_Fill, GA_Duplicate, GA_Copy, GA_Ddot, GA_Destroy), as GA
 *          routines that make scratch arrays do; the dot product is checked
 *   sync   --rounds R rounds of a put to the next rank's element, GA_Sync, a get of
 *          the previous rank's element (checked): GA_Sync-bound
 *   start  nothing between GA_Initialize and GA_Terminate: the floor of every GA
 *          program's wall time (mpirun's launch, MPI_Init, GA's and ARMCI's start-up
 *          and teardown, MPI_Finalize), which programs of a second or less are mostly
 *
 * Usage: mpirun -np P ./ga_kernels --kernel pack|temps|sync|start [--n N] [--rounds R]
 * Prints "ga_kernels KERNEL: P ranks, S s" (rank 0) and exits 0 when every check held.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ga.h>
#include <macdecls.h>

static int me, nranks;

static void fail(const char *what, long got, long want)
{
    fprintf(stderr, "ga_kernels: rank %d: %s: got %ld, want %ld\n", me, what, got, want);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void kernel_pack(int n, int rounds)
{
    int dims[1] = { n };
    int g_src = NGA_Create(C_INT, 1, dims, "src", NULL);
    int g_mask = NGA_Create(C_INT, 1, dims, "mask", NULL);
    int g_dst = NGA_Create(C_INT, 1, dims, "dst", NULL);
    int g_back = NGA_Create(C_INT, 1, dims, "back", NULL);
    int g_bits = NGA_Create(C_INT, 1, dims, "bits", NULL);
    int g_scan = NGA_Create(C_INT, 1, dims, "scan", NULL);
    int lo, hi;
    NGA_Distribution(g_mask, me, &lo, &hi);
    if (lo >= 0 && hi >= lo) {
        int len = hi - lo + 1, ld = 1;
        int *m = malloc(sizeof(int) * (size_t)len), *b = malloc(sizeof(int) * (size_t)len);
        for (int i = 0; i < len; i++) {
            m[i] = (lo + i) % 3 == 0;   /* pack every third element */
            b[i] = (lo + i) % 64 == 0;  /* scan segments of 64 */
        }
        NGA_Put(g_mask, &lo, &hi, m, &ld);
        NGA_Put(g_bits, &lo, &hi, b, &ld);
        free(m);
        free(b);
    }
    GA_Sync();
    int want_count = (n + 2) / 3;
    for (int r = 0; r < rounds; r++) {
        int start = r, inc = 1, count = 0, zero = 0;
        GA_Patch_enum(g_src, 0, n - 1, &start, &inc);
        GA_Fill(g_back, &zero);
        GA_Pack(g_src, g_dst, g_mask, 0, n - 1, &count);
        if (count != want_count)
            fail("GA_Pack count", count, want_count);
        GA_Unpack(g_dst, g_back, g_mask, 0, n - 1, &count);
        GA_Scan_add(g_src, g_scan, g_bits, 0, n - 1, 0);
        GA_Scan_copy(g_src, g_scan, g_bits, 0, n - 1);
        /* back holds src's values at masked places: r + i for i % 3 == 0; GA_Idot
         * sums in int, so the model wraps as it does. */
        unsigned got = (unsigned)GA_Idot(g_back, g_mask), want = 0;
        for (unsigned i = 0; i < (unsigned)n; i += 3)
            want += (unsigned)r + i;
        if (got != want)
            fail("unpacked sum", (long)got, (long)want);
    }
    GA_Destroy(g_scan);
    GA_Destroy(g_bits);
    GA_Destroy(g_back);
    GA_Destroy(g_dst);
    GA_Destroy(g_mask);
    GA_Destroy(g_src);
}

static void kernel_temps(int n, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        int dims[2] = { n + r % 97, n / 2 + r % 31 };
        int g_a = NGA_Create(C_DBL, 2, dims, "tmp", NULL);
        double one = 1.0;
        GA_Fill(g_a, &one);
        int g_b = GA_Duplicate(g_a, "tmp2");
        GA_Copy(g_a, g_b);
        double got = GA_Ddot(g_a, g_b), want = (double)dims[0] * dims[1];
        if (got != want)
            fail("temporary's dot product", (long)got, (long)want);
        GA_Destroy(g_b);
        GA_Destroy(g_a);
    }
}

static void kernel_sync(int rounds)
{
    int dims[1] = { nranks };
    int g_a = NGA_Create(C_INT, 1, dims, "ring", NULL);
    int next = (me + 1) % nranks, prev = (me + nranks - 1) % nranks, ld = 1;
    for (int r = 0; r < rounds; r++) {
        int v = r * nranks + me, got = -1;
        NGA_Put(g_a, &next, &next, &v, &ld);
        GA_Sync();
        NGA_Get(g_a, &me, &me, &got, &ld);
        if (got != r * nranks + prev)
            fail("ring value", got, r * nranks + prev);
        GA_Sync();
    }
    GA_Destroy(g_a);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    GA_Initialize();
    if (!MA_init(C_DBL, 1 << 20, 1 << 22))
        GA_Error("MA_init failed", 0);
    me = GA_Nodeid();
    nranks = GA_Nnodes();
    const char *kernel = NULL;
    int n = 0, rounds = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--kernel"))
            kernel = argv[i + 1];
        else if (!strcmp(argv[i], "--n"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
    }
    if (!kernel) {
        if (me == 0)
            fprintf(stderr, "usage: ga_kernels --kernel pack|temps|sync|start [--n N] [--rounds R]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double t0 = MPI_Wtime();
    if (!strcmp(kernel, "pack"))
        kernel_pack(n > 0 ? n : 1000000, rounds > 0 ? rounds : 20);
    else if (!strcmp(kernel, "temps"))
        kernel_temps(n > 0 ? n : 128, rounds > 0 ? rounds : 200);
    else if (!strcmp(kernel, "sync"))
        kernel_sync(rounds > 0 ? rounds : 2000);
    else if (strcmp(kernel, "start"))
        GA_Error("unknown --kernel (pack, temps, sync or start)", 0);
    double dt = MPI_Wtime() - t0;
    if (me == 0)
        printf("ga_kernels %s: %d ranks, %.3f s\n", kernel, nranks, dt);
    GA_Terminate();
    MPI_Finalize();
    return 0;
}
