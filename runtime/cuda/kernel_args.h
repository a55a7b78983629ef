/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * kernel_args.h - the host's half of a launch of the protocol kernel (kernel_cuda.cuh): the
 * tables one rank's kernels read (the staging layout, the rank tables, every tree set's roles,
 * the call counter), laid out as one image that the backend copies into device memory at once,
 * and one call's launch arguments and shared memory from those tables. backend_cuda.cu and the
 * kernel's host shim (tests/shim/backend_shim.cc) both use it, so the shim runs the kernel on
 * the very arguments the CUDA backend builds. Host code only; included after kernel_cuda.cuh.
 */
#ifndef BK_KERNEL_ARGS_H
#define BK_KERNEL_ARGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_edge.h"
#include "rt.h"

#define KTIMEOUT_CHARS 32
#ifndef KARGS_WHO
#define KARGS_WHO "CUDA backend" /* what messages name */
#endif

/* A tree set as the kernel reads it. */
struct kset {
    const struct bk_role *roles;  /* device */
    const int *kids;              /* device */
    const size_t *slot_base;      /* device: the set's slots (proto.h, bk_roleset.lay) */
    const int *slot_fanin;        /* device */
    int ntrees;
    int staged_slot;              /* the first slot whose edges are host-staged (ntrees: none) */
    unsigned char **tseg;         /* device: [ntrees * nranks] each slot's segments, where the
                                   * communicator spans servers (ktseg_fill), else NULL */
};

/* One rank's tables, as the kernel sees them: pointers into one device allocation. */
struct ktables {
    struct bk_layout lay;         /* device copies of c->layout's arrays (seg_bytes NULL; the
                                   * slot tables are each set's, in sets) */
    unsigned char **seg;          /* [nranks]: the backend stores the mapped segments there */
    unsigned char **hseg;         /* [nranks]: and the segments of host-staged edges (the same
                                   * as seg where the plan has none, or seg is in host memory) */
    const unsigned char *reach, *atom;
    const int *user_of, *topo_dev;
    const char *timeout_str;
    struct kctl *ctl;
    struct kset *sets;            /* [nsets] (host memory) */
    int nsets;                    /* BK_SETS * nschedules */
};

/* The tables' image in host memory: bytes in all, and where each table lies. */
struct kimage {
    unsigned char *host;
    size_t bytes;
    size_t fanin, flag, foff, soff, lloff, user, topo, reach, atom, seg, hseg, tmo, ctl;
    size_t *roles, *kids, *sbase, *sfan; /* [nsets] */
    size_t *tseg;                 /* [nsets] the set's slot segment table, or 0: none */
};

static size_t kalign_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static void kimage_free(struct kimage *im)
{
    free(im->host);
    free(im->roles);
    free(im->kids);
    free(im->sbase);
    free(im->sfan);
    free(im->tseg);
    memset(im, 0, sizeof *im);
}

/* The image of c's tables; reach and atom: [nranks] what this device can do at each peer. */
static blinkResult_t kimage_build(blinkComm_t c, const unsigned char *reach,
                                  const unsigned char *atom, struct kimage *im)
{
    int n = c->nranks, nsets = BK_SETS * c->plan->nschedules;
    size_t cells = (size_t)n * (size_t)c->layout.ntrees, at = 0;
    memset(im, 0, sizeof *im);
    im->fanin = at; at = kalign_up(at + cells * sizeof(int), 16);
    im->flag = at; at = kalign_up(at + cells * sizeof(size_t), 16);
    im->foff = at; at = kalign_up(at + (size_t)n * sizeof(size_t), 16);
    im->soff = at; at = kalign_up(at + (size_t)n * sizeof(size_t), 16);
    im->lloff = at; at = kalign_up(at + (size_t)n * sizeof(size_t), 16);
    im->user = at; at = kalign_up(at + (size_t)n * sizeof(int), 16);
    im->topo = at; at = kalign_up(at + (size_t)n * sizeof(int), 16);
    im->reach = at; at = kalign_up(at + (size_t)n, 16);
    im->atom = at; at = kalign_up(at + (size_t)n, 16);
    im->seg = at; at = kalign_up(at + (size_t)n * sizeof(void *), 16);
    im->hseg = at; at = kalign_up(at + (size_t)n * sizeof(void *), 16);
    im->tmo = at; at = kalign_up(at + KTIMEOUT_CHARS, 16);
    im->ctl = at; at = kalign_up(at + sizeof(struct kctl), 16);
    im->roles = (size_t *)calloc((size_t)nsets + 1, sizeof(size_t));
    im->kids = (size_t *)calloc((size_t)nsets + 1, sizeof(size_t));
    im->sbase = (size_t *)calloc((size_t)nsets + 1, sizeof(size_t));
    im->sfan = (size_t *)calloc((size_t)nsets + 1, sizeof(size_t));
    im->tseg = (size_t *)calloc((size_t)nsets + 1, sizeof(size_t));
    size_t *n_kids = (size_t *)calloc((size_t)nsets + 1, sizeof(size_t));
    if (!im->roles || !im->kids || !im->sbase || !im->sfan || !im->tseg || !n_kids) {
        free(n_kids);
        kimage_free(im);
        return bk_error(blinkSystemError, "%s: out of memory", KARGS_WHO);
    }
    for (int i = 0; i < nsets; i++) {
        const struct bk_roleset *s = &c->sets[i];
        for (int ti = 0; ti < s->ntrees; ti++)
            if ((size_t)(s->roles[ti].kids_at + s->roles[ti].nkids) > n_kids[i])
                n_kids[i] = (size_t)(s->roles[ti].kids_at + s->roles[ti].nkids);
        im->roles[i] = at;
        at = kalign_up(at + (size_t)s->ntrees * sizeof(struct bk_role), 16);
        im->kids[i] = at;
        at = kalign_up(at + n_kids[i] * sizeof(int), 16);
        im->sbase[i] = at;
        at = kalign_up(at + cells * sizeof(size_t), 16);
        im->sfan[i] = at;
        at = kalign_up(at + cells * sizeof(int), 16);
        if (c->nremote > 0 && s->ntrees > 0) {
            im->tseg[i] = at;
            at = kalign_up(at + (size_t)s->ntrees * (size_t)n * sizeof(void *), 16);
        }
    }
    unsigned char *host = (unsigned char *)calloc(1, at);
    if (!host) {
        free(n_kids);
        kimage_free(im);
        return bk_error(blinkSystemError, "%s: out of memory", KARGS_WHO);
    }
    im->host = host;
    im->bytes = at;
    memcpy(host + im->fanin, c->layout.fanin, cells * sizeof(int));
    memcpy(host + im->flag, c->layout.flag_base, cells * sizeof(size_t));
    memcpy(host + im->foff, c->layout.flags_off, (size_t)n * sizeof(size_t));
    memcpy(host + im->soff, c->layout.slots_off, (size_t)n * sizeof(size_t));
    memcpy(host + im->lloff, c->layout.ll_off, (size_t)n * sizeof(size_t));
    memcpy(host + im->user, c->user_of, (size_t)n * sizeof(int));
    for (int q = 0; q < n; q++)
        memcpy(host + im->topo + (size_t)q * sizeof(int), &c->peer[q].topo_dev, sizeof(int));
    memcpy(host + im->reach, reach, (size_t)n);
    memcpy(host + im->atom, atom, (size_t)n);
    snprintf((char *)host + im->tmo, KTIMEOUT_CHARS, "%g", c->env.timeout_s);
    /* The kernel numbers its calls from this counter (BLINK_DEBUG_SEQ_START, as call.c). */
    ((struct kctl *)(host + im->ctl))->seq = c->env.seq_start - 1;
    for (int i = 0; i < nsets; i++) {
        const struct bk_roleset *s = &c->sets[i];
        if (s->ntrees)
            memcpy(host + im->roles[i], s->roles, (size_t)s->ntrees * sizeof(struct bk_role));
        if (n_kids[i])
            memcpy(host + im->kids[i], s->kids, n_kids[i] * sizeof(int));
        memcpy(host + im->sbase[i], s->lay.slot_base, cells * sizeof(size_t));
        memcpy(host + im->sfan[i], s->lay.slot_fanin, cells * sizeof(int));
    }
    free(n_kids);
    return blinkSuccess;
}

/* t's pointers for the image copied to b (a device address); t->sets is allocated here. */
static blinkResult_t ktables_point(blinkComm_t c, const struct kimage *im, unsigned char *b,
                                   struct ktables *t)
{
    t->nsets = BK_SETS * c->plan->nschedules;
    t->sets = (struct kset *)calloc((size_t)t->nsets + 1, sizeof *t->sets);
    if (!t->sets)
        return bk_error(blinkSystemError, "%s: out of memory", KARGS_WHO);
    t->lay.nranks = c->nranks;
    t->lay.ntrees = c->layout.ntrees;
    t->lay.slot_bytes = c->layout.slot_bytes;
    t->lay.fanin = (const int *)(b + im->fanin);
    t->lay.flag_base = (const size_t *)(b + im->flag);
    t->lay.slot_base = NULL; /* each set's, from sets */
    t->lay.slot_fanin = NULL;
    t->lay.flags_off = (const size_t *)(b + im->foff);
    t->lay.slots_off = (const size_t *)(b + im->soff);
    t->lay.seg_bytes = NULL; /* the kernel never needs it */
    t->lay.ll_slot_bytes = c->layout.ll_slot_bytes;
    t->lay.ll_off = (const size_t *)(b + im->lloff);
    t->user_of = (const int *)(b + im->user);
    t->topo_dev = (const int *)(b + im->topo);
    t->reach = b + im->reach;
    t->atom = b + im->atom;
    t->seg = (unsigned char **)(b + im->seg);
    t->hseg = (unsigned char **)(b + im->hseg);
    t->timeout_str = (const char *)(b + im->tmo);
    t->ctl = (struct kctl *)(b + im->ctl);
    for (int i = 0; i < t->nsets; i++) {
        t->sets[i].roles = (const struct bk_role *)(b + im->roles[i]);
        t->sets[i].kids = (const int *)(b + im->kids[i]);
        t->sets[i].slot_base = (const size_t *)(b + im->sbase[i]);
        t->sets[i].slot_fanin = (const int *)(b + im->sfan[i]);
        t->sets[i].ntrees = c->sets[i].ntrees;
        int ti = 0; /* slots come tree by tree, the host-staged trees last (roles.c) */
        while (ti < c->sets[i].ntrees && c->sets[i].tree_of[ti] < c->sets[i].staged_from)
            ti++;
        t->sets[i].staged_slot = ti;
        t->sets[i].tseg = im->tseg[i] ? (unsigned char **)(b + im->tseg[i]) : NULL;
    }
    return blinkSuccess;
}

/* Set i's slot segment table (kset.tseg) into out [ntrees * nranks], from the segments the
 * kernel sees (seg, hseg; a peer on another server: its mirror here, in both): a rank whose
 * slot has an edge to another server keeps that slot's words in its host segment, where the
 * network proxy reaches them (proxy.h); host-staged trees too; every other slot stays in seg.
 * Every rank decides alike from the plan, as each must find the words where their owner does. */
static void ktseg_fill(blinkComm_t c, int i, unsigned char *const *seg,
                       unsigned char *const *hseg, int staged_slot, unsigned char **out)
{
    int n = c->nranks;
    for (int ti = 0; ti < c->sets[i].ntrees; ti++)
        for (int q = 0; q < n; q++)
            out[(size_t)ti * (size_t)n + (size_t)q] =
                !c->peer[q].remote && (ti >= staged_slot || bk_net_crosses(c, i, ti, q))
                    ? hseg[q]
                    : seg[q];
}

/* Whether c's calls move any edge through a segment of host-staged edges apart from its own
 * (a hybrid's PCIe trees on a plan whose other edges are direct): the backend then makes one. */
static int kneeds_hseg(blinkComm_t c)
{
    if (c->plan->host_staged && bk_host_staged(c)) /* every edge: the segment is in host memory */
        return 0;
    if (c->nremote > 0) /* the words of edges to other servers, where the proxy reaches them */
        return 1;
    for (int i = 0; i < BK_SETS * c->plan->nschedules; i++)
        for (int ti = 0; ti < c->sets[i].ntrees; ti++)
            if (c->sets[i].tree_of[ti] >= c->sets[i].staged_from)
                return 1;
    return 0;
}

/* Dynamic shared memory of a block that plays tpb work items among nranks. */
static size_t ksmem(int tpb, int nranks)
{
    return (size_t)tpb * sizeof(struct tstate) + kalign_up((size_t)nranks, 8) +
           (size_t)nranks * sizeof(unsigned long long);
}

/* Work items of a launch on a set of ntrees tree slots (channels): one per slot, and for
 * allreduce two, its up and its down pass apart, so that a root sends down while it still
 * reduces up (kernel_cuda.cuh). */
static inline int kitems_for(int ntrees, int coll)
{
    return coll == BLINK_PLAN_ALLREDUCE ? 2 * ntrees : ntrees;
}

/* Blocks of a launch: one per work item, at most max_blocks (what is resident at once; a block
 * then plays several items), as every backend that runs this kernel must cut them. */
static inline int kblocks_for(int max_blocks, int ntrees, int coll)
{
    int items = kitems_for(ntrees, coll);
    return items < 1 ? 1 : items < max_blocks ? items : max_blocks;
}

/* One call's launch arguments, for a launch of `blocks` blocks; status: the device view of
 * the status block. */
static void kparams_fill(struct kparams *p, blinkComm_t c, const struct ktables *t,
                         const struct bk_launch *L, int blocks, struct kstatus *status)
{
    const struct kset *s = &t->sets[L->set_index];
    memset(p, 0, sizeof *p);
    memcpy(p->d, &L->d, sizeof p->d);
    p->send = (const unsigned char *)L->send;
    p->recv = (unsigned char *)L->recv;
    p->chunk_elems = L->chunk_elems;
    p->roles = s->roles;
    p->kids = s->kids;
    p->ntrees = s->ntrees;
    p->nitems = kitems_for(s->ntrees, (int)L->d.coll);
    p->tpb = (p->nitems + blocks - 1) / blocks;
    p->prank = c->prank;
    p->nranks = c->nranks;
    p->check_calls = c->env.check_calls;
    p->lay = t->lay;
    p->lay.slot_base = s->slot_base; /* the set's own slots (proto.h) */
    p->lay.slot_fanin = s->slot_fanin;
    p->seg = t->seg;
    p->hseg = t->hseg;
    p->staged_slot = s->staged_slot;
    p->tseg = s->tseg;
    p->reach = t->reach;
    p->atom = t->atom;
    p->user_of = t->user_of;
    p->topo_dev = t->topo_dev;
    p->timeout_str = t->timeout_str;
    double ns = c->env.timeout_s * 1e9;
    p->timeout_ns = ns >= 9.0e18 ? 9000000000000000000ull : ns <= 0 ? 0 : (uint64_t)ns;
    p->status = status;
    p->ctl = t->ctl;
}

#endif
