/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * exec_host_step.c - one thread of the host executor (exec_host.c) at work: its trees' up and
 * down steps, each moving one chunk when its flags allow (over shared memory, in Simple or LL
 * packets, or over MPI to another server), and the loop that advances them until the launch
 * is done, fails or times out.
 */
#define _DEFAULT_SOURCE /* syscall(2), for the futex */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "exec_host_internal.h"
#include "net_edge.h"
#include "proc.h"
#include "reduce_host.h"

/* BLINK_HOST_FAIL_COPY: the chunk write that fails, and the writes so far. */
static unsigned long long fail_write_at, writes;

void bk_hx_fail_write(unsigned long long n)
{
    __atomic_store_n(&fail_write_at, n, __ATOMIC_RELAXED);
    __atomic_store_n(&writes, 0, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ buffers */

/* This rank's input and output at element x of tree t's group (one shard if sharded). */
static const unsigned char *in_at(blinkComm_t c, const struct bk_launch *L, const struct bk_role *t,
                                  size_t x)
{
    size_t es = bk_dtype_size((blinkDataType_t)L->d.dt);
    size_t base = L->d.coll == BLINK_PLAN_REDUCESCATTER ? (size_t)c->user_of[t->root] * L->d.count : 0;
    return (const unsigned char *)L->send + (base + x) * es;
}

static unsigned char *out_at(blinkComm_t c, const struct bk_launch *L, const struct bk_role *t,
                             size_t x)
{
    size_t es = bk_dtype_size((blinkDataType_t)L->d.dt);
    size_t base = L->d.coll == BLINK_PLAN_ALLGATHER ? (size_t)c->user_of[t->root] * L->d.count : 0;
    return (unsigned char *)L->recv + (base + x) * es;
}

/* A chunk write into a peer: where fault injection strikes. */
static int write_allowed(struct worker *w)
{
    unsigned long long n = __atomic_load_n(&fail_write_at, __ATOMIC_RELAXED);
    if (n && __atomic_add_fetch(&writes, 1, __ATOMIC_RELAXED) == n)
        return fail(w, blinkSystemError, "host backend: injected failure of chunk write %llu "
                    "on rank %d (BLINK_HOST_FAIL_COPY)", n, w->x->c->rank), 0;
    return 1;
}

/* ------------------------------------------------------------------ descriptions */

/* Peer q is in this call with the same description: 1; not yet: 0; a mismatch: -1.
 * One acquire load of q's entered word decides, unless it names this call with another hash or
 * BLINK_CHECK_CALLS=1: then the two descriptions are read and compared. */
static int peer_ready(struct worker *w, int q)
{
    struct bk_hx *x = w->x;
    blinkComm_t c = x->c;
    uint32_t seq = (uint32_t)x->L->d.seq;
    if (w->checked[q] == seq)
        return 1;
    struct bk_seg_header *h = hdr(c, q);
    uint64_t e = __atomic_load_n(&h->entered, __ATOMIC_ACQUIRE);
    if (e == x->entry && !c->env.check_calls) {
        w->checked[q] = seq;
        return 1;
    }
    uint32_t es = bk_entry_seq(e);
    if (es != seq) {
        w->waiting_for = q;
        if (es != 0 && (int32_t)(es - seq) > 0) /* 0: no call yet (a fresh header) */
            return fail(w, blinkInvalidUsage, "mismatched collective calls: rank %d is at call "
                        "%u of the communicator, rank %d at call %u", c->user_of[q], es, c->rank,
                        seq);
        return 0;
    }
    uint64_t theirs[BK_DESC_WORDS], mine[BK_DESC_WORDS];
    for (int i = 0; i < BK_DESC_WORDS; i++) {
        theirs[i] = __atomic_load_n(&h->desc[i], __ATOMIC_RELAXED);
        mine[i] = __atomic_load_n(&hdr(c, c->prank)->desc[i], __ATOMIC_RELAXED);
    }
    /* The description loads before the reload (an acquire fence: C11's load-load order). */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&h->entered, __ATOMIC_ACQUIRE) != e)
        return 0; /* moved on while we read: look again */
    if (memcmp(theirs, mine, sizeof mine) != 0 || e != x->entry) {
        char a[160], b[160];
        bk_net_describe(mine, a, sizeof a);
        bk_net_describe(theirs, b, sizeof b);
        return fail(w, blinkInvalidUsage, "mismatched collective calls (call %u of the "
                    "communicator): rank %d: %s; rank %d: %s", seq, c->rank, a, c->user_of[q], b);
    }
    w->checked[q] = seq;
    return 1;
}

/* ------------------------------------------------------------------ steps */

/* What a step of tree ti on chunk ch works with. */
struct step {
    blinkComm_t c;
    const struct bk_launch *L;
    const struct bk_layout *lay;
    const struct bk_role *t;
    const int *kids;
    uint32_t seq, ch;
    int me, k, root;
    size_t es, x0, m;          /* element size; the chunk's first element and length */
};

static struct step step_of(const struct worker *w, int ti, const struct tree_state *s,
                           uint32_t ch)
{
    const struct bk_launch *L = w->x->L;
    const struct bk_role *t = &L->set->roles[ti];
    size_t x0 = s->lo + (size_t)ch * L->chunk_elems;
    return (struct step){w->x->c, L, &L->set->lay, t, L->set->kids + t->kids_at,
                         (uint32_t)L->d.seq, ch, w->x->c->prank, (int)(ch % BK_SLOTS),
                         t->parent < 0, bk_dtype_size((blinkDataType_t)L->d.dt), x0,
                         bk_chunk_len(s->lo, s->hi, ch, L->chunk_elems)};
}

/* ------------------------------------------------------------------ edges over MPI */

/* Remote peer q's description of this call matches this rank's: 1; not here yet: 0; -1. */
int hx_remote_ready(struct worker *w, int q)
{
    struct bk_hx *x = w->x;
    blinkComm_t c = x->c;
    const uint64_t *mine = &x->L->d.seq;
    uint32_t seq = (uint32_t)x->L->d.seq;
    if (w->checked[q] == seq)
        return 1;
    char why[BK_MSG_MAX];
    pthread_mutex_lock(&x->net_mu);
    int t = x->desc_seq[q] == seq ? 2
                                  : bk_net_test(&x->desc_req[2 * q], NULL, NULL, why, sizeof why);
    uint64_t theirs[BK_DESC_WORDS];
    memcpy(theirs, x->desc_in + (size_t)q * BK_DESC_WORDS, sizeof theirs);
    if (t == 1 && memcmp(theirs, mine, sizeof theirs) == 0)
        x->desc_seq[q] = seq, t = 2;
    pthread_mutex_unlock(&x->net_mu);
    if (t == 0) {
        w->waiting_for = q;
        return 0;
    }
    if (t < 0)
        return fail(w, blinkSystemError, "rank %d: %s", c->rank, why);
    if (t == 1) {
        char m[BK_MSG_MAX];
        bk_net_mismatch(c, q, mine, theirs, m, sizeof m);
        return fail(w, blinkInvalidUsage, "%s", m);
    }
    w->checked[q] = seq;
    return 1;
}

static size_t chunk_bytes(const struct bk_launch *L, const struct tree_state *s, uint32_t ch)
{
    return bk_chunk_len(s->lo, s->hi, ch, L->chunk_elems) *
           bk_dtype_size((blinkDataType_t)L->d.dt);
}

/* The requests of tree state s: up out k, down in k, up in (child j, k), down out (j, k). */
static struct bk_net_req *req_up_out(struct tree_state *s, int k) { return &s->req[k]; }
static struct bk_net_req *req_down_in(struct tree_state *s, int k) { return &s->req[BK_SLOTS + k]; }
static struct bk_net_req *req_up_in(struct tree_state *s, int j, int k)
{
    return &s->req[2 * BK_SLOTS + j * BK_SLOTS + k];
}
static struct bk_net_req *req_down_out(const struct bk_hx *x, struct tree_state *s, int j, int k)
{
    return &s->req[2 * BK_SLOTS + (x->fmax + j) * BK_SLOTS + k];
}

/* Chunk ch from remote peer q (child j going up, or the parent going down) is in its slot: 1;
 * not yet: 0; failed: -1. Receives are posted ahead into the free slots: chunk c into slot
 * c % S once chunk c - S has left it (the chunks before ch have). */
static int remote_arrived(struct worker *w, int ti, struct tree_state *s, int q, int down, int j,
                          uint32_t ch)
{
    struct bk_hx *x = w->x;
    blinkComm_t c = x->c;
    const struct bk_layout *lay = &x->L->set->lay;
    int r = hx_remote_ready(w, q);
    if (r <= 0)
        return r;
    char why[BK_MSG_MAX];
    uint32_t *posted = &s->posted[down ? x->fmax : j];
    for (; *posted < s->nchunks && *posted < ch + BK_SLOTS; (*posted)++) {
        int k = (int)(*posted % BK_SLOTS);
        void *slot = at(c, c->prank, down ? bk_off_down_slot(lay, c->prank, ti, k)
                                          : bk_off_up_slot(lay, c->prank, ti, j, k));
        if (bk_net_irecv(c->net, q, bk_net_tag_edge(ti, down), slot, chunk_bytes(x->L, s, *posted),
                         down ? req_down_in(s, k) : req_up_in(s, j, k), why, sizeof why) != 0)
            return fail(w, blinkSystemError, "rank %d: %s", c->rank, why);
    }
    struct bk_net_req *rq = down ? req_down_in(s, (int)(ch % BK_SLOTS))
                                 : req_up_in(s, j, (int)(ch % BK_SLOTS));
    int live = rq->live;
    size_t got = 0;
    int t = bk_net_test(rq, NULL, &got, why, sizeof why);
    if (t < 0)
        return fail(w, blinkSystemError, "rank %d: receiving from rank %d: %s", c->rank,
                    c->user_of[q], why);
    if (t == 0) {
        w->waiting_for = q;
        return 0;
    }
    if (live)
        __atomic_add_fetch(&x->recvd[q], got, __ATOMIC_RELAXED);
    return 1;
}

/* The edge's send of chunk ch - S (request rq) has left: chunk ch may go. 1, 0 or -1. */
static int send_room(struct worker *w, struct bk_net_req *rq, int q)
{
    char why[BK_MSG_MAX];
    int t = bk_net_test(rq, NULL, NULL, why, sizeof why);
    if (t < 0)
        return fail(w, blinkSystemError, "rank %d: sending to rank %d: %s", w->x->c->rank,
                    w->x->c->user_of[q], why);
    if (t == 0)
        w->waiting_for = q;
    return t;
}

static int send_chunk(struct worker *w, int q, int tag, const void *buf, size_t bytes,
                      struct bk_net_req *rq)
{
    char why[BK_MSG_MAX];
    if (!write_allowed(w))
        return -1;
    if (bk_net_isend(w->x->c->net, q, tag, buf, bytes, rq, why, sizeof why) != 0)
        return fail(w, blinkSystemError, "rank %d: sending to rank %d: %s", w->x->c->rank,
                    w->x->c->user_of[q], why);
    __atomic_add_fetch(&w->x->sent[q], bytes, __ATOMIC_RELAXED);
    return 1;
}

/* ------------------------------------------------------------------ LL passes */

static int remote(blinkComm_t c, int q) { return c->peer[q].remote; }
static int gone(blinkComm_t c, int q);
static void waited_for(const struct bk_hx *x, int q, char *buf, size_t len);

static int ll_call(const struct bk_launch *L) { return (L->d.algo & BK_ALGO_LL) != 0; }
/* Tree slot ti's edges: 1 host-staged (a hybrid's PCIe tree), 0 direct. On this backend both
 * kinds are the same shared memory; the count says what a GPU would move over each. */
static int staged_edge(const struct bk_launch *L, int ti)
{
    return L->set->tree_of[ti] >= L->set->staged_from;
}
static int direct_call(const struct bk_launch *L) { return (L->d.algo & BK_ALGO_DIRECT) != 0; }
static const uint64_t *ll_in(blinkComm_t c, size_t off) { return word(c, c->prank, off); }

/* A packet awaited inside a pass: the same watch as the worker's waits between passes (an
 * abort, BLINK_TIMEOUT_S without progress, a peer process gone), naming the peer. */
static int ll_idle(void *arg, int q, double *since)
{
    struct worker *w = arg;
    struct bk_hx *x = w->x;
    blinkComm_t c = x->c;
    uint32_t who = __atomic_load_n(&hdr(c, c->prank)->abort, __ATOMIC_ACQUIRE);
    if (who)
        return hx_fail_aborted(w, who);
    double now = bk_now();
    if (*since == 0) {
        *since = now;
        return 0;
    }
    char msg[BK_MSG_MAX];
    if (now - *since > 0.1 && c->nremote && hx_heard_abort(x, msg, sizeof msg))
        return hx_fail_remote_abort(w, msg);
    if (now - *since > c->env.timeout_s) {
        char peer[256];
        waited_for(x, q, peer, sizeof peer);
        return fail(w, blinkSystemError, "rank %d (device %d): no progress for %g s in %s (call "
                    "%u, LL)%s (BLINK_TIMEOUT_S)", c->rank, c->peer[c->prank].topo_dev,
                    c->env.timeout_s, bk_coll_name((int)x->L->d.coll), (uint32_t)x->L->d.seq,
                    peer);
    }
    if (now - *since > 0.1 && gone(c, q))
        return fail(w, blinkRemoteError, "rank %d (pid %d, device %d) exited during %s (call "
                    "%u, LL)", c->user_of[q], c->peer[q].pid, c->peer[q].topo_dev,
                    bk_coll_name((int)x->L->d.coll), (uint32_t)x->L->d.seq);
    return 0;
}

static void ll_ring(void *arg, int q) { hx_ring(((struct worker *)arg)->x->c, q); }
static void sleep_on_bell(struct bk_seg_header *me, uint32_t seen);
static void ll_nap(void *arg, uint32_t seen)
{
    blinkComm_t c = ((struct worker *)arg)->x->c;
    sleep_on_bell(hdr(c, c->prank), seen);
}

/* Chunk p.ch of tree ti by LL: what its pass needs. */
static struct bk_ll_pass ll_pass(struct worker *w, int ti, const struct step *p, blinkRedOp_t op)
{
    return (struct bk_ll_pass){p->m * p->es, p->es, (blinkDataType_t)p->L->d.dt, op,
                               bk_ll_flag(p->seq, p->ch), ll_idle, ll_ring, ll_nap,
                               &hdr(p->c, p->me)->bell, w, w->ll_tile,
                               p->c, ti, p->k, p->t, p->kids, p->lay};
}

/* ------------------------------------------------------------------ the two phases */

/*
 * Where a child's output takes this chunk (at byte offset pos, len bytes) when this rank writes
 * it there itself (proto.h, Direct and Registered), else NULL for its down slot: 0, or -1 when
 * its registered region cannot be mapped (the call fails). peer_ready's acquire load of the
 * child's entered ordered the words read here.
 */
static int kid_output(struct worker *w, int q, size_t pos, size_t len, unsigned char **dst)
{
    blinkComm_t c = w->x->c;
    const struct bk_launch *L = w->x->L;
    struct bk_seg_header *h = hdr(c, q);
    *dst = NULL;
    if (direct_call(L)) {
        *dst = (unsigned char *)(uintptr_t)__atomic_load_n(&h->out, __ATOMIC_RELAXED) + pos;
        return 0;
    }
    struct bk_out_reg reg = {__atomic_load_n(&h->out_pid, __ATOMIC_RELAXED),
                             __atomic_load_n(&h->out_fd, __ATOMIC_RELAXED),
                             __atomic_load_n(&h->out_ino, __ATOMIC_RELAXED),
                             __atomic_load_n(&h->out_off, __ATOMIC_RELAXED),
                             __atomic_load_n(&h->out_serial, __ATOMIC_RELAXED), 0, {0}};
    if (!reg.ino || ll_call(L))
        return 0;
    char why[256];
    unsigned char *base = bk_reg_map(c, q, &reg, reg.off + pos + len, w->x->gen, why, sizeof why);
    if (!base)
        return fail(w, blinkSystemError, "rank %d: cannot write rank %d's registered output: "
                    "%s (BLINK_DIRECT=0 keeps it in the staging)", c->rank, c->user_of[q], why);
    *dst = base + reg.off + pos;
    return 0;
}

/* Chunk s->up of tree ti going up: 1 done, 0 not ready, -1 failed. */
static int up_step(struct worker *w, int ti, struct tree_state *s)
{
    if (s->up >= s->nchunks || !bk_has_up((int)w->x->L->d.coll))
        return 0;
    struct step p = step_of(w, ti, s, s->up);
    blinkComm_t c = p.c;
    const struct bk_layout *lay = p.lay;
    const struct bk_role *t = p.t;
    const int *kids = p.kids;
    uint32_t seq = p.seq, ch = p.ch;
    int me = p.me, k = p.k, root = p.root, r, ll = ll_call(p.L);
    for (int j = 0; j < t->nkids; j++) {
        if (remote(c, kids[j])) {
            if ((r = remote_arrived(w, ti, s, kids[j], 0, j, ch)) <= 0)
                return r;
        } else if (ll ? !bk_ll_begun(ll_in(c, bk_off_ll_up_slot(lay, me, ti, j, k)),
                                     bk_ll_flag(seq, ch))
                      : !bk_tag_reached(ld(word(c, me, bk_off_up_ready(lay, me, ti, j))), seq,
                                        ch + 1)) {
            w->waiting_for = kids[j];
            return 0;
        }
    }
    int net = !root && remote(c, t->parent);
    if (!root) {
        r = net ? hx_remote_ready(w, t->parent) : peer_ready(w, t->parent);
        if (r <= 0)
            return r;
        if (net && (r = send_room(w, req_up_out(s, k), t->parent)) <= 0)
            return r;
        if (!net && ch >= BK_SLOTS &&
            !bk_tag_reached(ld(word(c, me, bk_off_up_freed(lay, me, ti, t->parent))), seq,
                            ch - BK_SLOTS + 1)) {
            w->waiting_for = t->parent;
            return 0;
        }
    }
    TRACE(w, BK_TR_UP_DECIDE, ti, ch, t->parent);
    const struct bk_launch *L = p.L;
    blinkDataType_t dt = (blinkDataType_t)L->d.dt;
    blinkRedOp_t op = (blinkRedOp_t)L->d.op == blinkAvg ? blinkSum : (blinkRedOp_t)L->d.op;
    size_t es = p.es, x0 = p.x0, m = p.m;
    const unsigned char *in = in_at(c, L, t, x0);
    unsigned char *dst = root ? out_at(c, L, t, x0)
                         : net && t->nkids == 0 ? (unsigned char *)in /* sent as it is */
                         : net ? w->x->net_slots + ((size_t)ti * BK_SLOTS + (size_t)k) *
                                                   lay->slot_bytes
                               : at(c, t->parent, bk_off_up_slot(lay, t->parent, ti, t->kpos, k));
    if (!root && !net && !write_allowed(w))
        return -1;
    TRACE(w, BK_TR_UP_START, ti, ch, t->parent);
    if (ll) {
        struct bk_ll_pass lp = ll_pass(w, ti, &p, op);
        if (bk_ll_up(&lp, in, root || net ? dst : NULL, w->ll_src) != 0)
            return -1;
    } else if (t->nkids == 0) {
        if (dst != in)
            memmove(dst, in, m * es);
    } else {
        for (int j = 0; j < t->nkids; j++)
            bk_host_reduce(dst, j ? dst : in, at(c, me, bk_off_up_slot(lay, me, ti, j, k)), m,
                           dt, op);
    }
    if (root && (blinkRedOp_t)L->d.op == blinkAvg)
        bk_host_divide(dst, m, dt, c->nranks);
    if (net && send_chunk(w, t->parent, bk_net_tag_edge(ti, 0), dst, m * es, req_up_out(s, k)) < 0)
        return -1;
    if (!root && !net && !ll) {
        st(word(c, t->parent, bk_off_up_ready(lay, t->parent, ti, t->kpos)), bk_tag(seq, ch + 1));
        hx_ring(c, t->parent);
    }
    if (!root)
        w->sent[staged_edge(L, ti)] += m * es;
    for (int j = 0; j < t->nkids; j++) {
        if (remote(c, kids[j]))
            continue; /* its next receive is posted when chunk ch + 1 is awaited */
        st(word(c, kids[j], bk_off_up_freed(lay, kids[j], ti, me)), bk_tag(seq, ch + 1));
        hx_ring(c, kids[j]);
    }
    TRACE(w, BK_TR_UP_POST, ti, ch, t->parent);
    s->up++;
    return 1;
}

/* Chunk s->down of tree ti going down. */
static int down_step(struct worker *w, int ti, struct tree_state *s)
{
    if (s->down >= s->nchunks || !bk_has_down((int)w->x->L->d.coll))
        return 0;
    struct step p = step_of(w, ti, s, s->down);
    blinkComm_t c = p.c;
    const struct bk_launch *L = p.L;
    const struct bk_layout *lay = p.lay;
    const struct bk_role *t = p.t;
    const int *kids = p.kids;
    uint32_t seq = p.seq, ch = p.ch;
    int me = p.me, k = p.k, root = p.root, r, ll = ll_call(L);
    int allreduce = L->d.coll == BLINK_PLAN_ALLREDUCE, direct = direct_call(L);
    int here = direct || L->reg.ino; /* the parent writes this rank's output itself */
    size_t es = p.es, x0 = p.x0, m = p.m;
    unsigned char *out = out_at(c, L, t, x0);
    unsigned char **into = w->into;
    const unsigned char *src;
    if (root) {
        if (allreduce && s->up <= ch)
            return 0;
        src = allreduce ? out_at(c, L, t, x0) : in_at(c, L, t, x0);
    } else {
        if (remote(c, t->parent)) {
            if ((r = remote_arrived(w, ti, s, t->parent, 1, 0, ch)) <= 0)
                return r;
        } else if (ll ? !bk_ll_begun(ll_in(c, bk_off_ll_down_slot(lay, me, ti, k)),
                                     bk_ll_flag(seq, ch))
                      : !bk_tag_reached(ld(word(c, me, bk_off_down_ready(lay, me, ti))), seq,
                                        ch + 1)) {
            w->waiting_for = t->parent;
            return 0;
        }
        /* Direct, Registered: the parent wrote this rank's output itself (proto.h). */
        src = here ? out : at(c, me, bk_off_down_slot(lay, me, ti, k));
    }
    for (int j = 0; j < t->nkids; j++) {
        if (remote(c, kids[j])) {
            if ((r = hx_remote_ready(w, kids[j])) <= 0 ||
                (r = send_room(w, req_down_out(w->x, s, j, k), kids[j])) <= 0)
                return r;
            continue;
        }
        if ((r = peer_ready(w, kids[j])) <= 0 ||
            (r = kid_output(w, kids[j], out - (unsigned char *)L->recv, m * es, &into[j])) < 0)
            return r;
        if (!into[j] && ch >= BK_SLOTS && /* into its output: no slot, so no credit */
            !bk_tag_reached(ld(word(c, me, bk_off_down_freed(lay, me, ti, kids[j]))), seq,
                            ch - BK_SLOTS + 1)) {
            w->waiting_for = kids[j];
            return 0;
        }
    }
    TRACE(w, BK_TR_DOWN_DECIDE, ti, ch, t->parent);
    TRACE(w, BK_TR_DOWN_START, ti, ch, t->parent);
    if (ll) {
        for (int j = 0; j < t->nkids; j++)
            if (!remote(c, kids[j]) && !write_allowed(w))
                return -1;
        struct bk_ll_pass lp = ll_pass(w, ti, &p, blinkSum);
        if (bk_ll_down(&lp, root || remote(c, t->parent) ? src : NULL, out, w->ll_dst) != 0)
            return -1;
    } else if (out != src) {
        memmove(out, src, m * es);
    }
    for (int j = 0; j < t->nkids; j++) {
        /* To another server from the output, which stays put until the call ends. */
        if (remote(c, kids[j])) {
            if (send_chunk(w, kids[j], bk_net_tag_edge(ti, 1), out, m * es, req_down_out(w->x, s, j, k)) < 0)
                return -1;
            continue;
        }
        if (ll)
            continue; /* its packets went with the pass */
        if (!write_allowed(w))
            return -1;
        unsigned char *dst = into[j] ? into[j]
                                     : at(c, kids[j], bk_off_down_slot(lay, kids[j], ti, k));
        memcpy(dst, src, m * es);
        st(word(c, kids[j], bk_off_down_ready(lay, kids[j], ti)), bk_tag(seq, ch + 1));
        hx_ring(c, kids[j]);
    }
    if (!root && !remote(c, t->parent) && !here) {
        st(word(c, t->parent, bk_off_down_freed(lay, t->parent, ti, me)), bk_tag(seq, ch + 1));
        hx_ring(c, t->parent);
    }
    w->sent[staged_edge(L, ti)] += (unsigned long long)t->nkids * m * es;
    TRACE(w, BK_TR_DOWN_POST, ti, ch, t->parent);
    s->down++;
    return 1;
}

/* ------------------------------------------------------------------ one thread's share */

static int tree_done(const struct bk_launch *L, const struct tree_state *s)
{
    int coll = (int)L->d.coll;
    return (!bk_has_up(coll) || s->up >= s->nchunks) && (!bk_has_down(coll) || s->down >= s->nchunks);
}

/* Whether peer q's process is gone. Only a peer this rank waits for counts: a peer that has
 * done its part of the call may well have exited. */
static int gone(blinkComm_t c, int q)
{
    return q >= 0 && !c->peer[q].remote && c->peer[q].pid != getpid() &&
           bk_pid_gone(c->peer[q].pid);
}

/* Every request of this worker's trees is done (sends to other servers have left). */
static int net_settled(struct worker *w, int *waiting_for)
{
    struct bk_hx *x = w->x;
    int per_tree = 2 * BK_SLOTS + 2 * x->fmax * BK_SLOTS;
    char why[BK_MSG_MAX];
    for (int ti = w->index; ti < x->L->set->ntrees; ti += x->nthreads)
        for (int i = 0; i < per_tree; i++) {
            int t = bk_net_test(&w->ts[ti].req[i], NULL, NULL, why, sizeof why);
            if (t < 0)
                return fail(w, blinkSystemError, "rank %d: %s", x->c->rank, why);
            if (t == 0) {
                *waiting_for = -1;
                return 0;
            }
        }
    return 1;
}

/* A failed worker gives up its messages still pending. */
static void net_drop_all(struct worker *w)
{
    struct bk_hx *x = w->x;
    int per_tree = 2 * BK_SLOTS + 2 * x->fmax * BK_SLOTS;
    for (int ti = w->index; x->c->nremote && ti < x->L->set->ntrees; ti += x->nthreads)
        for (int i = 0; i < per_tree; i++)
            bk_net_drop(&w->ts[ti].req[i]);
}

/* Sleep on this rank's bell until something is stored into its segment (or 10 ms pass). */
static void sleep_on_bell(struct bk_seg_header *me, uint32_t seen)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    __atomic_add_fetch(&me->sleepers, 1, __ATOMIC_SEQ_CST);
    hx_futex(&me->bell, FUTEX_WAIT, seen, &ts);
    __atomic_sub_fetch(&me->sleepers, 1, __ATOMIC_SEQ_CST);
}

static void work_trees(struct worker *w);

/* The timeout message's peer: and, where it is in another call or disagrees about this one,
 * where it is (its header's entered word and description). */
static void waited_for(const struct bk_hx *x, int q, char *buf, size_t len)
{
    blinkComm_t c = x->c;
    int n = snprintf(buf, len, ", waiting for rank %d (device %d)", c->user_of[q],
                     c->peer[q].topo_dev);
    const struct bk_seg_header *h = hdr(c, q);
    if (c->peer[q].remote || !h || n < 0 || (size_t)n >= len)
        return;
    uint64_t e = __atomic_load_n(&h->entered, __ATOMIC_ACQUIRE), d[BK_DESC_WORDS];
    if (e == x->entry)
        return;
    if (bk_entry_seq(e) == 0) {
        snprintf(buf + n, len - (size_t)n, ", which has entered no call yet");
        return;
    }
    for (int i = 0; i < BK_DESC_WORDS; i++)
        d[i] = __atomic_load_n(&h->desc[i], __ATOMIC_RELAXED);
    char a[160];
    bk_net_describe(d, a, sizeof a);
    snprintf(buf + n, len - (size_t)n, ", which is in call %u: %s", bk_entry_seq(e), a);
}

void hx_work(struct worker *w)
{
    int plays = w->index < w->x->L->set->ntrees; /* a thread with no tree is no block */
    if (plays)
        TRACE(w, BK_TR_ENTER, 0, 0, -1);
    work_trees(w);
    if (plays)
        TRACE(w, BK_TR_EXIT, 0, 0, -1);
    if (__atomic_load_n(&w->x->failed, __ATOMIC_ACQUIRE))
        net_drop_all(w);
}

static void work_trees(struct worker *w)
{
    struct bk_hx *x = w->x;
    blinkComm_t c = x->c;
    const struct bk_launch *L = x->L;
    struct bk_seg_header *me = hdr(c, c->prank);
    int nt = L->set->ntrees, mine = 0;
    for (int ti = w->index; ti < nt; ti += x->nthreads) {
        const struct bk_role *t = &L->set->roles[ti];
        struct tree_state *s = &w->ts[ti];
        size_t es = bk_dtype_size((blinkDataType_t)L->d.dt);
        s->lo = bk_split_at(L->d.count, es, t->lo_w, t->total_w);
        s->hi = bk_split_at(L->d.count, es, t->hi_w, t->total_w);
        s->nchunks = bk_nchunks(s->lo, s->hi, L->chunk_elems);
        s->up = s->down = 0;
        if (s->posted)
            memset(s->posted, 0, sizeof *s->posted * (size_t)(x->fmax + 1));
        mine++;
    }
    int settled = !c->nremote;
    double idle_since = 0, last_check = 0;
    int spins = 0;
    while (mine > 0) {
        uint32_t bell = __atomic_load_n(&me->bell, __ATOMIC_SEQ_CST);
        int moved = 0, done = 1;
        w->waiting_for = -1;
        if (__atomic_load_n(&x->failed, __ATOMIC_ACQUIRE))
            return;
        for (int ti = w->index; ti < nt; ti += x->nthreads) {
            struct tree_state *s = &w->ts[ti];
            int r;
            while ((r = up_step(w, ti, s)) > 0)
                moved = 1;
            if (r == 0)
                while ((r = down_step(w, ti, s)) > 0)
                    moved = 1;
            if (r < 0)
                return;
            done &= tree_done(L, s);
        }
        if (done && !settled) {
            int r = net_settled(w, &w->waiting_for);
            if (r < 0)
                return;
            settled = r;
        }
        if (done && settled)
            return;
        if (moved) {
            idle_since = 0;
            spins = 0;
            continue;
        }
        uint32_t who = __atomic_load_n(&me->abort, __ATOMIC_ACQUIRE);
        if (who) {
            hx_fail_aborted(w, who);
            return;
        }
        if (++spins < 16) {
            sched_yield();
            continue;
        }
        if (c->nremote) {
            /* MPI rings no bell here: poll it, and listen for the other servers' aborts. */
            char msg[BK_MSG_MAX];
            if (hx_heard_abort(x, msg, sizeof msg)) {
                hx_fail_remote_abort(w, msg);
                return;
            }
            struct timespec ts = {0, spins < 1000 ? 2000 : 50000};
            nanosleep(&ts, NULL);
        } else {
            sleep_on_bell(me, bell);
        }
        if ((who = __atomic_load_n(&me->abort, __ATOMIC_ACQUIRE)) != 0) {
            hx_fail_aborted(w, who);
            return;
        }
        double now = bk_now();
        if (idle_since == 0)
            idle_since = last_check = now;
        int q = w->waiting_for;
        if (now - idle_since > c->env.timeout_s) {
            char peer[256] = "";
            if (q >= 0)
                waited_for(x, q, peer, sizeof peer);
            fail(w, blinkSystemError, "rank %d (device %d): no progress for %g s in %s (call "
                 "%u)%s (BLINK_TIMEOUT_S)", c->rank, c->peer[c->prank].topo_dev,
                 c->env.timeout_s, bk_coll_name((int)L->d.coll), (uint32_t)L->d.seq, peer);
            return;
        }
        if (now - last_check > 0.1) {
            last_check = now;
            /* A peer that aborted may have exited since: its reason, not its exit, counts. */
            if (gone(c, q) && (who = __atomic_load_n(&me->abort, __ATOMIC_ACQUIRE)) != 0) {
                hx_fail_aborted(w, who);
                return;
            }
            if (gone(c, q)) {
                fail(w, blinkRemoteError, "rank %d (pid %d, device %d) exited during %s (call "
                     "%u)", c->user_of[q], c->peer[q].pid, c->peer[q].topo_dev,
                     bk_coll_name((int)L->d.coll), (uint32_t)L->d.seq);
                return;
            }
        }
    }
}
