/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * exec.c - turns one collective call of every rank into ordered work on internal streams,
 * following blink_plan.h's execution rules, through the backend interface (backend.h).
 *
 * Streams: per (rank, tree slot i) an "up" stream (reductions toward the root), a "push" stream
 * (copies of the rank's partial to its parent) and a "down" stream (copies away from the root),
 * created on first use and shared by the i-th tree of every schedule (calls of one communicator
 * set run one after another anyway). Within a tree, chunk c is enqueued for every rank before
 * chunk c+1, children before parents going up and parents before children going down; every
 * wait refers to an event recorded earlier in that order, so the work graph is acyclic and
 * chunks pipeline along the tree's depth.
 *
 * Up (push): each rank moves its own partial result for a chunk to its parent on its own push
 * stream, so the children of a node send in parallel over their different links; had the parent
 * pulled them one after another on its single up stream, a node of fan-in k would take in data
 * at about 1/k of the planned rate. Reducing and pushing are on separate streams so that a rank
 * reduces chunk c+1 in while its push of chunk c is still on the wire (on one stream they
 * alternated, and the up phase ran at about 1.5x the planned time). Scratch per (rank, tree
 * slot): NSLOT out-slots (accumulators), then NSLOT in-slots per child; chunk c uses slot
 * k = c % NSLOT. Events per (rank, tree slot):
 *   cons[k]    on up, once chunk c is reduced ("reduced"): v's in-slots k are free again, and
 *              out-slot k holds v's partial of chunk c, ready to push;
 *   pushed[k]  on push, once chunk c is in the parent's in-slot k: the parent may reduce it,
 *              and v's out-slot k may be rewritten;
 *   ev[UP]     on up at the root, once chunk c is complete (allreduce's down waits for it);
 *   ev[DOWN]   on down, once v has chunk c;
 *   ev[PUSH], and ev[UP] elsewhere: only for the final join.
 * Up stream of a rank with children, chunk c: (c >= NSLOT, not the root) wait for its own
 * pushed[k] (the push of chunk c - NSLOT out of out-slot k), then for each child wait for the
 * child's pushed[k] and reduce the child's in-slot k into the accumulator (out-slot k, or the
 * output buffer at the root), then record cons[k]. Push stream of any rank but the root: wait for
 * its own cons[k] (not for a leaf, whose partial is its input), and (c >= NSLOT) for the parent's
 * cons[k] (the parent consumed chunk c - NSLOT from that in-slot), copy the partial into the
 * parent's in-slot, record pushed[k].
 * Down: each rank copies a chunk from its parent once the parent has it.
 * Joins: every stream of rank v first waits for v's user stream; at the end a hub stream waits
 * for every stream used and every user stream waits for the hub, so a call completes on all
 * ranks together and a failure anywhere reaches every rank.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "rt.h"

#define UP 0
#define DOWN 1
#define PUSH 2
#define NSTREAM 3
#define NSLOT 2

struct rank_tree {
    struct bk_stream *s[NSTREAM];   /* [UP], [DOWN], [PUSH] */
    struct bk_event *ev[NSTREAM];   /* recorded on s[k] (see the header for when) */
    struct bk_event *cons[NSLOT];   /* on s[UP]: chunk c % NSLOT reduced */
    struct bk_event *pushed[NSLOT]; /* on s[PUSH]: chunk c % NSLOT in the parent's in-slot */
    void *scratch;                  /* NSLOT out-slots, then NSLOT in-slots per child */
    int fanin;                    /* the most children of this rank in this slot's trees */
};

struct bk_exec {
    int slots;                    /* tree slots: the most trees of any schedule */
    struct rank_tree *rt;         /* [slots * nranks] */
    struct bk_stream *hub;
    struct bk_event *hub_ev;
    struct bk_event **user_ev;    /* [nranks] */
    size_t slot_bytes;            /* one chunk of any datatype */
    int *kids, *kstart;           /* the current tree's children lists */
    int *kpos;                    /* [nranks] each rank's index among its parent's children */
};

/* What one launch needs at hand. */
struct launch {
    struct bk_commset *cs;
    struct bk_exec *ex;
    const struct bk_backend *be;
    const struct bk_args *a;      /* [nranks] */
    const struct blink_plan_tree *set; /* the tree set this call runs (bk_choose) */
    int nset;
    const struct blink_plan_tree *t;
    int ti;
    size_t es;                    /* element size */
    blinkRedOp_t op;              /* avg becomes sum */
};

#define CHECK(call) do { blinkResult_t r_ = (call); if (r_ != blinkSuccess) return r_; } while (0)

static struct rank_tree *rt_of(const struct launch *L, int v)
{
    return &L->ex->rt[(size_t)L->ti * (size_t)L->cs->nranks + (size_t)v];
}

/* Slot ti's scratch must take the largest fan-in of any tree run in that slot. */
static void note_fanin(struct bk_exec *ex, size_t n, int ti, const int *parent)
{
    for (size_t v = 0; v < n; v++)
        ex->kids[v] = 0;
    for (size_t v = 0; v < n; v++)
        if (parent[v] >= 0)
            ex->kids[parent[v]]++;
    for (size_t v = 0; v < n; v++)
        if (ex->kids[v] > ex->rt[(size_t)ti * n + v].fanin)
            ex->rt[(size_t)ti * n + v].fanin = ex->kids[v];
}

blinkResult_t bk_exec_init(struct bk_commset *cs)
{
    const struct bk_backend *be = bk_backend();
    struct bk_exec *ex = calloc(1, sizeof *ex);
    if (!ex)
        return bk_error(blinkSystemError, "blinkCommInitAll: out of memory");
    cs->ex = ex;
    /* Slots serve the trees and the ring trees of every schedule, at the largest chunk any
     * range (or the environment) asks for. */
    size_t chunk = cs->chunk_env ? cs->chunk_env : cs->chunk_bytes;
    for (int i = 0; i < cs->plan->nschedules; i++) {
        const struct blink_plan_schedule *s = &cs->plan->schedules[i];
        ex->slots = s->ntrees > ex->slots ? s->ntrees : ex->slots;
        ex->slots = s->nring_trees > ex->slots ? s->nring_trees : ex->slots;
        for (int k = 0; !cs->chunk_env && k < s->nranges; k++)
            chunk = s->ranges[k].chunk_bytes > chunk ? s->ranges[k].chunk_bytes : chunk;
    }
    size_t n = (size_t)cs->nranks;
    ex->slot_bytes = chunk < 8 ? 8 : chunk;
    ex->rt = calloc((size_t)ex->slots * n + 1, sizeof *ex->rt);
    ex->user_ev = calloc(n, sizeof *ex->user_ev);
    ex->kids = calloc(n, sizeof *ex->kids);
    ex->kstart = calloc(n + 1, sizeof *ex->kstart);
    ex->kpos = calloc(n, sizeof *ex->kpos);
    if (!ex->rt || !ex->user_ev || !ex->kids || !ex->kstart || !ex->kpos) {
        bk_exec_free(cs);
        return bk_error(blinkSystemError, "blinkCommInitAll: out of memory");
    }
    /* Scratch is sized once, for the largest fan-in of any tree in each slot. */
    for (int i = 0; i < cs->plan->nschedules; i++)
        for (int set = 0; set < 2; set++) {
            const struct blink_plan_schedule *s = &cs->plan->schedules[i];
            int nt = set ? s->nring_trees : s->ntrees;
            for (int ti = 0; ti < nt; ti++)
                note_fanin(ex, n, ti, (set ? s->ring_trees : s->trees)[ti].parent);
        }
    blinkResult_t r = be->stream_create(cs->devs[0], BK_JOIN_LABEL, &ex->hub);
    if (r == blinkSuccess)
        r = be->event_create(cs->devs[0], &ex->hub_ev);
    for (int v = 0; v < cs->nranks && r == blinkSuccess; v++)
        r = be->event_create(cs->devs[v], &ex->user_ev[v]);
    if (r != blinkSuccess)
        bk_exec_free(cs);
    return r;
}

void bk_exec_free(struct bk_commset *cs)
{
    const struct bk_backend *be = bk_backend();
    struct bk_exec *ex = cs->ex;
    if (!ex)
        return;
    size_t n = (size_t)cs->nranks;
    /* Streams first: destroying one waits for its work, which may use the events and memory. */
    if (ex->rt)
        for (size_t i = 0; i < (size_t)ex->slots * n; i++)
            for (int k = 0; k < NSTREAM; k++)
                if (ex->rt[i].s[k])
                    be->stream_destroy(ex->rt[i].s[k]);
    if (ex->hub)
        be->stream_destroy(ex->hub);
    if (ex->rt)
        for (size_t i = 0; i < (size_t)ex->slots * n; i++) {
            struct rank_tree *rt = &ex->rt[i];
            for (int k = 0; k < NSTREAM; k++)
                if (rt->ev[k])
                    be->event_destroy(rt->ev[k]);
            for (int k = 0; k < NSLOT; k++) {
                if (rt->cons[k])
                    be->event_destroy(rt->cons[k]);
                if (rt->pushed[k])
                    be->event_destroy(rt->pushed[k]);
            }
            if (rt->scratch)
                be->mem_free(cs->devs[i % n], rt->scratch);
        }
    if (ex->hub_ev)
        be->event_destroy(ex->hub_ev);
    if (ex->user_ev)
        for (size_t v = 0; v < n; v++)
            if (ex->user_ev[v])
                be->event_destroy(ex->user_ev[v]);
    free(ex->rt);
    free(ex->user_ev);
    free(ex->kids);
    free(ex->kstart);
    free(ex->kpos);
    free(ex);
    cs->ex = NULL;
}

blinkResult_t bk_exec_wait(struct bk_commset *cs)
{
    return bk_backend()->event_synchronize(cs->ex->hub_ev);
}

/* ------------------------------------------------------------------ buffers */

static int nkids(const struct launch *L, int v) { return L->ex->kstart[v + 1] - L->ex->kstart[v]; }

static int sharded(int coll)
{
    return coll == BLINK_PLAN_ALLGATHER || coll == BLINK_PLAN_REDUCESCATTER;
}

/* Rank v's input and output at element x of the current tree's group (one shard if sharded). */
static const char *in_at(const struct launch *L, int v, size_t x)
{
    size_t base = L->a[v].coll == BLINK_PLAN_REDUCESCATTER ? (size_t)L->t->root * L->a[v].count : 0;
    return (const char *)L->a[v].send + (base + x) * L->es;
}

static char *out_at(const struct launch *L, int v, size_t x)
{
    size_t base = L->a[v].coll == BLINK_PLAN_ALLGATHER ? (size_t)L->t->root * L->a[v].count : 0;
    return (char *)L->a[v].recv + (base + x) * L->es;
}

static char *slot_at(const struct launch *L, int v, int k)
{
    return (char *)rt_of(L, v)->scratch + (size_t)k * L->ex->slot_bytes;
}

/* ------------------------------------------------------------------ steps */

/* In-slot k of rank v's child number j (k < NSLOT). */
static char *in_slot(const struct launch *L, int v, int j, int k)
{
    return slot_at(L, v, NSLOT + j * NSLOT + k);
}

/* Chunk c (elements [x, x + m)) going up at rank v: reduce in the children's pushes of chunk c
 * on v's up stream, then push v's partial to its parent on v's push stream. */
static blinkResult_t up_step(const struct launch *L, int v, size_t c, size_t x, size_t m)
{
    const struct bk_backend *be = L->be;
    struct rank_tree *me = rt_of(L, v);
    struct bk_stream *s = me->s[UP];
    int root = L->t->root, nk = nkids(L, v), *kids = L->ex->kids + L->ex->kstart[v];
    int dev = L->cs->devs[v], k = (int)(c % NSLOT);
    size_t bytes = m * L->es;
    const char *part = in_at(L, v, x);
    if (nk > 0) {
        char *acc = v == root ? out_at(L, v, x) : slot_at(L, v, k);
        /* Out-slot k still holds chunk c - NSLOT until v's push of it is done. */
        if (v != root && c >= NSLOT)
            CHECK(be->stream_wait(s, me->pushed[k]));
        for (int j = 0; j < nk; j++) {
            CHECK(be->stream_wait(s, rt_of(L, kids[j])->pushed[k]));
            CHECK(be->reduce(s, acc, j ? acc : part, in_slot(L, v, j, k), m, L->a[v].dt,
                             L->op));
        }
        CHECK(be->event_record(me->cons[k], s));
        part = acc;
    }
    if (v != root) {
        int p = L->t->parent[v];
        struct bk_stream *ps = me->s[PUSH];
        if (nk > 0)
            CHECK(be->stream_wait(ps, me->cons[k]));
        if (c >= NSLOT)
            CHECK(be->stream_wait(ps, rt_of(L, p)->cons[k]));
        CHECK(be->copy(ps, L->cs->devs[p], in_slot(L, p, L->ex->kpos[v], k), dev, part, bytes));
        return be->event_record(me->pushed[k], ps);
    }
    if (nk == 0 && out_at(L, v, x) != part)
        CHECK(be->copy(s, dev, out_at(L, v, x), dev, part, bytes));
    if (L->a[v].op == blinkAvg)
        CHECK(be->divide(s, out_at(L, v, x), m, L->a[v].dt, L->cs->nranks));
    return be->event_record(me->ev[UP], s);
}

/* Chunk (elements [x, x + m)) going down at rank v. */
static blinkResult_t down_step(const struct launch *L, int v, size_t x, size_t m)
{
    const struct bk_backend *be = L->be;
    struct rank_tree *me = rt_of(L, v);
    struct bk_stream *s = me->s[DOWN];
    int root = L->t->root, dev = L->cs->devs[v];
    int allreduce = L->a[v].coll == BLINK_PLAN_ALLREDUCE;
    if (v == root) {
        if (allreduce)
            CHECK(be->stream_wait(s, me->ev[UP]));
        else if (out_at(L, v, x) != in_at(L, v, x))
            CHECK(be->copy(s, dev, out_at(L, v, x), dev, in_at(L, v, x), m * L->es));
    } else {
        int p = L->t->parent[v];
        const char *src = p == root && !allreduce ? in_at(L, p, x) : out_at(L, p, x);
        CHECK(be->stream_wait(s, rt_of(L, p)->ev[DOWN]));
        CHECK(be->copy(s, dev, out_at(L, v, x), L->cs->devs[p], src, m * L->es));
    }
    return be->event_record(me->ev[DOWN], s);
}

/* ------------------------------------------------------------------ set-up per launch */

/* Streams, events and scratch of (rank v, current tree slot) for the phases used. */
static blinkResult_t prepare(const struct launch *L, int v, int up, int down)
{
    const struct bk_backend *be = L->be;
    struct rank_tree *me = rt_of(L, v);
    int dev = L->cs->devs[v];
    static const char *const name[NSTREAM] = {"up", "down", "push"};
    for (int k = 0; k < NSTREAM; k++) {
        if (!(k == DOWN ? down : up) || me->s[k])
            continue;
        char label[64];
        snprintf(label, sizeof label, "rank %d tree %d %s", v, L->ti, name[k]);
        CHECK(be->stream_create(dev, label, &me->s[k]));
        CHECK(be->event_create(dev, &me->ev[k]));
        for (int j = 0; j < NSLOT && k != DOWN; j++)
            CHECK(be->event_create(dev, k == UP ? &me->cons[j] : &me->pushed[j]));
    }
    if (up && me->fanin > 0 && !me->scratch)
        CHECK(be->mem_alloc(dev, (size_t)NSLOT * (size_t)(1 + me->fanin) * L->ex->slot_bytes,
                            &me->scratch));
    return blinkSuccess;
}

/* Children lists in the tree's order: deterministic, and the same on every launch. */
static void children(const struct launch *L)
{
    int n = L->cs->nranks, *kstart = L->ex->kstart;
    for (int v = 0; v <= n; v++)
        kstart[v] = 0;
    for (int v = 0; v < n; v++)
        if (L->t->parent[v] >= 0)
            kstart[L->t->parent[v] + 1]++;
    for (int v = 0; v < n; v++)
        kstart[v + 1] += kstart[v];
    /* Fill through kstart[p] as a cursor, then shift the cursors back. */
    for (int i = 0; i < n; i++) {
        int v = L->t->order[i], p = L->t->parent[v];
        if (p >= 0)
            L->ex->kids[kstart[p]++] = v;
    }
    for (int v = n; v > 0; v--)
        kstart[v] = kstart[v - 1];
    kstart[0] = 0;
    for (int p = 0; p < n; p++)
        for (int j = kstart[p]; j < kstart[p + 1]; j++)
            L->ex->kpos[L->ex->kids[j]] = j - kstart[p];
}

/* floor(n * s / w) without overflow (s <= w < 2^32). */
static size_t split_at(size_t n, uint64_t s, uint64_t w)
{
    uint64_t q = n / w, r = n % w;
    return (size_t)(q * s + r * s / w);
}

/* The current tree's element range within its group. */
static void tree_range(const struct launch *L, const struct blink_plan_schedule *sch,
                       size_t *lo, size_t *hi)
{
    int shard = sharded(sch->coll);
    uint64_t before = 0, total = 0;
    for (int i = 0; i < L->nset; i++) {
        if (shard && L->set[i].root != L->t->root)
            continue;
        if (i < L->ti)
            before += L->set[i].weight;
        total += L->set[i].weight;
    }
    *lo = split_at(L->a[0].count, before, total);
    *hi = split_at(L->a[0].count, before + L->t->weight, total);
}

static blinkResult_t run_tree(struct launch *L, const struct blink_plan_schedule *sch, int up,
                              int down, size_t chunk)
{
    size_t lo, hi;
    int n = L->cs->nranks;
    tree_range(L, sch, &lo, &hi);
    size_t nchunks = (hi - lo + chunk - 1) / chunk;
    for (size_t c = 0; c < nchunks; c++) {
        size_t x = lo + c * chunk, m = hi - x < chunk ? hi - x : chunk;
        for (int i = n - 1; up && i >= 0; i--)
            CHECK(up_step(L, L->t->order[i], c, x, m));
        for (int i = 0; down && i < n; i++)
            CHECK(down_step(L, L->t->order[i], x, m));
    }
    return blinkSuccess;
}

/* Every stream used: [ti][v][k] for the phases of this collective. */
#define FOR_STREAMS(L, sch, up, down, body)                                                   \
    for ((L)->ti = 0; (L)->ti < (L)->nset; (L)->ti++)                                         \
        for (int v = 0; v < (L)->cs->nranks; v++)                                             \
            for (int k = 0; k < NSTREAM; k++)                                                 \
                if (k == DOWN ? (down) : (up)) {                                              \
                    struct rank_tree *me = rt_of((L), v);                                     \
                    body;                                                                     \
                }

blinkResult_t bk_exec_launch(struct bk_commset *cs, const struct bk_args *a)
{
    const struct blink_plan *plan = cs->plan;
    const struct blink_plan_schedule *sch = bk_schedule(plan, a[0].coll, a[0].root);
    if (!sch)
        return bk_error(blinkInvalidUsage, "%s%s: the plan for topology '%s' (fingerprint %s) "
                        "has no %s schedule%s (compile one with blinkc)", bk_coll_name(a[0].coll),
                        a[0].root >= 0 ? " from this root" : "", plan->topology ? plan->topology :
                        "?", plan->fingerprint ? plan->fingerprint : "?",
                        bk_coll_name(a[0].coll), a[0].root >= 0 ? " for this root" : "");
    if (a[0].count == 0)
        return blinkSuccess;
    struct bk_choice ch;
    bk_choose(cs, sch, &a[0], 1, &ch);
    if (ch.algo == BLINK_PLAN_RINGS && cs->nccl)
        return bk_nccl_launch(cs, a);
    struct launch L = {cs, cs->ex, bk_backend(), a, ch.trees, ch.ntrees, NULL, 0,
                       bk_dtype_size(a[0].dt), a[0].op == blinkAvg ? blinkSum : a[0].op};
    int c = sch->coll;
    int up = c == BLINK_PLAN_REDUCE || c == BLINK_PLAN_REDUCESCATTER || c == BLINK_PLAN_ALLREDUCE;
    int down = c == BLINK_PLAN_BROADCAST || c == BLINK_PLAN_ALLGATHER || c == BLINK_PLAN_ALLREDUCE;
    size_t chunk = ch.chunk_bytes / L.es ? ch.chunk_bytes / L.es : 1;
    const struct bk_backend *be = L.be;
    int join_user = !be->null_stream_sync;

    for (L.ti = 0; L.ti < L.nset; L.ti++) {
        L.t = &L.set[L.ti];
        children(&L);
        for (int v = 0; v < cs->nranks; v++)
            CHECK(prepare(&L, v, up, down));
    }
    /* In: every stream of rank v waits for v's user stream. */
    for (int v = 0; v < cs->nranks; v++)
        if (a[v].stream || join_user)
            CHECK(be->user_record(cs->ex->user_ev[v], a[v].stream, cs->devs[v]));
    FOR_STREAMS(&L, sch, up, down,
                if (a[v].stream || join_user)
                    CHECK(be->stream_wait(me->s[k], cs->ex->user_ev[v])));
    for (L.ti = 0; L.ti < L.nset; L.ti++) {
        L.t = &L.set[L.ti];
        children(&L);
        CHECK(run_tree(&L, sch, up, down, chunk));
    }
    /* Out: the hub waits for every stream, every user stream for the hub. */
    FOR_STREAMS(&L, sch, up, down,
                CHECK(be->event_record(me->ev[k], me->s[k]));
                CHECK(be->stream_wait(cs->ex->hub, me->ev[k])));
    CHECK(be->event_record(cs->ex->hub_ev, cs->ex->hub));
    for (int v = 0; v < cs->nranks; v++)
        if (a[v].stream || join_user)
            CHECK(be->user_wait(a[v].stream, cs->ex->hub_ev, cs->devs[v]));
    return blinkSuccess;
}
