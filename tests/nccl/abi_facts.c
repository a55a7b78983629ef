/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * abi_facts.c - NCCL's ABI as one nccl.h declares it: enum values, struct sizes and field
 * offsets, initializer values. Compiled twice, once against NVIDIA's nccl.h and once against
 * libblink-nccl's (ABI_TABLE names the table each time); test_nccl_abi compares the two.
 */
#include <stddef.h>

#include <nccl.h>

#include "abi_facts.h"

#define V(x) {#x, (long long)(x)}
#define SIZE(t) {"sizeof(" #t ")", (long long)sizeof(t)}
#define OFF(t, f) {"offsetof(" #t ", " #f ")", (long long)offsetof(t, f)}

static const ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
static const ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;

const struct abi_fact ABI_TABLE[] = {
    V(ncclSuccess), V(ncclUnhandledCudaError), V(ncclSystemError), V(ncclInternalError),
    V(ncclInvalidArgument), V(ncclInvalidUsage), V(ncclRemoteError), V(ncclInProgress),
    V(ncclNumResults),
    V(ncclInt8), V(ncclChar), V(ncclUint8), V(ncclInt32), V(ncclInt), V(ncclUint32),
    V(ncclInt64), V(ncclUint64), V(ncclFloat16), V(ncclHalf), V(ncclFloat32), V(ncclFloat),
    V(ncclFloat64), V(ncclDouble), V(ncclBfloat16), V(ncclFloat8e4m3), V(ncclFloat8e5m2),
    V(ncclNumTypes),
    V(ncclSum), V(ncclProd), V(ncclMax), V(ncclMin), V(ncclAvg), V(ncclNumOps),
    V(ncclMaxRedOp),
    V(ncclScalarDevice), V(ncclScalarHostImmediate),
    V(NCCL_UNIQUE_ID_BYTES), V(NCCL_SPLIT_NOCOLOR), V(NCCL_CONFIG_UNDEF_INT),
    V(NCCL_VERSION_CODE), V(NCCL_VERSION(2, 28, 9)), V(NCCL_VERSION(2, 8, 4)),
    V(NCCL_WIN_DEFAULT), V(NCCL_WIN_COLL_SYMMETRIC), V(NCCL_WIN_REQUIRED_ALIGNMENT),
    V(NCCL_CTA_POLICY_DEFAULT), V(NCCL_CTA_POLICY_EFFICIENCY), V(NCCL_CTA_POLICY_ZERO),
    V(NCCL_SHRINK_DEFAULT), V(NCCL_SHRINK_ABORT), V(NCCL_REVOKE_DEFAULT),
    SIZE(ncclUniqueId), SIZE(ncclResult_t), SIZE(ncclDataType_t), SIZE(ncclRedOp_t),
    SIZE(ncclScalarResidence_t), SIZE(ncclComm_t),
    SIZE(ncclConfig_t), OFF(ncclConfig_t, size), OFF(ncclConfig_t, magic),
    OFF(ncclConfig_t, version), OFF(ncclConfig_t, blocking), OFF(ncclConfig_t, cgaClusterSize),
    OFF(ncclConfig_t, minCTAs), OFF(ncclConfig_t, maxCTAs), OFF(ncclConfig_t, netName),
    OFF(ncclConfig_t, splitShare), OFF(ncclConfig_t, trafficClass),
    OFF(ncclConfig_t, commName), OFF(ncclConfig_t, collnetEnable),
    OFF(ncclConfig_t, CTAPolicy), OFF(ncclConfig_t, shrinkShare), OFF(ncclConfig_t, nvlsCTAs),
    OFF(ncclConfig_t, nChannelsPerNetPeer), OFF(ncclConfig_t, nvlinkCentricSched),
    {"NCCL_CONFIG_INITIALIZER.size", (long long)sizeof cfg},
    {"NCCL_CONFIG_INITIALIZER.magic", cfg.magic},
    {"NCCL_CONFIG_INITIALIZER.version", cfg.version},
    {"NCCL_CONFIG_INITIALIZER.blocking", cfg.blocking},
    {"NCCL_CONFIG_INITIALIZER.nvlinkCentricSched", cfg.nvlinkCentricSched},
    SIZE(ncclSimInfo_t), OFF(ncclSimInfo_t, size), OFF(ncclSimInfo_t, magic),
    OFF(ncclSimInfo_t, version), OFF(ncclSimInfo_t, estimatedTime),
    {"NCCL_SIM_INFO_INITIALIZER.magic", sim.magic},
    {"NCCL_SIM_INFO_INITIALIZER.version", sim.version},
    {"NCCL_SIM_INFO_INITIALIZER.estimatedTime", (long long)sim.estimatedTime},
    {NULL, 0},
};
