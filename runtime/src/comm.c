/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * comm.c - communicators: checking a compiled plan, blinkrtCommInitAll (the entry point behind
 * the generated blinkCommInitAll), destruction and queries, and the last-error record.
 *
 * Environment (read by every blinkrtCommInitAll):
 *   BLINK_DEVICE_MAP=d0,d1,...  one device ordinal per rank, repeats allowed ("virtual ranks":
 *                               8 ranks on one GPU, or on the host backend's memory domains).
 *                               When set it replaces the check that the device list matches the
 *                               allocation the plan was compiled for; devlist is then ignored.
 *   BLINK_CHUNK_BYTES=N         the pipeline chunk size in bytes (overrides the plan's).
 *   BLINK_ALGO=trees|rings      run the trees, or the rings, at every size (overrides the
 *                               plan's per-size choice).
 *   BLINK_DEBUG=WARN|INFO       say on stderr what runs (choose.c); unset: silent.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "rt.h"

#define DEFAULT_CHUNK_BYTES ((size_t)1 << 20)

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

/* ------------------------------------------------------------------ plan checks */

static const char *str_or(const char *s, const char *dflt) { return s ? s : dflt; }

#define PLAN_ERR(...) bk_plan_error(plan, __VA_ARGS__)
static blinkResult_t bk_plan_error(const struct blink_plan *plan, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static blinkResult_t bk_plan_error(const struct blink_plan *plan, const char *fmt, ...)
{
    char what[BK_MSG_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return bk_error(blinkInvalidUsage, "blinkCommInitAll: corrupt plan for topology '%s' "
                    "(fingerprint %s): %s", str_or(plan->topology, "?"),
                    str_or(plan->fingerprint, "?"), what);
}

/* One tree: roots and parents in range, order a permutation with each rank after its parent. */
static blinkResult_t check_tree(const struct blink_plan *plan, int si, const char *set, int ti,
                                const struct blink_plan_tree *t, int *pos)
{
    int n = plan->nranks;
    if (t->root < 0 || t->root >= n)
        return PLAN_ERR("schedule %d %s %d: root %d out of range", si, set, ti, t->root);
    if (!t->parent || !t->order)
        return PLAN_ERR("schedule %d %s %d: no parent or order table", si, set, ti);
    for (int v = 0; v < n; v++)
        pos[v] = -1;
    for (int i = 0; i < n; i++) {
        int v = t->order[i];
        if (v < 0 || v >= n || pos[v] >= 0)
            return PLAN_ERR("schedule %d %s %d: order is not a permutation of the ranks",
                            si, set, ti);
        pos[v] = i;
    }
    if (t->order[0] != t->root || t->parent[t->root] != -1)
        return PLAN_ERR("schedule %d %s %d: root %d is not first or has a parent", si, set, ti,
                        t->root);
    for (int v = 0; v < n; v++) {
        int p = t->parent[v];
        if (v == t->root)
            continue;
        if (p < 0 || p >= n || p == v || pos[p] > pos[v])
            return PLAN_ERR("schedule %d %s %d: rank %d has parent %d, not earlier in order",
                            si, set, ti, v, p);
    }
    return blinkSuccess;
}

/* A schedule's trees or ring trees: valid trees, rooted at the schedule's root where it has one,
 * and positive weights below 2^32 per data group (all trees, or the trees of one root). */
static blinkResult_t check_tree_set(const struct blink_plan *plan, int si, const char *set,
                                    const struct blink_plan_tree *t, int nt, int *pos)
{
    const struct blink_plan_schedule *s = &plan->schedules[si];
    int n = plan->nranks;
    int rooted = s->coll == BLINK_PLAN_BROADCAST || s->coll == BLINK_PLAN_REDUCE;
    int sharded = s->coll == BLINK_PLAN_ALLGATHER || s->coll == BLINK_PLAN_REDUCESCATTER;
    for (int ti = 0; ti < nt; ti++) {
        blinkResult_t r = check_tree(plan, si, set, ti, &t[ti], pos);
        if (r != blinkSuccess)
            return r;
        if (rooted && t[ti].root != s->root)
            return PLAN_ERR("schedule %d (%s root %d): %s %d is rooted at %d", si,
                            bk_coll_name(s->coll), s->root, set, ti, t[ti].root);
    }
    for (int g = 0; g < (sharded ? n : 1); g++) {
        uint64_t w = 0;
        for (int ti = 0; ti < nt; ti++)
            if (!sharded || t[ti].root == g)
                w += t[ti].weight;
        if (w == 0 || w >= ((uint64_t)1 << 32))
            return PLAN_ERR("schedule %d (%s): weights of the %ss %s%d sum to %llu (must be 1 .. "
                            "2^32-1)", si, bk_coll_name(s->coll), set, sharded ? "rooted at rank "
                            : "of group ", g, (unsigned long long)w);
    }
    return blinkSuccess;
}

static blinkResult_t check_ranges(const struct blink_plan *plan, int si)
{
    const struct blink_plan_schedule *s = &plan->schedules[si];
    if (s->nranges < 0 || (s->nranges > 0 && !s->ranges))
        return PLAN_ERR("schedule %d: %d ranges", si, s->nranges);
    for (int i = 0; i < s->nranges; i++) {
        const struct blink_plan_range *r = &s->ranges[i];
        if (i == 0 && r->min_bytes != 0)
            return PLAN_ERR("schedule %d: range 0 starts at %zu bytes; the first must start at "
                            "0", si, r->min_bytes);
        if (i > 0 && r->min_bytes <= s->ranges[i - 1].min_bytes)
            return PLAN_ERR("schedule %d: range %d starts at %zu bytes; each must start after "
                            "the last", si, i, r->min_bytes);
        if ((r->algo != BLINK_PLAN_TREES && r->algo != BLINK_PLAN_RINGS) || r->chunk_bytes == 0)
            return PLAN_ERR("schedule %d: range %d has algorithm %d and chunk %zu", si, i,
                            r->algo, r->chunk_bytes);
    }
    return blinkSuccess;
}

static blinkResult_t check_schedule(const struct blink_plan *plan, int si, int *pos)
{
    const struct blink_plan_schedule *s = &plan->schedules[si];
    int n = plan->nranks;
    if (s->coll < 0 || s->coll >= BLINK_PLAN_COLLS)
        return PLAN_ERR("schedule %d: collective %d unknown", si, s->coll);
    int rooted = s->coll == BLINK_PLAN_BROADCAST || s->coll == BLINK_PLAN_REDUCE;
    if (rooted ? (s->root < 0 || s->root >= n) : s->root != -1)
        return PLAN_ERR("schedule %d (%s): root %d invalid", si, bk_coll_name(s->coll), s->root);
    if (s->ntrees < 1 || !s->trees)
        return PLAN_ERR("schedule %d (%s): no trees", si, bk_coll_name(s->coll));
    if (s->nring_trees < 0 || (s->nring_trees > 0 && !s->ring_trees))
        return PLAN_ERR("schedule %d (%s): %d ring trees", si, bk_coll_name(s->coll),
                        s->nring_trees);
    for (int j = 0; j < si; j++)
        if (plan->schedules[j].coll == s->coll && plan->schedules[j].root == s->root)
            return PLAN_ERR("schedules %d and %d are both %s root %d", j, si,
                            bk_coll_name(s->coll), s->root);
    blinkResult_t r = check_tree_set(plan, si, "tree", s->trees, s->ntrees, pos);
    if (r == blinkSuccess && s->nring_trees > 0)
        r = check_tree_set(plan, si, "ring tree", s->ring_trees, s->nring_trees, pos);
    return r == blinkSuccess ? check_ranges(plan, si) : r;
}

static blinkResult_t check_plan(const struct blink_plan *plan)
{
    if (plan->abi != BLINK_PLAN_ABI)
        return PLAN_ERR("plan ABI %d, this runtime reads ABI %d (regenerate the source with a "
                        "matching blinkc)", plan->abi, BLINK_PLAN_ABI);
    if (plan->nranks < 1 || plan->nranks > 4096 || !plan->devices)
        return PLAN_ERR("%d ranks", plan->nranks);
    if (plan->nschedules < 0 || (plan->nschedules > 0 && !plan->schedules))
        return PLAN_ERR("%d schedules", plan->nschedules);
    int *pos = malloc(sizeof *pos * (size_t)plan->nranks);
    if (!pos)
        return bk_error(blinkSystemError, "blinkCommInitAll: out of memory");
    blinkResult_t r = blinkSuccess;
    for (int si = 0; si < plan->nschedules && r == blinkSuccess; si++)
        r = check_schedule(plan, si, pos);
    free(pos);
    return r;
}

/* ------------------------------------------------------------------ init */

static void list_devices(char *buf, size_t len, const int *devs, int n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++) {
        int k = snprintf(buf + at, len - at, "%s%d", i ? "," : "", devs[i]);
        if (k < 0)
            break;
        at += (size_t)k;
    }
}

/* BLINK_DEVICE_MAP: exactly n non-negative integers separated by commas. */
static blinkResult_t parse_device_map(const char *s, int n, int *devs)
{
    const char *p = s;
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 1 << 20 || (*end != ',' && *end != '\0') ||
            (*end == '\0' && i != n - 1) || (*end == ',' && i == n - 1))
            return bk_error(blinkInvalidArgument, "blinkCommInitAll: BLINK_DEVICE_MAP='%s' "
                            "must list %d device ordinals separated by commas", s, n);
        devs[i] = (int)v;
        p = end + 1;
    }
    return blinkSuccess;
}

/* BLINK_CHUNK_BYTES, BLINK_ALGO and BLINK_DEBUG into cs. */
static blinkResult_t read_env(struct bk_commset *cs)
{
    const char *env = getenv("BLINK_CHUNK_BYTES");
    cs->chunk_bytes = cs->plan->chunk_bytes ? cs->plan->chunk_bytes : DEFAULT_CHUNK_BYTES;
    if (env) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(env, &end, 10);
        if (end == env || *end || errno || v == 0 || env[0] == '-')
            return bk_error(blinkInvalidArgument, "blinkCommInitAll: BLINK_CHUNK_BYTES='%s' is "
                            "not a positive number of bytes", env);
        cs->chunk_env = (size_t)v;
    }
    env = getenv("BLINK_ALGO");
    cs->algo_env = -1;
    if (env && *env) {
        if (strcmp(env, "trees") && strcmp(env, "rings"))
            return bk_error(blinkInvalidArgument, "blinkCommInitAll: BLINK_ALGO='%s' is not "
                            "'trees' or 'rings'", env);
        cs->algo_env = strcmp(env, "rings") ? BLINK_PLAN_TREES : BLINK_PLAN_RINGS;
    }
    env = getenv("BLINK_DEBUG");
    cs->log_level = !env ? 0 : !strcmp(env, "INFO") ? 2 : !strcmp(env, "WARN") ? 1 : 0;
    cs->said_stride = 1;
    for (int i = 0; i < cs->plan->nschedules; i++)
        if (cs->plan->schedules[i].nranges + 1 > cs->said_stride)
            cs->said_stride = cs->plan->schedules[i].nranges + 1;
    cs->said = calloc((size_t)cs->plan->nschedules * (size_t)cs->said_stride + 1, 1);
    return cs->said ? blinkSuccess
                    : bk_error(blinkSystemError, "blinkCommInitAll: out of memory");
}

static blinkResult_t check_devices(const struct blink_plan *plan, int ndev, const int *devlist,
                                   int *devs)
{
    const char *map = getenv("BLINK_DEVICE_MAP");
    char want[256], got[256];
    list_devices(want, sizeof want, plan->devices, plan->nranks);
    if (ndev != plan->nranks)
        return bk_error(blinkInvalidUsage, "blinkCommInitAll: the plan for topology '%s' "
                        "(fingerprint %s) was compiled for %d ranks on devices %s; ndev is %d",
                        str_or(plan->topology, "?"), str_or(plan->fingerprint, "?"),
                        plan->nranks, want, ndev);
    if (map && *map)
        return parse_device_map(map, ndev, devs);
    for (int i = 0; i < ndev; i++)
        devs[i] = devlist ? devlist[i] : i;
    if (memcmp(devs, plan->devices, sizeof *devs * (size_t)ndev) != 0) {
        list_devices(got, sizeof got, devs, ndev);
        return bk_error(blinkInvalidUsage, "blinkCommInitAll: the plan for topology '%s' "
                        "(fingerprint %s) was compiled for devices %s; got devices %s (compile "
                        "a plan for this allocation, or set BLINK_DEVICE_MAP)",
                        str_or(plan->topology, "?"), str_or(plan->fingerprint, "?"), want, got);
    }
    return blinkSuccess;
}

blinkResult_t blinkrtCommInitAll(const struct blink_plan *plan, blinkComm_t *comms, int ndev,
                                 const int *devlist)
{
    if (!plan || !comms)
        return bk_error(blinkInvalidArgument, "blinkCommInitAll: %s is NULL",
                        plan ? "comms" : "plan");
    if (ndev < 1)
        return bk_error(blinkInvalidArgument, "blinkCommInitAll: ndev is %d", ndev);
    blinkResult_t r = check_plan(plan);
    if (r != blinkSuccess)
        return r;
    int *devs = malloc(sizeof *devs * (size_t)ndev);
    if (!devs)
        return bk_error(blinkSystemError, "blinkCommInitAll: out of memory");
    if ((r = check_devices(plan, ndev, devlist, devs)) != blinkSuccess ||
        (r = bk_backend()->configure()) != blinkSuccess) {
        free(devs);
        return r;
    }
    struct bk_commset *cs = calloc(1, sizeof *cs);
    struct blinkComm *c = calloc((size_t)ndev, sizeof *c);
    unsigned long long *posted = calloc((size_t)ndev, sizeof *posted);
    if (!cs || !c || !posted) {
        free(cs); free(c); free(posted); free(devs);
        return bk_error(blinkSystemError, "blinkCommInitAll: out of memory");
    }
    cs->plan = plan;
    cs->nranks = ndev;
    cs->devs = devs;
    cs->posted = posted;
    if ((r = read_env(cs)) != blinkSuccess) {
        free(cs->said); free(cs); free(c); free(posted); free(devs);
        return r;
    }
    cs->refs = ndev;
    cs->ranks = c;
    pthread_mutex_init(&cs->mu, NULL);
    pthread_cond_init(&cs->cv, NULL);
    if ((r = bk_exec_init(cs)) != blinkSuccess) {
        pthread_mutex_destroy(&cs->mu);
        pthread_cond_destroy(&cs->cv);
        free(cs->said); free(cs); free(c); free(posted); free(devs);
        return r;
    }
    bk_nccl_init(cs);
    for (int i = 0; i < ndev; i++) {
        c[i].cs = cs;
        c[i].rank = i;
        comms[i] = &c[i];
    }
    return blinkSuccess;
}

void bk_commset_unref(struct bk_commset *cs)
{
    pthread_mutex_lock(&cs->mu);
    int left = --cs->refs;
    pthread_mutex_unlock(&cs->mu);
    if (left > 0)
        return;
    bk_nccl_free(cs);
    bk_exec_free(cs);
    pthread_mutex_destroy(&cs->mu);
    pthread_cond_destroy(&cs->cv);
    free(cs->posted);
    free(cs->devs);
    free(cs->said);
    free(cs->ranks);
    free(cs);
}

blinkResult_t blinkCommDestroy(blinkComm_t comm)
{
    if (!comm)
        return bk_error(blinkInvalidArgument, "blinkCommDestroy: comm is NULL");
    bk_commset_unref(comm->cs);
    return blinkSuccess;
}

blinkResult_t blinkCommCount(const blinkComm_t comm, int *count)
{
    if (!comm || !count)
        return bk_error(blinkInvalidArgument, "blinkCommCount: %s is NULL",
                        comm ? "count" : "comm");
    *count = comm->cs->nranks;
    return blinkSuccess;
}

blinkResult_t blinkCommCuDevice(const blinkComm_t comm, int *device)
{
    if (!comm || !device)
        return bk_error(blinkInvalidArgument, "blinkCommCuDevice: %s is NULL",
                        comm ? "device" : "comm");
    *device = comm->cs->devs[comm->rank];
    return blinkSuccess;
}

blinkResult_t blinkCommUserRank(const blinkComm_t comm, int *rank)
{
    if (!comm || !rank)
        return bk_error(blinkInvalidArgument, "blinkCommUserRank: %s is NULL",
                        comm ? "rank" : "comm");
    *rank = comm->rank;
    return blinkSuccess;
}
