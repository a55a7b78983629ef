/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * errors.c - the last-error record (thread-local, as NCCL's ncclGetLastError), result strings,
 * the version, and the names of datatypes, operations and collectives used in messages.
 */
#include <stdarg.h>
#include <stdio.h>

#include "rt.h"

static _Thread_local char last_error[BK_MSG_MAX];

blinkResult_t bk_error(blinkResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return r;
}

const char *bk_last_error(void) { return last_error; }

void bk_set_last_error(const char *msg)
{
    snprintf(last_error, sizeof last_error, "%s", msg ? msg : "");
}

const char *blinkGetLastError(blinkComm_t comm)
{
    (void)comm;
    return last_error;
}

const char *blinkGetErrorString(blinkResult_t result)
{
    switch (result) {
    case blinkSuccess: return "no error";
    case blinkUnhandledCudaError: return "unhandled cuda error";
    case blinkSystemError: return "unhandled system error";
    case blinkInternalError: return "internal error";
    case blinkInvalidArgument: return "invalid argument";
    case blinkInvalidUsage: return "invalid usage";
    case blinkRemoteError: return "remote error (a failure on another rank or stream)";
    case blinkInProgress: return "operation in progress";
    default: return "unknown result code";
    }
}

blinkResult_t blinkGetVersion(int *version)
{
    if (!version)
        return bk_error(blinkInvalidArgument, "blinkGetVersion: version is NULL");
    *version = BLINK_VERSION_CODE;
    return blinkSuccess;
}

size_t bk_dtype_size(blinkDataType_t dt)
{
    switch (dt) {
    case blinkInt8: case blinkUint8: return 1;
    case blinkFloat16: case blinkBfloat16: return 2;
    case blinkInt32: case blinkUint32: case blinkFloat32: return 4;
    case blinkInt64: case blinkUint64: case blinkFloat64: return 8;
    default: return 0;
    }
}

const char *bk_dtype_name(blinkDataType_t dt)
{
    static const char *const names[] = {"int8", "uint8", "int32", "uint32", "int64",
                                        "uint64", "float16", "float32", "float64", "bfloat16"};
    return (unsigned)dt < blinkNumTypes ? names[dt] : "invalid datatype";
}

const char *bk_op_name(blinkRedOp_t op)
{
    static const char *const names[] = {"sum", "prod", "max", "min", "avg"};
    return (unsigned)op < blinkNumOps ? names[op] : "invalid op";
}

const char *bk_coll_name(int coll)
{
    static const char *const names[] = {"broadcast", "reduce", "allreduce", "allgather",
                                        "reducescatter"};
    return coll >= 0 && coll < BLINK_PLAN_COLLS ? names[coll] : "invalid collective";
}
