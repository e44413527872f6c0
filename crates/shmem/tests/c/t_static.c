/* Global and static variables are symmetric: initialised data and bss, file-static
 * and function-static, int / long / double / arrays, through put, get, _p, _g,
 * atomics, wait_until, put-with-signal and shmem_ptr, on every path.
 *
 * argv[1]: "" (every test), "ptr_all" (every PE shares this host: shmem_ptr must
 * give a pointer for each), "killed" (the last PE dies after init; the others wait
 * until the launcher ends them). With -DBIGGER the bss is larger (a job mixing the
 * two builds must fail naming a PE). */
#include <shmem.h>
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define N 1024

int g_int = 7;          /* initialised data */
long g_long;            /* bss */
double g_double = 0.5;
long g_array[N];        /* bss, spans pages */
static int s_int = -1;  /* file-static */
long g_counter;
long g_flag;
uint64_t g_signal;
/* Pointers needing relocation: .data.rel.ro in a PIE, read-only after start-up. */
static const char *const relro_names[] = {"relro", "names"};
#ifdef BIGGER
long g_bigger[1 << 17];
#endif

static long *function_static(void) {
    static long counter = 100;
    return &counter;
}

/* The permissions ("rw-s") and path ("" if none) of the mapping holding addr. */
static void mapping_of(const void *addr, char perms[8], char path[512]) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    perms[0] = path[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char p[8] = "", name[512] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %511[^\n]", &lo, &hi, p, name) < 3) continue;
        if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
            strcpy(perms, p);
            strcpy(path, name);
            break;
        }
    }
    if (f) fclose(f);
}

/* rma segment files present in NF_SHM_DIR (every one is unlinked once mapped). */
static int rma_files(void) {
    const char *dir = getenv("NF_SHM_DIR");
    DIR *d = opendir(dir ? dir : "/dev/shm");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strstr(e->d_name, "-rma") != NULL) n++;
    if (d) closedir(d);
    return n;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    char perms[8], path[512];

    if (strcmp(mode, "killed") == 0) {
        shmem_barrier_all();
        if (me == npes - 1) raise(SIGKILL);
        shmem_long_wait_until(&g_flag, SHMEM_CMP_EQ, 12345);
        shmem_finalize();
        return 0;
    }

    CHECK(g_int == 7 && g_double == 0.5 && s_int == -1 && *function_static() == 100,
          "initial values lost: %d %g %d %ld", g_int, g_double, s_int, *function_static());
    mapping_of(&g_long, perms, path);
    CHECK(strcmp(perms, "rw-s") == 0 && strstr(path, "/nf-") != NULL,
          "bss is not on a shared rma segment: %s %s", perms, path);
    mapping_of(&relro_names[0], perms, path);
    CHECK(perms[1] != 'w', "relocated read-only data became writable: %s %s", perms, path);
    shmem_barrier_all();
    CHECK(rma_files() == 0, "%d rma segment files are still in the directory", rma_files());
    PASS("static_data_is_a_segment");

    int on_stack = 0;
    for (int pe = 0; pe < npes; pe++) {
        CHECK(shmem_addr_accessible(&g_int, pe) && shmem_addr_accessible(&g_array[N - 1], pe) &&
                  shmem_addr_accessible(&s_int, pe) && shmem_addr_accessible(function_static(), pe),
              "a global is not accessible on PE %d", pe);
        CHECK(!shmem_addr_accessible(&on_stack, pe), "a stack variable is accessible");
    }
    PASS("addr_accessible");

    shmem_barrier_all();
    shmem_int_p(&g_int, me * 10, right);
    shmem_double_p(&g_double, me + 0.25, right);
    shmem_int_p(&s_int, me, right);
    shmem_long_p(function_static(), 1000 + me, right);
    shmem_barrier_all();
    CHECK(g_int == left * 10 && g_double == left + 0.25 && s_int == left &&
              *function_static() == 1000 + left,
          "_p from PE %d: %d %g %d %ld", left, g_int, g_double, s_int, *function_static());
    CHECK(shmem_int_g(&g_int, right) == me * 10 && shmem_double_g(&g_double, right) == me + 0.25 &&
              shmem_long_g(function_static(), right) == 1000 + me,
          "_g from PE %d", right);
    PASS("p_and_g");

    static long src[N], got[N];
    for (int i = 0; i < N; i++) src[i] = me * 100000L + i;
    shmem_long_put(g_array, src, N, right);
    shmem_barrier_all();
    for (int i = 0; i < N; i++)
        CHECK(g_array[i] == left * 100000L + i, "g_array[%d] = %ld", i, g_array[i]);
    shmem_long_get(got, g_array, N, right);
    for (int i = 0; i < N; i++) CHECK(got[i] == me * 100000L + i, "got[%d] = %ld", i, got[i]);
    shmem_barrier_all();
    PASS("put_get_arrays");

    long old = shmem_long_atomic_fetch_add(&g_counter, 1, 0);
    CHECK(old >= 0 && old < npes, "fetch_add returned %ld", old);
    shmem_long_atomic_add(function_static(), 1, npes - 1);
    shmem_barrier_all();
    if (me == 0) CHECK(g_counter == npes, "counter %ld, %d PEs", g_counter, npes);
    if (me == npes - 1)
        CHECK(*function_static() == 1000 + (npes - 2 + npes) % npes + npes,
              "function static %ld", *function_static());
    if (me == 0)
        CHECK(shmem_long_atomic_compare_swap(&g_counter, npes, -5, 0) == npes && g_counter == -5,
              "compare_swap: %ld", g_counter);
    shmem_barrier_all();
    PASS("atomics");

    /* A ring of wait_until on a global flag. */
    shmem_barrier_all();
    if (me == 0) shmem_long_atomic_set(&g_flag, 1, right);
    shmem_long_wait_until(&g_flag, SHMEM_CMP_EQ, 1);
    if (me != 0) shmem_long_atomic_set(&g_flag, 1, right);
    shmem_barrier_all();
    PASS("wait_until");

    for (int i = 0; i < 16; i++) src[i] = me * 7 + i;
    shmem_long_put_signal(g_array, src, 16, &g_signal, 1, SHMEM_SIGNAL_SET, right);
    shmem_signal_wait_until(&g_signal, SHMEM_CMP_EQ, 1);
    for (int i = 0; i < 16; i++) CHECK(g_array[i] == left * 7 + i, "signalled data [%d]", i);
    shmem_barrier_all();
    PASS("put_with_signal");

    CHECK(shmem_ptr(&g_long, me) == &g_long, "shmem_ptr to myself");
    long *peer = shmem_ptr(&g_long, right);
    CHECK(peer != NULL || strcmp(mode, "ptr_all") != 0, "no pointer to PE %d", right);
    if (peer != NULL) *peer = 4242 + me;
    else shmem_long_p(&g_long, 4242 + me, right);
    shmem_barrier_all();
    CHECK(g_long == 4242 + left, "g_long = %ld through shmem_ptr", g_long);
    PASS("shmem_ptr");

    shmem_finalize();
    /* Back on private memory, values kept and writable. */
    mapping_of(&g_long, perms, path);
    if (strcmp(perms, "rw-p") != 0 || strstr(path, "/nf-") != NULL || g_long != 4242 + left) {
        fprintf(stderr, "FAIL PE %d after finalize: %s %s %ld\n", me, perms, path, g_long);
        return 5;
    }
    g_array[N - 1] = 1;
    return 0;
}
