/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * backend_cuda.h - the CUDA backend's private state and helpers, shared by its host side:
 * backend_cuda.cu (init, calls, faults) and cuda_segs.cu (segments, mirrors, the segment
 * tables of a communicator across servers). Each file defines BK_CUDA_FILE, its name for
 * error messages, before it includes this one.
 */
#ifndef BK_BACKEND_CUDA_H
#define BK_BACKEND_CUDA_H

#include <cuda_runtime.h>
#include <pthread.h>

#include "backend.h"
#include "rt.h"
#include "kernel_cuda.cuh"
#include "cuda_hostmem.h"
#include "kernel_args.h"
#include "kernel_reg.h"

static_assert(sizeof(cudaIpcMemHandle_t) <= BK_HANDLE_BYTES, "a CUDA IPC handle must fit");
static_assert(sizeof(struct bk_seg_header) <= 4096, "segment header");

/* ------------------------------------------------------------------ host state */

/* Pinned: what the host's abort copies from. */
struct hscratch {
    unsigned int word;
    unsigned int pad;
    char msg[sizeof(((struct bk_seg_header *)0)->abort_msg)];
};

/* Where host-staged edges lie (kernel_args.h): nowhere, beside the device segment (a hybrid's
 * PCIe trees, and the words of slots with edges to other servers), or in its place (GPUs
 * without peer access: every edge). */
enum { HS_NONE, HS_BESIDE, HS_INSTEAD };

struct bk_be {
    int dev;
    int hs_use;                   /* HS_*, decided at rank_init */
    cudaStream_t aux;             /* the host's abort copies (no call runs on it) */
    int launched;                 /* the last call's kernel was launched */
    unsigned int issued;          /* launches issued outside a capture (kstatus.finished's peer) */
    cudaStream_t last_stream;     /* the stream of the last launch */
    int max_blocks;               /* blocks per launch (all resident at once) */
    unsigned char *tables;        /* device: layout, rank tables, role sets, kctl */
    struct ktables k;             /* pointers into tables (kernel_args.h) */
    void *pinned;                 /* cudaHostAlloc: kstatus then hscratch */
    struct kstatus *status;       /* host view */
    struct kstatus *dstatus;      /* device view */
    struct hscratch *scratch;
    unsigned char *own;           /* this rank's segment (cudaFree at the end) */
    void **opened;                /* [nranks] what cudaIpcOpenMemHandle mapped, or NULL */
    struct bk_hostmem *hs;           /* [nranks] host segments mapped here (this rank's own too) */
    unsigned char **dseg, **dhseg; /* [nranks] host copies of the kernel's seg and hseg tables */
    unsigned char **hhost;        /* [nranks] host addresses of the host segments (proxy.h) */
    void **mirror;                /* [nranks] cudaHostAlloc'ed mirrors of peers on other servers */
    struct bk_proxy *px;          /* the network proxy, from the first launch of a cluster */
    unsigned char *hreach;        /* [nranks] host copy of reach */
    pthread_mutex_t mu;           /* the scratch */
    double last_gone_check;
    uint32_t last_seq;            /* the last launch, for messages */
    int last_coll;
    struct bk_trace_ring *trace;  /* device: BLINK_TRACE's events, or NULL */
    void *regmem;                 /* pinned: the kernel's requests for peers' registered
                                   * regions (kernel_reg.h), then regput; or NULL */
    uint64_t *regput;             /* pinned: what reg_put copies into the table */
    void *regtab;                 /* device: the table of those regions, or NULL */
    struct kreg reg;
    int captured;                 /* a launch was captured in a CUDA graph */
};

/* ------------------------------------------------------------------ errors and devices */

/* A CUDA call's failure as blinkUnhandledCudaError, cudaGetErrorString in the last error. */
static inline blinkResult_t cuda_fail_at(cudaError_t e, const char *what, const char *file,
                                         int line)
{
    (void)cudaGetLastError(); /* a non-sticky error must not surface in the user's next check */
    return bk_error(blinkUnhandledCudaError, "CUDA backend: %s failed: %s (%s:%d)", what,
                    cudaGetErrorString(e), file, line);
}
#define cuda_fail(e, what, line) cuda_fail_at(e, what, BK_CUDA_FILE, line)

#define CU(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            blinkResult_t r_ = cuda_fail(e_, #call, __LINE__);                                \
            if (old_ >= 0)                                                                    \
                cudaSetDevice(old_);                                                          \
            return r_;                                                                        \
        }                                                                                     \
    } while (0)

/* Switch to dev for the rest of the function; CU() and LEAVE restore the caller's device. */
#define ENTER(dev)                                                                            \
    int old_ = -1;                                                                            \
    CU(cudaGetDevice(&old_));                                                                 \
    if (old_ != (dev))                                                                        \
        CU(cudaSetDevice(dev))
#define LEAVE()                                                                               \
    do {                                                                                      \
        cudaSetDevice(old_);                                                                  \
        return blinkSuccess;                                                                  \
    } while (0)

/* For what cannot fail: a call whose error is dropped (and cleared, so that it does not
 * surface in the user's next cudaGetLastError); a switch to dev and back. */
static inline cudaError_t quiet(cudaError_t e)
{
    if (e != cudaSuccess)
        (void)cudaGetLastError();
    return e;
}

static inline int quiet_enter(int dev)
{
    int old = -1;
    if (quiet(cudaGetDevice(&old)) != cudaSuccess)
        old = -1;
    if (old != dev)
        quiet(cudaSetDevice(dev));
    return old;
}

static inline void quiet_leave(int old)
{
    if (old >= 0)
        quiet(cudaSetDevice(old));
}

/* ------------------------------------------------------------------ cuda_segs.cu */

/* The backend's seg_create, seg_open and seg_unlink (backend.h). */
blinkResult_t bk_cuda_seg_create(blinkComm_t c, const char *name, size_t bytes, void **seg,
                                 void *handle);
blinkResult_t bk_cuda_seg_open(blinkComm_t c, int peer, const char *name, const void *handle,
                               size_t bytes, int same_process, void *seg_ptr, void **seg);
void bk_cuda_seg_unlink(const char *name);
/* A communicator across servers: every set's slot segment table (kernel_args.h's ktseg_fill)
 * into device memory, once every segment is mapped. */
blinkResult_t bk_cuda_net_tables(blinkComm_t c);
/* Registered (kernel_reg.h): the table of peers' regions, where the communicator's calls may
 * write into outputs of other processes (ranks in several processes of one server); its end. */
blinkResult_t bk_cuda_reg_init(blinkComm_t c);
void bk_cuda_reg_free(blinkComm_t c);

#endif
