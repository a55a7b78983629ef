/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_handoff.c - the NCCL calls libblink-nccl always hands to the real NCCL, because blinkc
 * plans none of them: point-to-point, all-to-all, gather, scatter and NCCL's own reduction
 * operations; with no NCCL they fail with ncclInvalidUsage and say why.
 */
#include <stdio.h>

#include "shim.h"

/* The real NCCL and this rank's communicator in it, or NULL with the error stored. */
static ncclComm_t take(ncclComm_t comm, enum shim_call call, const char *fn)
{
    static const char *const what[CALL_COUNT] = {
        [CALL_SEND] = "point-to-point", [CALL_RECV] = "point-to-point",
        [CALL_ALLTOALL] = "all-to-all", [CALL_GATHER] = "gather", [CALL_SCATTER] = "scatter",
        [CALL_PREMULSUM] = "NCCL's own reduction ops"};
    if (!comm) {
        bk_error(blinkInvalidArgument, "%s: comm is NULL", fn);
        return NULL;
    }
    return shim_hand_off(comm, call, WHY_NOT_PLANNED, what[call], fn) ? shim_real_comm(comm)
                                                                      : NULL;
}

/* The real NCCL's result, its message kept as this thread's last error where it failed. */
static ncclResult_t passed(ncclResult_t r, ncclComm_t real, const char *fn)
{
    const struct bk_real_nccl *n = bk_real_nccl();
    if (r != ncclSuccess && r != ncclInProgress)
        bk_error((blinkResult_t)r, "%s: NCCL failed: %s%s%s", fn, n->GetErrorString(r),
                 n->GetLastError ? ": " : "", n->GetLastError ? n->GetLastError(real) : "");
    return r;
}

/* A function this NCCL may be too old to have. */
static ncclResult_t missing(const char *fn)
{
    return shim_result(bk_error(blinkInvalidUsage, "%s: the NCCL loaded (version %d) does not "
                                "have it", fn, bk_real_nccl()->version));
}

SHIM_API(ncclSend);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream)
{
    ncclComm_t real = take(comm, CALL_SEND, "ncclSend");
    if (!real)
        return comm ? ncclInvalidUsage : ncclInvalidArgument;
    return passed(bk_real_nccl()->Send(sendbuff, count, datatype, peer, real, stream), real,
                  "ncclSend");
}

SHIM_API(ncclRecv);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream)
{
    ncclComm_t real = take(comm, CALL_RECV, "ncclRecv");
    if (!real)
        return comm ? ncclInvalidUsage : ncclInvalidArgument;
    return passed(bk_real_nccl()->Recv(recvbuff, count, datatype, peer, real, stream), real,
                  "ncclRecv");
}

SHIM_API(ncclAlltoAll);
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    ncclComm_t real = take(comm, CALL_ALLTOALL, "ncclAlltoAll");
    if (!real)
        return comm ? ncclInvalidUsage : ncclInvalidArgument;
    if (!bk_real_nccl()->AlltoAll)
        return missing("ncclAlltoAll");
    return passed(bk_real_nccl()->AlltoAll(sendbuff, recvbuff, count, datatype, real, stream),
                  real, "ncclAlltoAll");
}

SHIM_API(ncclGather);
ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    ncclComm_t real = take(comm, CALL_GATHER, "ncclGather");
    if (!real)
        return comm ? ncclInvalidUsage : ncclInvalidArgument;
    if (!bk_real_nccl()->Gather)
        return missing("ncclGather");
    return passed(bk_real_nccl()->Gather(sendbuff, recvbuff, count, datatype, root, real,
                                         stream), real, "ncclGather");
}

SHIM_API(ncclScatter);
ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm,
                         cudaStream_t stream)
{
    ncclComm_t real = take(comm, CALL_SCATTER, "ncclScatter");
    if (!real)
        return comm ? ncclInvalidUsage : ncclInvalidArgument;
    if (!bk_real_nccl()->Scatter)
        return missing("ncclScatter");
    return passed(bk_real_nccl()->Scatter(sendbuff, recvbuff, count, datatype, root, real,
                                          stream), real, "ncclScatter");
}

/* The op made here is NCCL's number: every later call with it is handed to NCCL too. */
SHIM_API(ncclRedOpCreatePreMulSum);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm)
{
    ncclComm_t real = take(comm, CALL_PREMULSUM, "ncclRedOpCreatePreMulSum");
    if (!real)
        return comm ? ncclInvalidUsage : ncclInvalidArgument;
    return passed(bk_real_nccl()->RedOpCreatePreMulSum(op, scalar, datatype, residence, real),
                  real, "ncclRedOpCreatePreMulSum");
}

SHIM_API(ncclRedOpDestroy);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    ncclComm_t real = comm ? shim_real_comm(comm) : NULL;
    if (!real)
        return shim_result(bk_error(blinkInvalidArgument, "ncclRedOpDestroy: op %d was not made "
                                    "by ncclRedOpCreatePreMulSum on this communicator",
                                    (int)op));
    return passed(bk_real_nccl()->RedOpDestroy(op, real), real, "ncclRedOpDestroy");
}
