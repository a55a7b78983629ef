/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * exec_host.c - the host backend's executor: one launch of the protocol (proto.h) on one rank,
 * by a team of threads (this file: the team, the call's start and end; exec_host_step.c: each
 * thread's steps; exec_host_flags.c: the flags' bell and failing; exec_host_internal.h: what
 * they share).
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

#include "exec_host_internal.h"
#include "net_edge.h"
#include "proc.h"
#include "reduce_host.h"

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
        hx_work(w);
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
        while (r == blinkSuccess && (t = hx_remote_ready(w, q)) == 0) {
            if (hx_heard_abort(x, why, sizeof why)) {
                hx_fail_remote_abort(w, why);
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
            hx_ring(c, q);
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
    hx_work(&x->w[0]);
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
