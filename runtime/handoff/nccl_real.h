/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_real.h - the real NCCL, loaded at run time with dlopen(RTLD_LOCAL) and called through
 * this table, never bound at link time: in libblink-nccl, which exports NCCL's own names, a
 * link-time call to ncclAllReduce would resolve back into the drop-in.
 *
 * Which library: BLINK_NCCL_LIB (a path, or "none"), else the loader's search for
 * libnccl.so.2 (CUDA backend; the host backend loads NCCL only when BLINK_NCCL_LIB names one,
 * since NCCL cannot take its host pointers). A library that turns out to be this one is
 * refused. Loaded once per process; bk_real_nccl() is NULL when there is none, and
 * bk_real_nccl_why() then says why.
 */
#ifndef BK_NCCL_REAL_H
#define BK_NCCL_REAL_H

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bk_real_nccl {
    int version;
    char path[256];
    ncclResult_t (*GetVersion)(int *);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    const char *(*GetErrorString)(ncclResult_t);
    const char *(*GetLastError)(ncclComm_t);
    ncclResult_t (*CommInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
    ncclResult_t (*CommFinalize)(ncclComm_t);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*CommAbort)(ncclComm_t);
    ncclResult_t (*CommRevoke)(ncclComm_t, int);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
    ncclResult_t (*CommRegister)(const ncclComm_t, void *, size_t, void **);
    ncclResult_t (*CommDeregister)(const ncclComm_t, void *);
    ncclResult_t (*CommWindowRegister)(ncclComm_t, void *, size_t, ncclWindow_t *, int);
    ncclResult_t (*CommWindowDeregister)(ncclComm_t, ncclWindow_t);
    ncclResult_t (*MemAlloc)(void **, size_t);
    ncclResult_t (*MemFree)(void *);
    ncclResult_t (*RedOpCreatePreMulSum)(ncclRedOp_t *, void *, ncclDataType_t,
                                         ncclScalarResidence_t, ncclComm_t);
    ncclResult_t (*RedOpDestroy)(ncclRedOp_t, ncclComm_t);
    ncclResult_t (*Reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
                           ncclComm_t, cudaStream_t);
    ncclResult_t (*Broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                              ncclComm_t, cudaStream_t);
    ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                  ncclComm_t, cudaStream_t);
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*AlltoAll)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t);
    ncclResult_t (*Gather)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                           cudaStream_t);
    ncclResult_t (*Scatter)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t);
    ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
    ncclResult_t (*GroupSimulateEnd)(ncclSimInfo_t *);
};

/* The loaded NCCL, or NULL. */
const struct bk_real_nccl *bk_real_nccl(void);
/* Why there is none ("" when there is one). */
const char *bk_real_nccl_why(void);

#ifdef __cplusplus
}
#endif

#endif
