/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_map.c - trees to MSCCL steps (see msccl_map.h).
 */
#include "out/msccl_map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int gather_like(enum collective c) /* each root owns 1/n of the chunks */
{
    return c == COLL_ALLGATHER || c == COLL_REDUCESCATTER;
}

static int reduce_like(enum collective c)
{
    return c == COLL_REDUCE || c == COLL_REDUCESCATTER || c == COLL_ALLREDUCE;
}

/* Whole shares of `total` chunks for trees [from, to) of weights w by largest remainder (ties to
 * the earlier tree); the worst relative error goes into *worst. */
static void split(const double *w, int from, int to, int total, int *cnt, double *worst)
{
    double sum = 0;
    for (int i = from; i < to; i++)
        sum += w[i];
    int given = 0;
    for (int i = from; i < to; i++) {
        cnt[i] = (int)floor(total * w[i] / sum);
        given += cnt[i];
    }
    while (given < total) {
        int best = from;
        double bf = -1;
        for (int i = from; i < to; i++) {
            double f = total * w[i] / sum - cnt[i];
            if (f > bf + 1e-12) {
                bf = f;
                best = i;
            }
        }
        cnt[best]++;
        given++;
    }
    for (int i = from; i < to; i++) {
        double exact = total * w[i] / sum;
        double e = cnt[i] ? fabs(cnt[i] - exact) / exact : INFINITY;
        if (e > *worst)
            *worst = e;
    }
}

/* tp is sorted by root where it matters, so a root's trees are consecutive. */
static double shares(const struct ptree *const *tp, int nt, const double *w, int gather,
                     int ngpus, int total, int *cnt)
{
    double worst = 0;
    if (!gather) {
        split(w, 0, nt, total, cnt, &worst);
        return worst;
    }
    for (int i = 0; i < nt;) {
        int j = i;
        while (j < nt && tp[j]->root == tp[i]->root)
            j++;
        split(w, i, j, total / ngpus, cnt, &worst);
        i = j;
    }
    return worst;
}

/* The smallest chunk count giving every tree its share within 1%; past MSCCL_MAX_CHUNKS, the
 * count with the smallest worst error. */
static int choose_chunks(const struct ptree *const *tp, int nt, const double *w, int gather,
                         int ngpus, int *cnt)
{
    int step = gather ? ngpus : 1, best = step;
    double best_err = INFINITY;
    for (int total = step; total <= MSCCL_MAX_CHUNKS; total += step) {
        double e = shares(tp, nt, w, gather, ngpus, total, cnt);
        if (e <= 0.01)
            return total;
        if (e < best_err) {
            best_err = e;
            best = total;
        }
    }
    shares(tp, nt, w, gather, ngpus, best, cnt);
    return best;
}

BK_MUST_USE
static int add(struct mprog *p, const struct mstep *m)
{
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 256;
        struct mstep *v = realloc(p->st, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        p->st = v;
        p->cap = cap;
    }
    p->st[p->n] = *m;
    return p->n++;
}

/* Where GPU v keeps tree-root `root`'s partial sums of chunk k: the output where the chunk is
 * its own (allreduce everywhere, reduce and reduce-scatter at the root), else scratch. */
static void acc_of(const struct mprog *p, int v, int root, int k, char *buf, int *off)
{
    int m = p->nchunks / p->ngpus;
    if (p->coll == COLL_ALLREDUCE || (p->coll == COLL_REDUCE && v == root)) {
        *buf = 'o';
        *off = k;
    } else if (p->coll == COLL_REDUCESCATTER && v == root) {
        *buf = 'o';
        *off = k - root * m;
    } else {
        *buf = 's';
        *off = k;
    }
}

struct piece {
    int tree, k, cnt, q;
    const struct ptree *t;
    const int *depth;
    int maxdepth;
    const int *chan_down, *chan_up; /* per child GPU */
};

static struct mstep mk(const struct piece *pc, const char *type, int gpu, int peer, int dir,
                       int chan, int phase, int level, int who)
{
    struct mstep m;
    memset(&m, 0, sizeof m);
    snprintf(m.type, sizeof m.type, "%s", type);
    m.gpu = gpu;
    m.peer = peer;
    m.dir = dir;
    m.chan = chan;
    m.cnt = pc->cnt;
    m.dep = -1;
    m.key[0] = pc->tree;
    m.key[1] = phase;
    m.key[2] = level;
    m.key[3] = who;
    m.key[4] = pc->q;
    return m;
}

/* Copy a piece down the tree from the root (broadcast, allgather; allreduce's second phase,
 * where `after` holds each GPU's up-send to wait for and the root waits for its last sum). */
BK_MUST_USE
static enum bk_status down(struct mprog *p, const struct piece *pc, int phase, const int *after,
                           int *got)
{
    const struct ptree *t = pc->t;
    int n = p->ngpus, r = t->root, m = p->nchunks / n, k = pc->k;
    for (int v = 0; v < n; v++)
        got[v] = -1;
    if (phase == 0) { /* the root's own output */
        struct mstep c = mk(pc, "cpy", r, -1, 2, 0, 0, 0, r);
        c.srcbuf = 'i';
        c.srcoff = p->coll == COLL_ALLGATHER ? k - r * m : k;
        c.dstbuf = 'o';
        c.dstoff = k;
        if (add(p, &c) < 0)
            return BK_ENOMEM;
    } else {
        got[r] = after[r];
    }
    for (int d = 1; d <= pc->maxdepth; d++)
        for (int v = 0; v < n; v++) {
            if (pc->depth[v] != d)
                continue;
            int u = t->parent[v], ch = pc->chan_down[v];
            struct mstep s = mk(pc, "s", u, v, 0, ch, phase, d, v);
            s.srcbuf = u == r && phase == 0 ? 'i' : 'o';
            s.srcoff = u == r && phase == 0 && p->coll == COLL_ALLGATHER ? k - r * m : k;
            s.dstbuf = 'o';
            s.dstoff = k;
            s.dep = got[u];
            struct mstep rv = mk(pc, "r", v, u, 1, ch, phase, d, v);
            rv.srcbuf = s.srcbuf;
            rv.srcoff = s.srcoff;
            rv.dstbuf = 'o';
            rv.dstoff = k;
            rv.dep = phase ? after[v] : -1;
            if (add(p, &s) < 0 || (got[v] = add(p, &rv)) < 0)
                return BK_ENOMEM;
        }
    return BK_OK;
}

/* Receive-reduce a piece up the tree into its root, deepest GPUs first; a GPU's sums chain
 * through its children in rank order. sent[v] gets each GPU's up-send, last[v] its last
 * receive-reduce (-1 for a leaf). */
BK_MUST_USE
static enum bk_status up(struct mprog *p, const struct piece *pc, int *sent, int *last)
{
    const struct ptree *t = pc->t;
    int n = p->ngpus, r = t->root, k = pc->k;
    for (int v = 0; v < n; v++)
        sent[v] = last[v] = -1;
    for (int d = pc->maxdepth; d >= 1; d--)
        for (int v = 0; v < n; v++) {
            if (pc->depth[v] != d)
                continue;
            int u = t->parent[v], ch = pc->chan_up[v], level = pc->maxdepth - d;
            struct mstep s = mk(pc, "s", v, u, 0, ch, 0, level, v);
            if (last[v] >= 0)
                acc_of(p, v, r, k, &s.srcbuf, &s.srcoff);
            else {
                s.srcbuf = 'i';
                s.srcoff = k;
            }
            acc_of(p, u, r, k, &s.dstbuf, &s.dstoff);
            s.dep = last[v];
            struct mstep rr = mk(pc, "rrc", u, v, 1, ch, 0, level, v);
            acc_of(p, u, r, k, &rr.dstbuf, &rr.dstoff);
            if (last[u] >= 0) {
                rr.srcbuf = rr.dstbuf;
                rr.srcoff = rr.dstoff;
            } else {
                rr.srcbuf = 'i';
                rr.srcoff = k;
            }
            rr.dep = last[u];
            if ((sent[v] = add(p, &s)) < 0 || (last[u] = add(p, &rr)) < 0)
                return BK_ENOMEM;
        }
    return BK_OK;
}

struct tbkey {
    int gpu, code, idx;
    int key[5];
    int tb;
};

static int tb_code(const struct mstep *m, int n)
{
    return (m->dir * (n + 1) + m->peer + 1) * MSCCL_CHANNELS + m->chan;
}

static int cmp_tb(const void *a, const void *b)
{
    const struct tbkey *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->code != y->code)
        return x->code < y->code ? -1 : 1;
    for (int i = 0; i < 5; i++)
        if (x->key[i] != y->key[i])
            return x->key[i] < y->key[i] ? -1 : 1;
    return 0;
}

/* Threadblock ids (per GPU, by code) and step numbers (by key), then dependency flags. */
BK_MUST_USE
static enum bk_status layout(struct mprog *p)
{
    struct tbkey *k = calloc((size_t)p->n + 1, sizeof *k);
    p->order = calloc((size_t)p->n + 1, sizeof *p->order);
    p->ntb = calloc((size_t)p->ngpus, sizeof *p->ntb);
    if (!k || !p->order || !p->ntb) {
        free(k);
        return BK_ENOMEM;
    }
    for (int i = 0; i < p->n; i++) {
        k[i].gpu = p->st[i].gpu;
        k[i].code = tb_code(&p->st[i], p->ngpus);
        k[i].idx = i;
        memcpy(k[i].key, p->st[i].key, sizeof k[i].key);
    }
    qsort(k, (size_t)p->n, sizeof *k, cmp_tb);
    for (int i = 0, tb = -1, s = 0; i < p->n; i++) {
        struct mstep *m = &p->st[k[i].idx];
        if (i == 0 || k[i].gpu != k[i - 1].gpu)
            tb = -1;
        if (i == 0 || k[i].gpu != k[i - 1].gpu || k[i].code != k[i - 1].code) {
            tb++;
            s = 0;
        }
        m->tb = tb;
        m->s = s++;
        p->ntb[m->gpu] = tb + 1;
        p->order[i] = k[i].idx;
    }
    for (int i = 0; i < p->n; i++)
        if (p->st[i].dep >= 0)
            p->st[p->st[i].dep].hasdep = 1;
    free(k);
    return BK_OK;
}

/* Channels: the trees crossing one ordered GPU pair take turns. */
static void channels(const struct ptree *t, int n, int *uses, int *chan_down, int *chan_up)
{
    for (int v = 0; v < n; v++) {
        int u = t->parent[v];
        if (u < 0)
            continue;
        chan_down[v] = uses[u * n + v]++ % MSCCL_CHANNELS;
        chan_up[v] = uses[v * n + u]++ % MSCCL_CHANNELS;
    }
}

BK_MUST_USE
static enum bk_status map_tree(struct mprog *p, const struct ptree *t, int i, int first,
                               int *uses, int *work)
{
    int n = p->ngpus;
    int *depth = work, *cd = work + n, *cu = work + 2 * n, *a = work + 3 * n, *b = work + 4 * n,
        *c = work + 5 * n;
    int maxdepth = 0;
    for (int v = 0; v < n; v++) {
        depth[v] = 0;
        for (int u = v; t->parent[u] >= 0 && depth[v] <= n; u = t->parent[u])
            depth[v]++;
        if (depth[v] > maxdepth)
            maxdepth = depth[v];
    }
    channels(t, n, uses, cd, cu);
    for (int q = 0; q * MSCCL_MAX_CNT < p->counts[i]; q++) {
        int cnt = p->counts[i] - q * MSCCL_MAX_CNT;
        struct piece pc = {i, first + q * MSCCL_MAX_CNT,
                           cnt < MSCCL_MAX_CNT ? cnt : MSCCL_MAX_CNT, q, t, depth, maxdepth, cd,
                           cu};
        if (!reduce_like(p->coll)) {
            BK_CHECK(down(p, &pc, 0, NULL, a));
        } else {
            BK_CHECK(up(p, &pc, a, b));
            if (p->coll == COLL_ALLREDUCE) {
                a[t->root] = b[t->root]; /* the root sends down once its sum is complete */
                BK_CHECK(down(p, &pc, 1, a, c));
            }
        }
    }
    return BK_OK;
}

enum bk_status msccl_map(const struct ptree_set *trees, enum collective c, int ngpus,
                         struct mprog *out)
{
    memset(out, 0, sizeof *out);
    out->coll = c;
    out->ngpus = ngpus;
    int n = ngpus, nt = trees->n;
    out->ntrees = nt;
    double *w = calloc((size_t)nt + 1, sizeof *w);
    const struct ptree **tp = calloc((size_t)nt + 1, sizeof *tp);
    out->counts = calloc((size_t)nt + 1, sizeof *out->counts);
    int *uses = calloc((size_t)n * n, sizeof *uses);
    int *work = calloc((size_t)6 * n, sizeof *work);
    enum bk_status st = w && tp && out->counts && uses && work ? BK_OK : BK_ENOMEM;
    /* Gather-like: a root's trees together (stable, by root), as its chunks are. */
    for (int r = 0, j = 0; st == BK_OK && r < (gather_like(c) ? n : 1); r++)
        for (int i = 0; i < nt; i++)
            if (!gather_like(c) || trees->t[i].root == r) {
                tp[j] = &trees->t[i];
                w[j++] = trees->t[i].rate;
            }
    if (st == BK_OK && nt > 0)
        out->nchunks = choose_chunks(tp, nt, w, gather_like(c), n, out->counts);
    int m = out->nchunks / n, C = out->nchunks;
    out->in_chunks = c == COLL_ALLGATHER ? m : C;
    out->out_chunks = c == COLL_REDUCESCATTER ? m : C;
    out->scratch_chunks = c == COLL_REDUCE || c == COLL_REDUCESCATTER ? C : 0;
    /* A root's chunks start at root * m for allgather and reduce-scatter. */
    int next = 0, prev_root = -1;
    for (int i = 0; st == BK_OK && i < nt; i++) {
        if (gather_like(c) && tp[i]->root != prev_root)
            next = tp[i]->root * m;
        prev_root = tp[i]->root;
        st = map_tree(out, tp[i], i, next, uses, work);
        next += out->counts[i];
    }
    for (int i = 0; st == BK_OK && i < out->n; i++)
        if (out->st[i].chan + 1 > out->nchannels)
            out->nchannels = out->st[i].chan + 1;
    if (st == BK_OK)
        st = layout(out);
    free(w);
    free(tp);
    free(uses);
    free(work);
    if (st != BK_OK)
        mprog_free(out);
    return st;
}

void mprog_free(struct mprog *p)
{
    free(p->counts);
    free(p->st);
    free(p->ntb);
    free(p->order);
    memset(p, 0, sizeof *p);
}
