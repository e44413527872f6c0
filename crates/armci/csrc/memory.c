/*
 * ninefold libarmci: collective and local allocation. The group is C's business
 * (its communicator is the wire-up); segments are Rust's (nf_armci_rs_*).
 */
#include <string.h>

#include "internal.h"

/* Host memory is the only device; see armci_memory.h. */
static void check_device(const char *call, const char *device) {
    if (device == NULL || device[0] == '\0' || !strcmp(device, "host") ||
        !strcmp(device, "DDR"))
        return;
    nfa_fatal(call, "argument 'device' is \"%.40s\"; this library has host memory only "
                    "(NULL, \"\", \"host\" or \"DDR\")",
              device);
}

int ARMCI_Malloc_group(void **ptr_arr, armci_size_t bytes, ARMCI_Group *group) {
    const char *call = "ARMCI_Malloc_group";
    nfa_group_check(call, group);
    if (ptr_arr == NULL) nfa_fatal(call, "argument 'ptr_arr' is NULL");
    if (bytes < 0) nfa_fatal(call, "argument 'bytes' is %ld; it must be >= 0", bytes);
    struct nfa_wireup wu = nfa_wireup_of(group);
    return nf_armci_rs_malloc(call, &wu, bytes, ptr_arr);
}

int ARMCI_Free_group(void *ptr, ARMCI_Group *group) {
    const char *call = "ARMCI_Free_group";
    nfa_group_check(call, group);
    struct nfa_wireup wu = nfa_wireup_of(group);
    return nf_armci_rs_free(call, &wu, ptr);
}

int PARMCI_Malloc(void **ptr_arr, armci_size_t bytes) {
    nfa_require_init("ARMCI_Malloc");
    if (ptr_arr == NULL) nfa_fatal("ARMCI_Malloc", "argument 'ptr_arr' is NULL");
    if (bytes < 0) nfa_fatal("ARMCI_Malloc", "argument 'bytes' is %ld; it must be >= 0", bytes);
    struct nfa_wireup wu = nfa_wireup_of(&ARMCI_GROUP_WORLD);
    return nf_armci_rs_malloc("ARMCI_Malloc", &wu, bytes, ptr_arr);
}

int PARMCI_Free(void *ptr) {
    nfa_require_init("ARMCI_Free");
    struct nfa_wireup wu = nfa_wireup_of(&ARMCI_GROUP_WORLD);
    return nf_armci_rs_free("ARMCI_Free", &wu, ptr);
}

int PARMCI_Malloc_memdev(void **ptr_arr, armci_size_t bytes, const char *device) {
    check_device("ARMCI_Malloc_memdev", device);
    return PARMCI_Malloc(ptr_arr, bytes);
}

int PARMCI_Malloc_group_memdev(void **ptr_arr, armci_size_t bytes, ARMCI_Group *group,
                              const char *device) {
    check_device("ARMCI_Malloc_group_memdev", device);
    return ARMCI_Malloc_group(ptr_arr, bytes, group);
}

/* Collective over the world group, as ARMCI_Free (ARMCI-MPI does the same). */
int PARMCI_Free_memdev(void *ptr) {
    nfa_require_init("ARMCI_Free_memdev");
    struct nfa_wireup wu = nfa_wireup_of(&ARMCI_GROUP_WORLD);
    return nf_armci_rs_free("ARMCI_Free_memdev", &wu, ptr);
}

void *PARMCI_Malloc_local(armci_size_t bytes) {
    nfa_require_init("ARMCI_Malloc_local");
    if (bytes < 0)
        nfa_fatal("ARMCI_Malloc_local", "argument 'bytes' is %ld; it must be >= 0", bytes);
    return nf_armci_rs_malloc_local(bytes);
}

int PARMCI_Free_local(void *ptr) {
    nfa_require_init("ARMCI_Free_local");
    return nf_armci_rs_free_local("ARMCI_Free_local", ptr);
}
