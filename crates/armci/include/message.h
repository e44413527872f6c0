/*
 * ninefold libarmci: the message-passing helpers ARMCI offers its clients
 * (armci_msg_*), over MPI.
 *
 * Ranks are absolute (world) ranks, also for group variants' roots. Collectives
 * run over the world group, or over `group` in the group variants, narrowed by a
 * scope: SCOPE_ALL and SCOPE_MASTERS take every process of the group, SCOPE_NODE
 * the group's processes on the caller's node.
 *
 * Reduction operators (`op`), matched as ARMCI-MPI matches them (trailing blanks
 * dropped, then by prefix): "+", "*", "max", "min", "absmax", "absmin" (of |x|),
 * logical "&&" / "land" and "||" / "lor" (non-zero is true; the result is 1 or 0 in
 * the element's type, for every type), and for the integer types bitwise "&" /
 * "band" / "and" and "|" / "bor" / "or". Any other name aborts.
 * armci_msg_sel picks, across the
 * processes that contribute, the element with the smallest ("min") or largest
 * ("max") leading value, returning all n bytes of it.
 */
#ifndef NF_ARMCI_MESSAGE_H
#define NF_ARMCI_MESSAGE_H

#include "armci_types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum armci_scope_e { SCOPE_ALL, SCOPE_NODE, SCOPE_MASTERS };
enum armci_type_e { ARMCI_INT, ARMCI_LONG, ARMCI_LONG_LONG, ARMCI_FLOAT, ARMCI_DOUBLE };

int armci_msg_me(void);
int armci_msg_nproc(void);
/* Aborts the whole job with `code` (0 aborts with 1). */
void armci_msg_abort(int code);
/* Wall-clock seconds. */
double armci_timer(void);

/* Blocking two-sided messages on the world group. */
void armci_msg_snd(int tag, void *buffer, int len, int to);
void armci_msg_rcv(int tag, void *buffer, int buflen, int *msglen, int from);
/* Receives from any process; returns the sender. */
int armci_msg_rcvany(int tag, void *buffer, int buflen, int *msglen);

ARMCI_MSG_PROFILED(void, barrier, (void));
ARMCI_MSG_PROFILED(void, group_barrier, (ARMCI_Group *group));
/* A binary tree over the scope's processes: root, parent and children (-1: none). */
void armci_msg_bintree(int scope, int *Root, int *Up, int *Left, int *Right);

void armci_msg_bcast(void *buffer, int len, int root);
void armci_msg_brdcst(void *buffer, int len, int root);
void armci_msg_bcast_scope(int scope, void *buffer, int len, int root);
void armci_msg_group_bcast_scope(int scope, void *buffer, int len, int root,
                                 ARMCI_Group *group);

void armci_msg_sel(void *x, int n, char *op, int type, int contribute);
void armci_msg_sel_scope(int scope, void *x, int n, char *op, int type, int contribute);

/* Element-wise all-reduce of x[0..n-1] (type: enum armci_type_e). */
void armci_msg_reduce(void *x, int n, char *op, int type);
void armci_msg_reduce_scope(int scope, void *x, int n, char *op, int type);
void armci_msg_gop_scope(int scope, void *x, int n, char *op, int type);
void armci_msg_igop(int *x, int n, char *op);
void armci_msg_lgop(long *x, int n, char *op);
void armci_msg_llgop(long long *x, int n, char *op);
void armci_msg_fgop(float *x, int n, char *op);
void armci_msg_dgop(double *x, int n, char *op);

void armci_msg_group_gop_scope(int scope, void *x, int n, char *op, int type,
                               ARMCI_Group *group);
void armci_msg_group_igop(int *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_lgop(long *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_llgop(long long *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_fgop(float *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_dgop(double *x, int n, char *op, ARMCI_Group *group);

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_MESSAGE_H */
