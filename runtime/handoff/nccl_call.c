/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_call.c - each rank's communicator of the real NCCL (nccl_real.h), for what the plan
 * does not run: the message sizes where blinkc's plan found NCCL's rings faster than its trees
 * (blink_plan.h, ranges), and in libblink-nccl every call the plan cannot serve.
 *
 * Each rank holds one NCCL communicator from ncclCommInitRankConfig, with the ncclUniqueId that
 * user rank 0 made and the init rendezvous carried (comm.c), made after that rendezvous has
 * closed. NCCL refuses two ranks on one GPU (virtual ranks), so they do not try; then, or on
 * any NCCL failure at init, the rank goes on without NCCL and says so under BLINK_DEBUG=WARN.
 * A call goes to NCCL on the user's stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_real.h"
#include "rt.h"

struct bk_nccl {
    ncclComm_t comm;
};

int bk_nccl_id(void *id)
{
    const struct bk_real_nccl *n = bk_real_nccl();
    ncclUniqueId u;
    if (!n || n->GetUniqueId(&u) != ncclSuccess)
        return 0;
    memcpy(id, &u, sizeof u < BK_NCCL_ID_BYTES ? sizeof u : BK_NCCL_ID_BYTES);
    return 1;
}

/* Two ranks on one GPU of one host, which NCCL refuses (after a collective init of its own
 * that a rank may never return from): their user ranks in *a < *b. */
static int gpu_shared(blinkComm_t c, int *a, int *b)
{
    for (int p = 0; p < c->nranks; p++)
        for (int q = p + 1; q < c->nranks && c->peer[p].busid[0]; q++)
            if (!strcmp(c->peer[p].busid, c->peer[q].busid) &&
                !strcmp(c->peer[p].host, c->peer[q].host)) {
                *a = c->user_of[p] < c->user_of[q] ? c->user_of[p] : c->user_of[q];
                *b = c->user_of[p] < c->user_of[q] ? c->user_of[q] : c->user_of[p];
                return 1;
            }
    return 0;
}

void bk_nccl_init(blinkComm_t c, const void *id)
{
    const struct bk_real_nccl *real = bk_real_nccl();
    const char *why = NULL;
    char shared[128];
    int a, b;
    struct bk_nccl *n = calloc(1, sizeof *n);
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    if (!real) {
        why = bk_real_nccl_why();
    } else if (c->peer && gpu_shared(c, &a, &b)) {
        snprintf(shared, sizeof shared, "NCCL refuses ranks %d and %d on one GPU (%s)", a, b,
                 c->peer[c->plan_of[a]].busid);
        why = shared;
    } else if (!n) {
        why = "out of memory";
    } else {
        ncclResult_t r = real->CommInitRankConfig(&n->comm, c->nranks, u, c->rank, NULL);
        if (r != ncclSuccess)
            why = real->GetErrorString(r);
    }
    if (!why) {
        c->nccl = n;
        return;
    }
    free(n);
    snprintf(c->nccl_why, sizeof c->nccl_why, "%s%s", why == shared ? "" : "NCCL's init failed: ",
             why);
    if (bk_logs(&c->env, BK_LOG_WARN, BK_SUB_ALL))
        bk_log(BK_LOG_WARN, bk_log_dev(c), "rank %d: no NCCL (%s)", c->rank, c->nccl_why);
}

/* Destroy, or abort, the rank's NCCL communicator. */
static void drop(blinkComm_t c, int abort)
{
    if (!c->nccl)
        return;
    const struct bk_real_nccl *n = bk_real_nccl();
    (abort ? n->CommAbort : n->CommDestroy)(c->nccl->comm);
    free(c->nccl);
    c->nccl = NULL;
}

void bk_nccl_free(blinkComm_t c) { drop(c, 0); }
void bk_nccl_abort(blinkComm_t c) { drop(c, 1); }

void *bk_nccl_comm(blinkComm_t c)
{
    return c && c->nccl ? c->nccl->comm : NULL;
}

const char *bk_nccl_missing(blinkComm_t c)
{
    if (c && c->nccl)
        return "";
    if (c && c->nccl_why[0])
        return c->nccl_why;
    const char *why = bk_real_nccl_why();
    return why[0] ? why : "no NCCL communicator";
}

static ncclResult_t one_call(const struct bk_real_nccl *n, const struct bk_args *a,
                             ncclComm_t c)
{
    cudaStream_t s = (cudaStream_t)a->stream;
    /* blink's datatypes and operations carry NCCL's numbers. */
    ncclDataType_t t = (ncclDataType_t)a->dt;
    ncclRedOp_t op = (ncclRedOp_t)a->op;
    switch (a->coll) {
    case BLINK_PLAN_BROADCAST: return n->Broadcast(a->send, a->recv, a->count, t, a->root, c, s);
    case BLINK_PLAN_REDUCE: return n->Reduce(a->send, a->recv, a->count, t, op, a->root, c, s);
    case BLINK_PLAN_ALLREDUCE: return n->AllReduce(a->send, a->recv, a->count, t, op, c, s);
    case BLINK_PLAN_ALLGATHER: return n->AllGather(a->send, a->recv, a->count, t, c, s);
    default: return n->ReduceScatter(a->send, a->recv, a->count, t, op, c, s);
    }
}

blinkResult_t bk_nccl_launch(blinkComm_t c, const struct bk_args *a)
{
    if (!c->nccl)
        return bk_error(blinkInvalidUsage, "%s: this call goes to NCCL, and there is none (%s)",
                        bk_coll_name(a->coll), bk_nccl_missing(c));
    const struct bk_real_nccl *n = bk_real_nccl();
    ncclResult_t r = one_call(n, a, c->nccl->comm);
    if (r == ncclSuccess)
        return blinkSuccess;
    /* NCCL's result codes and blink's share their values. */
    return bk_error((blinkResult_t)r, "%s: NCCL failed: %s%s%s", bk_coll_name(a->coll),
                    n->GetErrorString(r), n->GetLastError ? ": " : "",
                    n->GetLastError ? n->GetLastError(c->nccl->comm) : "");
}
