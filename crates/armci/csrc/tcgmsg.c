/*
 * ninefold libarmci: TCGMSG (armci_tcgmsg_*) over MPI and ARMCI.
 *
 * Messages use the world group's communicator with the TCGMSG type as the tag.
 * The load-balancing counter of nxtval is a long in a one-sided segment on
 * process 0, allocated collectively by ARMCI_Init and advanced with ARMCI_Rmw,
 * so it needs no server process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static struct {
    void **counter;     /* per-process base addresses; counter[0] is the counter */
    double t0;          /* start of mtime / tcgtime */
    int t0_set;
    long debug;         /* setdbg's value */
    long sent, received;/* for stats */
} tcg;

void nfa_tcgmsg_init(void) {
    tcg.counter = calloc((size_t)ARMCI_GROUP_WORLD.size, sizeof(void *));
    if (tcg.counter == NULL) nfa_fatal("ARMCI_Init", "out of memory for the TCGMSG counter");
    struct nfa_wireup wu = nfa_wireup_of(&ARMCI_GROUP_WORLD);
    nf_armci_rs_malloc("ARMCI_Init", &wu,
                       ARMCI_GROUP_WORLD.rank == 0 ? (long)sizeof(long) : 0,
                       tcg.counter);
    /* No zeroing and barrier after it: an allocation starts zeroed on return (a fresh
     * segment file, or a reused one its owner zeroed before the call's last step). */
}

void nfa_tcgmsg_free(void) {
    struct nfa_wireup wu = nfa_wireup_of(&ARMCI_GROUP_WORLD);
    nf_armci_rs_free("ARMCI_Finalize", &wu, tcg.counter[ARMCI_GROUP_WORLD.rank]);
    free(tcg.counter);
    tcg.counter = NULL;
}

void armci_tcgmsg_pbeginf(void) {
    int up = 0;
    MPI_Initialized(&up);
    if (!up) {
        MPI_Init(NULL, NULL);
        nfa.tcg_started_mpi = 1;
    }
    if (!ARMCI_Initialized()) {
        ARMCI_Init();
        nfa.tcg_started_armci = 1;
    }
}

void armci_tcgmsg_pbginf(void) {
    armci_tcgmsg_pbeginf();
}

void armci_tcgmsg_pend(void) {
    if (nfa.tcg_started_armci) ARMCI_Finalize();
    if (nfa.tcg_started_mpi) MPI_Finalize();
    nfa.tcg_started_armci = nfa.tcg_started_mpi = 0;
}

long armci_tcgmsg_tcgready(void) {
    return ARMCI_Initialized();
}

long armci_tcgmsg_nodeid(void) {
    nfa_require_init("armci_tcgmsg_nodeid");
    return ARMCI_GROUP_WORLD.rank;
}

long armci_tcgmsg_nnodes(void) {
    nfa_require_init("armci_tcgmsg_nnodes");
    return ARMCI_GROUP_WORLD.size;
}

double armci_tcgmsg_tcgtime(void) {
    if (!tcg.t0_set) {
        tcg.t0 = MPI_Wtime();
        tcg.t0_set = 1;
    }
    return MPI_Wtime() - tcg.t0;
}

long armci_tcgmsg_mtime(void) {
    return (long)(armci_tcgmsg_tcgtime() * 100.0);
}

/* Checks the arguments every message call shares; aborts naming `call`. */
static void check_message(const char *call, const long *type, const void *buf,
                          const long *len) {
    nfa_require_init(call);
    if (type == NULL || len == NULL) nfa_fatal(call, "argument 'type' or 'lenbuf' is NULL");
    if (*type < 0 || *type > 32767)
        nfa_fatal(call, "argument 'type' is %ld; message types are 0 .. 32767", *type);
    if (*len < 0 || *len > 0x7fffffffL)
        nfa_fatal(call, "argument 'lenbuf' is %ld; it must be 0 .. 2^31-1", *len);
    if (buf == NULL && *len > 0) nfa_fatal(call, "argument 'buf' is NULL");
}

static int check_node(const char *call, const char *name, const long *node, int any) {
    if (node == NULL) nfa_fatal(call, "argument '%s' is NULL", name);
    if (any && *node == -1) return MPI_ANY_SOURCE;
    if (*node < 0 || *node >= ARMCI_GROUP_WORLD.size)
        nfa_fatal(call, "argument '%s' is %ld; processes are 0 .. %d%s", name, *node,
                  ARMCI_GROUP_WORLD.size - 1, any ? " (or -1: any)" : "");
    return (int)*node;
}

void armci_tcgmsg_snd(long *type, void *buf, long *lenbuf, long *node, long *sync) {
    const char *call = "armci_tcgmsg_snd";
    (void)sync; /* every send completes before returning */
    check_message(call, type, buf, lenbuf);
    int to = check_node(call, "node", node, 0);
    MPI_Send(buf, (int)*lenbuf, MPI_BYTE, to, (int)*type, ARMCI_GROUP_WORLD.comm);
    tcg.sent++;
}

void armci_tcgmsg_rcv(long *type, void *buf, long *lenbuf, long *lenmes, long *nodeselect,
                      long *nodefrom, long *sync) {
    const char *call = "armci_tcgmsg_rcv";
    (void)sync;
    check_message(call, type, buf, lenbuf);
    int from = check_node(call, "nodeselect", nodeselect, 1);
    MPI_Status st;
    int count = 0;
    MPI_Probe(from, (int)*type, ARMCI_GROUP_WORLD.comm, &st);
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (count > *lenbuf)
        nfa_fatal(call, "a %d-byte message (type %ld) from process %d does not fit the "
                        "%ld-byte buffer (argument 'lenbuf')",
                  count, *type, st.MPI_SOURCE, *lenbuf);
    MPI_Recv(buf, (int)*lenbuf, MPI_BYTE, st.MPI_SOURCE, (int)*type, ARMCI_GROUP_WORLD.comm,
             &st);
    if (lenmes) *lenmes = count;
    if (nodefrom) *nodefrom = st.MPI_SOURCE;
    tcg.received++;
}

long armci_tcgmsg_probe(long *type, long *node) {
    const char *call = "armci_tcgmsg_probe";
    long zero = 0;
    check_message(call, type, NULL, &zero);
    int from = check_node(call, "node", node, 1);
    int flag = 0;
    MPI_Iprobe(from, (int)*type, ARMCI_GROUP_WORLD.comm, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
}

void armci_tcgmsg_waitcom(long *node) {
    (void)node; /* sends complete before returning */
}

void armci_tcgmsg_brdcst(long *type, void *buf, long *lenbuf, long *originator) {
    const char *call = "armci_tcgmsg_brdcst";
    check_message(call, type, buf, lenbuf);
    int root = check_node(call, "originator", originator, 0);
    nfa_bcast(call, buf, (int)*lenbuf, root, root, ARMCI_GROUP_WORLD.comm);
}

static int count_of(const char *call, const long *n) {
    if (n == NULL) nfa_fatal(call, "argument 'n' is NULL");
    if (*n < 0 || *n > 0x7fffffffL)
        nfa_fatal(call, "argument 'n' is %ld; it must be 0 .. 2^31-1", *n);
    return (int)*n;
}

/* All-reduce with a Fortran-style operator: `oplen` bytes, not NUL-terminated. */
static void gop(const char *call, void *x, const long *n, const char *op, long oplen,
                int type) {
    char name[32] = {0};
    nfa_require_init(call);
    if (op) memcpy(name, op, strnlen(op, oplen > 0 && oplen < 31 ? (size_t)oplen : 31));
    nfa_allreduce(call, x, count_of(call, n), op ? name : NULL, type,
                  ARMCI_GROUP_WORLD.comm);
}

void armci_tcgmsg_dgop(long *type, double *x, long *n, char *op, long oplen) {
    (void)type;
    gop("armci_tcgmsg_dgop", x, n, op, oplen, ARMCI_DOUBLE);
}

void armci_tcgmsg_igop(long *type, long *x, long *n, char *op, long oplen) {
    (void)type;
    gop("armci_tcgmsg_igop", x, n, op, oplen, ARMCI_LONG);
}

void armci_tcgmsg_synch(long *type) {
    (void)type;
    nfa_require_init("armci_tcgmsg_synch");
    nfa_barrier("armci_tcgmsg_synch", ARMCI_GROUP_WORLD.comm);
}

long armci_tcgmsg_nxtval(long *mproc) {
    const char *call = "armci_tcgmsg_nxtval";
    nfa_require_init(call);
    if (mproc == NULL) nfa_fatal(call, "argument 'mproc' is NULL");
    if (*mproc > 0) {
        long old = 0;
        PARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &old, tcg.counter[0], 1, 0);
        return old;
    }
    if (*mproc < 0) { /* every process ends the loop: reset for the next one */
        PARMCI_AllFence();
        MPI_Barrier(ARMCI_GROUP_WORLD.comm);
        if (ARMCI_GROUP_WORLD.rank == 0) *(volatile long *)tcg.counter[0] = 0;
        MPI_Barrier(ARMCI_GROUP_WORLD.comm);
        return 0;
    }
    nfa_fatal(call, "argument 'mproc' is 0; pass the number of processes asking (> 0), or "
                    "its negative to end the loop");
}

long armci_tcgmsg_mdtob(long *n) { return *n * (long)sizeof(double); }
long armci_tcgmsg_mitob(long *n) { return *n * (long)sizeof(long); }
long armci_tcgmsg_mdtoi(long *n) {
    return (*n * (long)sizeof(double) + (long)sizeof(long) - 1) / (long)sizeof(long);
}
long armci_tcgmsg_mitod(long *n) {
    return (*n * (long)sizeof(long) + (long)sizeof(double) - 1) / (long)sizeof(double);
}

void armci_tcgmsg_pfilecopy(long *type, long *node0, char *filename) {
    const char *call = "armci_tcgmsg_pfilecopy";
    long zero = 0;
    check_message(call, type, NULL, &zero);
    int root = check_node(call, "node0", node0, 0);
    if (filename == NULL) nfa_fatal(call, "argument 'filename' is NULL");
    FILE *f = fopen(filename, ARMCI_GROUP_WORLD.rank == root ? "rb" : "wb");
    int ok = f != NULL, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, ARMCI_GROUP_WORLD.comm);
    if (!all_ok) {
        if (f) fclose(f);
        nfa_fatal(call, "cannot open '%s' on every process (this one: %s)", filename,
                  ok ? "ok" : "failed");
    }
    char chunk[65536];
    for (;;) {
        int got = 0;
        if (ARMCI_GROUP_WORLD.rank == root) got = (int)fread(chunk, 1, sizeof chunk, f);
        MPI_Bcast(&got, 1, MPI_INT, root, ARMCI_GROUP_WORLD.comm);
        if (got == 0) break;
        MPI_Bcast(chunk, got, MPI_BYTE, root, ARMCI_GROUP_WORLD.comm);
        if (ARMCI_GROUP_WORLD.rank != root &&
            fwrite(chunk, 1, (size_t)got, f) != (size_t)got)
            nfa_fatal(call, "writing '%s' failed", filename);
    }
    fclose(f);
}

void armci_tcgmsg_llog(void) {
    char name[64];
    nfa_require_init("armci_tcgmsg_llog");
    snprintf(name, sizeof name, "log.%d", ARMCI_GROUP_WORLD.rank);
    if (!freopen(name, "a", stdout) || !freopen(name, "a", stderr))
        nfa_fatal("armci_tcgmsg_llog", "cannot open '%s' for the log", name);
}

long armci_tcgmsg_niceftn(long *ival) {
    return ival ? nice((int)*ival) : -1;
}

void armci_tcgmsg_setdbg(long *value) {
    tcg.debug = value ? *value : 0;
}

void armci_tcgmsg_stats(void) {
    fprintf(stderr, "libarmci: rank %d: tcgmsg: %ld messages sent, %ld received, debug %ld\n",
            nfa_world_rank(), tcg.sent, tcg.received, tcg.debug);
}
