/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * env.c - the runtime's environment, read at every init (blink(3), ENVIRONMENT):
 *   BLINK_CHUNK_BYTES=N       the pipeline chunk in bytes (overrides the plan's)
 *   BLINK_ALGO=trees|rings|nccl  run the trees, the rings, or NCCL itself, at every size
 *   BLINK_PROTO=simple|ll     the protocol of the runtime's own trees and rings at every size
 *   BLINK_NCCL_LIB=PATH|none  the real NCCL to hand calls to (nccl_real.c)
 *   BLINK_DEBUG=LEVEL         VERSION, WARN, INFO or TRACE, any case: say on stderr what
 *                             runs (log.h); unset or unknown: silent, as NCCL_DEBUG
 *   BLINK_DEBUG_SUBSYS=LIST   INIT,COLL,NET,ENV,ALL, or ^LIST for all but those (default ALL)
 *   BLINK_TIMEOUT_S=S         how long a rank waits for a peer before the call fails
 *   BLINK_STAGING_BYTES=N     staging memory per rank
 *   BLINK_DEVICE=D            the topology device this rank plays (blinkCommInitRank)
 *   BLINK_SERVER=NAME         the server this rank is on (default: its host name); ranks
 *                             with one name share memory, others meet over MPI
 *   BLINK_TRACE=DIR           stamp every call's steps; each rank writes them into DIR at
 *                             destroy (trace.c)
 *   BLINK_TRACE_RECORDS=N     events a rank keeps (default 262144)
 *   BLINK_CHECK_CALLS=0|1     1: every rank compares whole call descriptions, not their hashes
 *   BLINK_DIRECT=0|1          0: ranks of one process go down through the staging too, not
 *                             straight into each other's outputs (default 1; proto.h, Direct)
 *   BLINK_HOST_STAGED=0|1     1: the CUDA backend runs host-staged edges (the hybrid's PCIe
 *                             trees, GPUs without peer access), not yet run on a GPU (default 0;
 *                             the host backend always runs them)
 *   BLINK_CHANNEL_GBPS=R      the rate one channel carries (roles.c): a tree of the plan is cut
 *                             into ceil(rate / R) channels, 1 to 16 (default 20, NCCL's)
 *   BLINK_NCHANNELS=N         cut every tree into N channels (1 to 16), whatever its rate
 *   BLINK_MIN_NCHANNELS=N     a tree set cut into fewer channels than N by rate has every
 *                             tree's multiplied by the largest whole factor that keeps the set
 *                             at N or under (1 to 64, default 16; roles.c, bk_channel_fill)
 *   BLINK_DEBUG_SEQ_START=N   for tests: number the first call N (0 reads as 1), so that a short
 *                             run crosses the 32-bit wrap of the call numbers (proto.h)
 * A value that does not parse is an error that names the variable, never a silent default.
 */
#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt.h"
#include "trace.h"

static blinkResult_t parse_size(const char *name, size_t *out, const char *fn)
{
    const char *env = getenv(name);
    if (!env)
        return blinkSuccess;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 10);
    if (end == env || *end || errno || v == 0 || env[0] == '-')
        return bk_error(blinkInvalidArgument, "%s: %s='%s' is not a positive number of bytes",
                        fn, name, env);
    *out = (size_t)v;
    return blinkSuccess;
}

/* A 0|1 switch: *out keeps its default where the variable is unset or empty. */
static blinkResult_t parse_switch(const char *name, int *out, const char *fn)
{
    const char *env = getenv(name);
    if (!env || !*env)
        return blinkSuccess;
    if (strcmp(env, "0") && strcmp(env, "1"))
        return bk_error(blinkInvalidArgument, "%s: %s='%s' is not 0 or 1", fn, name, env);
    *out = env[0] == '1';
    return blinkSuccess;
}

/* A count of channels from 1 to max: *out keeps its default where the variable is unset or
 * empty. */
static blinkResult_t parse_channels(const char *name, int max, int *out, const char *fn)
{
    const char *env = getenv(name);
    if (!env || !*env)
        return blinkSuccess;
    char *end;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (end == env || *end || errno || v < 1 || v > max)
        return bk_error(blinkInvalidArgument, "%s: %s='%s' is not a number of channels from 1 "
                        "to %d", fn, name, env, max);
    *out = (int)v;
    return blinkSuccess;
}

blinkResult_t bk_read_env(struct bk_env *e, const char *fn)
{
    memset(e, 0, sizeof *e);
    e->algo_env = -1;
    e->proto_env = -1;
    e->device = -1;
    e->timeout_s = BK_DEFAULT_TIMEOUT_S;
    e->staging = BK_DEFAULT_STAGING;
    e->seq_start = 1;
    e->direct = 1;
    e->channel_gbps = BK_DEFAULT_CHANNEL_GBPS;
    e->min_channels = BK_DEFAULT_MIN_CHANNELS;
    e->trace_records = BK_TRACE_DEFAULT_RECORDS;
    blinkResult_t r = parse_size("BLINK_CHUNK_BYTES", &e->chunk_env, fn);
    if (r == blinkSuccess)
        r = parse_size("BLINK_STAGING_BYTES", &e->staging, fn);
    if (r == blinkSuccess)
        r = parse_size("BLINK_TRACE_RECORDS", &e->trace_records, fn);
    if (r == blinkSuccess && e->trace_records > BK_TRACE_MAX_RECORDS)
        r = bk_error(blinkInvalidArgument, "%s: BLINK_TRACE_RECORDS=%zu is more than %u", fn,
                     e->trace_records, BK_TRACE_MAX_RECORDS);
    if (r != blinkSuccess)
        return r;
    const char *env = getenv("BLINK_ALGO");
    if (env && *env) {
        if (!strcmp(env, "trees"))
            e->algo_env = BLINK_PLAN_TREES;
        else if (!strcmp(env, "rings"))
            e->algo_env = BLINK_PLAN_RINGS;
        else if (!strcmp(env, "hybrid"))
            e->algo_env = BLINK_PLAN_HYBRID;
        else if (!strcmp(env, "nccl"))
            e->algo_env = BK_ALGO_NCCL;
        else
            return bk_error(blinkInvalidArgument, "%s: BLINK_ALGO='%s' is not 'trees', 'rings', "
                            "'hybrid' or 'nccl'", fn, env);
    }
    env = getenv("BLINK_PROTO");
    if (env && *env) {
        if (!strcmp(env, "simple"))
            e->proto_env = BLINK_PLAN_SIMPLE;
        else if (!strcmp(env, "ll"))
            e->proto_env = BLINK_PLAN_LL;
        else
            return bk_error(blinkInvalidArgument, "%s: BLINK_PROTO='%s' is not 'simple' or 'll'",
                            fn, env);
    }
    /* Never an error, as NCCL_DEBUG and NCCL_DEBUG_SUBSYS are not: a bad value is silence. */
    e->log_level = bk_log_parse_level(getenv("BLINK_DEBUG"));
    e->log_mask = bk_log_parse_subsys(getenv("BLINK_DEBUG_SUBSYS"));
    if ((env = getenv("BLINK_TIMEOUT_S")) != NULL) {
        char *end;
        errno = 0;
        double t = strtod(env, &end);
        if (end == env || *end || errno || !(t > 0) || !isfinite(t) || t > 1e9)
            return bk_error(blinkInvalidArgument, "%s: BLINK_TIMEOUT_S='%s' is not a positive "
                            "number of seconds", fn, env);
        e->timeout_s = t;
    }
    if ((env = getenv("BLINK_DEVICE")) != NULL && *env) {
        char *end;
        errno = 0;
        long d = strtol(env, &end, 10);
        if (end == env || *end || errno || d < 0 || d > (1 << 20))
            return bk_error(blinkInvalidArgument, "%s: BLINK_DEVICE='%s' is not a device "
                            "ordinal", fn, env);
        e->device = (int)d;
    }
    if ((env = getenv("BLINK_SERVER")) != NULL && *env) {
        if (strlen(env) >= sizeof e->server)
            return bk_error(blinkInvalidArgument, "%s: BLINK_SERVER is longer than %zu "
                            "characters", fn, sizeof e->server - 1);
        memcpy(e->server, env, strlen(env) + 1);
    }
    /* Checked now, so that a run learns of a wrong directory before it, not at destroy. */
    if ((env = getenv("BLINK_TRACE")) != NULL && *env) {
        if (strlen(env) >= sizeof e->trace_dir)
            return bk_error(blinkInvalidArgument, "%s: BLINK_TRACE is longer than %zu "
                            "characters", fn, sizeof e->trace_dir - 1);
        struct stat st;
        if (stat(env, &st) != 0 || !S_ISDIR(st.st_mode) || access(env, W_OK | X_OK) != 0)
            return bk_error(blinkInvalidArgument, "%s: BLINK_TRACE='%s' is not a directory "
                            "this process can write into", fn, env);
        memcpy(e->trace_dir, env, strlen(env) + 1);
    }
    if ((r = parse_switch("BLINK_CHECK_CALLS", &e->check_calls, fn)) != blinkSuccess ||
        (r = parse_switch("BLINK_DIRECT", &e->direct, fn)) != blinkSuccess ||
        (r = parse_switch("BLINK_HOST_STAGED", &e->host_staged, fn)) != blinkSuccess)
        return r;
    if ((env = getenv("BLINK_DEBUG_SEQ_START")) != NULL && *env) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(env, &end, 10);
        if (end == env || *end || errno || env[0] == '-' || v > UINT32_MAX)
            return bk_error(blinkInvalidArgument, "%s: BLINK_DEBUG_SEQ_START='%s' is not a call "
                            "number below 2^32", fn, env);
        e->seq_start = v ? (uint32_t)v : 1;
    }
    if ((env = getenv("BLINK_CHANNEL_GBPS")) != NULL && *env) {
        char *end;
        errno = 0;
        double g = strtod(env, &end);
        if (end == env || *end || errno || !(g > 0) || !isfinite(g) || g > 1e6)
            return bk_error(blinkInvalidArgument, "%s: BLINK_CHANNEL_GBPS='%s' is not a positive "
                            "rate in GB/s", fn, env);
        e->channel_gbps = g;
    }
    r = parse_channels("BLINK_NCHANNELS", BK_MAX_CHANNELS, &e->nchannels, fn);
    if (r == blinkSuccess)
        r = parse_channels("BLINK_MIN_NCHANNELS", BK_MAX_MIN_CHANNELS, &e->min_channels, fn);
    return r;
}
