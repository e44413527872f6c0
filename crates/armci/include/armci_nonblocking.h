/*
 * ninefold libarmci: non-blocking one-sided operations.
 *
 * Each Nb call starts an operation and records it in *handle (which must have been
 * set with ARMCI_INIT_HANDLE, or be NULL: then the operation is implicit and only
 * ARMCI_WaitAll / ARMCI_WaitProc / a fence complete it). ARMCI_Wait returns when the
 * operation is complete locally (a get's data is in place; a put's buffer may be
 * reused); remote completion of puts and accumulates still takes a fence.
 * Arguments are as in the blocking calls (armci_onesided.h).
 */
#ifndef NF_ARMCI_NONBLOCKING_H
#define NF_ARMCI_NONBLOCKING_H

#include "armci_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a handle as holding no operation. */
void ARMCI_INIT_HANDLE(armci_hdl_t *handle);
/* Aggregation hints: accepted, operations are not batched differently. */
void ARMCI_SET_AGGREGATE_HANDLE(armci_hdl_t *handle);
void ARMCI_UNSET_AGGREGATE_HANDLE(armci_hdl_t *handle);

ARMCI_PROFILED(int, NbPut, (void *src, void *dst, int bytes, int proc,
               armci_hdl_t *handle));
ARMCI_PROFILED(int, NbGet, (void *src, void *dst, int bytes, int proc,
               armci_hdl_t *handle));
ARMCI_PROFILED(int, NbAcc, (int datatype, void *scale, void *src, void *dst, int bytes,
               int proc, armci_hdl_t *handle));

ARMCI_PROFILED(int, NbPutS, (void *src_ptr, int src_stride_arr[], void *dst_ptr,
               int dst_stride_arr[], int count[], int stride_levels, int proc,
               armci_hdl_t *handle));
ARMCI_PROFILED(int, NbGetS, (void *src_ptr, int src_stride_arr[], void *dst_ptr,
               int dst_stride_arr[], int count[], int stride_levels, int proc,
               armci_hdl_t *handle));
ARMCI_PROFILED(int, NbAccS, (int datatype, void *scale, void *src_ptr,
               int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
               int stride_levels, int proc, armci_hdl_t *handle));

ARMCI_PROFILED(int, NbPutV, (armci_giov_t *iov, int iov_len, int proc,
               armci_hdl_t *handle));
ARMCI_PROFILED(int, NbGetV, (armci_giov_t *iov, int iov_len, int proc,
               armci_hdl_t *handle));
ARMCI_PROFILED(int, NbAccV, (int datatype, void *scale, armci_giov_t *iov, int iov_len,
               int proc, armci_hdl_t *handle));

/* Blocks until the handle's operation is complete; 0 on success. */
ARMCI_PROFILED(int, Wait, (armci_hdl_t *handle));
/* 0 when the handle's operation is complete, 1 while it is still in flight. */
ARMCI_PROFILED(int, Test, (armci_hdl_t *handle));
/* Completes every outstanding non-blocking operation to proc / to anyone. */
ARMCI_PROFILED(int, WaitProc, (int proc));
ARMCI_PROFILED(int, WaitAll, (void));

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_NONBLOCKING_H */
