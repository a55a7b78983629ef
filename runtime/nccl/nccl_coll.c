/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_coll.c - NCCL's five planned collectives and groups in libblink-nccl: each call runs on
 * blinkc's plan where it can, and is handed to the real NCCL otherwise (shim.h says why).
 */
#include <stdio.h>
#include <string.h>

#include "shim.h"

#ifdef BLINK_BACKEND_CUDA
#include <cuda_runtime.h>
#endif

static const char *const call_names[CALL_COUNT] = {
    "ncclBroadcast", "ncclReduce", "ncclAllReduce", "ncclAllGather", "ncclReduceScatter",
    "ncclSend", "ncclRecv", "ncclAlltoAll", "ncclGather", "ncclScatter",
    "ncclRedOpCreatePreMulSum"};

static const char *const why_text[WHY_COUNT] = {
    "blinkc's plan", "no plan", "datatype", "reduction op", "no schedule",
    "blinkc does not plan it"};

const char *shim_type_name(ncclDataType_t t)
{
    static const char *const names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                        "float16", "float32", "float64", "bfloat16",
                                        "float8e4m3", "float8e5m2"};
    return (unsigned)t < ncclNumTypes ? names[t] : "invalid datatype";
}

ncclComm_t shim_real_comm(const struct ncclComm *c)
{
    return (ncclComm_t)bk_nccl_comm(c->bk);
}

int shim_hand_off(struct ncclComm *c, enum shim_call call, enum shim_why why,
                  const char *detail, const char *fn)
{
    ncclComm_t real = shim_real_comm(c);
    if (bk_logs(&c->bk->env, BK_LOG_INFO, BK_SUB_COLL) && c->bk->rank == 0 &&
        !c->said[call][why]) {
        c->said[call][why] = 1;
        bk_log(BK_LOG_INFO, bk_log_dev(c->bk), "%s: NCCL (%s: %s)%s%s", call_names[call],
               why_text[why], detail, real ? "" : "; there is no NCCL, so the call fails: ",
               real ? "" : bk_nccl_missing(c->bk));
    }
    if (!real)
        bk_error(blinkInvalidUsage, "%s: this call goes to NCCL (%s: %s), and there is none (%s)",
                 fn, why_text[why], detail, bk_nccl_missing(c->bk));
    return real != NULL;
}


/* Where a call runs, and the detail of why for a hand-off. */
static enum shim_why route(const struct ncclComm *c, const struct bk_args *a, char *detail,
                           size_t len)
{
    blinkComm_t b = c->bk;
    if (!b->plan) {
        snprintf(detail, len, "%s", b->plan_why);
        return WHY_NO_PLAN;
    }
    if ((unsigned)a->dt >= blinkNumTypes) {
        snprintf(detail, len, "%s is not one the runtime has", shim_type_name((ncclDataType_t)a->dt));
        return WHY_TYPE;
    }
    if (bk_has_op(a->coll) && (unsigned)a->op >= blinkNumOps) {
        snprintf(detail, len, "op %d is NCCL's own", (int)a->op);
        return WHY_OP;
    }
    if (bk_is_rooted(a->coll) && a->root >= 0 && a->root < b->nranks &&
        !bk_schedule(b->plan, a->coll, b->plan_of[a->root])) {
        snprintf(detail, len, "the plan has no %s from rank %d", bk_coll_name(a->coll), a->root);
        return WHY_NO_SCHEDULE;
    }
    return WHY_PLAN;
}

/* A communicator of one rank has no plan and needs none: every collective is a copy. */
static ncclResult_t solo(ncclComm_t comm, enum shim_call call, const struct bk_args *a)
{
    const char *fn = call_names[call];
    if (bk_is_rooted(a->coll) && a->root != 0)
        return shim_result(bk_error(blinkInvalidArgument, "%s: root %d of a communicator of "
                                    "one rank", fn, a->root));
    if (bk_logs(&comm->bk->env, BK_LOG_INFO, BK_SUB_COLL) && !comm->said[call][WHY_NO_PLAN]) {
        comm->said[call][WHY_NO_PLAN] = 1;
        bk_log(BK_LOG_INFO, bk_log_dev(comm->bk), "%s: one rank, so a copy", fn);
    }
    if (bk_logs(&comm->bk->env, BK_LOG_TRACE, BK_SUB_COLL))
        bk_trace_call(comm->bk, a, fn, "a copy (one rank)");
    size_t es = (unsigned)a->dt < blinkNumTypes ? bk_dtype_size(a->dt) : 1; /* fp8 */
    size_t bytes = a->count * es;
    if (!bytes || a->send == a->recv)
        return ncclSuccess;
#ifdef BLINK_BACKEND_CUDA
    cudaError_t e = cudaMemcpyAsync(a->recv, a->send, bytes, cudaMemcpyDefault,
                                    (cudaStream_t)a->stream);
    if (e != cudaSuccess)
        return shim_result(bk_error(blinkUnhandledCudaError, "%s: cudaMemcpyAsync: %s", fn,
                                    cudaGetErrorString(e)));
#else
    if (a->stream && blinkHostStreamSynchronize((blinkStream_t)a->stream) != blinkSuccess)
        return shim_result(blinkInvalidArgument);
    memmove(a->recv, a->send, bytes);
#endif
    return ncclSuccess;
}

static ncclResult_t collective(ncclComm_t comm, enum shim_call call, struct bk_args *a)
{
    const char *fn = call_names[call];
    if (!comm)
        return shim_result(bk_error(blinkInvalidArgument, "%s: comm is NULL", fn));
    if ((unsigned)a->dt >= ncclNumTypes)
        return shim_result(bk_error(blinkInvalidArgument, "%s: datatype %d invalid", fn,
                                    (int)a->dt));
    char detail[BK_MSG_MAX];
    enum shim_why why = route(comm, a, detail, sizeof detail);
    if (why == WHY_PLAN)
        return shim_result(bk_call(comm->bk, a, fn));
    if (why == WHY_NO_PLAN && comm->bk->nranks == 1 && !shim_real_comm(comm) &&
        (!bk_has_op(a->coll) || (unsigned)a->op < blinkNumOps))
        return solo(comm, call, a);
    if (!shim_hand_off(comm, call, why, detail, fn))
        return ncclInvalidUsage;
    if (bk_logs(&comm->bk->env, BK_LOG_TRACE, BK_SUB_COLL)) {
        char runs[BK_MSG_MAX + 64];
        snprintf(runs, sizeof runs, "NCCL (%s: %s)", why_text[why], detail);
        bk_trace_call(comm->bk, a, fn, runs);
    }
    return shim_result(bk_nccl_launch(comm->bk, a));
}

SHIM_API(ncclBroadcast);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_BROADCAST, root, sendbuff, recvbuff, count,
                        (blinkDataType_t)datatype, blinkSum, (void *)stream};
    return collective(comm, CALL_BROADCAST, &a);
}

SHIM_API(ncclBcast);
ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream)
{
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

SHIM_API(ncclReduce);
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_REDUCE, root, sendbuff, recvbuff, count,
                        (blinkDataType_t)datatype, (blinkRedOp_t)op, (void *)stream};
    return collective(comm, CALL_REDUCE, &a);
}

SHIM_API(ncclAllReduce);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_ALLREDUCE, -1, sendbuff, recvbuff, count,
                        (blinkDataType_t)datatype, (blinkRedOp_t)op, (void *)stream};
    return collective(comm, CALL_ALLREDUCE, &a);
}

SHIM_API(ncclAllGather);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_ALLGATHER, -1, sendbuff, recvbuff, sendcount,
                        (blinkDataType_t)datatype, blinkSum, (void *)stream};
    return collective(comm, CALL_ALLGATHER, &a);
}

SHIM_API(ncclReduceScatter);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_REDUCESCATTER, -1, sendbuff, recvbuff, recvcount,
                        (blinkDataType_t)datatype, (blinkRedOp_t)op, (void *)stream};
    return collective(comm, CALL_REDUCESCATTER, &a);
}

/* ------------------------------------------------------------------ groups */

/* blink's group defers the planned calls to its end; the real NCCL's group, open at the same
 * time, takes the hand-offs and whatever the runtime gives NCCL at blink's group end. */
SHIM_API(ncclGroupStart);
ncclResult_t ncclGroupStart(void)
{
    const struct bk_real_nccl *real = bk_real_nccl();
    blinkResult_t r = blinkGroupStart();
    if (r == blinkSuccess && real)
        return real->GroupStart();
    return shim_result(r);
}

static ncclResult_t group_end(ncclSimInfo_t *sim)
{
    const struct bk_real_nccl *real = bk_real_nccl();
    blinkResult_t r = blinkGroupEnd();
    char msg[BK_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", bk_last_error());
    ncclResult_t n = ncclSuccess;
    if (real && sim && real->GroupSimulateEnd)
        n = real->GroupSimulateEnd(sim);
    else if (real)
        n = real->GroupEnd();
    else if (sim)
        sim->estimatedTime = NCCL_UNDEF_FLOAT;
    if (r != blinkSuccess) {
        bk_set_last_error(msg);
        return shim_result(r);
    }
    if (n != ncclSuccess && n != ncclInProgress)
        bk_error((blinkResult_t)n, "ncclGroupEnd: NCCL failed: %s", real->GetErrorString(n));
    return n;
}

SHIM_API(ncclGroupEnd);
ncclResult_t ncclGroupEnd(void)
{
    return group_end(NULL);
}

SHIM_API(ncclGroupSimulateEnd);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    if (!simInfo)
        return shim_result(bk_error(blinkInvalidArgument, "ncclGroupSimulateEnd: simInfo is "
                                    "NULL"));
    return group_end(simInfo);
}
