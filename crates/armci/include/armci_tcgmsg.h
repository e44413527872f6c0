/*
 * ninefold libarmci: the TCGMSG message-passing interface under the names Global
 * Arrays links against (armci_tcgmsg_*), over MPI on the world group.
 *
 * These follow TCGMSG's Fortran-style convention: integer arguments are passed by
 * pointer and are `long` (GA's Integer). A message `type` is an MPI tag.
 * Asynchronous sends (sync = 0) complete before returning, so armci_tcgmsg_waitcom
 * has nothing left to wait for.
 */
#ifndef NF_ARMCI_TCGMSG_H
#define NF_ARMCI_TCGMSG_H

#ifdef __cplusplus
extern "C" {
#endif

/* Starts MPI (if needed) and ARMCI (if needed); pend undoes what these started. */
void armci_tcgmsg_pbeginf(void);
void armci_tcgmsg_pbginf(void);
void armci_tcgmsg_pend(void);
/* 1 after pbeginf (or once ARMCI is initialised), else 0. */
long armci_tcgmsg_tcgready(void);

long armci_tcgmsg_nodeid(void);
long armci_tcgmsg_nnodes(void);
/* Wall-clock time since the first call: centiseconds / seconds. */
long armci_tcgmsg_mtime(void);
double armci_tcgmsg_tcgtime(void);

void armci_tcgmsg_snd(long *type, void *buf, long *lenbuf, long *node, long *sync);
/* *nodeselect -1 receives from anyone; the length and sender come back. */
void armci_tcgmsg_rcv(long *type, void *buf, long *lenbuf, long *lenmes, long *nodeselect,
                      long *nodefrom, long *sync);
/* 1 if a message of `type` from *node (-1: anyone) is waiting, else 0. */
long armci_tcgmsg_probe(long *type, long *node);
void armci_tcgmsg_waitcom(long *node);
void armci_tcgmsg_brdcst(long *type, void *buf, long *lenbuf, long *originator);
/* Element-wise all-reduce; op as for armci_msg_*gop, oplen its length. */
void armci_tcgmsg_dgop(long *type, double *x, long *n, char *op, long oplen);
void armci_tcgmsg_igop(long *type, long *x, long *n, char *op, long oplen);
void armci_tcgmsg_synch(long *type);

/*
 * Shared counter for load balancing: with *mproc > 0 returns 0, 1, 2, ... across
 * all callers; with *mproc < 0 (every process, collectively) resets it to 0.
 */
long armci_tcgmsg_nxtval(long *mproc);

/* Sizes: bytes in n doubles / longs; longs that hold n doubles; doubles that hold n longs. */
long armci_tcgmsg_mdtob(long *n);
long armci_tcgmsg_mitob(long *n);
long armci_tcgmsg_mdtoi(long *n);
long armci_tcgmsg_mitod(long *n);

/* Collective: *node0's file `filename` is copied to the same name on every process. */
void armci_tcgmsg_pfilecopy(long *type, long *node0, char *filename);
/* Redirects stdout and stderr to the file log.<nodeid> in the working directory. */
void armci_tcgmsg_llog(void);
long armci_tcgmsg_niceftn(long *ival);
void armci_tcgmsg_setdbg(long *value);
/* Prints this process's message counts on stderr. */
void armci_tcgmsg_stats(void);

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_TCGMSG_H */
