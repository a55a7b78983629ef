/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * exec_host_internal.h - what the host executor's two files share: a launch's state (struct
 * bk_hx: the team; struct worker: one thread; struct tree_state: one tree slot), the flag
 * words' accessors, and the functions each file gives those above it: exec_host_flags.c the
 * flags' bell and failing, exec_host_step.c each thread's steps, to exec_host.c, which runs the
 * team and a call's start and end.
 */
#ifndef BK_EXEC_HOST_INTERNAL_H
#define BK_EXEC_HOST_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "exec_host.h"
#include "exec_host_ll.h"
#include "net.h"
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

/* BLINK_TRACE: an event of this thread's "block" (trace.h); when off, one test. */
#define TRACE(w, kind, ti, ch, peer)                                                          \
    do {                                                                                      \
        if ((w)->x->trace)                                                                    \
            bk_trace_add((w)->x->trace, kind, (uint32_t)(w)->x->L->d.seq,                     \
                         (int)(w)->x->L->d.coll, (w)->index, ti, ch, peer);                   \
    } while (0)

static inline struct bk_seg_header *hdr(blinkComm_t c, int q) { return (struct bk_seg_header *)c->peer[q].seg; }
static inline uint64_t *word(blinkComm_t c, int q, size_t off) { return (uint64_t *)(c->peer[q].seg + off); }
static inline unsigned char *at(blinkComm_t c, int q, size_t off) { return c->peer[q].seg + off; }
static inline uint64_t ld(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void st(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* exec_host_flags.c: the futex(2) call; wake rank q's sleepers (its bell); stop this server's ranks
 * with msg. */
struct timespec;
long hx_futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts);
void hx_ring(blinkComm_t c, int q);
void hx_abort_local(blinkComm_t c, const char *msg);
/* An abort message from another server: 1 + the rank that sent it (its reason in msg), or 0. */
int hx_heard_abort(struct bk_hx *x, char *msg, size_t len);
/* Fail this launch; unless the failure was heard from another rank's abort, tell them all. -1. */
int hx_fail_how(struct worker *w, blinkResult_t r, int heard, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define fail(w, r, ...) hx_fail_how(w, r, 0, __VA_ARGS__)
/* Another server's rank aborted: this server's ranks hear it from this one. */
int hx_fail_remote_abort(struct worker *w, const char *msg);
/* This rank's header says some rank aborted: fail with that rank's reason. */
int hx_fail_aborted(struct worker *w, uint32_t who);

/* exec_host_step.c: one thread's share of a launch, to its end; remote peer q's description of
 * the call matches this rank's (1), not yet (0), or the launch failed (-1). */
void hx_work(struct worker *w);
int hx_remote_ready(struct worker *w, int q);

#endif
