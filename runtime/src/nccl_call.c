/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_call.c - handing a call to NCCL, for the message sizes where blinkc's plan found NCCL's
 * rings faster than its trees (blink_plan.h, ranges). Built with NCCL only into libblinkrt-cuda
 * where configure found NCCL beside nvcc (BLINK_WITH_NCCL); everywhere else the functions say
 * there is no NCCL and the runtime runs the planner's rings itself (choose.c).
 *
 * One NCCL communicator per rank comes from ncclCommInitAll over the ranks' devices at
 * blinkCommInitAll. NCCL refuses two ranks on one device (BLINK_DEVICE_MAP can ask for that);
 * then, or on any other NCCL failure at init, the communicator set goes on without NCCL and
 * says so under BLINK_DEBUG=WARN. A call hands every rank's part to NCCL in one group, as
 * NCCL's single-process multi-GPU use requires, on each rank's own stream.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rt.h"

#if defined(BLINK_BACKEND_CUDA) && defined(BLINK_WITH_NCCL)
#include <nccl.h>

struct bk_nccl {
    ncclComm_t *comms; /* [nranks] */
};

static int duplicate_devices(const struct bk_commset *cs)
{
    for (int i = 0; i < cs->nranks; i++)
        for (int j = 0; j < i; j++)
            if (cs->devs[i] == cs->devs[j])
                return 1;
    return 0;
}

void bk_nccl_init(struct bk_commset *cs)
{
    cs->nccl = NULL;
    const char *why = NULL;
    struct bk_nccl *n = calloc(1, sizeof *n);
    if (n)
        n->comms = calloc((size_t)cs->nranks, sizeof *n->comms);
    if (!n || !n->comms)
        why = "out of memory";
    else if (duplicate_devices(cs))
        why = "two ranks share a device (BLINK_DEVICE_MAP), which NCCL refuses";
    else {
        ncclResult_t r = ncclCommInitAll(n->comms, cs->nranks, cs->devs);
        if (r != ncclSuccess)
            why = ncclGetErrorString(r);
    }
    if (!why) {
        cs->nccl = n;
        return;
    }
    if (n)
        free(n->comms);
    free(n);
    if (cs->log_level >= 1)
        fprintf(stderr, "blink WARN no NCCL for this communicator set (%s): the plan's ring "
                "sizes run the planner's rings\n", why);
}

void bk_nccl_free(struct bk_commset *cs)
{
    struct bk_nccl *n = cs->nccl;
    if (!n)
        return;
    for (int i = 0; i < cs->nranks; i++)
        if (n->comms[i])
            ncclCommDestroy(n->comms[i]);
    free(n->comms);
    free(n);
    cs->nccl = NULL;
}

/* blink's datatypes and operations carry NCCL's numbers; the switches keep that explicit. */
static ncclDataType_t nccl_type(blinkDataType_t dt)
{
    switch (dt) {
    case blinkInt8: return ncclInt8;
    case blinkUint8: return ncclUint8;
    case blinkInt32: return ncclInt32;
    case blinkUint32: return ncclUint32;
    case blinkInt64: return ncclInt64;
    case blinkUint64: return ncclUint64;
    case blinkFloat16: return ncclFloat16;
    case blinkFloat32: return ncclFloat32;
    case blinkFloat64: return ncclFloat64;
    default: return ncclBfloat16;
    }
}

static ncclRedOp_t nccl_op(blinkRedOp_t op)
{
    switch (op) {
    case blinkSum: return ncclSum;
    case blinkProd: return ncclProd;
    case blinkMax: return ncclMax;
    case blinkMin: return ncclMin;
    default: return ncclAvg;
    }
}

static ncclResult_t one_call(const struct bk_args *a, ncclComm_t c)
{
    cudaStream_t s = (cudaStream_t)a->stream;
    ncclDataType_t t = nccl_type(a->dt);
    switch (a->coll) {
    case BLINK_PLAN_BROADCAST: return ncclBroadcast(a->send, a->recv, a->count, t, a->root, c, s);
    case BLINK_PLAN_REDUCE:
        return ncclReduce(a->send, a->recv, a->count, t, nccl_op(a->op), a->root, c, s);
    case BLINK_PLAN_ALLREDUCE:
        return ncclAllReduce(a->send, a->recv, a->count, t, nccl_op(a->op), c, s);
    case BLINK_PLAN_ALLGATHER: return ncclAllGather(a->send, a->recv, a->count, t, c, s);
    default: return ncclReduceScatter(a->send, a->recv, a->count, t, nccl_op(a->op), c, s);
    }
}

blinkResult_t bk_nccl_launch(struct bk_commset *cs, const struct bk_args *a)
{
    struct bk_nccl *n = cs->nccl;
    ncclResult_t r = ncclGroupStart();
    for (int v = 0; r == ncclSuccess && v < cs->nranks; v++)
        r = one_call(&a[v], n->comms[v]);
    ncclResult_t e = ncclGroupEnd();
    if (r == ncclSuccess)
        r = e;
    if (r == ncclSuccess)
        return blinkSuccess;
    /* NCCL's result codes and blink's share their values. */
    return bk_error((blinkResult_t)r, "%s: NCCL failed: %s", bk_coll_name(a[0].coll),
                    ncclGetErrorString(r));
}

#else

void bk_nccl_init(struct bk_commset *cs)
{
    cs->nccl = NULL;
}

void bk_nccl_free(struct bk_commset *cs)
{
    (void)cs;
}

blinkResult_t bk_nccl_launch(struct bk_commset *cs, const struct bk_args *a)
{
    (void)cs;
    return bk_error(blinkInternalError, "%s: this runtime was built without NCCL",
                    bk_coll_name(a[0].coll));
}

#endif
