/* The TCGMSG interface under GA's names (armci_tcgmsg_*): start / ready, node ids,
 * send / receive / probe, broadcast, reductions, synch, the nxtval counter, size
 * conversions, clocks, pfilecopy and llog. Against ARMCI-MPI the driver links
 * Debian's libga, which brings its own armci_tcgmsg_*; against ninefold, libarmci's. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* Our declarations of GA's TCGMSG layer; ARMCI-MPI's headers have none. The header
 * is self-contained (no MPI types), so it serves both builds. */
#include "../../include/armci_tcgmsg.h"

static char workdir[256];

static void test_ids_and_ready(void) {
    armci_tcgmsg_pbeginf(); /* MPI and ARMCI are up already: nothing more to start */
    CHECK(armci_tcgmsg_tcgready() == 1, "tcgready %ld", armci_tcgmsg_tcgready());
    CHECK(armci_tcgmsg_nodeid() == me && armci_tcgmsg_nnodes() == nproc, "node %ld of %ld",
          armci_tcgmsg_nodeid(), armci_tcgmsg_nnodes());
    long two = 2, three = 3;
    CHECK(armci_tcgmsg_mdtob(&two) == 16 && armci_tcgmsg_mitob(&three) == 24, "byte sizes");
    CHECK(armci_tcgmsg_mdtoi(&two) == 2 && armci_tcgmsg_mitod(&three) == 3, "unit sizes");
    double t0 = armci_tcgmsg_tcgtime();
    long c0 = armci_tcgmsg_mtime();
    CHECK(armci_tcgmsg_tcgtime() >= t0 && armci_tcgmsg_mtime() >= c0, "clocks went back");
    long dbg = 0;
    armci_tcgmsg_setdbg(&dbg);
}

static void test_snd_rcv_probe(void) {
    long type = 5, len = 64, sync = 1, to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    char out[64], in[64];
    for (int i = 0; i < 64; i++) out[i] = (char)(me * 3 + i);
    if (me % 2 == 0) armci_tcgmsg_snd(&type, out, &len, &to, &sync);
    /* the message from the left neighbour shows up in probe before it is read */
    double t0 = now_s();
    while (!armci_tcgmsg_probe(&type, &from)) CHECK(now_s() - t0 < 60, "probe never saw it");
    long any = -1, got = 0, sender = -1;
    armci_tcgmsg_rcv(&type, in, &len, &got, &any, &sender, &sync);
    if (me % 2 == 1) armci_tcgmsg_snd(&type, out, &len, &to, &sync);
    armci_tcgmsg_waitcom(&to);
    CHECK(got == 64 && sender == from, "received %ld bytes from %ld", got, sender);
    for (int i = 0; i < 64; i++) CHECK(in[i] == (char)(from * 3 + i), "byte %d", i);
}

static void test_brdcst_gops_synch(void) {
    long type = 7, len = sizeof(double), root = nproc - 1;
    double v = me == root ? 6.25 : 0;
    armci_tcgmsg_brdcst(&type, &v, &len, &root);
    CHECK(v == 6.25, "brdcst gave %g", v);
    double d[2] = {me, me};
    long n = 1, l[2] = {me + 1, me};
    armci_tcgmsg_dgop(&type, d, &n, "+", 1);
    armci_tcgmsg_dgop(&type, d + 1, &n, "max", 3);
    armci_tcgmsg_igop(&type, l, &n, "+", 1);
    armci_tcgmsg_igop(&type, l + 1, &n, "min", 3);
    CHECK(d[0] == nproc * (nproc - 1) / 2.0 && d[1] == nproc - 1, "dgop %g %g", d[0], d[1]);
    CHECK(l[0] == (long)nproc * (nproc + 1) / 2 && l[1] == 0, "igop %ld %ld", l[0], l[1]);
    armci_tcgmsg_synch(&type);
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* nxtval hands out 0, 1, 2, ... across all processes; a negative call resets it. */
static void test_nxtval(void) {
    enum { K = 40 };
    for (int pass = 0; pass < 2; pass++) {
        long mine[K], mproc = nproc;
        for (int k = 0; k < K; k++) mine[k] = armci_tcgmsg_nxtval(&mproc);
        long *all = malloc(sizeof(long) * K * (size_t)nproc);
        MPI_Allgather(mine, K, MPI_LONG, all, K, MPI_LONG, MPI_COMM_WORLD);
        qsort(all, (size_t)K * (size_t)nproc, sizeof(long), cmp_long);
        for (long i = 0; i < (long)K * nproc; i++)
            CHECK(all[i] == i, "pass %d: ticket %ld is %ld", pass, i, all[i]);
        free(all);
        mproc = -nproc;
        armci_tcgmsg_nxtval(&mproc);
    }
}

/* pfilecopy: process 0's file reaches every process (each works in its own folder). */
static void test_pfilecopy(void) {
    snprintf(workdir, sizeof workdir, "/tmp/nf-tcgmsg-%d-%d", (int)getppid(), me);
    mkdir(workdir, 0700);
    CHECK(chdir(workdir) == 0, "chdir %s", workdir);
    const char *text = "copied by pfilecopy\n";
    if (me == 0) {
        FILE *f = fopen("copy.txt", "w");
        CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "writing the source file");
    }
    long type = 9, node0 = 0;
    armci_tcgmsg_pfilecopy(&type, &node0, "copy.txt");
    char buf[64] = {0};
    FILE *f = fopen("copy.txt", "r");
    CHECK(f && fgets(buf, sizeof buf, f), "reading the copy");
    fclose(f);
    CHECK(!strcmp(buf, text), "the copy says '%s'", buf);
    unlink("copy.txt");
}

/* llog sends this process's output to a log.* file in the working folder. */
static void test_llog(void) {
    if (me != nproc - 1) return;
    armci_tcgmsg_llog();
    printf("into the log\n");
    fflush(stdout);
    DIR *d = opendir(".");
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "log.", 4)) {
            found = 1;
            unlink(e->d_name);
        }
    closedir(d);
    CHECK(found, "no log.* file in %s", workdir);
}

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_ids_and_ready);
    RUN(test_snd_rcv_probe);
    RUN(test_brdcst_gops_synch);
    RUN(test_nxtval);
    RUN(test_pfilecopy);
    RUN(test_llog);
    armci_tcgmsg_stats();
    if (chdir("/") != 0) perror("chdir /");
    rmdir(workdir);
    harness_done();
    return 0;
}
