/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * exec_host_flags.c - the host executor's flags and failures, below its steps
 * (exec_host_step.c) and its team (exec_host.c): the bell a store into a segment rings (a futex
 * word its sleepers wait on), the abort words and messages, and a launch's failure.
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

/* ------------------------------------------------------------------ segments and flags */

long hx_futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

/* After a store into q's segment: bump its bell and wake its sleepers. */
void hx_ring(blinkComm_t c, int q)
{
    struct bk_seg_header *h = hdr(c, q);
    __atomic_add_fetch(&h->bell, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&h->sleepers, __ATOMIC_SEQ_CST))
        hx_futex(&h->bell, FUTEX_WAKE, INT_MAX, NULL);
}

/* Mark every mapped segment aborted by this rank, with msg. */
void hx_abort_local(blinkComm_t c, const char *msg)
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
        hx_ring(c, v);
    }
}

void bk_hx_abort(blinkComm_t c, struct bk_hx *x, const char *msg)
{
    hx_abort_local(c, msg);
    struct bk_seg_header *me = hdr(c, c->prank);
    if (!x || !c->net || !me)
        return;
    /* The other servers hear it as a message (the reason, from this rank's header). */
    pthread_mutex_lock(&x->net_mu);
    bk_net_send_abort(c, me->abort_msg, sizeof me->abort_msg, x->abort_req);
    pthread_mutex_unlock(&x->net_mu);
}

/* An abort message from another server: 1 + the rank that sent it (its reason in msg), or 0. */
int hx_heard_abort(struct bk_hx *x, char *msg, size_t len)
{
    return bk_net_heard_abort(x->c, msg, len);
}

/* ------------------------------------------------------------------ failing */

/* Fail this launch; unless the failure was heard from another rank's abort, tell them all. */
int hx_fail_how(struct worker *w, blinkResult_t r, int heard, const char *fmt, ...)
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

/* Another server's rank aborted: this server's ranks hear it from this one. */
int hx_fail_remote_abort(struct worker *w, const char *msg)
{
    hx_abort_local(w->x->c, msg);
    return hx_fail_how(w, blinkRemoteError, 1, "%s", msg);
}

/* This rank's header says some rank aborted: fail with that rank's reason. */
int hx_fail_aborted(struct worker *w, uint32_t who)
{
    blinkComm_t c = w->x->c;
    int q = (int)who - 1;
    if (q == c->prank)
        return hx_fail_how(w, blinkRemoteError, 1, "%s", hdr(c, q)->abort_msg);
    return hx_fail_how(w, blinkRemoteError, 1, "rank %d gave up: %s", c->user_of[q],
                    hdr(c, q)->abort_msg);
}
