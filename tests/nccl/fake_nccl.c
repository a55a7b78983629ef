/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fake_nccl.c - a stand-in for NVIDIA's libnccl.so.2, for the drop-in's hand-off tests
 * (test_nccl_api): the functions nccl_real.c requires, exported as libnccl exports them
 * (pncclX defined, ncclX a weak alias), touching no buffer; fake_nccl_inits, _sends, _recvs,
 * _allreduces and _destroys count the calls that reached it. Its communicators are tokens of this library, so a drop-in
 * communicator passed here, or a call of ours that ends in the drop-in, shows in the counts.
 */
#include <string.h>

#include "nccl.h"

#define COUNTER(x) int fake_nccl_##x;
COUNTER(inits) COUNTER(sends) COUNTER(recvs) COUNTER(allreduces) COUNTER(destroys)

/* Every communicator this library made: comms[rank] for ranks up to 63. */
static struct ncclComm {
    int rank;
} comms[64];

static int ours(ncclComm_t c) { return c >= comms && c < comms + 64; }

#define COUNT(x) __atomic_add_fetch(&fake_nccl_##x, 1, __ATOMIC_SEQ_CST)
#define FAKE(ret, name, params) \
    ret p##name params; \
    ret name params __attribute__((weak, alias("p" #name))); \
    ret p##name params

FAKE(ncclResult_t, ncclGetVersion, (int *v)) { return *v = 22809, ncclSuccess; }
FAKE(ncclResult_t, ncclGetUniqueId, (ncclUniqueId *id))
{
    memset(id, 0, sizeof *id);
    memcpy(id->internal, "fake-nccl", 9);
    return ncclSuccess;
}
FAKE(const char *, ncclGetErrorString, (ncclResult_t r)) { return r ? "fake error" : "no error"; }
FAKE(ncclResult_t, ncclCommInitRankConfig,
     (ncclComm_t *c, int n, ncclUniqueId id, int rank, ncclConfig_t *config))
{
    (void)n, (void)config;
    if (memcmp(id.internal, "fake-nccl", 9) || rank < 0 || rank >= 64)
        return ncclInvalidArgument;
    COUNT(inits);
    comms[rank].rank = rank;
    *c = &comms[rank];
    return ncclSuccess;
}
FAKE(ncclResult_t, ncclCommDestroy, (ncclComm_t c))
{
    COUNT(destroys);
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclCommAbort, (ncclComm_t c)) { return ours(c) ? ncclSuccess : ncclInvalidArgument; }
FAKE(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t c, ncclResult_t *e))
{
    *e = ncclSuccess;
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclRedOpCreatePreMulSum,
     (ncclRedOp_t *op, void *s, ncclDataType_t t, ncclScalarResidence_t r, ncclComm_t c))
{
    (void)s, (void)t, (void)r;
    *op = ncclNumOps;
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t c))
{
    (void)op;
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclReduce, (const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                                int root, ncclComm_t c, cudaStream_t st))
{
    (void)s, (void)r, (void)n, (void)t, (void)op, (void)root, (void)st;
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclBroadcast, (const void *s, void *r, size_t n, ncclDataType_t t, int root,
                                   ncclComm_t c, cudaStream_t st))
{
    (void)s, (void)r, (void)n, (void)t, (void)root, (void)st;
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclAllReduce, (const void *s, void *r, size_t n, ncclDataType_t t,
                                   ncclRedOp_t op, ncclComm_t c, cudaStream_t st))
{
    (void)s, (void)r, (void)n, (void)t, (void)op, (void)st;
    COUNT(allreduces);
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclReduceScatter, (const void *s, void *r, size_t n, ncclDataType_t t,
                                       ncclRedOp_t op, ncclComm_t c, cudaStream_t st))
{
    (void)s, (void)r, (void)n, (void)t, (void)op, (void)st;
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclAllGather, (const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t c,
                                   cudaStream_t st))
{
    (void)s, (void)r, (void)n, (void)t, (void)st;
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclSend, (const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                              cudaStream_t st))
{
    (void)s, (void)n, (void)t, (void)peer, (void)st;
    COUNT(sends);
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclRecv, (void *r, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                              cudaStream_t st))
{
    (void)r, (void)n, (void)t, (void)peer, (void)st;
    COUNT(recvs);
    return ours(c) ? ncclSuccess : ncclInvalidArgument;
}
FAKE(ncclResult_t, ncclGroupStart, (void)) { return ncclSuccess; }
FAKE(ncclResult_t, ncclGroupEnd, (void)) { return ncclSuccess; }
