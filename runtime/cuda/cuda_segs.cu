/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cuda_segs.cu - the CUDA backend's segments: each rank's device segment (cudaMalloc, CUDA IPC
 * for peers in other processes, the owner's pointer in its own), its host segment where edges
 * are host-staged (cuda_hostmem.h), the kernel's tables of both, and, across servers, the
 * mirrors of remote peers and each tree slot's segment table (proxy.h); and the peers'
 * registered regions this rank opens (kernel_reg.h).
 */
#include <string.h>

#define BK_CUDA_FILE "cuda_segs.cu"
#include "backend_cuda.h"

/* ------------------------------------------------------------------ segments */

static void put_header(blinkComm_t c, struct bk_seg_header *h)
{
    memset(h, 0, sizeof *h);
    h->magic = BK_SEG_MAGIC;
    h->rank = (uint32_t)c->prank;
    h->nranks = (uint32_t)c->nranks;
}

blinkResult_t bk_cuda_seg_create(blinkComm_t c, const char *name, size_t bytes, void **seg,
                                void *handle)
{
    struct bk_be *be = c->be;
    int use = be->hs_use;
    unsigned char *hdev = NULL;
    memset(handle, 0, BK_HANDLE_BYTES);
    ENTER(be->dev);
    if (use != HS_NONE) {
        blinkResult_t r = bk_hostmem_map(name, bytes, 1, &be->hs[c->prank], &hdev);
        if (r != blinkSuccess) {
            cudaSetDevice(old_);
            return r;
        }
        if (use == HS_INSTEAD) { /* the segment itself: named, so no IPC handle */
            put_header(c, (struct bk_seg_header *)be->hs[c->prank].host);
            CU(cudaMemcpy(&be->k.seg[c->prank], &hdev, sizeof hdev, cudaMemcpyHostToDevice));
            CU(cudaMemcpy(&be->k.hseg[c->prank], &hdev, sizeof hdev, cudaMemcpyHostToDevice));
            be->dseg[c->prank] = be->dhseg[c->prank] = hdev;
            be->hhost[c->prank] = (unsigned char *)be->hs[c->prank].host;
            *seg = hdev;
            LEAVE();
        }
    }
    void *p = NULL;
    CU(cudaMalloc(&p, bytes));
    be->own = (unsigned char *)p;
    CU(cudaMemset(p, 0, bytes));
    struct bk_seg_header h;
    put_header(c, &h);
    CU(cudaMemcpy(p, &h, sizeof h, cudaMemcpyHostToDevice));
    cudaIpcMemHandle_t ipc;
    CU(cudaIpcGetMemHandle(&ipc, p));
    memcpy(handle, &ipc, sizeof ipc);
    CU(cudaMemcpy(&be->k.seg[c->prank], &p, sizeof p, cudaMemcpyHostToDevice));
    void *hp = use == HS_BESIDE ? (void *)hdev : p;
    CU(cudaMemcpy(&be->k.hseg[c->prank], &hp, sizeof hp, cudaMemcpyHostToDevice));
    be->dseg[c->prank] = (unsigned char *)p;
    be->dhseg[c->prank] = (unsigned char *)hp;
    be->hhost[c->prank] = (unsigned char *)be->hs[c->prank].host;
    *seg = p;
    LEAVE();
}

blinkResult_t bk_cuda_seg_open(blinkComm_t c, int peer, const char *name, const void *handle,
                              size_t bytes, int same_process, void *seg_ptr, void **seg)
{
    struct bk_be *be = c->be;
    int use = be->hs_use;
    void *p = seg_ptr;
    if (use != HS_INSTEAD && !same_process && !be->hreach[peer]) {
        /* No tree edge leads there (rank_init checked) and this device cannot reach it: leave
         * it unmapped; the host's abort skips it, the kernel never touches it. */
        *seg = NULL;
        return blinkSuccess;
    }
    ENTER(be->dev);
    unsigned char *hdev = NULL;
    if (use != HS_NONE) { /* every process maps the host segment itself, registered here */
        blinkResult_t r = bk_hostmem_map(name, bytes, 0, &be->hs[peer], &hdev);
        if (r != blinkSuccess) {
            cudaSetDevice(old_);
            return r;
        }
    }
    if (use == HS_INSTEAD) {
        p = hdev;
    } else if (!same_process) {
        cudaIpcMemHandle_t ipc;
        memcpy(&ipc, handle, sizeof ipc);
        CU(cudaIpcOpenMemHandle(&p, ipc, cudaIpcMemLazyEnablePeerAccess));
        be->opened[peer] = p; /* closed by rank_free, whatever happens next */
    }
    struct bk_seg_header h;
    CU(cudaMemcpy(&h, p, sizeof h, cudaMemcpyDefault));
    if (h.magic != BK_SEG_MAGIC || h.rank != (uint32_t)peer || h.nranks != (uint32_t)c->nranks) {
        cudaSetDevice(old_);
        return bk_error(blinkSystemError, "CUDA backend: the segment rank %d exported (%zu "
                        "bytes) is not its segment", c->user_of[peer], bytes);
    }
    CU(cudaMemcpy(&be->k.seg[peer], &p, sizeof p, cudaMemcpyHostToDevice));
    void *hp = use == HS_NONE ? p : (void *)hdev;
    CU(cudaMemcpy(&be->k.hseg[peer], &hp, sizeof hp, cudaMemcpyHostToDevice));
    be->dseg[peer] = (unsigned char *)p;
    be->dhseg[peer] = (unsigned char *)hp;
    be->hhost[peer] = (unsigned char *)be->hs[peer].host;
    *seg = p;
    LEAVE();
}

/* Host segments have names; device segments none (their IPC handles name them). */
void bk_cuda_seg_unlink(const char *name) { bk_hostmem_unlink(name); }

blinkResult_t bk_cuda_net_tables(blinkComm_t c)
{
    struct bk_be *be = c->be;
    for (int i = 0; i < be->k.nsets; i++) {
        if (!be->k.sets[i].tseg)
            continue;
        size_t cells = (size_t)c->sets[i].ntrees * (size_t)c->nranks;
        unsigned char **t = (unsigned char **)malloc(cells * sizeof *t);
        if (!t)
            return bk_error(blinkSystemError, "CUDA backend: out of memory");
        ktseg_fill(c, i, be->dseg, be->dhseg, be->k.sets[i].staged_slot, t);
        cudaError_t e = cudaMemcpy(be->k.sets[i].tseg, t, cells * sizeof *t,
                                   cudaMemcpyHostToDevice);
        free(t);
        if (e != cudaSuccess)
            return cuda_fail(e, "cudaMemcpy", __LINE__);
    }
    return blinkSuccess;
}

/* ------------------------------------------------------------------ registered regions */

/* What kreg's open returned: a region of another process. */
struct opened_region {
    void *ipc;                    /* cudaIpcOpenMemHandle's */
    int dev;
};

static int reg_open(void *ctx, int peer, const struct kreg_req *rq, void **opened,
                    unsigned char **base, char *why, size_t len)
{
    blinkComm_t c = (blinkComm_t)ctx;
    struct opened_region *o = (struct opened_region *)calloc(1, sizeof *o);
    if (!o) {
        snprintf(why, len, "out of memory");
        return 0;
    }
    (void)peer;
    o->dev = c->be->dev;
    cudaIpcMemHandle_t h;
    memcpy(&h, rq->handle, sizeof h);
    int old = quiet_enter(o->dev);
    cudaError_t e = cudaIpcOpenMemHandle(&o->ipc, h, cudaIpcMemLazyEnablePeerAccess);
    quiet_leave(old);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, len, "cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
        free(o);
        return 0;
    }
    *base = (unsigned char *)o->ipc;
    *opened = o;
    return 1;
}

static void reg_close(void *ctx, void *opened)
{
    (void)ctx;
    struct opened_region *o = (struct opened_region *)opened;
    int old = quiet_enter(o->dev);
    quiet(cudaIpcCloseMemHandle(o->ipc));
    quiet_leave(old);
    free(o);
}

/* A table slot written on the abort stream, which waits for no kernel, and waited for: the
 * next launch sees it. */
static int reg_put(void *ctx, struct kreg_entry *tab, int k, uint64_t serial, uint64_t base)
{
    struct bk_be *be = ((blinkComm_t)ctx)->be;
    int old = quiet_enter(be->dev);
    uint64_t *w = be->regput; /* pinned: the copies read it before the wait returns */
    w[0] = base;
    w[1] = serial;
    cudaError_t e = serial ? quiet(cudaMemcpyAsync(&tab[k].base, &w[0], 8,
                                                   cudaMemcpyHostToDevice, be->aux))
                           : cudaSuccess;
    if (e == cudaSuccess)
        e = quiet(cudaMemcpyAsync(&tab[k].serial, &w[1], 8, cudaMemcpyHostToDevice, be->aux));
    if (e == cudaSuccess)
        e = quiet(cudaStreamSynchronize(be->aux));
    quiet_leave(old);
    return e == cudaSuccess;
}

blinkResult_t bk_cuda_reg_init(blinkComm_t c)
{
    struct bk_be *be = c->be;
    if (!c->env.direct || c->nremote || c->one_process || c->plan->host_staged)
        return blinkSuccess; /* its calls never write into another process's output */
    size_t bytes = kreg_bytes(c->nranks), tbytes = kreg_tab_bytes(c->nranks);
    void *dp = NULL;
    ENTER(be->dev);
    CU(cudaHostAlloc(&be->regmem, bytes + 2 * sizeof(uint64_t),
                     cudaHostAllocMapped | cudaHostAllocPortable));
    memset(be->regmem, 0, bytes);
    be->regput = (uint64_t *)((unsigned char *)be->regmem + bytes);
    CU(cudaHostGetDevicePointer(&dp, be->regmem, 0));
    CU(cudaMalloc(&be->regtab, tbytes));
    CU(cudaMemset(be->regtab, 0, tbytes));
    blinkResult_t r = kreg_init(&be->reg, c->nranks, be->regmem, dp,
                                (struct kreg_entry *)be->regtab, reg_open, reg_close, reg_put, c);
    cudaSetDevice(old_);
    return r;
}

void bk_cuda_reg_free(blinkComm_t c)
{
    struct bk_be *be = c->be;
    kreg_free(&be->reg);
    int old = quiet_enter(be->dev);
    if (be->regmem)
        quiet(cudaFreeHost(be->regmem));
    if (be->regtab)
        quiet(cudaFree(be->regtab));
    quiet_leave(old);
    be->regmem = be->regtab = NULL;
}
