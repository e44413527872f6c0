/*
 * ninefold libarmci: blocking one-sided operations.
 *
 * `proc` is always an absolute (world) rank. The remote side of every call lies in
 * memory from ARMCI_Malloc* at `proc`; the local side is any memory of the caller.
 *
 * Completion: a get has finished when it returns; a put or accumulate has finished
 * with its local buffer when it returns (it may be reused), and is complete at the
 * target after ARMCI_Fence(proc) / ARMCI_AllFence. Operations from one process to
 * one target are applied in the order they were issued.
 *
 * Accumulate: remote[i] += scale * local[i], with the element type and scale type
 * given by `datatype` (enum ARMCI_Acc_e); atomic with respect to every other
 * accumulate on the same elements.
 *
 * Strided layout (4.1.3 of the seed): `stride_levels` L (0 .. ARMCI_MAX_STRIDE_LEVEL),
 * count[0] = bytes of one contiguous piece, count[1..L] = repetitions per level,
 * src_stride_arr[0..L-1] / dst_stride_arr[0..L-1] = byte distance between
 * repetitions on each side; the two sides may have different strides.
 */
#ifndef NF_ARMCI_ONESIDED_H
#define NF_ARMCI_ONESIDED_H

#include "armci_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Contiguous: `bytes` bytes from src to dst. */
ARMCI_PROFILED(int, Put, (void *src, void *dst, int bytes, int proc));
ARMCI_PROFILED(int, Get, (void *src, void *dst, int bytes, int proc));
ARMCI_PROFILED(int, Acc, (int datatype, void *scale, void *src, void *dst, int bytes,
               int proc));

/* Strided (see above). */
ARMCI_PROFILED(int, PutS, (void *src_ptr, int src_stride_arr[], void *dst_ptr,
               int dst_stride_arr[], int count[], int stride_levels, int proc));
ARMCI_PROFILED(int, GetS, (void *src_ptr, int src_stride_arr[], void *dst_ptr,
               int dst_stride_arr[], int count[], int stride_levels, int proc));
ARMCI_PROFILED(int, AccS, (int datatype, void *scale, void *src_ptr, int src_stride_arr[],
               void *dst_ptr, int dst_stride_arr[], int count[], int stride_levels,
               int proc));

/* Put, then store `value` into the remote int `flag` once the data is in place. */
ARMCI_PROFILED(int, Put_flag, (void *src, void *dst, int bytes, int *flag, int value,
               int proc));
ARMCI_PROFILED(int, PutS_flag, (void *src_ptr, int src_stride_arr[], void *dst_ptr,
               int dst_stride_arr[], int count[], int stride_levels, int *flag, int value,
               int proc));

/* Vector: iov_len descriptors, each a set of equal-sized segments. */
ARMCI_PROFILED(int, PutV, (armci_giov_t *iov, int iov_len, int proc));
ARMCI_PROFILED(int, GetV, (armci_giov_t *iov, int iov_len, int proc));
ARMCI_PROFILED(int, AccV, (int datatype, void *scale, armci_giov_t *iov, int iov_len,
               int proc));

/* Single values. */
ARMCI_PROFILED(int, PutValueInt, (int src, void *dst, int proc));
ARMCI_PROFILED(int, PutValueLong, (long src, void *dst, int proc));
ARMCI_PROFILED(int, PutValueFloat, (float src, void *dst, int proc));
ARMCI_PROFILED(int, PutValueDouble, (double src, void *dst, int proc));
/* Non-blocking forms: complete on return (the value lives in the caller's frame);
 * the handle is left as it was, so waiting on it is valid and returns at once. */
ARMCI_PROFILED(int, NbPutValueInt, (int src, void *dst, int proc, armci_hdl_t *handle));
ARMCI_PROFILED(int, NbPutValueLong, (long src, void *dst, int proc, armci_hdl_t *handle));
ARMCI_PROFILED(int, NbPutValueFloat, (float src, void *dst, int proc,
               armci_hdl_t *handle));
ARMCI_PROFILED(int, NbPutValueDouble, (double src, void *dst, int proc,
               armci_hdl_t *handle));
ARMCI_PROFILED(int, GetValueInt, (void *src, int proc));
ARMCI_PROFILED(long, GetValueLong, (void *src, int proc));
ARMCI_PROFILED(float, GetValueFloat, (void *src, int proc));
ARMCI_PROFILED(double, GetValueDouble, (void *src, int proc));

/* Local copies, named from the buffer's side: write_strided packs the strided
 * layout at ptr into the contiguous buf, read_strided unpacks buf into it. */
void armci_write_strided(void *ptr, int stride_levels, int stride_arr[], int count[],
                         char *buf);
void armci_read_strided(void *ptr, int stride_levels, int stride_arr[], int count[],
                        char *buf);
/* Local memcpy, as ARMCI-MPI offers it. */
void ARMCI_Copy(void *src, void *dst, int bytes);

#ifdef __cplusplus
}
#endif

#endif /* NF_ARMCI_ONESIDED_H */
