/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * call.c - the collective entry points and NCCL's two calling styles, per rank.
 *
 * A call is checked (its own arguments, then that the plan has the schedule), given the next
 * call number of its communicator, and handed to the backend as one launch on this rank alone:
 * no rank waits for another here. Ranks that disagree about a call find out in the protocol
 * (proto.h compares the calls' descriptions before the first chunk moves) and the call fails
 * everywhere. A call whose own arguments are wrong on one rank aborts the communicator, so the
 * other ranks' calls fail instead of waiting for it.
 *
 * BLINK_DEBUG=TRACE says each call as it is issued (collective, count, datatype, op, root and
 * what runs it); off, that costs one compare per call.
 *
 * Group style: between blinkGroupStart and blinkGroupEnd (thread-local) calls are recorded;
 * blinkGroupEnd issues them in order, then waits for those on NULL streams (host backend),
 * so one thread can drive every rank of a process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "rt.h"

struct group_call {
    blinkComm_t comm;
    struct bk_args a;
    const char *fn;
};

static _Thread_local int group_depth;
static _Thread_local struct group_call *group_calls;
static _Thread_local int group_n, group_cap;


/* A call's own checks: what one rank can see without the others. */
static blinkResult_t check_local(blinkComm_t c, const struct bk_args *a, const char *fn)
{
    if (bk_dtype_size(a->dt) == 0)
        return bk_error(blinkInvalidArgument, "%s: rank %d: datatype %d invalid", fn, c->rank,
                        (int)a->dt);
    if (bk_has_op(a->coll) && (unsigned)a->op >= blinkNumOps)
        return bk_error(blinkInvalidArgument, "%s: rank %d: reduction op %d invalid", fn,
                        c->rank, (int)a->op);
    if (bk_is_rooted(a->coll) && (a->root < 0 || a->root >= c->nranks))
        return bk_error(blinkInvalidArgument, "%s: rank %d: root %d out of range 0..%d", fn,
                        c->rank, a->root, c->nranks - 1);
    int needs_send = a->coll != BLINK_PLAN_BROADCAST || c->rank == a->root;
    int needs_recv = a->coll != BLINK_PLAN_REDUCE || c->rank == a->root;
    if (a->count > 0 && ((needs_send && !a->send) || (needs_recv && !a->recv)))
        return bk_error(blinkInvalidArgument, "%s: rank %d: %s is NULL", fn, c->rank,
                        !a->recv && needs_recv ? "recvbuff" : "sendbuff");
    return blinkSuccess;
}

void bk_trace_call(blinkComm_t c, const struct bk_args *a, const char *fn, const char *runs)
{
    char dt[32];
    if ((unsigned)a->dt < blinkNumTypes)
        snprintf(dt, sizeof dt, "%s", bk_dtype_name(a->dt));
    else
        snprintf(dt, sizeof dt, "%d", (int)a->dt); /* NCCL's own (fp8), handed to it */
    bk_log(BK_LOG_TRACE, bk_log_dev(c), "%s: rank %d count %zu datatype %s op %s root %d "
           "sendbuff %p recvbuff %p comm %p [nranks=%d] stream %p: %s", fn, c->rank, a->count,
           dt, bk_has_op(a->coll) ? bk_op_name(a->op) : "none", a->root, a->send,
           (void *)a->recv, (void *)c, c->nranks, a->stream, runs);
}

/* The TRACE line of a call that the plan runs. */
static void trace_plan(blinkComm_t c, const struct bk_args *a, const char *fn,
                       const struct bk_choice *ch, size_t chunk, int direct)
{
    char runs[160];
    snprintf(runs, sizeof runs, "blinkc's plan, call %u, %s%d %s%s, %zu-byte chunks%s%s", c->seq,
             ch->set == BK_SET_RINGS    ? "the rings as "
             : ch->set == BK_SET_HYBRID ? "hybrid, "
                                        : "",
             ch->ntrees, ch->set == BK_SET_RINGS ? "chain" : "tree",
             ch->ntrees == 1 ? "" : "s", chunk, ch->proto == BLINK_PLAN_LL ? ", LL" : "",
             direct ? ", direct" : "");
    bk_trace_call(c, a, fn, runs);
}

/* The chunk of a call: the choice's, within a slot of its protocol, in whole 256-byte units where
 * it holds one (with the trees cut on the same unit, bk_split_at, every chunk then starts as
 * aligned as the user buffer). LL falls back to Simple where its slots are too small or its
 * chunks would outnumber its flags' rounds (BK_LL_MAX_CHUNKS: a tree has at most all the
 * elements); every rank decides alike. */
static size_t fit_chunk(blinkComm_t c, const struct bk_args *a, struct bk_choice *ch)
{
    size_t es = bk_dtype_size(a->dt);
    if (ch->proto == BLINK_PLAN_LL) {
        size_t room = c->layout.ll_slot_bytes / 2, chunk = ch->chunk_bytes < room ?
                                                            ch->chunk_bytes : room;
        if (chunk >= BK_SPLIT_ALIGN)
            chunk -= chunk % BK_SPLIT_ALIGN;
        size_t elems = chunk / es;
        if (elems && a->count / elems < BK_LL_MAX_CHUNKS)
            return chunk;
        ch->proto = BLINK_PLAN_SIMPLE;
    }
    size_t chunk = ch->chunk_bytes < c->layout.slot_bytes ? ch->chunk_bytes : c->layout.slot_bytes;
    if (chunk >= BK_SPLIT_ALIGN)
        chunk -= chunk % BK_SPLIT_ALIGN;
    return chunk;
}

/* Chunks per tree must fit the protocol's 32-bit counts. */
static int too_many_chunks(const struct bk_launch *L)
{
    return L->d.count / L->chunk_elems >= BK_TAG_COUNT - 1; /* proto.h: counts below 2^31 */
}

static blinkResult_t issue(blinkComm_t c, const struct bk_args *a, const char *fn)
{
    const struct bk_backend *be = bk_backend();
    blinkResult_t r = check_local(c, a, fn);
    if (r != blinkSuccess) {
        if (c->be)
            be->abort(c, bk_last_error());
        return r;
    }
    int trace = bk_logs(&c->env, BK_LOG_TRACE, BK_SUB_COLL);
    if (!c->plan) {
        if (trace) {
            char runs[BK_MSG_MAX + 16];
            snprintf(runs, sizeof runs, "NCCL (no plan: %s)", c->plan_why);
            bk_trace_call(c, a, fn, runs);
        }
        return bk_nccl_launch(c, a);
    }
    int root = bk_is_rooted(a->coll) ? c->plan_of[a->root] : -1;
    const struct blink_plan_schedule *sch = bk_schedule(c->plan, a->coll, root);
    if (!sch) /* the plan is the same on every rank: they all fail here, and nothing waits */
        return bk_error(blinkInvalidUsage, "%s: the plan for topology '%s' (fingerprint %s) has "
                        "no %s schedule%s (compile one with blinkc)", fn, c->plan->topology ?
                        c->plan->topology : "?", c->plan->fingerprint ? c->plan->fingerprint :
                        "?", bk_coll_name(a->coll), root >= 0 ? " for this root" : "");
    struct bk_choice ch;
    bk_choose(c, sch, a, 1, &ch);
    if ((ch.algo == BLINK_PLAN_RINGS && c->nccl) || ch.algo == BK_ALGO_NCCL) {
        if (trace)
            bk_trace_call(c, a, fn, ch.algo == BK_ALGO_NCCL ? "NCCL (BLINK_ALGO=nccl)"
                          : "NCCL (the plan's per-size choice: NCCL's rings)");
        return bk_nccl_launch(c, a);
    }
    c->seq = bk_seq_next(c->seq);
    size_t es = bk_dtype_size(a->dt);
    size_t chunk = fit_chunk(c, a, &ch);
    /* Direct (proto.h): Simple calls of ranks that all share this process, where a peer's
     * output pointer is an address here too; every rank of the communicator decides alike. */
    /* A hybrid call's edges go through staging, host-staged ones included, and GPUs without
     * peer access cannot write into each other's outputs: no direct writes. */
    int staged = ch.set == BK_SET_HYBRID || c->plan->host_staged;
    int direct = ch.proto != BLINK_PLAN_LL && c->one_process && !c->nremote && c->env.direct &&
                 !staged;
    uint64_t algo = (ch.set == BK_SET_RINGS ? BK_ALGO_RING_SET : 0u) |
                    (staged ? BK_ALGO_HYBRID_SET : 0u) |
                    (ch.proto == BLINK_PLAN_LL ? BK_ALGO_LL : 0u) | (direct ? BK_ALGO_DIRECT : 0u);
    int set = BK_SETS * (int)(sch - c->plan->schedules) + ch.set;
    struct bk_launch L = {{c->seq, (uint64_t)a->coll, (uint64_t)(int64_t)root, (uint64_t)a->dt,
                           (uint64_t)a->op, a->count, algo, chunk},
                          a->send, a->recv, &c->sets[set], set,
                          chunk / es ? chunk / es : 1, {0}};
    /* Registered (proto.h): a Simple call across processes of one server whose output the
     * other processes can map gets it straight from its parent (a parent on another server
     * sends through the staging). */
    size_t out_elems = a->coll == BLINK_PLAN_ALLGATHER ? a->count * (size_t)c->nranks : a->count;
    if (ch.proto != BLINK_PLAN_LL && !direct && !staged && be->registered && c->env.direct &&
        !c->nremote && a->recv)
        bk_reg_find(c, a->recv, out_elems * es, &L.reg);
    if (too_many_chunks(&L)) {
        bk_error(blinkInvalidUsage, "%s: %zu elements make more than 2^31 chunks of %zu bytes "
                 "(raise BLINK_CHUNK_BYTES or BLINK_STAGING_BYTES)", fn, a->count, chunk);
        be->abort(c, bk_last_error());
        return blinkInvalidUsage;
    }
    c->ops = 0;
    if (trace)
        trace_plan(c, a, fn, &ch, chunk, direct);
    return be->launch(c, &L, a->stream);
}

blinkResult_t bk_call(blinkComm_t comm, const struct bk_args *a, const char *fn)
{
    if (!comm)
        return bk_error(blinkInvalidArgument, "%s: comm is NULL", fn);
    if (group_depth > 0) {
        if (group_n == group_cap) {
            int cap = group_cap ? 2 * group_cap : 16;
            struct group_call *g = realloc(group_calls, sizeof *g * (size_t)cap);
            if (!g)
                return bk_error(blinkSystemError, "%s: out of memory", fn);
            group_calls = g;
            group_cap = cap;
        }
        group_calls[group_n++] = (struct group_call){comm, *a, fn};
        return blinkSuccess;
    }
    blinkResult_t r = issue(comm, a, fn);
    if (r == blinkSuccess && !a->stream && bk_backend()->null_stream_sync)
        r = bk_backend()->wait(comm);
    return r;
}

blinkResult_t blinkGroupStart(void)
{
    group_depth++;
    return blinkSuccess;
}

blinkResult_t blinkGroupEnd(void)
{
    if (group_depth == 0)
        return bk_error(blinkInvalidUsage, "blinkGroupEnd: no matching blinkGroupStart");
    if (--group_depth > 0)
        return blinkSuccess;
    const struct bk_backend *be = bk_backend();
    blinkResult_t first = blinkSuccess;
    char msg[BK_MSG_MAX] = "";
    for (int i = 0; i < group_n; i++) {
        blinkResult_t r = issue(group_calls[i].comm, &group_calls[i].a, group_calls[i].fn);
        if (r != blinkSuccess && first == blinkSuccess) {
            first = r;
            snprintf(msg, sizeof msg, "%s", bk_last_error());
        }
    }
    /* NULL streams on the host: wait once per communicator, after everything was issued. */
    for (int i = 0; i < group_n && be->null_stream_sync; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= group_calls[j].comm == group_calls[i].comm && !group_calls[j].a.stream;
        if (group_calls[i].a.stream || seen)
            continue;
        blinkResult_t r = be->wait(group_calls[i].comm);
        if (r != blinkSuccess && first == blinkSuccess) {
            first = r;
            snprintf(msg, sizeof msg, "%s", bk_last_error());
        }
    }
    free(group_calls);
    group_calls = NULL;
    group_n = group_cap = 0;
    if (first != blinkSuccess)
        bk_set_last_error(msg);
    return first;
}

/* ------------------------------------------------------------------ the collectives */

blinkResult_t blinkBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                             blinkDataType_t datatype, int root, blinkComm_t comm,
                             blinkStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_BROADCAST, root, sendbuff, recvbuff, count, datatype,
                        blinkSum, (void *)stream};
    return bk_call(comm, &a, "blinkBroadcast");
}

blinkResult_t blinkReduce(const void *sendbuff, void *recvbuff, size_t count,
                          blinkDataType_t datatype, blinkRedOp_t op, int root, blinkComm_t comm,
                          blinkStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_REDUCE, root, sendbuff, recvbuff, count, datatype, op,
                        (void *)stream};
    return bk_call(comm, &a, "blinkReduce");
}

blinkResult_t blinkAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                             blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm,
                             blinkStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_ALLREDUCE, -1, sendbuff, recvbuff, count, datatype, op,
                        (void *)stream};
    return bk_call(comm, &a, "blinkAllReduce");
}

blinkResult_t blinkAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                             blinkDataType_t datatype, blinkComm_t comm, blinkStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_ALLGATHER, -1, sendbuff, recvbuff, sendcount, datatype,
                        blinkSum, (void *)stream};
    return bk_call(comm, &a, "blinkAllGather");
}

blinkResult_t blinkReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                 blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm,
                                 blinkStream_t stream)
{
    struct bk_args a = {BLINK_PLAN_REDUCESCATTER, -1, sendbuff, recvbuff, recvcount, datatype,
                        op, (void *)stream};
    return bk_call(comm, &a, "blinkReduceScatter");
}
