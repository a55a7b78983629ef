/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * call.c - the collective entry points and NCCL's two calling styles.
 *
 * Every rank's call is posted to its communicator set under a sequence number (the rank's n-th
 * call is call n of the set). When the last rank posts call n, that thread checks that all ranks
 * agree (collective, count, datatype, op, root) and launches it - in sequence order, under the
 * set's lock, so consecutive collectives never mix. A call that fails its own checks is posted
 * anyway, so that every rank gets the error instead of waiting forever.
 *
 * Thread per rank: each call posts, then waits until its call has been launched. Group style:
 * between blinkGroupStart and blinkGroupEnd (thread-local) calls are only recorded; GroupEnd
 * posts them all, then waits for them all. On the host backend a NULL stream then blocks the
 * caller until the collective is done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "rt.h"

struct bk_slot {
    unsigned long long seq;
    int posted, consumed, done;
    blinkResult_t res;
    char msg[BK_MSG_MAX];
    struct bk_slot *next;
    struct bk_args *args;      /* [nranks] */
    blinkResult_t *lres;       /* [nranks] each call's own checks */
    char (*lmsg)[BK_MSG_MAX / 2];
};

struct group_call {
    blinkComm_t comm;
    struct bk_args a;
    const char *fn;
    unsigned long long seq;
};

static _Thread_local int group_depth;
static _Thread_local struct group_call *group_calls;
static _Thread_local int group_n, group_cap;

static int is_rooted(int coll) { return coll == BLINK_PLAN_BROADCAST || coll == BLINK_PLAN_REDUCE; }
static int has_op(int coll) { return coll != BLINK_PLAN_BROADCAST && coll != BLINK_PLAN_ALLGATHER; }

/* A call's own checks: what one rank can see without the others. */
static blinkResult_t check_local(const struct bk_commset *cs, int rank, const struct bk_args *a,
                                 const char *fn, char *msg, size_t len)
{
    if (bk_dtype_size(a->dt) == 0) {
        snprintf(msg, len, "%s: rank %d: datatype %d invalid", fn, rank, (int)a->dt);
        return blinkInvalidArgument;
    }
    if (has_op(a->coll) && (unsigned)a->op >= blinkNumOps) {
        snprintf(msg, len, "%s: rank %d: reduction op %d invalid", fn, rank, (int)a->op);
        return blinkInvalidArgument;
    }
    if (is_rooted(a->coll) && (a->root < 0 || a->root >= cs->nranks)) {
        snprintf(msg, len, "%s: rank %d: root %d out of range 0..%d", fn, rank, a->root,
                 cs->nranks - 1);
        return blinkInvalidArgument;
    }
    int needs_send = a->coll != BLINK_PLAN_BROADCAST || rank == a->root;
    int needs_recv = a->coll != BLINK_PLAN_REDUCE || rank == a->root;
    if (a->count > 0 && ((needs_send && !a->send) || (needs_recv && !a->recv))) {
        snprintf(msg, len, "%s: rank %d: %s is NULL", fn, rank, !a->recv && needs_recv ?
                 "recvbuff" : "sendbuff");
        return blinkInvalidArgument;
    }
    return blinkSuccess;
}

static void describe(const struct bk_args *a, char *buf, size_t len)
{
    snprintf(buf, len, "%s count %zu %s", bk_coll_name(a->coll), a->count, bk_dtype_name(a->dt));
    size_t at = strlen(buf);
    if (has_op(a->coll))
        at += (size_t)snprintf(buf + at, len - at, " %s", bk_op_name(a->op));
    if (is_rooted(a->coll) && at < len)
        snprintf(buf + at, len - at, " root %d", a->root);
}

static int args_agree(const struct bk_args *a, const struct bk_args *b)
{
    return a->coll == b->coll && a->count == b->count && a->dt == b->dt &&
           (!has_op(a->coll) || a->op == b->op) && (!is_rooted(a->coll) || a->root == b->root);
}

/* The last rank posted: check agreement and launch. cs->mu is held. */
static void launch(struct bk_commset *cs, struct bk_slot *s)
{
    for (int r = 0; r < cs->nranks; r++)
        if (s->lres[r] != blinkSuccess) {
            s->res = s->lres[r];
            snprintf(s->msg, sizeof s->msg, "%s", s->lmsg[r]);
            return;
        }
    for (int r = 1; r < cs->nranks; r++)
        if (!args_agree(&s->args[0], &s->args[r])) {
            char d0[128], dr[128];
            describe(&s->args[0], d0, sizeof d0);
            describe(&s->args[r], dr, sizeof dr);
            s->res = blinkInvalidUsage;
            snprintf(s->msg, sizeof s->msg, "mismatched collective calls (call %llu of the "
                     "communicators): rank 0: %s; rank %d: %s", s->seq, d0, r, dr);
            return;
        }
    if (cs->failed) {
        s->res = blinkInvalidUsage;
        snprintf(s->msg, sizeof s->msg, "%s: an earlier launch on these communicators failed; "
                 "destroy them", bk_coll_name(s->args[0].coll));
        return;
    }
    s->res = bk_exec_launch(cs, s->args);
    if (s->res != blinkSuccess) {
        cs->failed = 1;
        snprintf(s->msg, sizeof s->msg, "%s", bk_last_error());
    }
}

static struct bk_slot *slot_get(struct bk_commset *cs, unsigned long long seq, int create)
{
    struct bk_slot **pp = &cs->slots;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->seq == seq)
            return *pp;
    if (!create)
        return NULL;
    size_t n = (size_t)cs->nranks;
    struct bk_slot *s = calloc(1, sizeof *s);
    if (s) {
        s->args = calloc(n, sizeof *s->args);
        s->lres = calloc(n, sizeof *s->lres);
        s->lmsg = calloc(n, sizeof *s->lmsg);
        if (!s->args || !s->lres || !s->lmsg) {
            free(s->args); free(s->lres); free(s->lmsg); free(s);
            return NULL;
        }
        s->seq = seq;
        *pp = s; /* appended: the list stays in sequence order */
    }
    return s;
}

static void slot_free(struct bk_commset *cs, struct bk_slot *s)
{
    for (struct bk_slot **pp = &cs->slots; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    free(s->args); free(s->lres); free(s->lmsg); free(s);
}

static blinkResult_t post(blinkComm_t comm, const struct bk_args *a, const char *fn,
                          unsigned long long *seq)
{
    struct bk_commset *cs = comm->cs;
    pthread_mutex_lock(&cs->mu);
    struct bk_slot *s = slot_get(cs, cs->posted[comm->rank], 1);
    if (!s) {
        pthread_mutex_unlock(&cs->mu);
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    }
    *seq = cs->posted[comm->rank]++;
    s->args[comm->rank] = *a;
    s->lres[comm->rank] = check_local(cs, comm->rank, a, fn, s->lmsg[comm->rank],
                                      sizeof s->lmsg[0]);
    s->posted++;
    /* Launch every complete call in order (a later one may complete first in group style). */
    while ((s = slot_get(cs, cs->next_exec, 0)) != NULL && s->posted == cs->nranks) {
        launch(cs, s);
        s->done = 1;
        cs->next_exec++;
        pthread_cond_broadcast(&cs->cv);
    }
    pthread_mutex_unlock(&cs->mu);
    return blinkSuccess;
}

static blinkResult_t await(blinkComm_t comm, unsigned long long seq)
{
    struct bk_commset *cs = comm->cs;
    pthread_mutex_lock(&cs->mu);
    struct bk_slot *s;
    while (!(s = slot_get(cs, seq, 0))->done)
        pthread_cond_wait(&cs->cv, &cs->mu);
    blinkResult_t r = s->res;
    if (r != blinkSuccess)
        bk_set_last_error(s->msg);
    if (++s->consumed == cs->nranks)
        slot_free(cs, s);
    pthread_mutex_unlock(&cs->mu);
    return r;
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
        group_calls[group_n++] = (struct group_call){comm, *a, fn, 0};
        return blinkSuccess;
    }
    unsigned long long seq;
    blinkResult_t r = post(comm, a, fn, &seq);
    if (r == blinkSuccess)
        r = await(comm, seq);
    if (r == blinkSuccess && !a->stream && bk_backend()->null_stream_sync)
        r = bk_exec_wait(comm->cs);
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
    blinkResult_t first = blinkSuccess;
    char msg[BK_MSG_MAX] = "";
    int i, n = group_n;
    for (i = 0; i < n; i++) {
        blinkResult_t r = post(group_calls[i].comm, &group_calls[i].a, group_calls[i].fn,
                               &group_calls[i].seq);
        if (r != blinkSuccess) {
            /* Nothing later is posted; those already posted are still awaited below. */
            first = r;
            snprintf(msg, sizeof msg, "%s", bk_last_error());
            break;
        }
    }
    int posted = i;
    for (i = 0; i < posted; i++) {
        blinkResult_t r = await(group_calls[i].comm, group_calls[i].seq);
        if (r != blinkSuccess && first == blinkSuccess) {
            first = r;
            snprintf(msg, sizeof msg, "%s", bk_last_error());
        }
    }
    /* NULL streams on the host: wait once per communicator set, after everything launched. */
    for (i = 0; i < posted && first == blinkSuccess; i++) {
        struct bk_commset *cs = group_calls[i].comm->cs;
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= group_calls[j].comm->cs == cs && !group_calls[j].a.stream;
        if (!group_calls[i].a.stream && !seen && bk_backend()->null_stream_sync) {
            blinkResult_t r = bk_exec_wait(cs);
            if (r != blinkSuccess) {
                first = r;
                snprintf(msg, sizeof msg, "%s", bk_last_error());
            }
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
