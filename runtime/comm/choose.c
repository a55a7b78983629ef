/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * choose.c - what a call runs: the range of its schedule that covers the message size (blinkc
 * put the simulator's choice there: trees, the hybrid or NCCL's rings, and the chunk), then the
 * environment's overrides. A hybrid range runs its fallback (the trees alone, or NCCL) on a
 * backend without host-staged edges. A plan that hands sizes to NCCL does it visibly:
 * BLINK_DEBUG=INFO (subsystem COLL) says what runs, once per schedule and range, and
 * BLINK_DEBUG=WARN says where rings were planned but this runtime has no NCCL, so it runs the
 * rings itself.
 * With NCCL (nccl_call.c) ring sizes go to NCCL, which picks its own rings; BLINK_ALGO=nccl
 * hands every size to it.
 */
#include <stdio.h>

#include "backend.h"
#include "rt.h"

static const char *size_text(size_t b, char *buf, size_t len)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB"};
    double x = (double)b;
    int u = 0;
    while (u < 3 && x >= 1024) {
        x /= 1024;
        u++;
    }
    snprintf(buf, len, "%g %s", x, unit[u]);
    return buf;
}

/* nccl-tests' S for this call. */
static size_t message_bytes(blinkComm_t c, const struct bk_args *a)
{
    size_t s = a->count * bk_dtype_size(a->dt);
    int sharded = a->coll == BLINK_PLAN_ALLGATHER || a->coll == BLINK_PLAN_REDUCESCATTER;
    return sharded ? s * (size_t)c->nranks : s;
}

const struct blink_plan_schedule *bk_schedule(const struct blink_plan *plan, int coll, int root)
{
    for (int i = 0; i < plan->nschedules; i++)
        if (plan->schedules[i].coll == coll && plan->schedules[i].root == root)
            return &plan->schedules[i];
    return NULL;
}

void bk_choose(blinkComm_t c, const struct blink_plan_schedule *sch, const struct bk_args *a,
               int say, struct bk_choice *out)
{
    size_t bytes = message_bytes(c, a);
    int ri = -1;
    for (int i = 0; i < sch->nranges && sch->ranges[i].min_bytes <= bytes; i++)
        ri = i;
    int algo = ri >= 0 ? sch->ranges[ri].algo : BLINK_PLAN_TREES;
    int can_hybrid = sch->npcie_trees > 0 && bk_host_staged(c);
    int fell_back = algo == BLINK_PLAN_HYBRID && !can_hybrid && c->env.algo_env < 0;
    if (fell_back)
        algo = sch->ranges[ri].fallback; /* the trees, or NCCL where they alone lose */
    if (c->env.algo_env >= 0)
        algo = c->env.algo_env;
    size_t chunk = ri >= 0 ? sch->ranges[ri].chunk_bytes : c->chunk_bytes;
    if (c->env.chunk_env)
        chunk = c->env.chunk_env;
    int proto = ri >= 0 && bk_backend()->plan_ll ? sch->ranges[ri].proto : BLINK_PLAN_SIMPLE;
    if (c->env.proto_env >= 0)
        proto = c->env.proto_env;
    int rings = algo == BLINK_PLAN_RINGS && !c->nccl && sch->nring_trees > 0;
    int hybrid = algo == BLINK_PLAN_HYBRID && can_hybrid;
    out->algo = algo;
    /* Host-staged and proxied edges move whole chunks. */
    int whole = hybrid || (c->nremote > 0 && bk_backend()->net == 2);
    out->proto = whole ? BLINK_PLAN_SIMPLE : proto;
    out->set = rings ? BK_SET_RINGS : hybrid ? BK_SET_HYBRID : BK_SET_TREES;
    out->ntrees = rings ? sch->nring_trees : hybrid ? sch->ntrees + sch->npcie_trees : sch->ntrees;
    out->chunk_bytes = chunk;

    int si = (int)(sch - c->plan->schedules);
    unsigned char *said = &c->said[(size_t)si * (size_t)c->said_stride + (size_t)(ri + 1)];
    if (!say || !bk_logs(&c->env, BK_LOG_WARN, BK_SUB_ALL) || *said || c->rank != 0)
        return;
    *said = 1;
    char from[32], ch[32];
    size_text(ri >= 0 ? sch->ranges[ri].min_bytes : 0, from, sizeof from);
    size_text(chunk, ch, sizeof ch);
    const char *coll = bk_coll_name(sch->coll);
    const char *rooted = sch->root >= 0 ? " (rooted)" : "";
    const char *by = c->env.algo_env >= 0 || c->env.chunk_env || c->env.proto_env >= 0
                     ? "set by the environment"
                     : fell_back ? "the plan's per-size choice, where its hybrid cannot run: no "
                                   "host-staged edges on this backend"
                                 : "the plan's per-size choice";
    const char *ll = proto == BLINK_PLAN_LL ? ", LL" : "";
    int dev = bk_log_dev(c);
    if (algo == BK_ALGO_NCCL || (algo == BLINK_PLAN_RINGS && c->nccl)) {
        int level = c->nccl ? BK_LOG_INFO : BK_LOG_WARN;
        if (bk_logs(&c->env, level, c->nccl ? BK_SUB_COLL : BK_SUB_ALL))
            bk_log(level, dev, "%s%s from %s: NCCL (%s)%s%s", coll, rooted, from,
                   algo == BK_ALGO_NCCL ? "BLINK_ALGO=nccl" :
                   "the plan's per-size choice: NCCL's rings are faster here",
                   c->nccl ? "" : "; there is no NCCL, so the call fails: ",
                   c->nccl ? "" : bk_nccl_missing(c));
    } else if (algo == BLINK_PLAN_RINGS)
        bk_log(BK_LOG_WARN, dev, "%s%s from %s: NCCL's rings were planned; this runtime has no "
               "NCCL (%s), so it runs %s itself (%d chains, %s chunks%s)", coll, rooted, from,
               bk_nccl_missing(c), rings ? "the rings" : "the trees (no ring set)",
               out->ntrees, ch, ll);
    else if (algo == BLINK_PLAN_HYBRID && !hybrid && bk_logs(&c->env, BK_LOG_INFO, BK_SUB_COLL))
        bk_log(BK_LOG_INFO, dev, "%s%s from %s: blinkc's plan, %d trees, %s chunks%s (%s; the "
               "hybrid's PCIe trees need host-staged edges, which %s)", coll, rooted, from,
               out->ntrees, ch, ll, by, sch->npcie_trees > 0
               ? "this backend does not have yet" : "the plan has none for");
    else if (hybrid && bk_logs(&c->env, BK_LOG_INFO, BK_SUB_COLL))
        bk_log(BK_LOG_INFO, dev, "%s%s from %s: blinkc's plan, hybrid: %d trees and %d PCIe trees "
               "on host-staged edges, %s chunks (%s)", coll, rooted, from, sch->ntrees,
               sch->npcie_trees, ch, by);
    else if (bk_logs(&c->env, BK_LOG_INFO, BK_SUB_COLL))
        bk_log(BK_LOG_INFO, dev, "%s%s from %s: blinkc's plan, %d trees, %s chunks%s (%s)",
               coll, rooted, from, out->ntrees, ch, ll, by);
}

blinkResult_t blinkrtCommChoice(const blinkComm_t comm, int coll, int root, size_t count,
                                blinkDataType_t dt, int *algo, size_t *chunk_bytes)
{
    if (!comm)
        return bk_error(blinkInvalidArgument, "blinkrtCommChoice: comm is NULL");
    if (bk_dtype_size(dt) == 0)
        return bk_error(blinkInvalidArgument, "blinkrtCommChoice: datatype %d unknown", (int)dt);
    int rooted = bk_is_rooted(coll);
    if (rooted && (root < 0 || root >= comm->nranks))
        return bk_error(blinkInvalidUsage, "blinkrtCommChoice: root %d out of range", root);
    const struct blink_plan_schedule *sch =
        bk_schedule(comm->plan, coll, rooted ? comm->plan_of[root] : root);
    if (!sch)
        return bk_error(blinkInvalidUsage, "blinkrtCommChoice: the plan has no schedule for "
                        "collective %d root %d", coll, root);
    struct bk_args a = {0};
    a.coll = coll;
    a.root = root;
    a.count = count;
    a.dt = dt;
    struct bk_choice ch;
    bk_choose(comm, sch, &a, 0, &ch);
    if (algo)
        *algo = ch.algo;
    if (chunk_bytes)
        *chunk_bytes = ch.chunk_bytes;
    return blinkSuccess;
}
