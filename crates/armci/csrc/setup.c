/*
 * ninefold libarmci: ARMCI_Init / ARMCI_Finalize, errors and aborts.
 *
 * ARMCI_Init, in order (collective over MPI_COMM_WORLD, or over the communicator
 * ARMCI_Init_thread_comm names, whose processes are then ARMCI's world):
 * 1. check that MPI is initialised (the program calls MPI_Init first) at the
 *    thread level asked for (ARMCI_Init_thread; ARMCI_Init asks for none);
 * 2. duplicate the communicator into the world group, so library traffic never
 *    matches the program's own messages; the default group starts as the world.
 *    The duplicate is made (MPI_Comm_idup) while step 3 runs, whose collectives use
 *    the caller's communicator meanwhile (collectives never match point-to-point
 *    messages, and every process makes them in the same order): across hosts each
 *    is a round costing far more than what it carries, and this way the two overlap;
 * 3. start the RMA side in Rust over the world's wire-up;
 * 4. work out the nodes from the RMA side's shared-memory domains (topology.c);
 * 5. set up the TCGMSG counter (a collective allocation).
 * ARMCI_Finalize undoes them in reverse after completing every operation.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct nfa_state nfa = {.node_comm = MPI_COMM_NULL,
                        .world_team = {.comm = MPI_COMM_NULL, .leaders = MPI_COMM_NULL}};

ARMCI_Group ARMCI_GROUP_WORLD = {
    .comm = MPI_COMM_NULL, .noncoll_pgroup_comm = MPI_COMM_NULL, .rank = -1};
ARMCI_Group ARMCI_GROUP_DEFAULT = {
    .comm = MPI_COMM_NULL, .noncoll_pgroup_comm = MPI_COMM_NULL, .rank = -1};

/* ARMCI-MPI's progress thread, exported under its name for ABI completeness; here
 * the rma layer progresses operations, so no such thread exists and it stays 0. */
pthread_t ARMCI_Progress_thread;

int nfa_world_rank(void) {
    return nfa.init_count > 0 ? ARMCI_GROUP_WORLD.rank : -1;
}

/* Any rank for messages, also before ARMCI_Init (MPI may be up already). */
static int message_rank(void) {
    int up = 0, rank = -1;
    if (nfa.init_count > 0) return ARMCI_GROUP_WORLD.rank;
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

/* The world as the rma layer's wire-up sees it (it keeps a pointer): during ARMCI_Init's
 * step 3 its communicator is the caller's, then the world group's. */
static ARMCI_Group world_wireup = {.comm = MPI_COMM_NULL, .noncoll_pgroup_comm = MPI_COMM_NULL};

int PARMCI_Init_thread_comm(int armci_requested, MPI_Comm comm) {
    const char *call = "ARMCI_Init";
    int up = 0, provided;
    char err[512] = "";
    if (nfa.init_count > 0) {
        nfa.init_count++;
        return 0;
    }
    MPI_Initialized(&up); /* 1 */
    if (!up)
        nfa_fatal(call, "MPI is not initialised; call MPI_Init before ARMCI_Init "
                        "(libarmci wires up through MPI)");
    MPI_Query_thread(&provided);
    if (provided < armci_requested)
        nfa_fatal(call, "argument 'armci_requested' is %d, above MPI's thread level %d; "
                        "ask MPI_Init_thread for it first", armci_requested, provided);
    if (comm == MPI_COMM_NULL) nfa_fatal(call, "argument 'comm' is MPI_COMM_NULL");
    /* 2, made while 3 runs over the caller's communicator */
    MPI_Comm dup_comm = MPI_COMM_NULL;
    MPI_Request dup_req;
    MPI_Comm_idup(comm, &dup_comm, &dup_req);
    ARMCI_GROUP_WORLD.comm = comm;
    ARMCI_GROUP_WORLD.noncoll_pgroup_comm = MPI_COMM_NULL;
    nfa_group_fill(&ARMCI_GROUP_WORLD);
    nfa.init_count = 1;
    world_wireup = ARMCI_GROUP_WORLD;
    struct nfa_wireup wu = nfa_wireup_of(&world_wireup);
    if (nf_armci_rs_init(&wu, err, sizeof err) != 0) /* 3 */
        nfa_fatal(call, "starting the one-sided layer failed: %s", err);
    MPI_Wait(&dup_req, MPI_STATUS_IGNORE);
    ARMCI_GROUP_WORLD.comm = world_wireup.comm = dup_comm;
    ARMCI_GROUP_DEFAULT = ARMCI_GROUP_WORLD;
    nfa_topology_init(); /* 4 */
    nfa_tcgmsg_init(); /* 5 */
    return 0;
}

int PARMCI_Init_thread(int armci_requested) {
    return PARMCI_Init_thread_comm(armci_requested, MPI_COMM_WORLD);
}

int PARMCI_Init(void) {
    return PARMCI_Init_thread_comm(MPI_THREAD_SINGLE, MPI_COMM_WORLD);
}

int PARMCI_Init_args(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return PARMCI_Init();
}

int PARMCI_Initialized(void) {
    return nfa.init_count > 0;
}

int PARMCI_Finalize(void) {
    nfa_require_init("ARMCI_Finalize");
    if (--nfa.init_count > 0) return 0;
    nfa_tcgmsg_free();
    struct nfa_wireup wu = nfa_wireup_of(&ARMCI_GROUP_WORLD);
    if (nf_armci_rs_finalize(&wu) != 0)
        nfa_fatal("ARMCI_Finalize", "finishing the one-sided layer failed");
    nfa_topology_free();
    nfa_group_release(&ARMCI_GROUP_WORLD);
    ARMCI_GROUP_DEFAULT = ARMCI_GROUP_WORLD;
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
