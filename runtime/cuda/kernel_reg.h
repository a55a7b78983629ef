/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * kernel_reg.h - the host's half of Registered on CUDA (proto.h, kernel_reg.cuh): before each
 * launch a rank's host opens the regions its kernel asked for and enters them in the table the
 * kernel reads, and closes the regions it retired once no launch can use them. The backend
 * gives the memory and the ways to it: the table in device memory (the kernel reads it on
 * every call that meets a registered output), which the host writes through `put`; the
 * requests in pinned, mapped memory (written rarely, by the kernel); how a region opens and
 * closes (cudaIpcOpenMemHandle; the shim maps a memory file). backend_cuda.cu and
 * tests/shim/backend_shim.cc both use it. Host code only; included after kernel_cuda.cuh.
 */
#ifndef BK_KERNEL_REG_H
#define BK_KERNEL_REG_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rt.h"

/* The requests the kernel writes: one block, laid out as kreg_bytes says. */
struct kreg_shared {
    struct kreg_req *req;      /* [nranks] */
    uint64_t *asked;
};

/* The host's own view: what each table slot holds, and what failed to open. */
struct kreg_slot {
    void *opened;              /* what open returned (NULL: free) */
    int here;                  /* a region of this process: nothing was opened, nothing closes */
    uint64_t serial;
    unsigned int retire_at;    /* closing: once this many launches finished */
    int retiring;
    unsigned long long made;   /* when it was opened (kreg.opens), the oldest goes first */
};

/* Open peer's region rq (a peer in another process): 1 opened (*opened for close, *base its address here), else 0 and why.
 * A failure is no fault in itself: a request is served a launch or more after the call that
 * made it, by which time the peer may have freed the region. */
typedef int (*kreg_open_fn)(void *ctx, int peer, const struct kreg_req *rq, void **opened,
                            unsigned char **base, char *why, size_t len);
typedef void (*kreg_close_fn)(void *ctx, void *opened);
/* Table slot k now holds serial's region at base (serial 0: none), for every launch issued after
 * this returns: base before serial, as the kernel reads serial first. 0 where it could not. */
typedef int (*kreg_put_fn)(void *ctx, struct kreg_entry *tab, int k, uint64_t serial,
                           uint64_t base);

#define KREG_WARN_AFTER 3 /* failures to open a peer's regions, none opened, before a warning */

struct kreg {
    struct kreg_shared h, d;   /* host and kernel views of the same requests */
    struct kreg_entry *tab;    /* [nranks * KREG_PER_PEER] the kernel's table (put writes it) */
    struct kreg_slot *slot;    /* [nranks * KREG_PER_PEER] */
    uint64_t *failed;          /* [nranks] the serial that last failed to open */
    unsigned int *fails;       /* [nranks] failures, or -1u once one of its regions opened */
    int nranks, retiring;      /* slots being closed */
    unsigned long long opens;
    kreg_open_fn open;
    kreg_close_fn close;
    kreg_put_fn put;
    void *ctx;
};

/* The requests' block, and the table (zeroed: every slot free). */
static inline size_t kreg_bytes(int nranks)
{
    return (size_t)nranks * sizeof(struct kreg_req) + sizeof(uint64_t);
}
static inline size_t kreg_tab_bytes(int nranks)
{
    return (size_t)nranks * KREG_PER_PEER * sizeof(struct kreg_entry);
}

/* Point both views into the requests' block (zeroed by the caller), take the table (zeroed),
 * and make the host's state. */
static inline blinkResult_t kreg_init(struct kreg *r, int nranks, void *host, void *dev,
                               struct kreg_entry *tab, kreg_open_fn open, kreg_close_fn close,
                               kreg_put_fn put, void *ctx)
{
    struct kreg_shared *v[2] = {&r->h, &r->d};
    unsigned char *at[2] = {(unsigned char *)host, (unsigned char *)dev};
    for (int i = 0; i < 2; i++) {
        v[i]->req = (struct kreg_req *)at[i];
        v[i]->asked = (uint64_t *)(at[i] + kreg_bytes(nranks) - sizeof(uint64_t));
    }
    r->tab = tab;
    r->put = put;
    r->slot = (struct kreg_slot *)calloc((size_t)nranks * KREG_PER_PEER, sizeof *r->slot);
    r->failed = (uint64_t *)calloc((size_t)nranks, sizeof *r->failed);
    r->fails = (unsigned int *)calloc((size_t)nranks, sizeof *r->fails);
    r->nranks = nranks;
    r->open = open;
    r->close = close;
    r->ctx = ctx;
    if (!r->slot || !r->failed || !r->fails)
        return bk_error(blinkSystemError, KARGS_WHO ": out of memory");
    return blinkSuccess;
}

/* A launch's part: the table where the call may take it (Simple, not Direct, not a hybrid's
 * set: all ranks decide alike from the description) and this rank's output region. */
static inline void kreg_params(struct kparams *p, const struct kreg *r,
                               const struct bk_launch *L)
{
    if (!r->slot || (L->d.algo & (BK_ALGO_LL | BK_ALGO_DIRECT | BK_ALGO_HYBRID_SET)))
        return;
    p->rtab = r->tab;
    p->rreq = r->d.req;
    p->rasked = r->d.asked;
    p->reg[0] = L->reg.serial;
    p->reg[1] = L->reg.off;
    p->reg[2] = L->reg.len;
    memcpy(&p->reg[3], L->reg.handle, sizeof L->reg.handle);
}

/* Close slot x's region, where one was opened; the slot is then free. */
static inline void kreg_close_slot(struct kreg *r, struct kreg_slot *x)
{
    if (x->opened && !x->here)
        r->close(r->ctx, x->opened);
    memset(x, 0, sizeof *x);
}

/* Close what is open (no launch may run any more); the memory block is the caller's. */
static inline void kreg_free(struct kreg *r)
{
    for (int i = 0; r->slot && i < r->nranks * KREG_PER_PEER; i++)
        kreg_close_slot(r, &r->slot[i]);
    free(r->slot);
    free(r->failed);
    free(r->fails);
    r->slot = NULL;
    r->failed = NULL;
    r->fails = NULL;
}

/* The kernel's request for peer q, if it has one, copied out whole (the kernel may write it
 * again while this reads: then it is taken at the next launch). 0: none. */
static inline uint64_t kreg_take(const struct kreg *r, int q, struct kreg_req *out)
{
    struct kreg_req *rq = &r->h.req[q];
    uint64_t s = __atomic_load_n(&rq->serial, __ATOMIC_ACQUIRE);
    if (!s)
        return 0;
    out->len = __atomic_load_n(&rq->len, __ATOMIC_RELAXED);
    for (int i = 0; i < BK_REG_HANDLE_WORDS; i++)
        out->handle[i] = __atomic_load_n(&rq->handle[i], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    out->serial = s;
    return __atomic_load_n(&rq->serial, __ATOMIC_RELAXED) == s ? s : 0;
}

/* A peer in this process: its region is an address here already (an IPC handle does not open
 * in the process that made it, and a memory file needs no second mapping). */
static inline int kreg_open_here(const struct kreg_req *rq, void **opened, unsigned char **base,
                                 char *why, size_t len)
{
    size_t have = 0;
    if (bk_region_here(rq->serial, base, &have) && have >= rq->len) {
        *opened = *base;
        return 1;
    }
    snprintf(why, len, "its region is gone from this process");
    return 0;
}

/* Peer q's slot holding serial s, a free one (s 0), or -1. */
static inline int kreg_find(const struct kreg *r, int q, uint64_t s)
{
    for (int k = 0; k < KREG_PER_PEER; k++) {
        const struct kreg_slot *x = &r->slot[q * KREG_PER_PEER + k];
        if (s ? x->opened && !x->retiring && x->serial == s : !x->opened)
            return q * KREG_PER_PEER + k;
    }
    return -1;
}

/* Take peer q's oldest region out of the table: it closes once `issued` launches finished (the
 * launches before now may still use it; the later ones no longer find it). One at a time: while
 * one of q's regions is closing, the request waits for its slot. */
static inline void kreg_retire(struct kreg *r, int q, unsigned int issued)
{
    struct kreg_slot *old = NULL;
    int at = -1;
    for (int k = 0; k < KREG_PER_PEER; k++) {
        struct kreg_slot *x = &r->slot[q * KREG_PER_PEER + k];
        if (x->retiring)
            return;
        if (x->opened && (!old || x->made < old->made)) {
            old = x;
            at = q * KREG_PER_PEER + k;
        }
    }
    if (!old || !r->put(r->ctx, r->tab, at, 0, 0)) /* still in the table: it stays open */
        return;
    old->retiring = 1;
    old->retire_at = issued;
    r->retiring++;
}

/* Before a launch: close what retired and is no longer used (finished: launches done), then
 * open what the kernel asked for. may_retire: 0 once any launch was captured in a CUDA graph,
 * whose replays the host does not count (regions then stay open until the end). */
static inline void kreg_serve(struct kreg *r, blinkComm_t c, unsigned int finished,
                              unsigned int issued, int may_retire)
{
    for (int i = 0; r->retiring && i < r->nranks * KREG_PER_PEER; i++) {
        struct kreg_slot *x = &r->slot[i];
        if (x->retiring && (int)(finished - x->retire_at) >= 0) {
            kreg_close_slot(r, x);
            r->retiring--;
        }
    }
    if (!__atomic_load_n(r->h.asked, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(r->h.asked, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the bell down before the requests are read */
    for (int q = 0; q < r->nranks; q++) {
        struct kreg_req rq;
        uint64_t s = kreg_take(r, q, &rq);
        if (!s)
            continue;
        int k = kreg_find(r, q, s);
        if (k < 0 && s != r->failed[q] && (k = kreg_find(r, q, 0)) < 0) {
            if (may_retire)
                kreg_retire(r, q, issued);
            __atomic_store_n(r->h.asked, 1, __ATOMIC_RELAXED); /* again at the next launch */
            continue;
        }
        if (k >= 0 && !r->slot[k].opened) {
            char why[BK_MSG_MAX] = "";
            unsigned char *base = NULL;
            r->slot[k].here = c->peer && c->peer[q].pid == (int)getpid();
            int ok = r->slot[k].here
                         ? kreg_open_here(&rq, &r->slot[k].opened, &base, why, sizeof why)
                         : r->open(r->ctx, q, &rq, &r->slot[k].opened, &base, why, sizeof why);
            if (ok && !(ok = r->put(r->ctx, r->tab, k, s, (uint64_t)(uintptr_t)base))) {
                kreg_close_slot(r, &r->slot[k]);
                snprintf(why, sizeof why, "its entry in the kernel's table could not be written");
            }
            if (ok) {
                r->slot[k].serial = s;
                r->slot[k].made = ++r->opens;
                r->fails[q] = -1u;
                bk_reg_said(c, q, (size_t)rq.len);
            } else { /* its chunks keep going through the staging */
                memset(&r->slot[k], 0, sizeof r->slot[k]);
                r->failed[q] = s;
                /* A warning where none of the peer's regions opened three times in a row. */
                int level = r->fails[q] != -1u && ++r->fails[q] == KREG_WARN_AFTER
                                ? BK_LOG_WARN : BK_LOG_INFO;
                if (bk_logs(&c->env, level, BK_SUB_COLL))
                    bk_log(level, bk_log_dev(c), "rank %d: cannot open rank %d's registered "
                           "output (%s); it goes through the staging", c->rank, c->user_of[q],
                           why);
            }
        }
        uint64_t want = s;
        __atomic_compare_exchange_n(&r->h.req[q].serial, &want, 0, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
    }
}

#endif
