/*
 * ninefold libarmci: ARMCI-MPI's extensions (armcix.h): groups by split / dup,
 * batches of mutexes behind a handle, and an explicit progress call.
 *
 * A mutex batch is `count` ints on every member of a group (each member may ask for
 * a different count), allocated with ARMCI_Malloc_group on a duplicate of the group
 * that the handle keeps. An int is 0 when free, 1 when held; taking it is an atomic
 * swap of 1 (ARMCI_Rmw), which took it when the old value was 0, and releasing it a
 * swap of 0. A waiter retries with a growing pause (up to 100 us), so it neither
 * floods the holder's process nor sleeps long past a release.
 */
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "armcix.h"
#include "internal.h"

struct armcix_mutex_hdl_s {
    ARMCI_Group grp; /* duplicate of the creating group (the handle owns it) */
    int *counts;     /* mutexes on each member, by group rank */
    void **bases;    /* each member's ints, by group rank */
};

int ARMCIX_Group_split(ARMCI_Group *parent, int color, int key, ARMCI_Group *new_group) {
    const char *call = "ARMCIX_Group_split";
    nfa_group_check(call, parent);
    if (new_group == NULL) nfa_fatal(call, "argument 'new_group' is NULL");
    int err = MPI_Comm_split(parent->comm, color, key, &new_group->comm);
    if (err != MPI_SUCCESS) return err;
    nfa_group_fill(new_group);
    nfa_coll_group_add(call, new_group);
    return 0;
}

int ARMCIX_Group_dup(ARMCI_Group *parent, ARMCI_Group *new_group) {
    const char *call = "ARMCIX_Group_dup";
    nfa_group_check(call, parent);
    if (new_group == NULL) nfa_fatal(call, "argument 'new_group' is NULL");
    int err = MPI_Comm_dup(parent->comm, &new_group->comm);
    if (err != MPI_SUCCESS) return err;
    nfa_group_fill(new_group);
    nfa_coll_group_add(call, new_group);
    return 0;
}

armcix_mutex_hdl_t ARMCIX_Create_mutexes_hdl(int count, ARMCI_Group *pgroup) {
    const char *call = "ARMCIX_Create_mutexes_hdl";
    nfa_require_init(call);
    ARMCI_Group *parent = pgroup ? pgroup : &ARMCI_GROUP_WORLD;
    nfa_group_check(call, parent);
    if (count < 0) nfa_fatal(call, "argument 'count' is %d; it must be >= 0", count);
    struct armcix_mutex_hdl_s *hdl = calloc(1, sizeof *hdl);
    if (hdl == NULL) nfa_fatal(call, "out of memory for the handle");
    if (ARMCIX_Group_dup(parent, &hdl->grp) != 0)
        nfa_fatal(call, "duplicating the group's communicator failed");
    int n = hdl->grp.size;
    hdl->counts = malloc(sizeof(int) * (size_t)n);
    hdl->bases = malloc(sizeof(void *) * (size_t)n);
    if (hdl->counts == NULL || hdl->bases == NULL)
        nfa_fatal(call, "out of memory for a %d-member handle", n);
    MPI_Allgather(&count, 1, MPI_INT, hdl->counts, 1, MPI_INT, hdl->grp.comm);
    ARMCI_Malloc_group(hdl->bases, (armci_size_t)count * (armci_size_t)sizeof(int),
                       &hdl->grp);
    int *mine = hdl->bases[hdl->grp.rank];
    for (int m = 0; m < count; m++) mine[m] = 0;
    MPI_Barrier(hdl->grp.comm); /* every member's ints are free before anyone locks */
    return hdl;
}

int ARMCIX_Destroy_mutexes_hdl(armcix_mutex_hdl_t hdl) {
    const char *call = "ARMCIX_Destroy_mutexes_hdl";
    nfa_require_init(call);
    if (hdl == NULL) nfa_fatal(call, "argument 'hdl' is NULL");
    MPI_Barrier(hdl->grp.comm); /* nobody still holds or waits for one */
    ARMCI_Free_group(hdl->bases[hdl->grp.rank], &hdl->grp);
    nfa_group_release(&hdl->grp);
    free(hdl->counts);
    free(hdl->bases);
    free(hdl);
    return 0;
}

/* The address of mutex `mutex` on world rank `proc`, checked against the handle. */
static int *mutex_word(const char *call, armcix_mutex_hdl_t hdl, int mutex, int proc) {
    nfa_require_init(call);
    if (hdl == NULL) nfa_fatal(call, "argument 'hdl' is NULL");
    int r = nfa_group_rank_of(&hdl->grp, proc);
    if (r < 0)
        nfa_fatal(call, "argument 'proc' is %d, which is not in the handle's group", proc);
    if (mutex < 0 || mutex >= hdl->counts[r])
        nfa_fatal(call, "argument 'mutex' is %d; process %d has %d mutexes in this handle",
                  mutex, proc, hdl->counts[r]);
    return (int *)hdl->bases[r] + mutex;
}

/* Swaps `value` into the int at `word` on `proc`; the old value. */
static int swap(int *word, int value, int proc) {
    int v = value;
    PARMCI_Rmw(ARMCI_SWAP, &v, word, 0, proc);
    return v;
}

int ARMCIX_Trylock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc) {
    int *word = mutex_word("ARMCIX_Trylock_hdl", hdl, mutex, proc);
    return swap(word, 1, proc) == 0 ? 0 : 1;
}

void ARMCIX_Lock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc) {
    int *word = mutex_word("ARMCIX_Lock_hdl", hdl, mutex, proc);
    long pause_ns = 1000;
    while (swap(word, 1, proc) != 0) {
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        if (pause_ns < 100000) pause_ns *= 2;
    }
}

void ARMCIX_Unlock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc) {
    const char *call = "ARMCIX_Unlock_hdl";
    int *word = mutex_word(call, hdl, mutex, proc);
    if (swap(word, 0, proc) != 1)
        nfa_fatal(call, "mutex %d of process %d was not held", mutex, proc);
}

/* Operations progress without the library being called (the rma layer's service
 * thread serves other nodes; processes of a node copy directly), so this only lets
 * other threads run. */
void ARMCIX_Progress(void) {
    sched_yield();
}
