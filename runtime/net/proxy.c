/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * proxy.c - proxy.h: one thread per rank that serves its queued calls in order, each by
 * polling its network edges (net_edge.h's messages, net.h's tests: nothing here blocks), the
 * kernel's words in host memory, and the abort words and messages.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net_edge.h"
#include "proc.h"
#include "proto.h"
#include "proxy.h"

#define QUEUE 64 /* calls queued ahead of the proxy */
#define HDR(f) offsetof(struct bk_seg_header, f)

enum edge_kind { UP_OUT, UP_IN, DOWN_IN, DOWN_OUT };

/* One network edge of the running call: chunks go out of a mirror or into this rank's slots. */
struct edge {
    int kind, ti, q, j;       /* j: this rank's child position at q (UP_OUT), q's here (UP_IN)
                               * or here at this rank (DOWN_OUT: unused) */
    size_t lo, hi;            /* the slot's elements */
    uint32_t nchunks, posted, done; /* chunks: messages started, finished */
    struct bk_net_req req[BK_SLOTS];
};

struct call {
    struct bk_desc d;
    int set;
    size_t chunk_elems;
};

struct bk_proxy {
    blinkComm_t c;
    struct bk_proxy_mem mem;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t more, room;
    struct call queue[QUEUE];
    unsigned head, tail;       /* taken, queued */
    int stop;
    int stall;                 /* BLINK_DEBUG_PROXY_STALL named this rank: serve nothing */
    /* The running call (the thread's alone). */
    struct call cur;
    struct edge *e;
    int ne;
    uint64_t *desc_in;         /* [nranks * BK_DESC_WORDS] */
    struct bk_net_req *desc_req; /* [2 * nranks]: receive, send */
    unsigned char *nb;         /* [nranks] 1: a neighbour of the call, 2: its description matched */
    struct bk_net_req *abort_req; /* [nranks] */
    unsigned long long *sent, *recvd; /* [nranks] bytes over the network, for BLINK_DEBUG */
    int failed;                /* read by post under mu */
    char reason[sizeof ((struct bk_seg_header *)0)->abort_msg];
};

static uint64_t ld64(const unsigned char *p)
{
    return __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_ACQUIRE);
}
static void st64(unsigned char *p, uint64_t v)
{
    __atomic_store_n((uint64_t *)(void *)p, v, __ATOMIC_RELEASE);
}
static unsigned char *own(const struct bk_proxy *px) { return px->mem.hseg[px->c->prank]; }

/* Fail the proxy: stop this server's ranks unless one of them gave up already (here: 0), and
 * tell the other servers unless the failure came from one of them (there: 0). -1. */
static int fail(struct bk_proxy *px, int here, int there, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct bk_proxy *px, int here, int there, const char *fmt, ...)
{
    pthread_mutex_lock(&px->mu); /* the first failure, or bk_proxy_abort, speaks; once */
    int first = !__atomic_load_n(&px->failed, __ATOMIC_ACQUIRE);
    __atomic_store_n(&px->failed, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&px->room);
    if (first) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(px->reason, sizeof px->reason, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&px->mu);
    if (first && here)
        px->mem.abort(px->c, px->reason);
    if (first && there)
        bk_net_send_abort(px->c, px->reason, sizeof px->reason, px->abort_req);
    return -1;
}

/* ------------------------------------------------------------------ one call */

static int remote(const struct bk_proxy *px, int q) { return q >= 0 && px->c->peer[q].remote; }

static void add_edge(struct bk_proxy *px, int kind, int ti, int q, int j, size_t lo, size_t hi)
{
    size_t ce = px->cur.chunk_elems ? px->cur.chunk_elems : 1;
    px->nb[q] = 1;
    if (hi <= lo)
        return; /* no chunks: the description is still exchanged */
    struct edge *e = &px->e[px->ne++];
    memset(e, 0, sizeof *e);
    e->kind = kind, e->ti = ti, e->q = q, e->j = j, e->lo = lo, e->hi = hi;
    e->nchunks = bk_nchunks(lo, hi, ce);
}

/* The call's network edges, and the exchange of descriptions with their peers, posted. */
static int begin(struct bk_proxy *px)
{
    blinkComm_t c = px->c;
    const struct bk_roleset *s = &c->sets[px->cur.set];
    const struct bk_desc *d = &px->cur.d;
    size_t es = bk_dtype_size((blinkDataType_t)d->dt);
    px->ne = 0;
    memset(px->nb, 0, (size_t)c->nranks);
    for (int ti = 0; ti < s->ntrees; ti++) {
        const struct bk_role *t = &s->roles[ti];
        size_t lo = bk_split_at(d->count, es, t->lo_w, t->total_w);
        size_t hi = bk_split_at(d->count, es, t->hi_w, t->total_w);
        if (remote(px, t->parent)) {
            if (bk_has_up((int)d->coll))
                add_edge(px, UP_OUT, ti, t->parent, t->kpos, lo, hi);
            if (bk_has_down((int)d->coll))
                add_edge(px, DOWN_IN, ti, t->parent, 0, lo, hi);
        }
        for (int j = 0; j < t->nkids; j++) {
            int q = s->kids[t->kids_at + j];
            if (!remote(px, q))
                continue;
            if (bk_has_up((int)d->coll))
                add_edge(px, UP_IN, ti, q, j, lo, hi);
            if (bk_has_down((int)d->coll))
                add_edge(px, DOWN_OUT, ti, q, j, lo, hi);
        }
    }
    char why[BK_MSG_MAX];
    for (int q = 0; q < c->nranks; q++)
        if (px->nb[q] &&
            (bk_net_irecv(c->net, q, BK_NET_TAG_DESC, px->desc_in + (size_t)q * BK_DESC_WORDS,
                          BK_DESC_WORDS * 8, &px->desc_req[2 * q], why, sizeof why) != 0 ||
             bk_net_isend(c->net, q, BK_NET_TAG_DESC, &px->cur.d, BK_DESC_WORDS * 8,
                          &px->desc_req[2 * q + 1], why, sizeof why) != 0))
            return fail(px, 1, 1, "%s: rank %d: %s", bk_coll_name((int)d->coll), c->rank, why);
    return 0;
}

/* Peer q's description came: it must match; then q's mirror enters the call. 1, 0 or -1. */
static int desc_step(struct bk_proxy *px, int q)
{
    blinkComm_t c = px->c;
    char why[BK_MSG_MAX];
    int t = bk_net_test(&px->desc_req[2 * q], NULL, NULL, why, sizeof why);
    if (t <= 0)
        return t < 0 ? fail(px, 1, 1, "rank %d: from rank %d: %s", c->rank, c->user_of[q], why)
                     : 0;
    const uint64_t *mine = &px->cur.d.seq, *theirs = px->desc_in + (size_t)q * BK_DESC_WORDS;
    if (memcmp(mine, theirs, BK_DESC_WORDS * 8) != 0) {
        char m[BK_MSG_MAX];
        bk_net_mismatch(c, q, mine, theirs, m, sizeof m);
        return fail(px, 1, 1, "%s", m);
    }
    uint32_t seq = (uint32_t)mine[0];
    unsigned char *m = px->mem.mirror[q];
    const struct bk_layout *lay = &c->layout;
    if (bk_seq_cleans(seq)) /* proto.h, Wrap: as q cleans its own before it enters */
        memset(m + lay->flags_off[q], 0, lay->slots_off[q] - lay->flags_off[q]);
    memcpy(m + HDR(desc), mine, BK_DESC_WORDS * 8);
    st64(m + HDR(entered), bk_entry(seq, bk_desc_hash(mine)));
    px->nb[q] = 2;
    return 1;
}

static size_t chunk_bytes(const struct bk_proxy *px, const struct edge *e, uint32_t ch)
{
    return bk_chunk_len(e->lo, e->hi, ch, px->cur.chunk_elems) *
           bk_dtype_size((blinkDataType_t)px->cur.d.dt);
}

/* An edge out of a mirror: the kernel's posted chunks leave; finished sends give it credit. */
static int out_step(struct bk_proxy *px, struct edge *e, uint32_t seq)
{
    blinkComm_t c = px->c;
    const struct bk_layout *lay = &c->sets[px->cur.set].lay;
    int me = c->prank, q = e->q, up = e->kind == UP_OUT, moved = 0;
    unsigned char *m = px->mem.mirror[q];
    char why[BK_MSG_MAX];
    while (e->done < e->posted) {
        int t = bk_net_test(&e->req[e->done % BK_SLOTS], NULL, NULL, why, sizeof why);
        if (t < 0)
            return fail(px, 1, 1, "rank %d: sending to rank %d: %s", c->rank, c->user_of[q], why);
        if (t == 0)
            break;
        e->done++, moved = 1;
        st64(own(px) + (up ? bk_off_up_freed(lay, me, e->ti, q) : bk_off_down_freed(lay, me, e->ti, q)),
             bk_tag(seq, e->done));
    }
    while (e->posted < e->nchunks && e->posted < e->done + BK_SLOTS &&
           bk_tag_reached(ld64(m + (up ? bk_off_up_ready(lay, q, e->ti, e->j)
                                       : bk_off_down_ready(lay, q, e->ti))),
                          seq, e->posted + 1)) {
        int k = (int)(e->posted % BK_SLOTS);
        size_t n = chunk_bytes(px, e, e->posted);
        const unsigned char *slot = m + (up ? bk_off_up_slot(lay, q, e->ti, e->j, k)
                                            : bk_off_down_slot(lay, q, e->ti, k));
        if (bk_net_isend(c->net, q, bk_net_tag_edge(e->ti, !up), slot, n, &e->req[k], why,
                         sizeof why) != 0)
            return fail(px, 1, 1, "rank %d: sending to rank %d: %s", c->rank, c->user_of[q], why);
        px->sent[q] += n;
        e->posted++, moved = 1;
    }
    return moved;
}

/* An edge into this rank's slots: receives posted into free slots; arrivals announced. */
static int in_step(struct bk_proxy *px, struct edge *e, uint32_t seq)
{
    blinkComm_t c = px->c;
    const struct bk_layout *lay = &c->sets[px->cur.set].lay;
    int me = c->prank, q = e->q, up = e->kind == UP_IN, moved = 0;
    unsigned char *m = px->mem.mirror[q], *o = own(px);
    char why[BK_MSG_MAX];
    while (e->posted < e->nchunks && e->posted < e->done + BK_SLOTS) {
        /* The slot is free once the kernel entered the call (the first S), or freed chunk
         * posted - S in q's mirror, as it would free it at q. */
        uint32_t p = e->posted;
        if (p < BK_SLOTS ? bk_entry_seq(ld64(o + HDR(entered))) != seq
                         : !bk_tag_reached(ld64(m + (up ? bk_off_up_freed(lay, q, e->ti, me)
                                                        : bk_off_down_freed(lay, q, e->ti, me))),
                                           seq, p - BK_SLOTS + 1))
            break;
        int k = (int)(p % BK_SLOTS);
        unsigned char *slot = o + (up ? bk_off_up_slot(lay, me, e->ti, e->j, k)
                                      : bk_off_down_slot(lay, me, e->ti, k));
        if (bk_net_irecv(c->net, q, bk_net_tag_edge(e->ti, !up), slot, chunk_bytes(px, e, p),
                         &e->req[k], why, sizeof why) != 0)
            return fail(px, 1, 1, "rank %d: receiving from rank %d: %s", c->rank,
                        c->user_of[q], why);
        e->posted++, moved = 1;
    }
    while (e->done < e->posted) {
        size_t got = 0, want = chunk_bytes(px, e, e->done);
        int t = bk_net_test(&e->req[e->done % BK_SLOTS], NULL, &got, why, sizeof why);
        if (t < 0)
            return fail(px, 1, 1, "rank %d: receiving from rank %d: %s", c->rank,
                        c->user_of[q], why);
        if (t == 0)
            break;
        if (got != want)
            return fail(px, 1, 1, "rank %d: chunk %u from rank %d has %zu bytes, not %zu",
                        c->rank, e->done, c->user_of[q], got, want);
        px->recvd[q] += got;
        e->done++, moved = 1;
        st64(o + (up ? bk_off_up_ready(lay, me, e->ti, e->j) : bk_off_down_ready(lay, me, e->ti)),
             bk_tag(seq, e->done));
    }
    return moved;
}

/* A rank of this server gave up (its abort word in this rank's host segment): tell the others. */
static int local_abort(struct bk_proxy *px)
{
    blinkComm_t c = px->c;
    uint32_t who = __atomic_load_n((const uint32_t *)(const void *)(own(px) + HDR(abort)),
                                   __ATOMIC_ACQUIRE);
    if (!who)
        return 0;
    int v = (int)who - 1;
    const unsigned char *h = v >= 0 && v < c->nranks && !c->peer[v].remote ? px->mem.hseg[v] : NULL;
    char text[sizeof px->reason] = "";
    if (h)
        memcpy(text, h + HDR(abort_msg), sizeof text - 1);
    if (v == c->prank)
        return fail(px, 0, 1, "%s", text);
    return fail(px, 0, 1, "rank %d gave up: %s", v >= 0 && v < c->nranks ? c->user_of[v] : -1,
                text[0] ? text : "(its reason is in its own error)");
}

/* The peer the call waits for longest: an unfinished description, else an edge. */
static int waiting_for(const struct bk_proxy *px)
{
    for (int q = 0; q < px->c->nranks; q++)
        if (px->nb[q] == 1)
            return q;
    for (int i = 0; i < px->ne; i++)
        if (px->e[i].done < px->e[i].nchunks)
            return px->e[i].q;
    return -1;
}

/* Serve the call in cur to its end, or until the proxy fails. */
static void run_call(struct bk_proxy *px)
{
    blinkComm_t c = px->c;
    uint32_t seq = (uint32_t)px->cur.d.seq;
    if (__atomic_load_n(&px->failed, __ATOMIC_ACQUIRE) || begin(px) < 0)
        return;
    double since = bk_now(), heard_at = since;
    int spins = 0;
    for (;;) {
        int moved = 0, left = 0, r = 0;
        for (int q = 0; q < c->nranks && r >= 0; q++)
            if (px->nb[q] == 1 && (r = desc_step(px, q)) > 0)
                moved = 1;
        if (__atomic_load_n(&px->failed, __ATOMIC_ACQUIRE))
            return;
        for (int i = 0; i < px->ne && r >= 0; i++) {
            struct edge *e = &px->e[i];
            if (px->nb[e->q] != 2)
                continue; /* nothing moves before the peer's description matched */
            r = e->kind == UP_OUT || e->kind == DOWN_OUT ? out_step(px, e, seq)
                                                          : in_step(px, e, seq);
            moved |= r > 0;
        }
        if (r < 0)
            return;
        for (int i = 0; i < px->ne; i++)
            left |= px->e[i].done < px->e[i].nchunks;
        for (int q = 0; q < c->nranks; q++) {
            char why[64];
            left |= px->nb[q] == 1 ||
                    bk_net_test(&px->desc_req[2 * q + 1], NULL, NULL, why, sizeof why) == 0;
        }
        if (!left || local_abort(px) < 0)
            return;
        double now = bk_now();
        char msg[BK_MSG_MAX];
        if (now - heard_at > 0.05) {
            heard_at = now;
            if (bk_net_heard_abort(c, msg, sizeof msg))
                return (void)fail(px, 1, 0, "%s", msg);
        }
        /* The clock runs from the kernel's entry into the call (the stream may hold it back
         * for long), or once the backend stops the proxy. */
        int in = (int32_t)(bk_entry_seq(ld64(own(px) + HDR(entered))) - seq) >= 0 ||
                 __atomic_load_n(&px->stop, __ATOMIC_ACQUIRE);
        if (moved || !in) {
            since = now;
            spins = 0;
            if (moved)
                continue;
        } else if (now - since > c->env.timeout_s) {
            int q = waiting_for(px);
            fail(px, 1, 1, "rank %d: no word from rank %d (server %d) about %s (call %u) for %g s "
                 "(BLINK_TIMEOUT_S)", c->rank, q >= 0 ? c->user_of[q] : -1,
                 q >= 0 ? c->peer[q].server : -1, bk_coll_name((int)px->cur.d.coll), seq,
                 c->env.timeout_s);
            return;
        }
        if (++spins < 64) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

/* After a call: nothing of it stays posted (a failed one's requests are given up). */
static void end_call(struct bk_proxy *px)
{
    for (int i = 0; i < px->ne; i++)
        for (int k = 0; k < BK_SLOTS; k++)
            bk_net_drop(&px->e[i].req[k]);
    for (int q = 0; q < 2 * px->c->nranks; q++)
        bk_net_drop(&px->desc_req[q]);
    px->ne = 0;
}

static void *proxy_main(void *arg)
{
    struct bk_proxy *px = arg;
    for (;;) {
        pthread_mutex_lock(&px->mu);
        while (!__atomic_load_n(&px->stop, __ATOMIC_ACQUIRE) && (px->stall || px->head == px->tail))
            pthread_cond_wait(&px->more, &px->mu);
        if (px->stall || px->head == px->tail) {
            pthread_mutex_unlock(&px->mu);
            return NULL;
        }
        px->cur = px->queue[px->head % QUEUE];
        pthread_mutex_unlock(&px->mu);
        run_call(px);
        end_call(px);
        pthread_mutex_lock(&px->mu);
        px->head++;
        pthread_cond_broadcast(&px->room);
        pthread_mutex_unlock(&px->mu);
    }
}

/* ------------------------------------------------------------------ the interface */

blinkResult_t bk_proxy_start(blinkComm_t c, const struct bk_proxy_mem *mem, struct bk_proxy **out)
{
    size_t n = (size_t)c->nranks, edges = 0;
    for (int i = 0; i < BK_SETS * c->plan->nschedules; i++) {
        size_t e = 0;
        for (int ti = 0; ti < c->sets[i].ntrees; ti++)
            e += 2 * (size_t)(c->sets[i].roles[ti].nkids + 1);
        edges = e > edges ? e : edges;
    }
    *out = NULL;
    struct bk_proxy *px = calloc(1, sizeof *px);
    if (!px)
        return bk_error(blinkSystemError, "network proxy: out of memory");
    px->c = c;
    px->mem = *mem;
    /* For the fault tests: the proxy of user rank N takes no call, as if it stalled. */
    const char *stall = getenv("BLINK_DEBUG_PROXY_STALL");
    px->stall = stall && *stall && atoi(stall) == c->rank;
    pthread_mutex_init(&px->mu, NULL);
    pthread_cond_init(&px->more, NULL);
    pthread_cond_init(&px->room, NULL);
    px->e = calloc(edges + 1, sizeof *px->e);
    px->desc_in = calloc(n * BK_DESC_WORDS, sizeof *px->desc_in);
    px->desc_req = calloc(2 * n, sizeof *px->desc_req);
    px->nb = calloc(n, 1);
    px->abort_req = calloc(n, sizeof *px->abort_req);
    px->sent = calloc(n, sizeof *px->sent);
    px->recvd = calloc(n, sizeof *px->recvd);
    blinkResult_t r = blinkSuccess;
    if (!px->e || !px->desc_in || !px->desc_req || !px->nb || !px->abort_req || !px->sent ||
        !px->recvd)
        r = bk_error(blinkSystemError, "network proxy: out of memory");
    else if ((errno = pthread_create(&px->th, NULL, proxy_main, px)) != 0)
        r = bk_error(blinkSystemError, "cannot start the network proxy thread: %s",
                     strerror(errno));
    if (r != blinkSuccess) {
        bk_proxy_stop(px);
        return r;
    }
    px->started = 1;
    *out = px;
    return blinkSuccess;
}

blinkResult_t bk_proxy_post(struct bk_proxy *px, const struct bk_launch *L)
{
    struct call k = {L->d, L->set_index, L->chunk_elems};
    double start = bk_now();
    pthread_mutex_lock(&px->mu);
    while (!__atomic_load_n(&px->failed, __ATOMIC_ACQUIRE) && !px->stall &&
           px->tail - px->head >= QUEUE) {
        if (bk_now() - start > px->c->env.timeout_s) {
            pthread_mutex_unlock(&px->mu);
            return bk_error(blinkSystemError, "%s: the network proxy of rank %d is %d calls "
                            "behind for %g s (BLINK_TIMEOUT_S)", bk_coll_name((int)L->d.coll),
                            px->c->rank, QUEUE, px->c->env.timeout_s);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000;
        if (ts.tv_nsec >= 1000000000)
            ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&px->room, &px->mu, &ts);
    }
    if (!__atomic_load_n(&px->failed, __ATOMIC_ACQUIRE) && !px->stall) { /* a failed proxy serves nothing: the kernel sees the abort word */
        px->queue[px->tail % QUEUE] = k;
        px->tail++;
        pthread_cond_signal(&px->more);
    }
    pthread_mutex_unlock(&px->mu);
    return blinkSuccess;
}

void bk_proxy_abort(struct bk_proxy *px, const char *msg)
{
    /* The thread, mid-call, then stops at its next look; the other servers hear it from here
     * (net.h serializes the sends). */
    if (px)
        fail(px, 0, 1, "%s", msg);
}

void bk_proxy_stop(struct bk_proxy *px)
{
    if (!px)
        return;
    pthread_mutex_lock(&px->mu);
    __atomic_store_n(&px->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&px->more);
    int started = px->started;
    px->started = 0;
    pthread_mutex_unlock(&px->mu);
    if (started) {
        pthread_join(px->th, NULL);
        bk_net_say(px->c, px->sent, px->recvd);
    }
    if (px->abort_req)
        bk_net_finish_aborts(px->c, px->abort_req);
    pthread_mutex_destroy(&px->mu);
    pthread_cond_destroy(&px->more);
    pthread_cond_destroy(&px->room);
    free(px->e);
    free(px->desc_in);
    free(px->desc_req);
    free(px->nb);
    free(px->abort_req);
    free(px->sent);
    free(px->recvd);
    free(px);
}
