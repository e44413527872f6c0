/*
 * ninefold libarmci: ARMCI_Init / ARMCI_Finalize, errors and aborts.
 *
 * ARMCI_Init, in order (collective over MPI_COMM_WORLD):
 * 1. check that MPI is initialised (the program calls MPI_Init first);
 * 2. duplicate MPI_COMM_WORLD into the world group, so library traffic never
 *    matches the program's own messages; the default group starts as the world;
 * 3. start the RMA side in Rust over the world group's wire-up;
 * 4. work out the nodes from the RMA side's shared-memory domains (topology.c);
 * 5. set up the TCGMSG counter (a collective allocation).
 * ARMCI_Finalize undoes them in reverse after completing every operation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct nfa_state nfa = {
    .world = {.comm = MPI_COMM_NULL, .noncoll_pgroup_comm = MPI_COMM_NULL, .rank = -1},
    .deflt = {.comm = MPI_COMM_NULL, .noncoll_pgroup_comm = MPI_COMM_NULL, .rank = -1},
    .node_comm = MPI_COMM_NULL,
};

int nfa_world_rank(void) {
    return nfa.init_count > 0 ? nfa.world.rank : -1;
}

/* Any rank for messages, also before ARMCI_Init (MPI may be up already). */
static int message_rank(void) {
    int up = 0, rank = -1;
    if (nfa.init_count > 0) return nfa.world.rank;
    MPI_Initialized(&up);
    if (up) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

/* Aborts the job; without MPI (ARMCI_Init before MPI_Init) the process exits. */
static _Noreturn void abort_job(int code) {
    int up = 0, down = 0;
    fflush(NULL);
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

_Noreturn void nfa_fatal_msg(const char *call, const char *msg) {
    fprintf(stderr, "libarmci: rank %d: %s: %s\n", message_rank(), call, msg);
    abort_job(ARMCI_NF_ABORT_CODE);
}

_Noreturn void nfa_fatal(const char *call, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nfa_fatal_msg(call, msg);
}

void nfa_require_init(const char *call) {
    if (nfa.init_count <= 0)
        nfa_fatal(call, "ARMCI is not initialised; call ARMCI_Init (or GA_Initialize) "
                        "after MPI_Init and before any other ARMCI call");
}

int ARMCI_Init(void) {
    int up = 0;
    char err[512] = "";
    if (nfa.init_count > 0) {
        nfa.init_count++;
        return 0;
    }
    MPI_Initialized(&up); /* 1 */
    if (!up)
        nfa_fatal("ARMCI_Init", "MPI is not initialised; call MPI_Init before ARMCI_Init "
                                "(libarmci wires up through MPI_COMM_WORLD)");
    MPI_Comm_dup(MPI_COMM_WORLD, &nfa.world.comm); /* 2 */
    nfa.world.noncoll_pgroup_comm = MPI_COMM_NULL;
    nfa_group_fill(&nfa.world);
    nfa.deflt = nfa.world;
    nfa.init_count = 1;
    struct nfa_wireup wu = nfa_wireup_of(&nfa.world);
    if (nf_armci_rs_init(&wu, err, sizeof err) != 0) /* 3 */
        nfa_fatal("ARMCI_Init", "starting the one-sided layer failed: %s", err);
    nfa_topology_init(); /* 4 */
    nfa_tcgmsg_init(); /* 5 */
    return 0;
}

int ARMCI_Init_args(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return ARMCI_Init();
}

int ARMCI_Initialized(void) {
    return nfa.init_count > 0;
}

int ARMCI_Finalize(void) {
    nfa_require_init("ARMCI_Finalize");
    if (--nfa.init_count > 0) return 0;
    nfa_tcgmsg_free();
    struct nfa_wireup wu = nfa_wireup_of(&nfa.world);
    if (nf_armci_rs_finalize(&wu) != 0)
        nfa_fatal("ARMCI_Finalize", "finishing the one-sided layer failed");
    nfa_topology_free();
    nfa_group_release(&nfa.world);
    nfa.deflt = nfa.world;
    return 0;
}

void ARMCI_Cleanup(void) {
    nf_armci_rs_cleanup();
}

void ARMCI_Error(const char *msg, int code) {
    fprintf(stderr, "libarmci: rank %d: ARMCI_Error: %s (code %d)\n", message_rank(),
            msg ? msg : "(no message)", code);
    nf_armci_rs_cleanup();
    abort_job(code != 0 ? code : 1);
}

void armci_msg_abort(int code) {
    fprintf(stderr, "libarmci: rank %d: armci_msg_abort(%d)\n", message_rank(), code);
    nf_armci_rs_cleanup();
    abort_job(code != 0 ? code : 1);
}

double armci_timer(void) {
    return MPI_Wtime();
}
