/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * backend.h - what the backend-independent core (comm.c, call.c) asks of a backend: one rank's
 * execution resources, its exported segment and its peers' mapped segments, and one call, run
 * by the protocol of proto.h as one launch.
 *
 * The host backend (backend_host.c with exec_host.c: threads play the threadblocks, atomics the
 * flags, POSIX shared memory the peer mappings) and the CUDA backend (backend_cuda.cu: one
 * kernel launch per call, CUDA IPC) implement the same table; exactly one is linked into a
 * runtime library and bk_backend() returns it. Every function returns blinkSuccess or an error
 * whose message it has stored with bk_error (rt.h).
 */
#ifndef BK_BACKEND_H
#define BK_BACKEND_H

#include <stddef.h>

#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bk_backend {
    const char *name;
    /* Non-zero where a NULL user stream means "synchronous" (host): the call then returns
     * once this rank's part is done. */
    int null_stream_sync;
    /* How a cluster plan's edges between servers move (net.h): 0 not at all; 1 by the
     * executor itself, in either protocol (host); 2 by the rank's network proxy (proxy.h),
     * whole chunks, so calls of a communicator that spans servers run Simple (CUDA). */
    int net;
    /* Non-zero where a tree is cut into channels (roles.c, bk_channels): the CUDA kernel's
     * blocks gain from more of them; the host's few threads do not, so it runs one per tree. */
    int channels;
    /* Non-zero where the plan's per-size choice of LL applies. blinkc's simulator times LL with
     * a GPU's costs; on CPUs a flag word is cheap and LL's packets halve the copy rate (the
     * host backend measured slower in LL at every size from 1 to 64 KiB), so there LL runs only
     * where BLINK_PROTO=ll asks. */
    int plan_ll;
    /* Where a registered output in memory other processes map takes its data straight from
     * its parent (proto.h, Registered): 1 always (the host backend, whose parents map it as
     * they go); 2 from the call after the parent's kernel asked its host to open the region
     * (the CUDA kernel's, kernel_reg.h); 0 never. */
    int registered;
    /* Whether edges can be host-staged (a hybrid's PCIe trees, GPUs without peer access): 1
     * always (the host backend, whose every edge is in host memory); 2 where BLINK_HOST_STAGED=1
     * asks (the CUDA kernel's, not yet run on a GPU); 0 never. Without them a hybrid range runs
     * its fallback (bk_host_staged). */
    int host_staged;
    /* Read the backend's environment (called by every init). */
    blinkResult_t (*configure)(void);
    /* The physical device the calling thread's rank runs on, or -1 to take the topology's. */
    int (*current_device)(void);
    /* "bus:dev.fn" of a device, for the init exchange ("" where there is none). */
    void (*bus_id)(int dev, char *buf, size_t len);

    /* This rank's execution resources (streams, threads); c->layout and c->sets are ready. */
    blinkResult_t (*rank_init)(blinkComm_t c);
    /* Waits for the rank's work, then frees everything rank_init and seg_* made. */
    void (*rank_free)(blinkComm_t c);

    /* This rank's segment of `bytes`, zeroed except for its header, under name; handle
     * (BK_HANDLE_BYTES) is what a peer's seg_open takes. */
    blinkResult_t (*seg_create)(blinkComm_t c, const char *name, size_t bytes, void **seg,
                                void *handle);
    /* Map peer's segment (same_process: seg_ptr is already an address valid here). */
    blinkResult_t (*seg_open)(blinkComm_t c, int peer, const char *name, const void *handle,
                              size_t bytes, int same_process, void *seg_ptr, void **seg);
    /* Remove the name of this rank's segment once every peer has mapped it. */
    void (*seg_unlink)(const char *name);

    /* One call: ordered after the work on the user's stream, then one launch of the protocol,
     * and the user's stream ordered after it. Counts what it issued in c->ops. */
    blinkResult_t (*launch)(blinkComm_t c, const struct bk_launch *L, void *user_stream);
    /* Block until this rank's last launch is done; its error, if it failed (NULL streams). */
    blinkResult_t (*wait)(blinkComm_t c);
    /* The rank's asynchronous error: blinkSuccess, or what failed a launch (message stored). */
    blinkResult_t (*async_error)(blinkComm_t c);
    /* Tell every rank to stop (their waits fail with msg), and stop this rank's own work. */
    void (*abort)(blinkComm_t c, const char *msg);
};

const struct bk_backend *bk_backend(void);

/* Whether c's calls may run host-staged edges (bk_backend.host_staged). */
static inline int bk_host_staged(blinkComm_t c)
{
    int h = bk_backend()->host_staged;
    return h == 1 || (h == 2 && c->env.host_staged == 1);
}

#ifdef __cplusplus
}
#endif

#endif
