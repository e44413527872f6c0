/*
 * The one table of calls bench/mpi/armci_prof.c counts and times (an X-macro list:
 * the includer defines the four macros, includes this file, and every call becomes
 * one wrapper). Columns: return type, name, parameters, arguments, bytes moved.
 *
 *   P(ret, Name, params, args, bytes)    ARMCI_Name, forwarded to PARMCI_Name (the
 *   PV(Name, params, args, bytes)        profiling interface both libarmci and
 *                                        ARMCI-MPI export); PV for void calls
 *   W(ret, name, params, args, bytes)    name, forwarded to __real_name: calls with
 *   WV(name, params, args, bytes)        no PARMCI_ twin (armci_msg_*, the group
 *                                        allocations), wrapped at link time with
 *                                        -Wl,--wrap=name (bench/compare-ga.sh reads
 *                                        the W lines of this file for the flags)
 *
 * Only calls both libraries define are listed, and only those Debian's Global Arrays
 * (libga-openmpi.a) reaches or a GA program may call directly. bytes is what the
 * call moves or allocates (0 for synchronisation); sbytes() and vbytes() are
 * armci_prof.c's sizes of a strided and a vector transfer.
 */
P(int, Init, (void), (), 0)
P(int, Init_args, (int *argc, char ***argv), (argc, argv), 0)
P(int, Initialized, (void), (), 0)
P(int, Malloc, (void **ptrs, armci_size_t size), (ptrs, size), size)
P(int, Malloc_memdev, (void **ptrs, armci_size_t size, const char *dev), (ptrs, size, dev), size)
P(int, Malloc_group_memdev, (void **ptrs, armci_size_t size, ARMCI_Group *g, const char *dev),
  (ptrs, size, g, dev), size)
P(int, Free, (void *ptr), (ptr), 0)
P(int, Free_memdev, (void *ptr), (ptr), 0)
P(void *, Malloc_local, (armci_size_t size), (size), size)
P(int, Free_local, (void *ptr), (ptr), 0)
PV(Barrier, (void), (), 0)
PV(Fence, (int proc), (proc), 0)
PV(AllFence, (void), (), 0)
P(int, Get, (void *src, void *dst, int bytes, int proc), (src, dst, bytes, proc), bytes)
P(int, Put, (void *src, void *dst, int bytes, int proc), (src, dst, bytes, proc), bytes)
P(int, Acc, (int t, void *scale, void *src, void *dst, int bytes, int proc),
  (t, scale, src, dst, bytes, proc), bytes)
P(int, PutS, (void *s, int ss[], void *d, int ds[], int c[], int lv, int proc),
  (s, ss, d, ds, c, lv, proc), sbytes(c, lv))
P(int, GetS, (void *s, int ss[], void *d, int ds[], int c[], int lv, int proc),
  (s, ss, d, ds, c, lv, proc), sbytes(c, lv))
P(int, AccS, (int t, void *sc, void *s, int ss[], void *d, int ds[], int c[], int lv, int proc),
  (t, sc, s, ss, d, ds, c, lv, proc), sbytes(c, lv))
P(int, PutS_flag, (void *s, int ss[], void *d, int ds[], int c[], int lv, int *flag, int val, int proc),
  (s, ss, d, ds, c, lv, flag, val, proc), sbytes(c, lv))
P(int, PutV, (armci_giov_t *iov, int n, int proc), (iov, n, proc), vbytes(iov, n))
P(int, GetV, (armci_giov_t *iov, int n, int proc), (iov, n, proc), vbytes(iov, n))
P(int, AccV, (int t, void *sc, armci_giov_t *iov, int n, int proc), (t, sc, iov, n, proc),
  vbytes(iov, n))
P(int, NbPutS, (void *s, int ss[], void *d, int ds[], int c[], int lv, int proc, armci_hdl_t *h),
  (s, ss, d, ds, c, lv, proc, h), sbytes(c, lv))
P(int, NbGetS, (void *s, int ss[], void *d, int ds[], int c[], int lv, int proc, armci_hdl_t *h),
  (s, ss, d, ds, c, lv, proc, h), sbytes(c, lv))
P(int, NbAccS,
  (int t, void *sc, void *s, int ss[], void *d, int ds[], int c[], int lv, int proc, armci_hdl_t *h),
  (t, sc, s, ss, d, ds, c, lv, proc, h), sbytes(c, lv))
P(int, Wait, (armci_hdl_t *h), (h), 0)
P(int, Test, (armci_hdl_t *h), (h), 0)
P(int, WaitProc, (int proc), (proc), 0)
P(int, WaitAll, (void), (), 0)
P(int, Create_mutexes, (int count), (count), 0)
P(int, Destroy_mutexes, (void), (), 0)
PV(Lock, (int mutex, int proc), (mutex, proc), 0)
PV(Unlock, (int mutex, int proc), (mutex, proc), 0)
P(int, Rmw, (int op, void *ploc, void *prem, int value, int proc), (op, ploc, prem, value, proc),
  0)
W(int, ARMCI_Malloc_group, (void **ptrs, armci_size_t size, ARMCI_Group *g), (ptrs, size, g), size)
W(int, ARMCI_Free_group, (void *ptr, ARMCI_Group *g), (ptr, g), 0)
WV(ARMCI_Group_create, (int n, int *pids, ARMCI_Group *g), (n, pids, g), 0)
WV(ARMCI_Group_free, (ARMCI_Group *g), (g), 0)
WV(armci_msg_barrier, (void), (), 0)
WV(armci_msg_group_barrier, (ARMCI_Group *g), (g), 0)
WV(armci_msg_bcast, (void *buf, int len, int root), (buf, len, root), len)
WV(armci_msg_group_bcast_scope, (int sc, void *buf, int len, int root, ARMCI_Group *g),
   (sc, buf, len, root, g), len)
WV(armci_msg_sel_scope, (int sc, void *x, int n, char *op, int type, int contribute),
   (sc, x, n, op, type, contribute), n)
WV(armci_msg_gop_scope, (int sc, void *x, int n, char *op, int type), (sc, x, n, op, type), 0)
WV(armci_msg_igop, (int *x, int n, char *op), (x, n, op), n * sizeof(int))
WV(armci_msg_lgop, (long *x, int n, char *op), (x, n, op), n * sizeof(long))
WV(armci_msg_llgop, (long long *x, int n, char *op), (x, n, op), n * sizeof(long long))
WV(armci_msg_fgop, (float *x, int n, char *op), (x, n, op), n * sizeof(float))
WV(armci_msg_dgop, (double *x, int n, char *op), (x, n, op), n * sizeof(double))
WV(armci_msg_group_gop_scope, (int sc, void *x, int n, char *op, int type, ARMCI_Group *g),
   (sc, x, n, op, type, g), 0)
WV(armci_msg_group_igop, (int *x, int n, char *op, ARMCI_Group *g), (x, n, op, g), n * sizeof(int))
WV(armci_msg_group_lgop, (long *x, int n, char *op, ARMCI_Group *g), (x, n, op, g),
   n * sizeof(long))
WV(armci_msg_group_llgop, (long long *x, int n, char *op, ARMCI_Group *g), (x, n, op, g),
   n * sizeof(long long))
WV(armci_msg_group_fgop, (float *x, int n, char *op, ARMCI_Group *g), (x, n, op, g),
   n * sizeof(float))
WV(armci_msg_group_dgop, (double *x, int n, char *op, ARMCI_Group *g), (x, n, op, g),
   n * sizeof(double))
WV(armci_msg_snd, (int tag, void *buf, int len, int to), (tag, buf, len, to), len)
WV(armci_msg_rcv, (int tag, void *buf, int buflen, int *msglen, int from),
   (tag, buf, buflen, msglen, from), buflen)
