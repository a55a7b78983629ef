/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * blink.h - the blinkc runtime API: NCCL's collectives with a `blink` prefix.
 *
 * Code written against NCCL maps one to one: ncclComm_t -> blinkComm_t, ncclAllReduce ->
 * blinkAllReduce, ncclFloat32 -> blinkFloat32, and so on. The schedules come from a source that
 * blinkc generated for one topology (one allocation, or every allocation of a server type);
 * that source defines blinkCommInitAll and blinkCommInitRank, so a program links exactly one
 * generated source and one runtime backend:
 *
 *   CUDA:  nvcc -c collectives.cu $(pkg-config --cflags blinkrt-cuda)
 *   host:  cc -x c collectives.cu $(pkg-config --cflags --libs blinkrt-host) -lpthread
 *
 * The backend is chosen at compile time: BLINK_BACKEND_CUDA (set by blinkrt-cuda.pc) makes
 * blinkStream_t a cudaStream_t; otherwise it is the host backend's opaque stream, and a NULL
 * stream makes a call synchronous (it returns when the calling rank's part is done).
 */
#ifndef BLINK_H
#define BLINK_H

#include <stddef.h>

#ifdef BLINK_BACKEND_CUDA
#include <cuda_runtime.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define BLINK_MAJOR 0
#define BLINK_MINOR 1
#define BLINK_PATCH 0
#define BLINK_VERSION_CODE (BLINK_MAJOR * 10000 + BLINK_MINOR * 100 + BLINK_PATCH)

typedef struct blinkComm *blinkComm_t;

/* NCCL's ncclUniqueId: made once by blinkGetUniqueId, handed to every rank by the launcher. */
#define BLINK_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[BLINK_UNIQUE_ID_BYTES];
} blinkUniqueId;

#ifdef BLINK_BACKEND_CUDA
typedef cudaStream_t blinkStream_t;
#else
typedef struct blinkHostStream *blinkStream_t;
#endif

/* The same values as ncclResult_t. */
typedef enum {
    blinkSuccess = 0,
    blinkUnhandledCudaError = 1,
    blinkSystemError = 2,
    blinkInternalError = 3,
    blinkInvalidArgument = 4,
    blinkInvalidUsage = 5,
    blinkRemoteError = 6,
    blinkInProgress = 7,
    blinkNumResults = 8
} blinkResult_t;

typedef enum {
    blinkInt8 = 0, blinkChar = 0,
    blinkUint8 = 1,
    blinkInt32 = 2, blinkInt = 2,
    blinkUint32 = 3,
    blinkInt64 = 4,
    blinkUint64 = 5,
    blinkFloat16 = 6, blinkHalf = 6,
    blinkFloat32 = 7, blinkFloat = 7,
    blinkFloat64 = 8, blinkDouble = 8,
    blinkBfloat16 = 9,
    blinkNumTypes = 10
} blinkDataType_t;

typedef enum {
    blinkSum = 0,
    blinkProd = 1,
    blinkMax = 2,
    blinkMin = 3,
    blinkAvg = 4,
    blinkNumOps = 5
} blinkRedOp_t;

/* Defined by the generated source. InitAll: ranks as threads of this process, rank i on
 * devlist[i] (devices 0..ndev-1 when devlist is NULL). InitRank: one rank of nranks, each in
 * its own thread or process, all with the same id; the rank's device is the current CUDA
 * device (CUDA backend) or BLINK_DEVICE, else the rank number (host backend). Either way the
 * plan is the one for the set of devices, in any rank order; a set with no plan is refused. */
blinkResult_t blinkCommInitAll(blinkComm_t *comms, int ndev, const int *devlist);
blinkResult_t blinkCommInitRank(blinkComm_t *comm, int nranks, blinkUniqueId commId, int rank);
blinkResult_t blinkGetUniqueId(blinkUniqueId *uniqueId);
blinkResult_t blinkCommDestroy(blinkComm_t comm);
/* Stop this rank's work now (its peers' calls fail too), then free the communicator. */
blinkResult_t blinkCommAbort(blinkComm_t comm);
/* The communicator's asynchronous error: blinkSuccess, or what failed a call in flight. */
blinkResult_t blinkCommGetAsyncError(blinkComm_t comm, blinkResult_t *asyncError);
blinkResult_t blinkCommCount(const blinkComm_t comm, int *count);
blinkResult_t blinkCommCuDevice(const blinkComm_t comm, int *device);
blinkResult_t blinkCommUserRank(const blinkComm_t comm, int *rank);

const char *blinkGetErrorString(blinkResult_t result);
/* The last error's message, with its details (thread-local; "" if none); comm may be NULL. */
const char *blinkGetLastError(blinkComm_t comm);
blinkResult_t blinkGetVersion(int *version);

blinkResult_t blinkBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                             blinkDataType_t datatype, int root, blinkComm_t comm,
                             blinkStream_t stream);
blinkResult_t blinkReduce(const void *sendbuff, void *recvbuff, size_t count,
                          blinkDataType_t datatype, blinkRedOp_t op, int root, blinkComm_t comm,
                          blinkStream_t stream);
blinkResult_t blinkAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                             blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm,
                             blinkStream_t stream);
blinkResult_t blinkAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                             blinkDataType_t datatype, blinkComm_t comm, blinkStream_t stream);
blinkResult_t blinkReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                 blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm,
                                 blinkStream_t stream);

blinkResult_t blinkGroupStart(void);
blinkResult_t blinkGroupEnd(void);

/* Memory for collective buffers, as ncclMemAlloc: on the host backend it can be mapped by the
 * other processes of a communicator, so a registered output (below) takes its data straight
 * from its parent in the tree, without the staging; on CUDA, cudaMalloc. */
blinkResult_t blinkMemAlloc(void **ptr, size_t size);
blinkResult_t blinkMemFree(void *ptr);
/* Register [buff, buff + size) with comm, as ncclCommRegister: calls whose output lies in it
 * (and in blinkMemAlloc's memory, on the host backend) skip the staging on their way down.
 * Elsewhere the registration is kept and changes nothing. */
blinkResult_t blinkCommRegister(blinkComm_t comm, void *buff, size_t size, void **handle);
blinkResult_t blinkCommDeregister(blinkComm_t comm, void *handle);

#ifndef BLINK_BACKEND_CUDA
/* Host backend streams: an ordered queue of work run by a worker thread. */
blinkResult_t blinkHostStreamCreate(blinkStream_t *stream);
blinkResult_t blinkHostStreamSynchronize(blinkStream_t stream);
blinkResult_t blinkHostStreamDestroy(blinkStream_t stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
