/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pack_integral.c - exact integral broadcast packing by Lovasz's constructive proof of Edmonds'
 * branching theorem.
 *
 * On a relay-free graph whose capacities are whole multiples of one unit (25 GB/s NVLinks),
 * Edmonds guarantees k = min over v of lambda(r, v) (in units) arc-disjoint spanning
 * arborescences. Lovasz's proof builds them greedily: grow tree j one arc at a time, taking an
 * arc uv (u in the tree, v not) only if afterwards every node still has lambda(r, .) >= k-j-1 in
 * the capacity left, which is exactly what the remaining trees need; such an arc always exists.
 * The result reaches the Edmonds bound with at most k distinct trees, which the MWU + ILP path
 * cannot promise. The MWU path stays the general fallback (relays, fractional capacities).
 */
#include "pack/pack_integral.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "graph/maxflow.h"

/* Capacities are compared on a 1e-6 GB/s grid (1 kB/s), far below any real link's rate. */
#define UNIT_GRID 1e6
/* More units than this on one arc means the unit is too fine to be a link count. */
#define UNIT_MAX_MULT 64

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

double pack_integral_unit(const struct pgraph *g)
{
    if (g->narcs == 0)
        return 0;
    int64_t d = 0;
    for (int a = 0; a < g->narcs; a++) {
        double c = g->cap[a] * UNIT_GRID;
        if (!(c >= 1) || c > 9e15)
            return 0;
        d = gcd64(d, (int64_t)llround(c));
    }
    double unit = (double)d / UNIT_GRID;
    for (int a = 0; a < g->narcs; a++) {
        double q = g->cap[a] / unit;
        if (q > UNIT_MAX_MULT + 1e-9 || fabs(q - nearbyint(q)) > 1e-6)
            return 0;
    }
    return unit;
}

struct lovasz {
    const struct pgraph *g;
    struct maxflow *m;
    int root;
    int *units;        /* [narcs] capacity left, in units */
    unsigned char *in; /* [ngpus] in the tree being grown */
};

/* Every GPU outside the tree (v included) keeps lambda(root, w) >= need in what is left. */
static int keeps_connectivity(struct lovasz *L, int need)
{
    if (need <= 0)
        return 1;
    for (int w = 0; w < L->g->ngpus; w++) {
        if (L->in[w])
            continue;
        if (maxflow_run(L->m, L->root, w, need, NULL) < need - 0.5)
            return 0;
    }
    return 1;
}

/*
 * Grow one arborescence; need = trees still to build after this one. Sets parent[] and arc[].
 * The check must cover v itself, not only the GPUs left after it: a cut {v} u (part of the
 * tree) that is tight at need would lose the unit uv and starve a later tree. Sets inside the
 * tree are not entered by uv, so they need no check (Schrijver, proof of Thm 53.1).
 */
BK_MUST_USE
static enum bk_status grow(struct lovasz *L, int need, int *parent, int *arc)
{
    const struct pgraph *g = L->g;
    int n = g->ngpus;
    for (int v = 0; v < n; v++)
        L->in[v] = v == L->root;
    parent[L->root] = -1;
    for (int added = 1; added < n; added++) {
        int taken = -1;
        for (int a = 0; a < g->narcs && taken < 0; a++) {
            int u = g->src[a], v = g->dst[a];
            if (!L->in[u] || L->in[v] || L->units[a] < 1)
                continue;
            L->units[a]--;
            BK_CHECK(maxflow_set_cap(L->m, a, L->units[a]));
            if (keeps_connectivity(L, need)) {
                taken = a;
            } else {
                L->units[a]++;
                BK_CHECK(maxflow_set_cap(L->m, a, L->units[a]));
            }
        }
        if (taken < 0)
            return BK_EINTERNAL; /* Lovasz's lemma says this cannot happen */
        int v = g->dst[taken];
        L->in[v] = 1;
        parent[v] = g->src[taken];
        arc[v] = taken;
    }
    return BK_OK;
}

enum bk_status pack_integral(const struct pack_problem *p, double unit, struct ptree_set *out)
{
    const struct pgraph *g = p->g;
    int n = g->ngpus;
    if (p->kind != PACK_BROADCAST || !(unit > 0) || pgraph_has_relays(g) || p->root < 0 ||
        p->root >= n)
        return BK_EINTERNAL;
    if (n < 2)
        return BK_OK;

    struct lovasz L = {g, NULL, p->root, NULL, NULL};
    int *parent = malloc((size_t)n * sizeof *parent);
    int *arc = malloc((size_t)n * sizeof *arc);
    const int **path_of = malloc((size_t)n * sizeof *path_of);
    int *path_len = malloc((size_t)n * sizeof *path_len);
    L.units = malloc(((size_t)g->narcs + 1) * sizeof *L.units);
    L.in = malloc((size_t)n);
    struct ptree_set made;
    ptree_set_init(&made);
    enum bk_status st = BK_OK;
    if (!parent || !arc || !path_of || !path_len || !L.units || !L.in) {
        st = BK_ENOMEM;
        goto out;
    }
    BK_CHECK_GOTO(maxflow_new(&L.m, g, 0, 0), st, out);
    for (int a = 0; a < g->narcs; a++) {
        L.units[a] = (int)lround(g->cap[a] / unit);
        BK_CHECK_GOTO(maxflow_set_cap(L.m, a, L.units[a]), st, out);
    }

    /* k from the unit graph itself, so the target matches the integers Lovasz works on. */
    int k = INT32_MAX;
    for (int v = 0; v < n; v++) {
        if (v == p->root)
            continue;
        double f = maxflow_run(L.m, p->root, v, k, NULL);
        int fv = (int)floor(f + 1e-9);
        if (fv < k)
            k = fv;
    }

    for (int v = 0; v < n; v++) {
        path_of[v] = &arc[v];
        path_len[v] = v == p->root ? 0 : 1;
    }
    for (int j = 0; j < k; j++) {
        BK_CHECK_GOTO(grow(&L, k - j - 1, parent, arc), st, out);
        struct ptree t;
        BK_CHECK_GOTO(ptree_make(&t, n, p->root, parent, path_of, path_len), st, out);
        t.rate = unit;
        st = ptree_set_add(&made, &t, NULL);
        ptree_free(&t);
        if (st != BK_OK)
            goto out;
    }
    /* Only a complete packing reaches the caller. */
    for (int i = 0; i < made.n && st == BK_OK; i++)
        st = ptree_set_add(out, &made.t[i], NULL);
out:
    ptree_set_free(&made);
    maxflow_free(L.m);
    free(parent);
    free(arc);
    free(path_of);
    free(path_len);
    free(L.units);
    free(L.in);
    return st;
}
