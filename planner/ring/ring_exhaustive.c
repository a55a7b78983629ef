/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring_exhaustive.c - the exact ring baseline for small graphs: every Hamiltonian cycle (GPU 0
 * first) whose hops have a path is an LP column, each hop on its widest relay-only path.
 */
#include "ring/ring_internal.h"

#include <stdlib.h>
#include <string.h>

struct enum_ctx {
    const struct pgraph *g;
    int n;
    int *hop_off, *hop_arc; /* hop i->j: arcs hop_arc[hop_off[i*n+j] ..) ; empty: no hop */
    int *order;
    unsigned char *used;
    int *tmp; /* arcs of one cycle */
    struct orders cycles; /* column j's cycle */
    struct lpb *lp;
    enum bk_status st;
};

static int hop_len(const struct enum_ctx *e, int i, int j)
{
    return e->hop_off[i * e->n + j + 1] - e->hop_off[i * e->n + j];
}

/* One cycle, one column: entry mult_C(a) for each arc its hops use (relay arcs may repeat). */
BK_MUST_USE
static enum bk_status add_cycle(struct enum_ctx *e)
{
    int m = 0;
    for (int k = 0; k < e->n; k++) {
        int i = e->order[k], j = e->order[(k + 1) % e->n];
        for (int p = e->hop_off[i * e->n + j]; p < e->hop_off[i * e->n + j + 1]; p++)
            e->tmp[m++] = e->hop_arc[p];
    }
    qsort(e->tmp, (size_t)m, sizeof *e->tmp, ring_cmp_int);
    BK_CHECK(orders_push(&e->cycles, e->order));
    BK_CHECK(lpb_col(e->lp, 1.0));
    for (int p = 0; p < m;) {
        int q = p;
        while (q < m && e->tmp[q] == e->tmp[p])
            q++;
        BK_CHECK(lpb_entry(e->lp, e->tmp[p], (double)(q - p)));
        p = q;
    }
    return BK_OK;
}

/* Extend order[0..k) by every unused GPU reachable by a hop, in index order. */
static void enum_dfs(struct enum_ctx *e, int k)
{
    if (e->st != BK_OK)
        return;
    int last = e->order[k - 1];
    if (k == e->n) {
        if (hop_len(e, last, e->order[0]) > 0)
            e->st = add_cycle(e);
        return;
    }
    for (int j = 1; j < e->n; j++) {
        if (e->used[j] || hop_len(e, last, j) == 0)
            continue;
        e->used[j] = 1;
        e->order[k] = j;
        enum_dfs(e, k + 1);
        e->used[j] = 0;
    }
}

BK_MUST_USE
enum bk_status ring_exhaustive(const struct topo *t, const struct pgraph *g,
                               struct ring_result *r, struct diag *d)
{
    int n = g->ngpus;
    struct enum_ctx e = {0};
    struct lpb lp = {0};
    struct scratch s = {0};
    double *x = NULL;
    enum bk_status st = BK_ENOMEM;
    e.g = g;
    e.n = n;
    e.cycles.n = n;
    e.lp = &lp;
    size_t maxpath = (size_t)g->nnodes; /* a simple path has fewer arcs than nodes */
    e.hop_off = calloc((size_t)n * n + 1, sizeof *e.hop_off);
    e.hop_arc = malloc((size_t)n * n * maxpath * sizeof *e.hop_arc);
    e.order = malloc((size_t)n * sizeof *e.order);
    e.used = calloc((size_t)n, 1);
    e.tmp = malloc((size_t)n * maxpath * sizeof *e.tmp);
    if (!e.hop_off || !e.hop_arc || !e.order || !e.used || !e.tmp)
        goto out;
    BK_CHECK_GOTO(scratch_init(&s, t, g->nnodes), st, out);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int len = 0;
            if (i != j)
                widest_path(g, g->cap, i, j, e.hop_arc + e.hop_off[i * n + j], &len, &s);
            e.hop_off[i * n + j + 1] = e.hop_off[i * n + j] + len;
        }
    /* One capacity row per arc, in arc order, so row a is arc a. */
    for (int a = 0; a < g->narcs; a++) {
        int id;
        BK_CHECK_GOTO(lpb_row(&lp, LP_LE, g->cap[a], &id), st, out);
    }
    e.order[0] = 0;
    e.used[0] = 1;
    e.st = BK_OK;
    enum_dfs(&e, 1);
    BK_CHECK_GOTO(e.st, st, out);
    r->gbps = 0;
    r->nrings = 0;
    if (lp.ncols > 0) {
        x = malloc((size_t)lp.ncols * sizeof *x);
        if (!x)
            goto out;
        BK_CHECK_GOTO(lpb_solve(&lp, x, &r->gbps, d), st, out);
        BK_CHECK_GOTO(keep_rings(r, &e.cycles, NULL, x), st, out);
    }
    r->exhaustive = 1;
    st = BK_OK;
out:
    free(x);
    scratch_free(&s);
    lpb_free(&lp);
    free(e.hop_off);
    free(e.hop_arc);
    free(e.order);
    free(e.used);
    free(e.tmp);
    free(e.cycles.v);
    return st;
}

