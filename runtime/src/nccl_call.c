/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_call.c - handing a call to NCCL, for the message sizes where blinkc's plan found NCCL's
 * rings faster than its trees (blink_plan.h, ranges). Built with NCCL only into libblinkrt-cuda
 * where configure found NCCL beside nvcc (BLINK_WITH_NCCL); everywhere else the functions say
 * there is no NCCL and the runtime runs the planner's rings itself (choose.c).
 *
 * Each rank holds one NCCL communicator from ncclCommInitRank, with the ncclUniqueId that user
 * rank 0 made and the init rendezvous carried (comm.c). NCCL refuses two ranks on one device
 * (virtual ranks); then, or on any other NCCL failure at init, the rank goes on without NCCL
 * and says so under BLINK_DEBUG=WARN. A call goes to NCCL on the user's stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

#if defined(BLINK_BACKEND_CUDA) && defined(BLINK_WITH_NCCL)
#include <nccl.h>

struct bk_nccl {
    ncclComm_t comm;
};

int bk_nccl_id(void *id)
{
    ncclUniqueId u;
    if (ncclGetUniqueId(&u) != ncclSuccess)
        return 0;
    memcpy(id, &u, sizeof u < BK_NCCL_ID_BYTES ? sizeof u : BK_NCCL_ID_BYTES);
    return 1;
}

void bk_nccl_init(blinkComm_t c, const void *id)
{
    const char *why = NULL;
    struct bk_nccl *n = calloc(1, sizeof *n);
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    if (!n) {
        why = "out of memory";
    } else {
        ncclResult_t r = ncclCommInitRank(&n->comm, c->nranks, u, c->rank);
        if (r != ncclSuccess)
            why = ncclGetErrorString(r);
    }
    if (!why) {
        c->nccl = n;
        return;
    }
    free(n);
    if (c->env.log_level >= 1)
        fprintf(stderr, "blink WARN rank %d: no NCCL (%s): the plan's ring sizes run the "
                "planner's rings\n", c->rank, why);
}

void bk_nccl_free(blinkComm_t c)
{
    if (!c->nccl)
        return;
    ncclCommDestroy(c->nccl->comm);
    free(c->nccl);
    c->nccl = NULL;
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

blinkResult_t bk_nccl_launch(blinkComm_t c, const struct bk_args *a)
{
    ncclResult_t r = one_call(a, c->nccl->comm);
    if (r == ncclSuccess)
        return blinkSuccess;
    /* NCCL's result codes and blink's share their values. */
    return bk_error((blinkResult_t)r, "%s: NCCL failed: %s", bk_coll_name(a->coll),
                    ncclGetErrorString(r));
}

#else

int bk_nccl_id(void *id)
{
    (void)id;
    return 0;
}

void bk_nccl_init(blinkComm_t c, const void *id)
{
    (void)c;
    (void)id;
}

void bk_nccl_free(blinkComm_t c)
{
    (void)c;
}

blinkResult_t bk_nccl_launch(blinkComm_t c, const struct bk_args *a)
{
    (void)c;
    return bk_error(blinkInternalError, "%s: this runtime was built without NCCL",
                    bk_coll_name(a->coll));
}

#endif
