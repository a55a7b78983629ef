/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_hops.c - the widest relay-only paths between GPUs and the ring order NCCL's simulated
 * rings and trees run over (sim_hops.h), and the memo that keeps them between calls.
 */
#include "sim/sim_hops.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define RING_ORDER_ENUM_MAX 9 /* (n-1)! <= 40320 orders */
/* Above that, rank order unless a hop of it has no path; then a search this many steps long. */
#define RING_ORDER_SEARCH_STEPS 1000000L
#define MEMO_TABLES 4 /* rings and double binary trees need two: the ring tier, every kind */

struct sim_memo {
    struct sim_hops t[MEMO_TABLES];
    int n;
};

/* Widest relay-only path s -> t in h (ties: fewer arcs, then lower arc numbers): its arcs in
 * path[] from s, its length in *len; returns the width, 0 when there is none. */
static double widest(const struct pgraph *h, int s, int t, int *path, int *len, double *wd,
                     int *hops, int *pred, unsigned char *done)
{
    for (int v = 0; v < h->nnodes; v++) {
        wd[v] = 0;
        hops[v] = 0;
        pred[v] = -1;
        done[v] = 0;
    }
    wd[s] = DBL_MAX;
    for (;;) {
        int u = -1;
        for (int v = 0; v < h->nnodes; v++)
            if (!done[v] && wd[v] > 0 &&
                (u < 0 || wd[v] > wd[u] || (wd[v] == wd[u] && hops[v] < hops[u])))
                u = v;
        if (u < 0 || u == t)
            break;
        done[u] = 1;
        if (u != s && u < h->ngpus)
            continue; /* NCCL forwards through GPUs only as ring members */
        for (int i = h->out_off[u]; i < h->out_off[u + 1]; i++) {
            int a = h->out_arc[i], v = h->dst[a];
            double w = wd[u] < h->cap[a] ? wd[u] : h->cap[a];
            if (!done[v] && (w > wd[v] || (w == wd[v] && hops[u] + 1 < hops[v]))) {
                wd[v] = w;
                hops[v] = hops[u] + 1;
                pred[v] = a;
            }
        }
    }
    *len = 0;
    if (wd[t] <= 0 || s == t)
        return 0;
    *len = hops[t];
    for (int v = t, k = hops[t] - 1; v != s; v = h->src[pred[v]], k--)
        path[k] = pred[v];
    return wd[t];
}

/* Depth-first search for the Hamiltonian cycle (rank 0 first) whose narrowest hop is widest. */
struct cycle_search {
    const double *w;
    int n;
    int *ord, *best, *used;
    double best_w;
    long steps; /* left; < 0: no limit */
};

static void order_dfs(struct cycle_search *c, int k, double bott)
{
    int n = c->n;
    if (bott <= c->best_w || c->steps == 0)
        return;
    if (c->steps > 0)
        c->steps--;
    if (k == n) {
        double wl = c->w[c->ord[n - 1] * n + c->ord[0]];
        double bw = wl < bott ? wl : bott;
        if (bw > c->best_w) {
            c->best_w = bw;
            memcpy(c->best, c->ord, (size_t)n * sizeof *c->ord);
        }
        return;
    }
    for (int v = 1; v < n; v++) {
        double wv = c->w[c->ord[k - 1] * n + v];
        if (c->used[v] || wv <= 0)
            continue;
        c->used[v] = 1;
        c->ord[k] = v;
        order_dfs(c, k + 1, wv < bott ? wv : bott);
        c->used[v] = 0;
    }
}

BK_MUST_USE
static enum bk_status ring_order(struct sim_hops *h)
{
    int n = h->n;
    for (int v = 0; v < n; v++)
        h->order[v] = v;
    if (n < 3)
        return BK_OK;
    long steps = -1;
    if (n > RING_ORDER_ENUM_MAX) {
        /* Rank order, as NCCL's rings mostly are, where every hop has a path (there is always
           one through the host on a real machine); a graph without the host, as ForestColl's
           MI250, needs a cycle over the links there are. */
        int whole = 1;
        for (int v = 0; v < n; v++)
            whole &= h->w[v * n + (v + 1) % n] > 0;
        if (whole)
            return BK_OK;
        steps = RING_ORDER_SEARCH_STEPS;
    }
    struct cycle_search c = {h->w, n, calloc((size_t)n, sizeof(int)), h->order,
                             calloc((size_t)n, sizeof(int)), 0, steps};
    if (!c.ord || !c.used) {
        free(c.ord), free(c.used);
        return BK_ENOMEM;
    }
    c.used[0] = 1;
    order_dfs(&c, 1, DBL_MAX);
    free(c.ord), free(c.used);
    return BK_OK;
}

BK_MUST_USE
static enum bk_status build(struct sim_hops *h, const struct topo *t, unsigned kinds)
{
    memset(h, 0, sizeof *h);
    h->topo = t;
    h->kinds = kinds;
    h->n = t->ngpus;
    BK_CHECK(pgraph_build_tier(&h->h, t, kinds));
    int n = h->n, V = h->h.nnodes;
    h->maxlen = V > 0 ? V : 1;
    double *wd = malloc(((size_t)V + 1) * sizeof *wd);
    int *hops = malloc(((size_t)V + 1) * sizeof *hops);
    int *pred = malloc(((size_t)V + 1) * sizeof *pred);
    unsigned char *done = malloc((size_t)V + 1);
    h->w = calloc((size_t)n * n + 1, sizeof *h->w);
    h->plen = calloc((size_t)n * n + 1, sizeof *h->plen);
    h->path = malloc(((size_t)n * n * (size_t)h->maxlen + 1) * sizeof *h->path);
    h->order = malloc(((size_t)n + 1) * sizeof *h->order);
    enum bk_status st = wd && hops && pred && done && h->w && h->plen && h->path && h->order
                            ? BK_OK : BK_ENOMEM;
    for (int i = 0; st == BK_OK && i < n; i++)
        for (int k = 0; k < n; k++)
            if (i != k) {
                int ij = i * n + k;
                h->w[ij] = widest(&h->h, i, k, h->path + (size_t)ij * (size_t)h->maxlen,
                                  &h->plen[ij], wd, hops, pred, done);
            }
    if (st == BK_OK)
        st = ring_order(h);
    free(wd);
    free(hops);
    free(pred);
    free(done);
    if (st != BK_OK)
        sim_hops_free(h);
    return st;
}

void sim_hops_free(struct sim_hops *h)
{
    pgraph_free(&h->h);
    free(h->w);
    free(h->path);
    free(h->plen);
    free(h->order);
    memset(h, 0, sizeof *h);
}

enum bk_status sim_hops_get(struct sim_memo *m, const struct topo *t, unsigned kinds,
                            struct sim_hops *own, const struct sim_hops **out)
{
    *out = NULL;
    if (!m) {
        BK_CHECK(build(own, t, kinds));
        *out = own;
        return BK_OK;
    }
    for (int i = 0; i < m->n; i++)
        if (m->t[i].topo == t && m->t[i].kinds == kinds) {
            *out = &m->t[i];
            return BK_OK;
        }
    if (m->n == MEMO_TABLES) { /* another allocation: start over */
        for (int i = 0; i < m->n; i++)
            sim_hops_free(&m->t[i]);
        m->n = 0;
    }
    BK_CHECK(build(&m->t[m->n], t, kinds));
    *out = &m->t[m->n++];
    return BK_OK;
}

enum bk_status sim_memo_new(struct sim_memo **m)
{
    *m = calloc(1, sizeof **m);
    return *m ? BK_OK : BK_ENOMEM;
}

void sim_memo_free(struct sim_memo *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        sim_hops_free(&m->t[i]);
    free(m);
}
