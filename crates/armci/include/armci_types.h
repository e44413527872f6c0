/*
 * ninefold libarmci: types and constants shared by every ARMCI header.
 *
 * ABI contract: Debian's Global Arrays (libga-openmpi.a) was compiled against
 * ARMCI-MPI 0.3, so every type, struct layout and enum value here has the size,
 * field order and numbering that build expects. Change nothing here without
 * relinking GA.
 */
#ifndef NF_ARMCI_TYPES_H
#define NF_ARMCI_TYPES_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The profiling interface (as MPI's PMPI): ARMCI_PROFILED(ret, Name, (params))
 * declares PARMCI_Name, the implementation, and ARMCI_Name, an alias of it. A
 * profiling library defines ARMCI_Name itself, linked before libarmci (or
 * LD_PRELOADed), and calls PARMCI_Name. build.rs reads these lines to make the
 * aliases, so every profiled call is listed once, here in the headers.
 */
#define ARMCI_PROFILED(ret, name, params) ret ARMCI_##name params; ret PARMCI_##name params
/* The same for armci_msg_name and parmci_msg_name. */
#define ARMCI_MSG_PROFILED(ret, name, params)                                            \
    ret armci_msg_##name params;                                                          \
    ret parmci_msg_##name params

/* Byte counts of allocations (signed, as in the ABI GA uses). */
typedef long armci_size_t;

/* Element types of accumulate: numbered from 0 in this order. */
enum ARMCI_Acc_e {
    ARMCI_ACC_INT, /* int, scale is an int */
    ARMCI_ACC_LNG, /* long, scale is a long */
    ARMCI_ACC_FLT, /* float, scale is a float */
    ARMCI_ACC_DBL, /* double, scale is a double */
    ARMCI_ACC_CPL, /* single complex (two floats), scale is complex */
    ARMCI_ACC_DCP  /* double complex (two doubles), scale is complex */
};

/* Read-modify-write operations of ARMCI_Rmw: numbered from 0 in this order. */
enum ARMCI_Rmw_e {
    ARMCI_FETCH_AND_ADD,      /* int: *ploc = old; remote += value */
    ARMCI_FETCH_AND_ADD_LONG, /* long: *ploc = old; remote += value */
    ARMCI_SWAP,               /* int: exchange *ploc and the remote int */
    ARMCI_SWAP_LONG           /* long: exchange *ploc and the remote long */
};

/* Most stride levels a strided call accepts (count has levels + 1 entries). */
#define ARMCI_MAX_STRIDE_LEVEL 8

/*
 * A process group. Global Arrays reads these fields directly, so the layout is
 * fixed: `comm` is a real MPI communicator of the members (MPI_COMM_NULL on a
 * process that is not one), `rank` / `size` are the caller's rank in it and its
 * size (-1 / 0 for non-members), and the two tables translate group ranks to
 * absolute (world) ranks and back (-1 where a world rank is not a member).
 * Groups are copied by value; the library keys its own state on `comm`.
 */
typedef struct {
    MPI_Comm comm;
    MPI_Comm noncoll_pgroup_comm; /* MPI_COMM_NULL: groups are made collectively */
    int *grp_to_abs;
    int *abs_to_grp;
    int rank;
    int size;
} ARMCI_Group;

/*
 * A non-blocking operation's handle: two ints, as GA allocates them in its own
 * tables. `target` is the process of the last operation started on it (-1 when
 * none); `token` names the library's outstanding request (0 when none, which
 * makes a freshly initialised handle complete).
 */
typedef struct armci_hdl_s {
    int target;
    int token;
} armci_hdl_t;

/*
 * One entry of a generalized I/O vector: ptr_array_len segments of `bytes` bytes
 * each, segment i copied from src_ptr_array[i] to dst_ptr_array[i].
 */
typedef struct {
    void **src_ptr_array;
    void **dst_ptr_array;
    int bytes;
    int ptr_array_len;
} armci_giov_t;

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_TYPES_H */
