/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * mwu.c - Garg-Koenemann packing of spanning trees (mwu.h; blink-and-peers.md 2.3), the stage
 * that supplies the LP and ILP stages with candidate trees.
 *
 * Generalised to path trees: a tree T loads arc a m_T(a) times (ptree_add_load), so T's
 * bottleneck is b = min_a c_a / m_T(a) and the update is l_a *= 1 + eps * b * m_T(a) / c_a,
 * which is at most 1 + eps, as the analysis needs. PACK_ALLGATHER packs "bundles" (one tree per
 * root, equal rates): a bundle is one column with load sum_r m_{T_r}(a), and the cheapest bundle
 * is the cheapest tree of every root under the same lengths, so the same analysis applies.
 *
 * delta = (1+eps) ((1+eps) m)^(-1/eps) underflows for small eps (1e-150 and below), so the
 * lengths are kept as l_a = len[a] * exp(logscale) with len renormalised whenever it grows
 * large; the oracle only needs relative lengths.
 */
#include "pack/mwu.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

/* Renormalise the stored lengths once the largest passes this (far from overflow). */
#define LEN_RENORM 1e100
/* Final scale-up leaves this relative margin so rounding never overfills an arc. */
#define FULL_MARGIN 1e-12

struct mwu_run {
    const struct pgraph *g;
    enum pack_kind kind;
    struct oracle *o;
    double eps;
    double *len;     /* [narcs] l_a / exp(logscale) */
    double logscale;
    int *load;       /* [narcs] this round's combined multiplicity */
    int *mult;       /* [narcs] scratch for one tree */
    struct ptree *rt;   /* [nroots] this round's trees */
    int nroots;
    struct ptree_set set; /* merged trees, in order of first appearance */
    int *slot;       /* open-addressing shape index into set: entry i+1, 0 empty */
    unsigned nslot;  /* power of two, > 2 * set.n */
};

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x;
    return h * 1099511628211ull; /* FNV-1a prime */
}

static uint64_t shape_hash(const struct ptree *t)
{
    uint64_t h = 14695981039346656037ull;
    h = mix(h, (uint64_t)(unsigned)t->root);
    for (int v = 0; v < t->ngpus; v++)
        h = mix(h, (uint64_t)(unsigned)t->parent[v]);
    for (int v = 0; v <= t->ngpus; v++)
        h = mix(h, (uint64_t)(unsigned)t->path_off[v]);
    for (int i = 0; i < t->path_off[t->ngpus]; i++)
        h = mix(h, (uint64_t)(unsigned)t->path_arc[i]);
    return h;
}

static void slot_put(struct mwu_run *r, int idx)
{
    unsigned m = r->nslot - 1, i = (unsigned)shape_hash(&r->set.t[idx]) & m;
    while (r->slot[i])
        i = (i + 1) & m;
    r->slot[i] = idx + 1;
}

BK_MUST_USE
static enum bk_status slot_grow(struct mwu_run *r)
{
    unsigned ns = r->nslot ? 2 * r->nslot : 64;
    int *s = calloc(ns, sizeof *s);
    if (!s)
        return BK_ENOMEM;
    free(r->slot);
    r->slot = s;
    r->nslot = ns;
    for (int i = 0; i < r->set.n; i++)
        slot_put(r, i);
    return BK_OK;
}

/* Add *t at `rate` to the merged set, taking ownership of its arrays. */
BK_MUST_USE
static enum bk_status take_tree(struct mwu_run *r, struct ptree *t, double rate)
{
    unsigned m = r->nslot - 1, i = (unsigned)shape_hash(t) & m;
    for (; r->slot[i]; i = (i + 1) & m) {
        struct ptree *s = &r->set.t[r->slot[i] - 1];
        if (ptree_same_shape(s, t)) {
            s->rate += rate;
            ptree_free(t);
            return BK_OK;
        }
    }
    BK_CHECK(bk_grow_int((void **)&r->set.t, &r->set.cap, r->set.n, sizeof *r->set.t));
    t->rate = rate;
    r->set.t[r->set.n++] = *t;
    memset(t, 0, sizeof *t);
    if ((unsigned)r->set.n * 2 >= r->nslot)
        return slot_grow(r);
    slot_put(r, r->set.n - 1);
    return BK_OK;
}

static void run_free(struct mwu_run *r)
{
    for (int k = 0; r->rt && k < r->nroots; k++)
        ptree_free(&r->rt[k]);
    free(r->rt);
    free(r->len);
    free(r->load);
    free(r->mult);
    free(r->slot);
    ptree_set_free(&r->set);
}

/*
 * One round: the cheapest tree of every root in play, the common bottleneck rate of their
 * combined load, then the length update. *d_log gets log(sum_a c_a l_a) afterwards.
 */
BK_MUST_USE
static enum bk_status round_once(struct mwu_run *r, int root0, double *d_log)
{
    const struct pgraph *g = r->g;
    memset(r->load, 0, (size_t)g->narcs * sizeof *r->load);
    for (int k = 0; k < r->nroots; k++) {
        double cost;
        BK_CHECK(oracle_min_tree(r->o, r->kind, r->nroots > 1 ? k : root0, r->len, &r->rt[k],
                                 &cost));
        ptree_add_load(&r->rt[k], g, r->kind, r->load);
    }
    double b = INFINITY;
    for (int a = 0; a < g->narcs; a++)
        if (r->load[a] > 0 && g->cap[a] / r->load[a] < b)
            b = g->cap[a] / r->load[a];
    if (!(b < INFINITY))
        return BK_EINTERNAL; /* a spanning tree over >= 2 GPUs loads some arc */
    for (int k = 0; k < r->nroots; k++)
        BK_CHECK(take_tree(r, &r->rt[k], b));
    double top = 0, d = 0;
    for (int a = 0; a < g->narcs; a++) {
        if (r->load[a] > 0)
            r->len[a] *= 1 + r->eps * b * r->load[a] / g->cap[a];
        top = r->len[a] > top ? r->len[a] : top;
    }
    if (top > LEN_RENORM) {
        for (int a = 0; a < g->narcs; a++)
            r->len[a] /= top;
        r->logscale += log(top);
    }
    for (int a = 0; a < g->narcs; a++)
        d += g->cap[a] * r->len[a];
    *d_log = log(d) + r->logscale;
    return BK_OK;
}

/* Largest arc utilisation (load / capacity) of the merged set. */
static double max_util(struct mwu_run *r)
{
    const struct pgraph *g = r->g;
    double *acc = calloc(g->narcs > 0 ? (size_t)g->narcs : 1, sizeof *acc);
    if (!acc)
        return -1;
    for (int i = 0; i < r->set.n; i++) {
        memset(r->mult, 0, (size_t)g->narcs * sizeof *r->mult);
        ptree_add_load(&r->set.t[i], g, r->kind, r->mult);
        for (int a = 0; a < g->narcs; a++)
            acc[a] += r->mult[a] * r->set.t[i].rate;
    }
    double u = 0;
    for (int a = 0; a < g->narcs; a++)
        if (acc[a] / g->cap[a] > u)
            u = acc[a] / g->cap[a];
    free(acc);
    return u;
}

enum bk_status mwu_pack(const struct pack_problem *p, struct oracle *o, const struct mwu_opts *opt,
                        struct ptree_set *out, struct mwu_stats *st)
{
    if (st)
        memset(st, 0, sizeof *st);
    if (!p || !p->g || !o || !opt || !out)
        return BK_EUSAGE;
    const struct pgraph *g = p->g;
    double eps = opt->epsilon;
    if (!(eps > 0 && eps <= 0.5) || opt->max_rounds < 0)
        return BK_EUSAGE;
    if (p->kind != PACK_BROADCAST && p->kind != PACK_ALLGATHER && p->kind != PACK_ALLREDUCE)
        return BK_EUSAGE;
    if (p->kind == PACK_BROADCAST && (p->root < 0 || p->root >= g->ngpus))
        return BK_EUSAGE;
    if (g->ngpus < 2 || g->narcs < 1)
        return BK_ESOLVE; /* nothing to carry, or nothing to carry it on */

    struct mwu_run r;
    memset(&r, 0, sizeof r);
    ptree_set_init(&r.set);
    r.g = g;
    r.kind = p->kind;
    r.o = o;
    r.eps = eps;
    r.nroots = p->kind == PACK_ALLGATHER ? g->ngpus : 1;
    int root0 = p->kind == PACK_BROADCAST ? p->root : 0; /* allreduce: root only orients */
    size_t na = (size_t)g->narcs;
    r.len = malloc(na * sizeof *r.len);
    r.load = malloc(na * sizeof *r.load);
    r.mult = malloc(na * sizeof *r.mult);
    r.rt = calloc((size_t)r.nroots, sizeof *r.rt);
    enum bk_status s = BK_ENOMEM;
    if (!r.len || !r.load || !r.mult || !r.rt)
        goto out;
    BK_CHECK_GOTO(slot_grow(&r), s, out);

    /* l_a = delta / c_a, delta = (1+eps) ((1+eps) m)^(-1/eps), in log form */
    double l1e = log1p(eps);
    double log_delta = l1e - log((1 + eps) * (double)g->narcs) / eps;
    for (int a = 0; a < g->narcs; a++)
        r.len[a] = 1 / g->cap[a];
    r.logscale = log_delta;

    long rounds = 0;
    double d_log = -INFINITY;
    /* GK stops once D(l) = sum_a c_a l_a >= 1 */
    while (d_log < 0 && (opt->max_rounds == 0 || rounds < opt->max_rounds)) {
        BK_CHECK_GOTO(round_once(&r, root0, &d_log), s, out);
        rounds++;
    }

    /* GK's scaling (feasible in exact arithmetic): divide by log_{1+eps}((1+eps)/delta). */
    double gk = (l1e - log_delta) / l1e;
    for (int i = 0; i < r.set.n; i++)
        r.set.t[i].rate /= gk;
    /* Then make it feasible exactly and fill the most loaded arc: scaling is free since every
     * tree keeps its share. */
    double u = max_util(&r);
    if (u < 0) {
        s = BK_ENOMEM;
        goto out;
    }
    if (!(u > 0)) {
        s = BK_EINTERNAL;
        goto out;
    }
    for (int i = 0; i < r.set.n; i++)
        r.set.t[i].rate *= (1 - FULL_MARGIN) / u;

    double value = ptree_set_rate(&r.set);
    if (p->kind == PACK_ALLGATHER)
        value /= g->ngpus; /* every round gave every root the same rate */
    int distinct = r.set.n;
    if (out->n == 0 && !out->t) {
        /* nothing to merge with: hand the set over (ptree_set_add would be quadratic) */
        *out = r.set;
        ptree_set_init(&r.set);
    } else {
        for (int i = 0; i < r.set.n; i++)
            BK_CHECK_GOTO(ptree_set_add(out, &r.set.t[i], NULL), s, out);
    }
    if (st) {
        st->rounds = rounds;
        st->distinct = distinct;
        st->value = value;
    }
    s = BK_OK;
out:
    run_free(&r);
    return s;
}
