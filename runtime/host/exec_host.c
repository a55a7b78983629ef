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
 *
 * Edges to a peer on another server (a cluster plan) go over MPI (net.h) instead, with the same
 * pipeline: a receiver posts a receive into the staging slot of chunk c once chunk c - S has
 * left it, so the posted receives are its credits; a sender keeps at most S sends in flight
 * on an edge. Before the first message of a call each side checks the other's description,
 * exchanged as a message of its own; an abort is a message too.
 *
 * A call that runs LL (the description's BK_ALGO_LL) moves its chunks over edges inside the
 * server in packets (exec_host_ll.c) instead of staging slots and ready words; its edges to
 * other servers stay as above, whole chunks by MPI into and out of the staging slots. A rank
 * with both kinds of edges starts a pass once the MPI chunks are whole and packet 0 of each LL
 * slot has come, then reads each source by its kind.
 *
 * A direct call (BK_ALGO_DIRECT: ranks that share one process, proto.h's Direct) goes down
 * without staging: a sender copies each chunk into its children's outputs, whose addresses
 * their headers publish, and a child only forwards what its parent wrote there.
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
#include "exec_host_ll.h"
#include "net.h"
#include "net_edge.h"
#include "proc.h"
#include "reduce_host.h"
#include "trace.h"

struct tree_state {
    size_t lo, hi;             /* the tree's elements (proto.h's bk_split_at, as the kernel) */
    uint32_t nchunks, up, down; /* chunks; chunks done going up and going down */
    struct bk_net_req *req;    /* edges over MPI: [S] up out, [S] down in, [F*S] up in,
                                  [F*S] down out (F: the most children of this rank) */
    uint32_t *posted;          /* [F + 1] receives posted: from each child, from the parent */
};


struct worker {
    struct bk_hx *x;
    int index;
    pthread_t th;
    uint32_t *checked;         /* [nranks] the call whose description matched that peer's */
    struct tree_state *ts;     /* [ntrees of the launch] */
    int waiting_for;           /* the peer the last blocked step waited for */
    char msg[BK_MSG_MAX];
    struct bk_ll_src *ll_src;  /* [fmax] an LL up pass's sources */
    struct bk_ll_dst *ll_dst;  /* [fmax] an LL down pass's children */
    unsigned char *ll_tile;    /* 2 * BK_LL_TILE bytes */
    unsigned char **into;      /* [fmax] a down pass's children's outputs, where it writes them */
    unsigned long long sent[2]; /* this call's data bytes handed over direct and host-staged
                                   edges (comm->edge_bytes) */
};

struct bk_hx {
    blinkComm_t c;
    int nthreads;
    int fmax;                  /* the most children this rank has in any tree */
    struct worker *w;
    /* Edges over MPI (c->nremote > 0); net_mu guards the description exchange. */
    pthread_mutex_t net_mu;
    unsigned char *net_slots;  /* [ntrees * S] slots of chunks sent up to a remote parent */
    uint32_t *desc_seq;        /* [nranks] the call whose description matched that peer's */
    uint64_t *desc_in;         /* [nranks * BK_DESC_WORDS] a remote peer's description */
    struct bk_net_req *desc_req; /* [2 * nranks] receive and send of the descriptions */
    struct bk_net_req *abort_req; /* [nranks] abort messages sent */
    unsigned long long *sent, *recvd; /* [nranks] bytes over MPI, for BLINK_DEBUG */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned long long gen;
    int finished, stop;
    const struct bk_launch *L;
    uint64_t entry;            /* L's entered word: bk_entry(seq, its description's hash) */
    int failed;                /* atomic: a thread of this launch failed */
    blinkResult_t res;
    char msg[BK_MSG_MAX];
    struct bk_trace_ring *trace; /* BLINK_TRACE: this rank's events, or NULL */
};

static unsigned long long fail_write_at, writes;

/* BLINK_TRACE: an event of this thread's "block" (trace.h); when off, one test. */
#define TRACE(w, kind, ti, ch, peer)                                                          \
    do {                                                                                      \
        if ((w)->x->trace)                                                                    \
            bk_trace_add((w)->x->trace, kind, (uint32_t)(w)->x->L->d.seq,                     \
                         (int)(w)->x->L->d.coll, (w)->index, ti, ch, peer);                   \
    } while (0)

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

/* Mark every mapped segment aborted by this rank, with msg. */
static void abort_local(blinkComm_t c, const char *msg)
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

void bk_hx_abort(blinkComm_t c, struct bk_hx *x, const char *msg)
{
    abort_local(c, msg);
    struct bk_seg_header *me = hdr(c, c->prank);
    if (!x || !c->net || !me)
        return;
    /* The other servers hear it as a message (the reason, from this rank's header). */
    pthread_mutex_lock(&x->net_mu);
    bk_net_send_abort(c, me->abort_msg, sizeof me->abort_msg, x->abort_req);
    pthread_mutex_unlock(&x->net_mu);
}

/* An abort message from another server: 1 + the rank that sent it (its reason in msg), or 0. */
static int heard_abort(struct bk_hx *x, char *msg, size_t len)
{
    return bk_net_heard_abort(x->c, msg, len);
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
        bk_hx_abort(x->c, x, w->msg);
    return -1;
}
#define fail(w, r, ...) fail_how(w, r, 0, __VA_ARGS__)

/* Another server's rank aborted: this server's ranks hear it from this one. */
static int fail_remote_abort(struct worker *w, const char *msg)
{
    abort_local(w->x->c, msg);
    return fail_how(w, blinkRemoteError, 1, "%s", msg);
}

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
                         s->hi - x0 < L->chunk_elems ? s->hi - x0 : L->chunk_elems};
}

/* ------------------------------------------------------------------ edges over MPI */

/* Remote peer q's description of this call matches this rank's: 1; not here yet: 0; -1. */
static int remote_ready(struct worker *w, int q)
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
    size_t x0 = s->lo + (size_t)ch * L->chunk_elems;
    size_t m = s->hi - x0 < L->chunk_elems ? s->hi - x0 : L->chunk_elems;
    return m * bk_dtype_size((blinkDataType_t)L->d.dt);
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
    int r = remote_ready(w, q);
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
        return fail_aborted(w, who);
    double now = bk_now();
    if (*since == 0) {
        *since = now;
        return 0;
    }
    char msg[BK_MSG_MAX];
    if (now - *since > 0.1 && c->nremote && heard_abort(x, msg, sizeof msg))
        return fail_remote_abort(w, msg);
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

static void ll_ring(void *arg, int q) { ring(((struct worker *)arg)->x->c, q); }
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
                             __atomic_load_n(&h->out_serial, __ATOMIC_RELAXED)};
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
        r = net ? remote_ready(w, t->parent) : peer_ready(w, t->parent);
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
        ring(c, t->parent);
    }
    if (!root)
        w->sent[staged_edge(L, ti)] += m * es;
    for (int j = 0; j < t->nkids; j++) {
        if (remote(c, kids[j]))
            continue; /* its next receive is posted when chunk ch + 1 is awaited */
        st(word(c, kids[j], bk_off_up_freed(lay, kids[j], ti, me)), bk_tag(seq, ch + 1));
        ring(c, kids[j]);
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
            if ((r = remote_ready(w, kids[j])) <= 0 ||
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
        ring(c, kids[j]);
    }
    if (!root && !remote(c, t->parent) && !here) {
        st(word(c, t->parent, bk_off_down_freed(lay, t->parent, ti, me)), bk_tag(seq, ch + 1));
        ring(c, t->parent);
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
    futex(&me->bell, FUTEX_WAIT, seen, &ts);
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

static void work(struct worker *w)
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
        s->nchunks = (uint32_t)((s->hi - s->lo + L->chunk_elems - 1) / L->chunk_elems);
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
            fail_aborted(w, who);
            return;
        }
        if (++spins < 16) {
            sched_yield();
            continue;
        }
        if (c->nremote) {
            /* MPI rings no bell here: poll it, and listen for the other servers' aborts. */
            char msg[BK_MSG_MAX];
            if (heard_abort(x, msg, sizeof msg)) {
                fail_remote_abort(w, msg);
                return;
            }
            struct timespec ts = {0, spins < 1000 ? 2000 : 50000};
            nanosleep(&ts, NULL);
        } else {
            sleep_on_bell(me, bell);
        }
        if ((who = __atomic_load_n(&me->abort, __ATOMIC_ACQUIRE)) != 0) {
            fail_aborted(w, who);
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

/* What edges over MPI need: per tree its requests and receive counts, per peer the description
 * exchange and the byte counts, and the slots of chunks sent up. */
static int net_alloc(struct bk_hx *x)
{
    blinkComm_t c = x->c;
    const struct bk_layout *lay = &c->layout;
    size_t n = (size_t)c->nranks, maxt = (size_t)lay->ntrees;
    size_t per_tree = 2 * BK_SLOTS + 2 * (size_t)x->fmax * BK_SLOTS;
    for (int i = 0; i < x->nthreads; i++)
        for (size_t ti = 0; ti < maxt; ti++) {
            struct tree_state *s = &x->w[i].ts[ti];
            s->req = calloc(per_tree, sizeof *s->req);
            s->posted = calloc((size_t)x->fmax + 1, sizeof *s->posted);
            if (!s->req || !s->posted)
                return 0;
        }
    x->net_slots = malloc(maxt * BK_SLOTS * lay->slot_bytes + 1);
    x->desc_seq = calloc(n, sizeof *x->desc_seq);
    x->desc_in = calloc(n * BK_DESC_WORDS, sizeof *x->desc_in);
    x->desc_req = calloc(2 * n, sizeof *x->desc_req);
    x->abort_req = calloc(n, sizeof *x->abort_req);
    x->sent = calloc(n, sizeof *x->sent);
    x->recvd = calloc(n, sizeof *x->recvd);
    return x->net_slots && x->desc_seq && x->desc_in && x->desc_req && x->abort_req && x->sent &&
           x->recvd;
}

blinkResult_t bk_hx_start(blinkComm_t c, int nthreads, struct bk_hx **out)
{
    struct bk_hx *x = calloc(1, sizeof *x);
    if (!x)
        return bk_error(blinkSystemError, "host backend: out of memory");
    x->c = c;
    x->nthreads = nthreads;
    pthread_mutex_init(&x->mu, NULL);
    pthread_mutex_init(&x->net_mu, NULL);
    pthread_cond_init(&x->go, NULL);
    pthread_cond_init(&x->done, NULL);
    x->w = calloc((size_t)nthreads, sizeof *x->w);
    int maxt = c->layout.ntrees;
    for (int ti = 0; ti < maxt; ti++)
        if (c->layout.fanin[bk_lx(&c->layout, c->prank, ti)] > x->fmax)
            x->fmax = c->layout.fanin[bk_lx(&c->layout, c->prank, ti)];
    size_t fm = (size_t)x->fmax + 1;
    for (int i = 0; x->w && i < nthreads; i++) {
        x->w[i] = (struct worker){x, i, 0, calloc((size_t)c->nranks, sizeof(uint32_t)),
                                  calloc((size_t)maxt, sizeof(struct tree_state)), 0, "",
                                  calloc(fm, sizeof(struct bk_ll_src)),
                                  calloc(fm, sizeof(struct bk_ll_dst)), malloc(2 * BK_LL_TILE),
                                  calloc(fm, sizeof(unsigned char *)), {0, 0}};
        if (!x->w[i].checked || !x->w[i].ts || !x->w[i].ll_src || !x->w[i].ll_dst ||
            !x->w[i].ll_tile || !x->w[i].into) {
            x->nthreads = i + 1;
            bk_hx_stop(x);
            return bk_error(blinkSystemError, "host backend: out of memory");
        }
    }
    if (!x->w) {
        free(x);
        return bk_error(blinkSystemError, "host backend: out of memory");
    }
    if (c->nremote && !net_alloc(x)) {
        bk_hx_stop(x);
        return bk_error(blinkSystemError, "host backend: out of memory");
    }
    if (c->env.trace_dir[0] && !(x->trace = bk_trace_ring_new(c->env.trace_records))) {
        bk_hx_stop(x);
        return bk_error(blinkSystemError, "host backend: out of memory for BLINK_TRACE");
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
    if (x->sent)
        bk_net_say(x->c, x->sent, x->recvd);
    if (x->trace) {
        bk_trace_write(x->c, "host", "monotonic", x->trace->rec, x->trace->head, x->trace->cap);
        free(x->trace);
    }
    if (x->abort_req)
        bk_net_finish_aborts(x->c, x->abort_req);
    for (int q = 0; x->desc_req && q < x->c->nranks; q++) {
        bk_net_drop(&x->desc_req[2 * q]);
        bk_net_drop(&x->desc_req[2 * q + 1]);
    }
    for (int i = 0; i < x->nthreads && x->w; i++) {
        for (int ti = 0; x->w[i].ts && ti < x->c->layout.ntrees; ti++) {
            free(x->w[i].ts[ti].req);
            free(x->w[i].ts[ti].posted);
        }
        free(x->w[i].checked);
        free(x->w[i].ts);
        free(x->w[i].ll_src);
        free(x->w[i].ll_dst);
        free(x->w[i].ll_tile);
        free(x->w[i].into);
    }
    free(x->w);
    free(x->net_slots);
    free(x->desc_seq);
    free(x->desc_in);
    free(x->desc_req);
    free(x->abort_req);
    free(x->sent);
    free(x->recvd);
    pthread_mutex_destroy(&x->mu);
    pthread_mutex_destroy(&x->net_mu);
    pthread_cond_destroy(&x->go);
    pthread_cond_destroy(&x->done);
    free(x);
}

/* The launch's neighbours on other servers: post the exchange of descriptions with each. */
static blinkResult_t post_descs(struct bk_hx *x, const struct bk_launch *L, char *msg, size_t len)
{
    blinkComm_t c = x->c;
    uint32_t seq = (uint32_t)L->d.seq;
    for (int ti = 0; ti < L->set->ntrees; ti++) {
        const struct bk_role *t = &L->set->roles[ti];
        for (int i = -1; i < t->nkids; i++) {
            int q = i < 0 ? t->parent : L->set->kids[t->kids_at + i];
            if (q < 0 || !c->peer[q].remote || x->desc_req[2 * q].live ||
                x->desc_req[2 * q + 1].live || x->desc_seq[q] == seq)
                continue;
            char why[BK_MSG_MAX];
            if (bk_net_irecv(c->net, q, BK_NET_TAG_DESC, x->desc_in + (size_t)q * BK_DESC_WORDS,
                             BK_DESC_WORDS * 8, &x->desc_req[2 * q], why, sizeof why) != 0 ||
                bk_net_isend(c->net, q, BK_NET_TAG_DESC, &L->d.seq, BK_DESC_WORDS * 8,
                             &x->desc_req[2 * q + 1], why, sizeof why) != 0) {
                snprintf(msg, len, "%s: rank %d: %s", bk_coll_name((int)L->d.coll), c->rank, why);
                return blinkSystemError;
            }
        }
    }
    return blinkSuccess;
}

/* After the call: every description exchanged with a neighbour on another server has
 * arrived and matched (a tree with no elements never looked at its own), or the call fails. */
static blinkResult_t settle_descs(struct bk_hx *x, blinkResult_t r, char *msg, size_t len)
{
    blinkComm_t c = x->c;
    struct worker *w = &x->w[0];
    double start = bk_now();
    for (int q = 0; q < c->nranks && r == blinkSuccess; q++) {
        if (!x->desc_req[2 * q].live && !x->desc_req[2 * q + 1].live)
            continue;
        int t = 0;
        char why[BK_MSG_MAX];
        w->checked[q] = 0;
        while (r == blinkSuccess && (t = remote_ready(w, q)) == 0) {
            if (heard_abort(x, why, sizeof why)) {
                fail_remote_abort(w, why);
            } else if (bk_now() - start > c->env.timeout_s) {
                fail(w, blinkSystemError, "rank %d: no word from rank %d (server %d) about %s "
                     "(call %u) for %g s (BLINK_TIMEOUT_S)", c->rank, c->user_of[q],
                     c->peer[q].server, bk_coll_name((int)x->L->d.coll), (uint32_t)x->L->d.seq,
                     c->env.timeout_s);
            } else {
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL);
                continue;
            }
            t = -1;
            break;
        }
        while (t == 1 && x->desc_req[2 * q + 1].live &&
               bk_net_test(&x->desc_req[2 * q + 1], NULL, NULL, why, sizeof why) == 0) {
            if (bk_now() - start > c->env.timeout_s)
                break;
            sched_yield();
        }
        if (t < 0) {
            r = x->res;
            snprintf(msg, len, "%s", x->msg);
        }
    }
    if (r != blinkSuccess)
        for (int q = 0; q < 2 * c->nranks; q++)
            bk_net_drop(&x->desc_req[q]);
    return r;
}

/* Zero the words of this rank's segment in [from, to) (atomically: a late store of an earlier
 * call may race with it). */
static void zero_words(blinkComm_t c, size_t from, size_t to)
{
    uint64_t *f = word(c, c->prank, from);
    for (size_t i = 0; i < (to - from) / 8; i++)
        __atomic_store_n(&f[i], 0, __ATOMIC_RELAXED);
}

/* Call numbers wrap (proto.h, Wrap and LL): before a call that cleans, zero this rank's flag
 * words and forget which peers' calls matched, for those call numbers come back; before a call
 * where bk_ll_cleans, zero its LL packets. No worker runs: nothing here reads them. */
static void clean(struct bk_hx *x, uint32_t seq)
{
    blinkComm_t c = x->c;
    const struct bk_layout *lay = &c->layout;
    int me = c->prank;
    if (bk_ll_cleans(seq))
        zero_words(c, lay->ll_off[me], lay->slots_off[me]);
    if (!bk_seq_cleans(seq))
        return;
    zero_words(c, lay->flags_off[me], lay->ll_off[me]);
    for (int i = 0; i < x->nthreads; i++)
        memset(x->w[i].checked, 0, sizeof *x->w[i].checked * (size_t)c->nranks);
    if (c->nremote)
        memset(x->desc_seq, 0, sizeof *x->desc_seq * (size_t)c->nranks);
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
    const uint64_t *d = &L->d.seq;
    uint32_t seq = (uint32_t)L->d.seq;
    x->entry = bk_entry(seq, bk_desc_hash(d));
    if (bk_seq_cleans(seq) || bk_ll_cleans(seq))
        clean(x, seq);
    /* Enter: the description first, then the call number that makes it valid (release: the
     * clean and this rank's reads of its staging in the last call come before it too). */
    for (int i = 0; i < BK_DESC_WORDS; i++)
        __atomic_store_n(&me->desc[i], d[i], __ATOMIC_RELAXED);
    __atomic_store_n(&me->out, (uint64_t)(uintptr_t)L->recv, __ATOMIC_RELAXED);
    __atomic_store_n(&me->out_pid, L->reg.pid, __ATOMIC_RELAXED);
    __atomic_store_n(&me->out_fd, L->reg.fd, __ATOMIC_RELAXED);
    __atomic_store_n(&me->out_off, L->reg.off, __ATOMIC_RELAXED);
    __atomic_store_n(&me->out_serial, L->reg.serial, __ATOMIC_RELAXED);
    __atomic_store_n(&me->out_ino, L->reg.ino, __ATOMIC_RELAXED);
    __atomic_store_n(&me->entered, x->entry, __ATOMIC_RELEASE);
    for (int q = 0; q < c->nranks; q++)
        if (q != c->prank && !c->peer[q].remote)
            ring(c, q);
    if (c->nremote) {
        blinkResult_t r = post_descs(x, L, msg, len);
        if (r != blinkSuccess) {
            bk_hx_abort(c, x, msg);
            return r;
        }
    }
    pthread_mutex_lock(&x->mu);
    x->L = L;
    x->res = blinkSuccess;
    x->msg[0] = '\0';
    __atomic_store_n(&x->failed, 0, __ATOMIC_RELEASE);
    x->finished = 0;
    x->gen++;
    for (int i = 0; i < x->nthreads; i++)
        x->w[i].sent[0] = x->w[i].sent[1] = 0;
    pthread_cond_broadcast(&x->go);
    pthread_mutex_unlock(&x->mu);
    work(&x->w[0]);
    pthread_mutex_lock(&x->mu);
    while (x->finished < x->nthreads - 1)
        pthread_cond_wait(&x->done, &x->mu);
    blinkResult_t r = x->res;
    snprintf(msg, len, "%s", x->msg);
    c->edge_bytes[0] = c->edge_bytes[1] = 0;
    for (int i = 0; i < x->nthreads; i++)
        for (int k = 0; k < 2; k++)
            c->edge_bytes[k] += x->w[i].sent[k];
    pthread_mutex_unlock(&x->mu);
    if (r == blinkSuccess && (L->d.algo & BK_ALGO_HYBRID_SET) &&
        bk_logs(&c->env, BK_LOG_INFO, BK_SUB_COLL))
        bk_log(BK_LOG_INFO, bk_log_dev(c), "%s call %u (hybrid): %llu bytes over direct edges, "
               "%llu host-staged", bk_coll_name((int)L->d.coll), seq, c->edge_bytes[0],
               c->edge_bytes[1]);
    if (c->nremote)
        r = settle_descs(x, r, msg, len);
    return r;
}
