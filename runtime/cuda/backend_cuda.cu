/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * backend_cuda.cu - the CUDA backend: one kernel launch per call runs this rank's part of the
 * protocol of proto.h, the same protocol exec_host.c runs with threads (one protocol, two
 * backends: the same flag words, tags, credit rules, entered/description check and abort words).
 * This file is the host side (init, the launch, faults, asynchronous errors; the segments are
 * cuda_segs.cu's, host memory cuda_hostmem.cu's, the state both share backend_cuda.h's); the
 * kernel, the device side of the protocol, is kernel_cuda.cuh, compiled by kernel_8_16bit.cu,
 * kernel_32bit.cu and kernel_64bit.cu (kernel_for picks a datatype's).
 *
 * Memory: each rank's segment is one cudaMalloc on its device, exported with a CUDA IPC handle;
 * a peer in another process maps it with cudaIpcOpenMemHandle, a peer in this process uses the
 * owner's pointer (an IPC handle cannot be opened by the process that made it). Peer access is
 * enabled at init wherever cudaDeviceCanAccessPeer allows, and every direct tree edge must have
 * it (init fails otherwise); a peer this device cannot reach is left unmapped and never touched.
 * Host-staged edges (with BLINK_HOST_STAGED=1; not yet run on a GPU) have their flags and slots
 * in a segment of POSIX shared memory, NAME.h, that every rank maps and registers with
 * cudaHostRegister, so the kernel stores and loads it over PCIe: beside the device segment for
 * a hybrid's PCIe trees, and in its place for a plan of GPUs without peer access.
 * Across servers (a cluster plan, ranks in MPI processes) each peer on another server is a
 * mirror of its segment in pinned host memory, a rank's words of every tree slot with an edge
 * to another server lie in its host segment, and the rank's network proxy (proxy.h) moves
 * those edges' chunks by MPI; the kernel runs the one protocol on every edge.
 *
 * Execution: rank_init makes everything a call needs: device copies of every tree set's roles
 * and of the staging layout, the table of mapped peer segments, and a pinned, mapped status
 * block the kernel reports a failure and its finished launches into. A call is then one kernel
 * launch on the user's stream and nothing else (no stream or event of ours, no allocation or
 * copy), as NCCL launches, so it can be captured into a CUDA graph. The host learns that a call
 * is done from the status block's count of finished launches, compared with the launches it
 * issued outside a capture (a captured launch is the graph's, whose replays the user runs).
 * Blocks per launch (rank_init, kblocks_for): one per work item of the set (a tree slot, a
 * channel of a plan tree; allreduce's up and down passes apart: two), at most as many as are
 * resident on the device at once beside the other ranks sharing it, and MAX_BLOCKS.
 *
 * Faults: the kernel reports the first failure of the rank's life into the status block, which
 * async_error and wait turn into the result and message (kernel_cuda.cuh says how the kernel
 * fails and aborts). The host also notices peers whose process exited (while it waits, or when
 * asked for the asynchronous error) and stops this rank's kernel with its own abort word.
 *
 * Every CUDA call is checked and translated to blinkUnhandledCudaError with cudaGetErrorString
 * in the last error. Each function leaves the caller's current device as it found it.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BK_CUDA_FILE "backend_cuda.cu"
#include "backend_cuda.h"
#include "proc.h"
#include "proxy.h"

#define MAX_BLOCKS 128   /* blocks per launch; more work items than this are shared out */

static blinkResult_t configure(void) { return blinkSuccess; }

static int current_device(void)
{
    int d = -1;
    if (cudaGetDevice(&d) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return d;
}

static void bus_id(int dev, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    if (dev < 0 || cudaDeviceGetPCIBusId(buf, (int)len, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        buf[0] = '\0';
    }
}

/* Peer q's device as this process numbers it, or -1 where this process cannot see it. */
static int local_device(blinkComm_t c, int q)
{
    int d = -1;
    if (c->peer[q].busid[0] && cudaDeviceGetByPCIBusId(&d, c->peer[q].busid) == cudaSuccess)
        return d;
    (void)cudaGetLastError();
    return c->peer[q].pid == getpid() ? c->peer[q].phys_dev : -1;
}

static blinkResult_t rank_init(blinkComm_t c)
{
    struct bk_be *be = (struct bk_be *)calloc(1, sizeof *be);
    if (!be)
        return bk_error(blinkSystemError, "CUDA backend: out of memory");
    c->be = be;
    pthread_mutex_init(&be->mu, NULL);
    int n = c->nranks, T = c->layout.ntrees, me = c->prank;
    be->dev = c->peer[me].phys_dev;
    int nsets = BK_SETS * c->plan->nschedules;
    be->opened = (void **)calloc((size_t)n, sizeof *be->opened);
    be->hs = (struct bk_hostmem *)calloc((size_t)n, sizeof *be->hs);
    be->hreach = (unsigned char *)calloc((size_t)n, 1);
    be->dseg = (unsigned char **)calloc((size_t)n, sizeof *be->dseg);
    be->dhseg = (unsigned char **)calloc((size_t)n, sizeof *be->dhseg);
    be->hhost = (unsigned char **)calloc((size_t)n, sizeof *be->hhost);
    be->mirror = (void **)calloc((size_t)n, sizeof *be->mirror);
    unsigned char *hatom = (unsigned char *)calloc((size_t)n, 1);
    int *ldev = (int *)calloc((size_t)n, sizeof *ldev);
    if (!be->opened || !be->hs || !be->hreach || !be->dseg || !be->dhseg || !be->hhost ||
        !be->mirror || !hatom || !ldev) {
        free(hatom);
        free(ldev);
        return bk_error(blinkSystemError, "CUDA backend: out of memory");
    }
    c->nstreams = 0; /* calls run on the user's streams */
    c->nworkers = 1;
    be->max_blocks = 1;

    int old_ = -1;
    cudaError_t e = cudaGetDevice(&old_);
    if (e == cudaSuccess && old_ != be->dev)
        e = cudaSetDevice(be->dev);
    blinkResult_t r = e == cudaSuccess ? blinkSuccess : cuda_fail(e, "cudaSetDevice", __LINE__);

    /* Which peers this device reaches, and enable peer access to them. Segments in host memory
     * (a plan of GPUs without peer access) every device reaches, without native atomics. */
    int in_host = c->plan->host_staged && bk_host_staged(c);
    be->hs_use = in_host ? HS_INSTEAD : kneeds_hseg(c) ? HS_BESIDE : HS_NONE;
    for (int q = 0; q < n && r == blinkSuccess; q++) {
        if (c->peer[q].remote) { /* its mirror, in host memory here (proxy.h) */
            ldev[q] = -2;
            be->hreach[q] = 1;
            continue;
        }
        ldev[q] = q == me ? be->dev : local_device(c, q);
        if (in_host) {
            be->hreach[q] = 1;
            hatom[q] = 0;
            continue;
        }
        if (ldev[q] == be->dev) {
            be->hreach[q] = hatom[q] = 1;
            continue;
        }
        if (ldev[q] < 0) {
            be->hreach[q] = 1; /* not visible here: trust CUDA IPC; no atomics assumed */
            continue;
        }
        int can = 0, atom = 0;
        e = cudaDeviceCanAccessPeer(&can, be->dev, ldev[q]);
        if (e != cudaSuccess) {
            r = cuda_fail(e, "cudaDeviceCanAccessPeer", __LINE__);
            break;
        }
        if (can) {
            e = cudaDeviceEnablePeerAccess(ldev[q], 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled) {
                (void)cudaGetLastError();
            } else if (e != cudaSuccess) {
                r = cuda_fail(e, "cudaDeviceEnablePeerAccess", __LINE__);
                break;
            }
            if (cudaDeviceGetP2PAttribute(&atom, cudaDevP2PAttrNativeAtomicSupported, be->dev,
                                          ldev[q]) != cudaSuccess) {
                (void)cudaGetLastError();
                atom = 0;
            }
        }
        be->hreach[q] = (unsigned char)can;
        hatom[q] = (unsigned char)(can && atom);
    }
    /* Every direct tree edge must be reachable: the kernel loads and stores across it (a
     * host-staged one goes through host memory instead). */
    for (int i = 0; i < nsets && r == blinkSuccess; i++)
        for (int ti = 0; ti < c->sets[i].ntrees && r == blinkSuccess; ti++) {
            if (c->sets[i].tree_of[ti] >= c->sets[i].staged_from) /* roles.c: only if allowed */
                continue;
            const struct bk_role *t = &c->sets[i].roles[ti];
            for (int j = -1; j < t->nkids && r == blinkSuccess; j++) {
                int q = j < 0 ? t->parent : c->sets[i].kids[t->kids_at + j];
                if (q >= 0 && !be->hreach[q])
                    r = bk_error(blinkSystemError, "CUDA backend: rank %d's device %d cannot "
                                 "access rank %d's device %d directly (cudaDeviceCanAccessPeer "
                                 "says no), but a tree of the plan connects them (BLINK_HOST_STAGED"
                                 "=1 runs a plan of GPUs without peer access through host memory, "
                                 "not yet tried on a GPU)", c->rank, be->dev, c->user_of[q],
                                 ldev[q]);
            }
        }

    /* The stream the host's abort copies go on (calls run on the user's streams). */
    if (r == blinkSuccess && (e = cudaStreamCreateWithFlags(&be->aux, cudaStreamNonBlocking)))
        r = cuda_fail(e, "cudaStreamCreateWithFlags", __LINE__);

    /* Blocks per launch: every block of every rank on this device must be resident at once
     * (a block waits for peers that may wait for another block), so at most what fits. */
    if (r == blinkSuccess) {
        int sms = 0, occ = 0, sharing = 0;
        size_t smem_max = ksmem(2 * T, n); /* a block may play every item of a set */
        if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, be->dev)))
            r = cuda_fail(e, "cudaDeviceGetAttribute", __LINE__);
        for (int dt = 0; dt < blinkNumTypes && r == blinkSuccess; dt++) {
            int o = 0;
            if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o, kernel_for(dt), KTHREADS,
                                                                   smem_max)))
                r = cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", __LINE__);
            occ = dt == 0 || o < occ ? o : occ;
        }
        for (int q = 0; q < n; q++)
            sharing += ldev[q] == be->dev;
        if (r == blinkSuccess && occ < 1)
            r = bk_error(blinkSystemError, "CUDA backend: the protocol kernel (%d threads, %zu "
                         "bytes of shared memory) cannot run on device %d", KTHREADS, smem_max,
                         be->dev);
        long fit = (long)sms * occ / (sharing > 0 ? sharing : 1);
        be->max_blocks = fit < 1 ? 1 : fit < MAX_BLOCKS ? (int)fit : MAX_BLOCKS;
        for (int i = 0; i < nsets; i++) {
            int b = kblocks_for(be->max_blocks, c->sets[i].ntrees, c->plan->schedules[i / BK_SETS].coll);
            c->nworkers = b > c->nworkers ? b : c->nworkers;
        }
    }

    /* The status block: pinned and mapped. */
    if (r == blinkSuccess && (e = cudaHostAlloc(&be->pinned, sizeof(struct kstatus) +
                                                sizeof(struct hscratch),
                                                cudaHostAllocMapped | cudaHostAllocPortable)))
        r = cuda_fail(e, "cudaHostAlloc", __LINE__);
    if (r == blinkSuccess) {
        memset(be->pinned, 0, sizeof(struct kstatus) + sizeof(struct hscratch));
        be->status = (struct kstatus *)be->pinned;
        be->scratch = (struct hscratch *)(be->status + 1);
        void *dp = NULL;
        if ((e = cudaHostGetDevicePointer(&dp, be->pinned, 0)))
            r = cuda_fail(e, "cudaHostGetDevicePointer", __LINE__);
        be->dstatus = (struct kstatus *)dp;
    }

    /* The tables: one device allocation, filled by one copy. */
    struct kimage im;
    memset(&im, 0, sizeof im);
    if (r == blinkSuccess)
        r = kimage_build(c, be->hreach, hatom, &im);
    if (r == blinkSuccess) {
        void *d = NULL;
        if ((e = cudaMalloc(&d, im.bytes)))
            r = cuda_fail(e, "cudaMalloc", __LINE__);
        be->tables = (unsigned char *)d;
    }
    if (r == blinkSuccess &&
        (e = cudaMemcpy(be->tables, im.host, im.bytes, cudaMemcpyHostToDevice)))
        r = cuda_fail(e, "cudaMemcpy", __LINE__);
    if (r == blinkSuccess)
        r = ktables_point(c, &im, be->tables, &be->k);
    kimage_free(&im);
    /* Peers on other servers: a mirror of each one's segment in pinned host memory, where the
     * kernel finds it as it finds a host-staged peer's (proxy.h). */
    for (int q = 0; q < n && r == blinkSuccess; q++) {
        if (!c->peer[q].remote)
            continue;
        unsigned char *d = NULL;
        r = bk_hostmem_mirror(c->layout.seg_bytes[q], &be->mirror[q], &d);
        if (r == blinkSuccess &&
            ((e = cudaMemcpy(&be->k.seg[q], &d, sizeof d, cudaMemcpyHostToDevice)) ||
             (e = cudaMemcpy(&be->k.hseg[q], &d, sizeof d, cudaMemcpyHostToDevice))))
            r = cuda_fail(e, "cudaMemcpy", __LINE__);
        be->dseg[q] = be->dhseg[q] = d;
    }
    if (r == blinkSuccess)
        r = bk_cuda_reg_init(c);
    /* BLINK_TRACE: the ring the kernel stamps into, read back at rank_free. */
    if (r == blinkSuccess && c->env.trace_dir[0]) {
        size_t bytes = offsetof(struct bk_trace_ring, rec) +
                       c->env.trace_records * sizeof(struct bk_trace_rec);
        struct bk_trace_ring head = {0, (unsigned long long)c->env.trace_records, {}};
        void *d = NULL;
        if ((e = cudaMalloc(&d, bytes)))
            r = cuda_fail(e, "cudaMalloc", __LINE__);
        else if ((e = cudaMemcpy(d, &head, offsetof(struct bk_trace_ring, rec),
                                 cudaMemcpyHostToDevice)))
            r = cuda_fail(e, "cudaMemcpy", __LINE__);
        be->trace = (struct bk_trace_ring *)d;
    }
    free(hatom);
    free(ldev);
    if (old_ >= 0)
        cudaSetDevice(old_);
    return r;
}

static blinkResult_t finish_last(blinkComm_t c);

/* BLINK_TRACE: copy this rank's events back and write them (trace.c). */
static void write_trace(blinkComm_t c)
{
    struct bk_be *be = c->be;
    struct bk_trace_ring head;
    if (quiet(cudaMemcpy(&head, be->trace, offsetof(struct bk_trace_ring, rec),
                         cudaMemcpyDeviceToHost)) != cudaSuccess)
        return;
    unsigned long long n = head.head < head.cap ? head.head : head.cap;
    struct bk_trace_rec *rec = (struct bk_trace_rec *)malloc(n ? n * sizeof *rec : 1);
    const char *from = (const char *)be->trace + offsetof(struct bk_trace_ring, rec);
    if (rec && quiet(cudaMemcpy(rec, from, n * sizeof *rec, cudaMemcpyDeviceToHost)) ==
                   cudaSuccess)
        bk_trace_write(c, "cuda", "globaltimer", rec, head.head, head.cap);
    free(rec);
}

static void rank_free(blinkComm_t c)
{
    struct bk_be *be = c->be;
    if (!be)
        return;
    int old = quiet_enter(be->dev);
    (void)finish_last(c); /* before the segments go; bounded by the kernel's own timeout */
    bk_proxy_stop(be->px); /* its last sends leave (bounded), then the mirrors may go */
    be->px = NULL;
    for (int q = 0; q < c->nranks && be->mirror; q++)
        bk_hostmem_mirror_free(be->mirror[q]);
    if (be->aux)
        quiet(cudaStreamSynchronize(be->aux));
    if (be->trace) {
        write_trace(c);
        quiet(cudaFree(be->trace));
    }
    bk_cuda_reg_free(c);
    for (int q = 0; q < c->nranks && be->opened; q++)
        if (be->opened[q])
            quiet(cudaIpcCloseMemHandle(be->opened[q]));
    for (int q = 0; q < c->nranks && be->hs; q++)
        bk_hostmem_unmap(&be->hs[q]);
    if (be->own)
        quiet(cudaFree(be->own));
    if (be->tables)
        quiet(cudaFree(be->tables));
    if (be->pinned)
        quiet(cudaFreeHost(be->pinned));
    if (be->aux)
        quiet(cudaStreamDestroy(be->aux));
    quiet_leave(old);
    pthread_mutex_destroy(&be->mu);
    free(be->k.sets);
    free(be->opened);
    free(be->hs);
    free(be->hreach);
    free(be->dseg);
    free(be->dhseg);
    free(be->hhost);
    free(be->mirror);
    free(be);
    c->be = NULL;
}

/* ------------------------------------------------------------------ calls */

static void host_abort(blinkComm_t c, const char *msg, int own_only);
static blinkResult_t query_last(struct bk_be *be, int *done);
static void check_gone(blinkComm_t c);

/* Wait for this rank's launches, at most BLINK_TIMEOUT_S and a margin (the kernel's own
 * timeout ends every wait before that). */
static blinkResult_t finish_last(blinkComm_t c)
{
    struct bk_be *be = c->be;
    double until = bk_now() + c->env.timeout_s + 5;
    int done = 0;
    blinkResult_t r;
    while ((r = query_last(be, &done)) == blinkSuccess && !done) {
        if (bk_now() > until)
            return bk_error(blinkSystemError, "CUDA backend: rank %d's last call (%u) did not "
                            "finish within BLINK_TIMEOUT_S (%g s)", c->rank, be->last_seq,
                            c->env.timeout_s);
        check_gone(c);
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    return r;
}


/* A call: one launch on the user's stream. A launch being captured is not counted: it runs
 * when the user replays the graph, and each replay counts itself in kstatus.finished. */
static blinkResult_t issue(struct bk_be *be, const kparams *p, int blocks, size_t smem,
                           cudaStream_t us)
{
    be->launched = 0;
    ENTER(be->dev);
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    CU(cudaStreamIsCapturing(us, &cs));
    kernel_for((int)p->d[3] /* dt */)<<<blocks, KTHREADS, smem, us>>>(*p);
    CU(cudaGetLastError());
    be->launched = 1;
    if (cs == cudaStreamCaptureStatusNone)
        be->issued++;
    else
        be->captured = 1;
    LEAVE();
}

static void abort_rank(blinkComm_t c, const char *msg);

/* A cluster's first launch: every slot's segment table (all segments are mapped now) and the
 * network proxy (the MPI communicator is made now); then each call is queued for it, before
 * its launch. A captured call would run at a replay the proxy never hears of: refused. */
static blinkResult_t net_launch(blinkComm_t c, const struct bk_launch *L, cudaStream_t us)
{
    struct bk_be *be = c->be;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (quiet(cudaStreamIsCapturing(us, &cs)) == cudaSuccess && cs != cudaStreamCaptureStatusNone)
        return bk_error(blinkInvalidUsage, "%s: a call whose plan spans servers cannot be "
                        "captured in a CUDA graph (its network proxy serves calls as they are "
                        "issued)", bk_coll_name((int)L->d.coll));
    if (be->px)
        return bk_proxy_post(be->px, L);
    blinkResult_t r = bk_cuda_net_tables(c);
    if (r != blinkSuccess)
        return r;
    struct bk_proxy_mem mem = {be->hhost, (unsigned char *const *)be->mirror, abort_rank};
    r = bk_proxy_start(c, &mem, &be->px);
    return r == blinkSuccess ? bk_proxy_post(be->px, L) : r;
}

static blinkResult_t launch(blinkComm_t c, const struct bk_launch *L, void *user)
{
    struct bk_be *be = c->be;
    cudaStream_t us = (cudaStream_t)user;
    int blocks = kblocks_for(be->max_blocks, be->k.sets[L->set_index].ntrees, (int)L->d.coll);
    struct kparams p;
    kparams_fill(&p, c, &be->k, L, blocks, be->dstatus);
    size_t smem = ksmem(p.tpb, c->nranks);
    p.trace = be->trace;
    be->last_seq = (uint32_t)L->d.seq;
    be->last_coll = (int)L->d.coll;
    c->ops = 0;
    /* A communicator's calls run one after another: on another stream than the last one, the
     * host waits for the last launch first (calls on one stream, the usual case, cost nothing). */
    blinkResult_t r = blinkSuccess;
    be->launched = 0;
    if (us != be->last_stream &&
        (int)(((const volatile struct kstatus *)be->status)->finished - be->issued) < 0)
        r = finish_last(c);
    if (r == blinkSuccess && c->nremote > 0) {
        int old = quiet_enter(be->dev);
        r = net_launch(c, L, us);
        quiet_leave(old);
    }
    if (r == blinkSuccess && be->reg.slot) {
        /* Registered: open what the last launches asked for, but not while the stream is
         * captured (no memory is opened inside a capture: its requests wait a launch). */
        cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        if (quiet(cudaStreamIsCapturing(us, &cs)) == cudaSuccess &&
            cs == cudaStreamCaptureStatusNone)
            kreg_serve(&be->reg, c, ((const volatile struct kstatus *)be->status)->finished,
                       be->issued, !be->captured);
        kreg_params(&p, &be->reg, L);
    }
    if (r == blinkSuccess)
        r = issue(be, &p, blocks, smem, us);
    be->last_stream = us;
    if (r != blinkSuccess && !be->launched) {
        /* This rank never entered the call: fail it everywhere now, not after the timeout. */
        char msg[BK_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", bk_last_error());
        host_abort(c, msg, 0);
        bk_set_last_error(msg);
    }
    if (r == blinkSuccess)
        c->ops = 1;
    return r;
}

/* The kernel's report, if it failed. */
static blinkResult_t status_error(struct bk_be *be)
{
    const volatile struct kstatus *st = be->status;
    unsigned int code = st ? st->code : 0;
    if (!code)
        return blinkSuccess;
    __sync_synchronize(); /* the message was written before the code */
    char msg[BK_MSG_MAX];
    for (int i = 0; i < BK_MSG_MAX; i++)
        msg[i] = st->msg[i];
    msg[BK_MSG_MAX - 1] = '\0';
    blinkResult_t r = code == blinkInvalidUsage ? blinkInvalidUsage
                      : code == blinkRemoteError ? blinkRemoteError : blinkSystemError;
    return bk_error(r, "%s", msg);
}

/* Write abort words (and this rank's reason) from the host, with copies on the aux stream, so
 * it works while a kernel spins. own_only: stop this rank's kernel alone. */
static void host_abort(blinkComm_t c, const char *msg, int own_only)
{
    struct bk_be *be = c->be;
    if (!be || !be->aux || !be->scratch || !c->peer || !c->peer[c->prank].seg)
        return;
    int old = quiet_enter(be->dev);
    pthread_mutex_lock(&be->mu);
    struct hscratch *h = be->scratch;
    unsigned char *me = c->peer[c->prank].seg;
    uint32_t mine = (uint32_t)c->prank + 1;
    int ok = quiet(cudaMemcpyAsync(&h->word, me + H_ABORT, 4, cudaMemcpyDefault, be->aux)) ==
                 cudaSuccess &&
             quiet(cudaStreamSynchronize(be->aux)) == cudaSuccess;
    if (ok && h->word == 0) {
        snprintf(h->msg, sizeof h->msg, "%s", msg);
        quiet(cudaMemcpyAsync(me + H_MSG, h->msg, strlen(h->msg) + 1, cudaMemcpyDefault,
                              be->aux));
        quiet(cudaStreamSynchronize(be->aux));
    }
    for (int i = 0; i < (own_only ? 1 : c->nranks); i++) {
        int v = (i + c->prank) % c->nranks; /* this rank's own header first */
        unsigned char *seg = c->peer[v].seg;
        if (!seg)
            continue; /* not mapped: init failed before it */
        if (quiet(cudaMemcpyAsync(&h->word, seg + H_ABORT, 4, cudaMemcpyDefault, be->aux)) ||
            quiet(cudaStreamSynchronize(be->aux)) || h->word != 0)
            continue;
        h->word = mine;
        quiet(cudaMemcpyAsync(seg + H_ABORT, &h->word, 4, cudaMemcpyDefault, be->aux));
        quiet(cudaStreamSynchronize(be->aux));
    }
    pthread_mutex_unlock(&be->mu);
    quiet_leave(old);
}

/* A peer process that exited while this rank's kernel runs: stop the kernel (its own abort
 * word, with the reason), so the call fails now instead of after BLINK_TIMEOUT_S. */
static void check_gone(blinkComm_t c)
{
    struct bk_be *be = c->be;
    double now = bk_now();
    if (now - be->last_gone_check < 0.1)
        return;
    be->last_gone_check = now;
    for (int q = 0; q < c->nranks; q++) /* a pid of another server means nothing here */
        if (!c->peer[q].remote && c->peer[q].pid != getpid() && bk_pid_gone(c->peer[q].pid)) {
            char msg[BK_MSG_MAX];
            snprintf(msg, sizeof msg, "rank %d (pid %d, device %d) exited during %s (call %u)",
                     c->user_of[q], c->peer[q].pid, c->peer[q].topo_dev,
                     bk_coll_name(be->last_coll), be->last_seq);
            host_abort(c, msg, 1);
            return;
        }
}

/* Where this rank's launches are: 1 all done (or none issued), 0 one running, or an error.
 * A lost context (a sticky error) never finishes a launch, so it is asked for on the aux
 * stream, which holds no work of its own. */
static blinkResult_t query_last(struct bk_be *be, int *done)
{
    const volatile struct kstatus *st = be->status;
    *done = !st || (int)(st->finished - be->issued) >= 0;
    if (*done || !be->aux)
        return blinkSuccess;
    cudaError_t e = cudaStreamQuery(be->aux);
    if (e == cudaSuccess || e == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return blinkSuccess;
    }
    *done = 1;
    return cuda_fail(e, "cudaStreamQuery", __LINE__); /* a sticky error: the context is lost */
}

static blinkResult_t wait_last(blinkComm_t c)
{
    struct bk_be *be = c->be;
    int old = quiet_enter(be->dev), done = 0;
    long pause_ns = 2000;
    blinkResult_t r;
    while ((r = query_last(be, &done)) == blinkSuccess && !done) {
        check_gone(c);
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        pause_ns = pause_ns < 1000000 ? pause_ns * 2 : pause_ns;
    }
    quiet_leave(old);
    return r != blinkSuccess ? r : status_error(be);
}

static blinkResult_t async_error(blinkComm_t c)
{
    struct bk_be *be = c->be;
    blinkResult_t r = status_error(be);
    if (r != blinkSuccess)
        return r;
    int old = quiet_enter(be->dev), done = 1;
    r = query_last(be, &done);
    if (r == blinkSuccess && !done)
        check_gone(c);
    quiet_leave(old);
    return r;
}

static void abort_rank(blinkComm_t c, const char *msg)
{
    host_abort(c, msg, 0);
    bk_proxy_abort(c->be ? c->be->px : NULL, msg); /* the other servers */
}

static const struct bk_backend cuda_backend = {
    "cuda", 0, 2, 1, 1, 2, 2, configure, current_device, bus_id, rank_init, rank_free,
    bk_cuda_seg_create, bk_cuda_seg_open, bk_cuda_seg_unlink, launch, wait_last, async_error,
    abort_rank,
};

extern "C" const struct bk_backend *bk_backend(void) { return &cuda_backend; }
