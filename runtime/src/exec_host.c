/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * exec_host.c - the host backend's executor: one launch of the protocol (proto.h) on one rank.
 *
 * Threads play threadblocks: thread w takes the trees ti with ti % nthreads == w and advances
 * each tree's up phase (receive from the children, reduce with this rank's input, send to the
 * parent in one pass) and down phase (receive from the parent, store the output, send to the
 * children in one pass) whenever its flags allow, never blocking on one tree while another
 * could move, so any number of threads finishes any schedule. Flags are C11-style atomics on
 * the mapped segments (acquire loads, release stores); a thread with nothing to do sleeps on
 * its rank's futex word, which every store into the segment bumps. While it waits it watches
 * for an abort, for BLINK_TIMEOUT_S without progress, and for peers whose process is gone.
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

#include "exec_host.h"
#include "reduce_host.h"
#include "rendezvous.h"

struct tree_state {
    size_t lo, hi;             /* the tree's elements */
    uint32_t nchunks, up, down; /* chunks; chunks done going up and going down */
};

struct worker {
    struct bk_hx *x;
    int index;
    pthread_t th;
    uint32_t *checked;         /* [nranks] the call whose description matched that peer's */
    struct tree_state *ts;     /* [ntrees of the launch] */
    int waiting_for;           /* the peer the last blocked step waited for */
    char msg[BK_MSG_MAX];
};

struct bk_hx {
    blinkComm_t c;
    int nthreads;
    struct worker *w;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned long long gen;
    int finished, stop;
    const struct bk_launch *L;
    int failed;                /* atomic: a thread of this launch failed */
    blinkResult_t res;
    char msg[BK_MSG_MAX];
};

static unsigned long long fail_write_at, writes;

void bk_hx_fail_write(unsigned long long n)
{
    __atomic_store_n(&fail_write_at, n, __ATOMIC_RELAXED);
    __atomic_store_n(&writes, 0, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ segments and flags */

static struct bk_seg_header *hdr(blinkComm_t c, int q) { return (struct bk_seg_header *)c->peer[q].seg; }
static uint64_t *word(blinkComm_t c, int q, size_t off) { return (uint64_t *)(c->peer[q].seg + off); }
static unsigned char *at(blinkComm_t c, int q, size_t off) { return c->peer[q].seg + off; }
static uint64_t ld(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void st(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

static long futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

/* After a store into q's segment: bump its bell and wake its sleepers. */
static void ring(blinkComm_t c, int q)
{
    struct bk_seg_header *h = hdr(c, q);
    __atomic_add_fetch(&h->bell, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&h->sleepers, __ATOMIC_SEQ_CST))
        futex(&h->bell, FUTEX_WAKE, INT_MAX, NULL);
}

void bk_hx_abort(blinkComm_t c, const char *msg)
{
    uint32_t mine = (uint32_t)c->prank + 1;
    struct bk_seg_header *me = hdr(c, c->prank);
    if (!me)
        return;
    if (__atomic_load_n(&me->abort, __ATOMIC_ACQUIRE) == 0)
        snprintf(me->abort_msg, sizeof me->abort_msg, "%s", msg);
    for (int q = 0; q < c->nranks; q++) {
        int v = (q + c->prank) % c->nranks; /* this rank's own header first */
        uint32_t none = 0;
        if (!hdr(c, v))
            continue; /* not mapped: init failed before it */
        __atomic_compare_exchange_n(&hdr(c, v)->abort, &none, mine, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
        ring(c, v);
    }
}

/* ------------------------------------------------------------------ failing */

/* Fail this launch; unless the failure was heard from another rank's abort, tell them all. */
static int fail_how(struct worker *w, blinkResult_t r, int heard, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_how(struct worker *w, blinkResult_t r, int heard, const char *fmt, ...)
{
    struct bk_hx *x = w->x;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg, sizeof w->msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&x->mu);
    if (x->res == blinkSuccess) {
        x->res = r;
        snprintf(x->msg, sizeof x->msg, "%s", w->msg);
    }
    pthread_mutex_unlock(&x->mu);
    __atomic_store_n(&x->failed, 1, __ATOMIC_RELEASE);
    if (!heard)
        bk_hx_abort(x->c, w->msg);
    return -1;
}
#define fail(w, r, ...) fail_how(w, r, 0, __VA_ARGS__)

/* This rank's header says some rank aborted: fail with that rank's reason. */
static int fail_aborted(struct worker *w, uint32_t who)
{
    blinkComm_t c = w->x->c;
    int q = (int)who - 1;
    if (q == c->prank)
        return fail_how(w, blinkRemoteError, 1, "%s", hdr(c, q)->abort_msg);
    return fail_how(w, blinkRemoteError, 1, "rank %d gave up: %s", c->user_of[q],
                    hdr(c, q)->abort_msg);
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

static void describe(const uint64_t *d, char *buf, size_t len)
{
    int coll = (int)d[1], has_op = bk_has_op(coll);
    int n = snprintf(buf, len, "%s count %llu %s", bk_coll_name(coll), (unsigned long long)d[5],
                     bk_dtype_name((blinkDataType_t)d[3]));
    if (has_op && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " %s", bk_op_name((blinkRedOp_t)d[4]));
    if ((int64_t)d[2] >= 0 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " root (plan rank) %lld", (long long)d[2]);
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", %s, chunk %llu", d[6] ? "rings" : "trees",
                 (unsigned long long)d[7]);
}

/* Peer q is in this call with the same description: 1; not yet: 0; a mismatch: -1. */
static int peer_ready(struct worker *w, int q)
{
    blinkComm_t c = w->x->c;
    uint32_t seq = (uint32_t)w->x->L->d.seq;
    if (w->checked[q] == seq)
        return 1;
    struct bk_seg_header *h = hdr(c, q);
    uint32_t e = __atomic_load_n(&h->entered, __ATOMIC_ACQUIRE);
    if (e != seq) {
        w->waiting_for = q;
        if ((int32_t)(e - seq) > 0)
            return fail(w, blinkInvalidUsage, "mismatched collective calls: rank %d is at call "
                        "%u of the communicator, rank %d at call %u", c->user_of[q], e, c->rank,
                        seq);
        return 0;
    }
    uint64_t theirs[BK_DESC_WORDS], mine[BK_DESC_WORDS];
    for (int i = 0; i < BK_DESC_WORDS; i++) {
        theirs[i] = __atomic_load_n(&h->desc[i], __ATOMIC_RELAXED);
        mine[i] = __atomic_load_n(&hdr(c, c->prank)->desc[i], __ATOMIC_RELAXED);
    }
    if (__atomic_load_n(&h->entered, __ATOMIC_ACQUIRE) != seq)
        return 0; /* moved on while we read: look again */
    if (memcmp(theirs, mine, sizeof mine) != 0) {
        char a[160], b[160];
        describe(mine, a, sizeof a);
        describe(theirs, b, sizeof b);
        return fail(w, blinkInvalidUsage, "mismatched collective calls (call %u of the "
                    "communicator): rank %d: %s; rank %d: %s", seq, c->rank, a, c->user_of[q], b);
    }
    w->checked[q] = seq;
    return 1;
}

/* ------------------------------------------------------------------ the two phases */

static int has_up(int coll)
{
    return coll == BLINK_PLAN_REDUCE || coll == BLINK_PLAN_REDUCESCATTER ||
           coll == BLINK_PLAN_ALLREDUCE;
}

static int has_down(int coll)
{
    return coll == BLINK_PLAN_BROADCAST || coll == BLINK_PLAN_ALLGATHER ||
           coll == BLINK_PLAN_ALLREDUCE;
}

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
    return (struct step){w->x->c, L, &w->x->c->layout, t, L->set->kids + t->kids_at,
                         (uint32_t)L->d.seq, ch, w->x->c->prank, (int)(ch % BK_SLOTS),
                         t->parent < 0, bk_dtype_size((blinkDataType_t)L->d.dt), x0,
                         s->hi - x0 < L->chunk_elems ? s->hi - x0 : L->chunk_elems};
}

/* Chunk s->up of tree ti going up: 1 done, 0 not ready, -1 failed. */
static int up_step(struct worker *w, int ti, struct tree_state *s)
{
    if (s->up >= s->nchunks || !has_up((int)w->x->L->d.coll))
        return 0;
    struct step p = step_of(w, ti, s, s->up);
    blinkComm_t c = p.c;
    const struct bk_layout *lay = p.lay;
    const struct bk_role *t = p.t;
    const int *kids = p.kids;
    uint32_t seq = p.seq, ch = p.ch;
    int me = p.me, k = p.k, root = p.root;
    for (int j = 0; j < t->nkids; j++)
        if (!bk_tag_reached(ld(word(c, me, bk_off_up_ready(lay, me, ti, j))), seq, ch + 1)) {
            w->waiting_for = kids[j];
            return 0;
        }
    if (!root) {
        int r = peer_ready(w, t->parent);
        if (r <= 0)
            return r;
        if (ch >= BK_SLOTS && !bk_tag_reached(ld(word(c, me, bk_off_up_freed(lay, me, ti, t->parent))),
                                              seq, ch - BK_SLOTS + 1)) {
            w->waiting_for = t->parent;
            return 0;
        }
    }
    const struct bk_launch *L = p.L;
    blinkDataType_t dt = (blinkDataType_t)L->d.dt;
    blinkRedOp_t op = (blinkRedOp_t)L->d.op == blinkAvg ? blinkSum : (blinkRedOp_t)L->d.op;
    size_t es = p.es, x0 = p.x0, m = p.m;
    const unsigned char *in = in_at(c, L, t, x0);
    unsigned char *dst = root ? out_at(c, L, t, x0)
                              : at(c, t->parent, bk_off_up_slot(lay, t->parent, ti, t->kpos, k));
    if (!root && !write_allowed(w))
        return -1;
    if (t->nkids == 0) {
        if (dst != in)
            memmove(dst, in, m * es);
    } else {
        for (int j = 0; j < t->nkids; j++)
            bk_host_reduce(dst, j ? dst : in, at(c, me, bk_off_up_slot(lay, me, ti, j, k)), m,
                           dt, op);
    }
    if (root && (blinkRedOp_t)L->d.op == blinkAvg)
        bk_host_divide(dst, m, dt, c->nranks);
    if (!root) {
        st(word(c, t->parent, bk_off_up_ready(lay, t->parent, ti, t->kpos)), bk_tag(seq, ch + 1));
        ring(c, t->parent);
    }
    for (int j = 0; j < t->nkids; j++) {
        st(word(c, kids[j], bk_off_up_freed(lay, kids[j], ti, me)), bk_tag(seq, ch + 1));
        ring(c, kids[j]);
    }
    s->up++;
    return 1;
}

/* Chunk s->down of tree ti going down. */
static int down_step(struct worker *w, int ti, struct tree_state *s)
{
    if (s->down >= s->nchunks || !has_down((int)w->x->L->d.coll))
        return 0;
    struct step p = step_of(w, ti, s, s->down);
    blinkComm_t c = p.c;
    const struct bk_launch *L = p.L;
    const struct bk_layout *lay = p.lay;
    const struct bk_role *t = p.t;
    const int *kids = p.kids;
    uint32_t seq = p.seq, ch = p.ch;
    int me = p.me, k = p.k, root = p.root;
    int allreduce = L->d.coll == BLINK_PLAN_ALLREDUCE;
    size_t es = p.es, x0 = p.x0, m = p.m;
    const unsigned char *src;
    if (root) {
        if (allreduce && s->up <= ch)
            return 0;
        src = allreduce ? out_at(c, L, t, x0) : in_at(c, L, t, x0);
    } else {
        if (!bk_tag_reached(ld(word(c, me, bk_off_down_ready(lay, me, ti))), seq, ch + 1)) {
            w->waiting_for = t->parent;
            return 0;
        }
        src = at(c, me, bk_off_down_slot(lay, me, ti, k));
    }
    for (int j = 0; j < t->nkids; j++) {
        int r = peer_ready(w, kids[j]);
        if (r <= 0)
            return r;
        if (ch >= BK_SLOTS && !bk_tag_reached(ld(word(c, me, bk_off_down_freed(lay, me, ti, kids[j]))),
                                              seq, ch - BK_SLOTS + 1)) {
            w->waiting_for = kids[j];
            return 0;
        }
    }
    unsigned char *out = out_at(c, L, t, x0);
    if (out != src)
        memmove(out, src, m * es);
    for (int j = 0; j < t->nkids; j++) {
        if (!write_allowed(w))
            return -1;
        memcpy(at(c, kids[j], bk_off_down_slot(lay, kids[j], ti, k)), src, m * es);
        st(word(c, kids[j], bk_off_down_ready(lay, kids[j], ti)), bk_tag(seq, ch + 1));
        ring(c, kids[j]);
    }
    if (!root) {
        st(word(c, t->parent, bk_off_down_freed(lay, t->parent, ti, me)), bk_tag(seq, ch + 1));
        ring(c, t->parent);
    }
    s->down++;
    return 1;
}

/* ------------------------------------------------------------------ one thread's share */

/* floor(n * s / w) without overflow (s <= w < 2^64 / 2). */
static size_t split_at(size_t n, uint64_t s, uint64_t w)
{
    uint64_t q = n / w, r = n % w;
    return (size_t)(q * s + (uint64_t)((unsigned __int128)r * s / w));
}

static int tree_done(const struct bk_launch *L, const struct tree_state *s)
{
    int coll = (int)L->d.coll;
    return (!has_up(coll) || s->up >= s->nchunks) && (!has_down(coll) || s->down >= s->nchunks);
}

/* Whether peer q's process is gone. Only a peer this rank waits for counts: a peer that has
 * done its part of the call may well have exited. */
static int gone(blinkComm_t c, int q)
{
    return q >= 0 && c->peer[q].pid != getpid() && bk_pid_gone(c->peer[q].pid);
}

/* Sleep on this rank's bell until something is stored into its segment (or 10 ms pass). */
static void sleep_on_bell(struct bk_seg_header *me, uint32_t seen)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    __atomic_add_fetch(&me->sleepers, 1, __ATOMIC_SEQ_CST);
    futex(&me->bell, FUTEX_WAIT, seen, &ts);
    __atomic_sub_fetch(&me->sleepers, 1, __ATOMIC_SEQ_CST);
}

static void work(struct worker *w)
{
    struct bk_hx *x = w->x;
    blinkComm_t c = x->c;
    const struct bk_launch *L = x->L;
    struct bk_seg_header *me = hdr(c, c->prank);
    int nt = L->set->ntrees, mine = 0;
    for (int ti = w->index; ti < nt; ti += x->nthreads) {
        const struct bk_role *t = &L->set->roles[ti];
        struct tree_state *s = &w->ts[ti];
        s->lo = split_at(L->d.count, t->lo_w, t->total_w);
        s->hi = split_at(L->d.count, t->hi_w, t->total_w);
        s->nchunks = (uint32_t)((s->hi - s->lo + L->chunk_elems - 1) / L->chunk_elems);
        s->up = s->down = 0;
        mine++;
    }
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
        if (done)
            return;
        if (moved) {
            idle_since = 0;
            spins = 0;
            continue;
        }
        uint32_t who = __atomic_load_n(&me->abort, __ATOMIC_ACQUIRE);
        if (who) {
            fail_aborted(w, who);
            return;
        }
        if (++spins < 16) {
            sched_yield();
            continue;
        }
        sleep_on_bell(me, bell);
        if ((who = __atomic_load_n(&me->abort, __ATOMIC_ACQUIRE)) != 0) {
            fail_aborted(w, who);
            return;
        }
        double now = bk_now();
        if (idle_since == 0)
            idle_since = last_check = now;
        int q = w->waiting_for;
        if (now - idle_since > c->env.timeout_s) {
            char peer[64] = "";
            if (q >= 0)
                snprintf(peer, sizeof peer, ", waiting for rank %d (device %d)", c->user_of[q],
                         c->peer[q].topo_dev);
            fail(w, blinkSystemError, "rank %d (device %d): no progress for %g s in %s (call "
                 "%u)%s (BLINK_TIMEOUT_S)", c->rank, c->peer[c->prank].topo_dev,
                 c->env.timeout_s, bk_coll_name((int)L->d.coll), (uint32_t)L->d.seq, peer);
            return;
        }
        if (now - last_check > 0.1) {
            last_check = now;
            /* A peer that aborted may have exited since: its reason, not its exit, counts. */
            if (gone(c, q) && (who = __atomic_load_n(&me->abort, __ATOMIC_ACQUIRE)) != 0) {
                fail_aborted(w, who);
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

/* ------------------------------------------------------------------ the thread team */

static void *helper(void *arg)
{
    struct worker *w = arg;
    struct bk_hx *x = w->x;
    unsigned long long seen = 0;
    pthread_mutex_lock(&x->mu);
    for (;;) {
        while (x->gen == seen && !x->stop)
            pthread_cond_wait(&x->go, &x->mu);
        if (x->stop)
            break;
        seen = x->gen;
        pthread_mutex_unlock(&x->mu);
        work(w);
        pthread_mutex_lock(&x->mu);
        x->finished++;
        pthread_cond_signal(&x->done);
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

blinkResult_t bk_hx_start(blinkComm_t c, int nthreads, struct bk_hx **out)
{
    struct bk_hx *x = calloc(1, sizeof *x);
    if (!x)
        return bk_error(blinkSystemError, "host backend: out of memory");
    x->c = c;
    x->nthreads = nthreads;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->go, NULL);
    pthread_cond_init(&x->done, NULL);
    x->w = calloc((size_t)nthreads, sizeof *x->w);
    int maxt = c->layout.ntrees;
    for (int i = 0; x->w && i < nthreads; i++) {
        x->w[i] = (struct worker){x, i, 0, calloc((size_t)c->nranks, sizeof(uint32_t)),
                                  calloc((size_t)maxt, sizeof(struct tree_state)), 0, ""};
        if (!x->w[i].checked || !x->w[i].ts) {
            x->nthreads = i + 1;
            bk_hx_stop(x);
            return bk_error(blinkSystemError, "host backend: out of memory");
        }
    }
    if (!x->w) {
        free(x);
        return bk_error(blinkSystemError, "host backend: out of memory");
    }
    for (int i = 1; i < nthreads; i++)
        if (pthread_create(&x->w[i].th, NULL, helper, &x->w[i]) != 0) {
            x->nthreads = i;
            bk_hx_stop(x);
            return bk_error(blinkSystemError, "host backend: cannot start a thread");
        }
    *out = x;
    return blinkSuccess;
}

void bk_hx_stop(struct bk_hx *x)
{
    if (!x)
        return;
    pthread_mutex_lock(&x->mu);
    x->stop = 1;
    pthread_cond_broadcast(&x->go);
    pthread_mutex_unlock(&x->mu);
    for (int i = 1; i < x->nthreads; i++)
        if (x->w[i].th)
            pthread_join(x->w[i].th, NULL);
    for (int i = 0; i < x->nthreads && x->w; i++) {
        free(x->w[i].checked);
        free(x->w[i].ts);
    }
    free(x->w);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->go);
    pthread_cond_destroy(&x->done);
    free(x);
}

blinkResult_t bk_hx_run(struct bk_hx *x, const struct bk_launch *L, char *msg, size_t len)
{
    blinkComm_t c = x->c;
    struct bk_seg_header *me = hdr(c, c->prank);
    uint32_t who = __atomic_load_n(&me->abort, __ATOMIC_ACQUIRE);
    if (who) {
        int q = (int)who - 1;
        snprintf(msg, len, "%s: the communicator was aborted: %s", bk_coll_name((int)L->d.coll),
                 hdr(c, q)->abort_msg);
        return blinkRemoteError;
    }
    /* Enter: the description first, then the call number that makes it valid. */
    const uint64_t *d = &L->d.seq;
    for (int i = 0; i < BK_DESC_WORDS; i++)
        __atomic_store_n(&me->desc[i], d[i], __ATOMIC_RELAXED);
    __atomic_store_n(&me->entered, (uint32_t)L->d.seq, __ATOMIC_RELEASE);
    for (int q = 0; q < c->nranks; q++)
        if (q != c->prank)
            ring(c, q);
    pthread_mutex_lock(&x->mu);
    x->L = L;
    x->res = blinkSuccess;
    x->msg[0] = '\0';
    __atomic_store_n(&x->failed, 0, __ATOMIC_RELEASE);
    x->finished = 0;
    x->gen++;
    pthread_cond_broadcast(&x->go);
    pthread_mutex_unlock(&x->mu);
    work(&x->w[0]);
    pthread_mutex_lock(&x->mu);
    while (x->finished < x->nthreads - 1)
        pthread_cond_wait(&x->done, &x->mu);
    blinkResult_t r = x->res;
    snprintf(msg, len, "%s", x->msg);
    pthread_mutex_unlock(&x->mu);
    return r;
}
