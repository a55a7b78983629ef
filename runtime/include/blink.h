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
 *
 * Results. Every call returns a blinkResult_t and, on failure, leaves a message naming the call,
 * the rank and the cause in blinkGetLastError (per thread). The results mean, for every call:
 *   blinkInvalidArgument     a NULL or out-of-range argument, or a malformed BLINK_* variable;
 *   blinkInvalidUsage        a call the plan or the communicator cannot run (no plan for the
 *                            devices, no schedule for the collective or root, ranks that
 *                            disagree on a call or on the environment, a cluster plan without
 *                            MPI, blinkGroupEnd without blinkGroupStart);
 *   blinkSystemError         the system failed it: memory, threads, shared memory, MPI, a wait
 *                            past BLINK_TIMEOUT_S (the message names the rank waited for), a
 *                            peer process that exited;
 *   blinkUnhandledCudaError  a CUDA call failed (cudaGetErrorString in the message);
 *   blinkRemoteError         another rank failed or aborted the communicator (its reason in
 *                            the message).
 * A failed collective aborts its communicator: every rank's pending and later calls fail too.
 *
 * Threads. A communicator is one rank's: call it from one thread at a time (ranks of one
 * process are used from their own threads, as NCCL's are). Groups and the last error are per
 * thread. The environment (blink(3), ENVIRONMENT) is read when a communicator is made:
 * BLINK_TIMEOUT_S bounds every wait; BLINK_ALGO, BLINK_PROTO and BLINK_CHUNK_BYTES override the
 * plan's per-size choice; BLINK_DEVICE and BLINK_SERVER say where a rank runs; BLINK_DEBUG logs.
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

/* NCCL's ncclUniqueId: made once by blinkGetUniqueId, handed to every rank by the launcher
 * (plain bytes: copy it anywhere). */
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

/* Defined by the generated source (blink_plan.h says how).
 * blinkCommInitAll: ndev ranks as threads of this process, rank i on devlist[i] (devices
 * 0..ndev-1 when devlist is NULL); comms[0..ndev-1] get them. blinkInvalidArgument for a NULL
 * comms, ndev < 1 or a bad BLINK_DEVICE_MAP.
 * blinkCommInitRank: one rank of nranks, each in its own thread or process, all with the same
 * commId; it returns once every rank has joined (a collective call), or fails after
 * BLINK_TIMEOUT_S naming the ranks that did not. The rank's device is the current CUDA device
 * (CUDA backend) or BLINK_DEVICE, else the rank number (host backend); ranks that name one
 * server (BLINK_SERVER, else the host name) share memory, the others meet over MPI where
 * commId was made in an MPI job. blinkInvalidArgument for a NULL comm or a rank outside
 * 0..nranks-1.
 * Either way the plan is the one for the set of devices, in any rank order: a set with no plan
 * is refused (blinkInvalidUsage). *comm is the caller's until blinkCommDestroy or
 * blinkCommAbort; on failure it is NULL and nothing is left in /dev/shm. */
blinkResult_t blinkCommInitAll(blinkComm_t *comms, int ndev, const int *devlist);
blinkResult_t blinkCommInitRank(blinkComm_t *comm, int nranks, blinkUniqueId commId, int rank);
/* A fresh id (random bytes, and where MPI runs this process's MPI rank: ranks then meet over
 * MPI). blinkInvalidArgument for NULL; blinkSystemError where /dev/urandom cannot be read. */
blinkResult_t blinkGetUniqueId(blinkUniqueId *uniqueId);
/* Wait for this rank's work (bounded by BLINK_TIMEOUT_S), then free the communicator and
 * everything it mapped. blinkInvalidArgument for NULL. */
blinkResult_t blinkCommDestroy(blinkComm_t comm);
/* Stop this rank's work now: its peers' calls fail with blinkRemoteError naming this rank (on
 * other servers too); then free the communicator. blinkInvalidArgument for NULL. */
blinkResult_t blinkCommAbort(blinkComm_t comm);
/* The communicator's asynchronous error into *asyncError: blinkSuccess, or what failed a call
 * in flight (its message in blinkGetLastError). blinkInvalidArgument for a NULL argument. */
blinkResult_t blinkCommGetAsyncError(blinkComm_t comm, blinkResult_t *asyncError);
/* The ranks, this rank's device (the physical one it runs on) and its rank.
 * blinkInvalidArgument for a NULL argument. */
blinkResult_t blinkCommCount(const blinkComm_t comm, int *count);
blinkResult_t blinkCommCuDevice(const blinkComm_t comm, int *device);
blinkResult_t blinkCommUserRank(const blinkComm_t comm, int *rank);

/* A result's name ("invalid argument", ...): a static string. */
const char *blinkGetErrorString(blinkResult_t result);
/* The last error's message, with its details ("" if none): per thread, valid until the
 * thread's next failing call; comm may be NULL (it is not used). */
const char *blinkGetLastError(blinkComm_t comm);
/* BLINK_VERSION_CODE into *version; blinkInvalidArgument for NULL. */
blinkResult_t blinkGetVersion(int *version);

/* The collectives, as NCCL's: enqueued on stream (the host backend: a NULL stream waits for
 * this rank's part), every rank calling the same collectives in the same order with the same
 * count, type, op and root. Buffers are the caller's and must stay valid until the call is
 * done on the stream; sendbuff == recvbuff runs in place (allgather: sendbuff at recvbuff +
 * rank * sendcount; reducescatter: recvbuff at sendbuff + rank * recvcount). count 0 is a
 * call that moves nothing. blinkInvalidArgument for a bad type, op or root, or a NULL buffer
 * this rank reads or writes (count > 0); blinkInvalidUsage where the plan has no schedule for
 * it; the others as above, on this call or, once it is in flight, from blinkCommGetAsyncError
 * and the next call. */
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

/* Calls between blinkGroupStart and blinkGroupEnd (nested: the outermost pair) are queued on
 * this thread and issued at blinkGroupEnd, which returns the first failure (and, on the host
 * backend, waits once per communicator for NULL-stream calls). blinkGroupEnd without a
 * blinkGroupStart: blinkInvalidUsage. */
blinkResult_t blinkGroupStart(void);
blinkResult_t blinkGroupEnd(void);

/* Memory for collective buffers, as ncclMemAlloc: on the host backend it can be mapped by the
 * other processes of a communicator, so a registered output (below) takes its data straight
 * from its parent in the tree, without the staging; on CUDA, cudaMalloc. The caller frees it
 * with blinkMemFree. blinkInvalidArgument for a NULL ptr, or on the host backend a pointer
 * blinkMemAlloc did not return; blinkSystemError (host) or blinkUnhandledCudaError (CUDA) where
 * memory fails. */
blinkResult_t blinkMemAlloc(void **ptr, size_t size);
blinkResult_t blinkMemFree(void *ptr);
/* Register [buff, buff + size) with comm, as ncclCommRegister: calls whose output lies in it
 * (and in blinkMemAlloc's memory, on the host backend) skip the staging on their way down.
 * Elsewhere the registration is kept and changes nothing. *handle is the comm's until
 * blinkCommDeregister or blinkCommDestroy. blinkInvalidArgument for a NULL argument or a handle
 * comm did not give. */
blinkResult_t blinkCommRegister(blinkComm_t comm, void *buff, size_t size, void **handle);
blinkResult_t blinkCommDeregister(blinkComm_t comm, void *handle);

#ifndef BLINK_BACKEND_CUDA
/* Host backend streams: an ordered queue of work run by a worker thread. Synchronize waits for
 * everything enqueued and returns the first failure of it; Destroy waits, then frees.
 * blinkInvalidArgument for NULL; blinkSystemError where the thread cannot start. */
blinkResult_t blinkHostStreamCreate(blinkStream_t *stream);
blinkResult_t blinkHostStreamSynchronize(blinkStream_t stream);
blinkResult_t blinkHostStreamDestroy(blinkStream_t stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
