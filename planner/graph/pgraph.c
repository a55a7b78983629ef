/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pgraph.c - building the planning graph from the topology model.
 */
#include "graph/pgraph.h"
#include "graph/pgraph_internal.h"

#include <stdlib.h>
#include <string.h>

void pgraph_free(struct pgraph *g)
{
    free(g->src);
    free(g->dst);
    free(g->cap);
    free(g->rev);
    free(g->link);
    free(g->node);
    free(g->out_off);
    free(g->out_arc);
    free(g->in_off);
    free(g->in_arc);
    memset(g, 0, sizeof *g);
}

BK_MUST_USE
enum bk_status pgraph_alloc_arrays(struct pgraph *g, int nnodes, int narcs)
{
    size_t na = narcs > 0 ? (size_t)narcs : 1;
    g->nnodes = nnodes;
    g->narcs = narcs;
    g->src = malloc(na * sizeof *g->src);
    g->dst = malloc(na * sizeof *g->dst);
    g->cap = malloc(na * sizeof *g->cap);
    g->rev = malloc(na * sizeof *g->rev);
    g->link = malloc(na * sizeof *g->link);
    g->out_off = calloc((size_t)nnodes + 1, sizeof *g->out_off);
    g->in_off = calloc((size_t)nnodes + 1, sizeof *g->in_off);
    g->out_arc = malloc(na * sizeof *g->out_arc);
    g->in_arc = malloc(na * sizeof *g->in_arc);
    if (!g->src || !g->dst || !g->cap || !g->rev || !g->link || !g->out_off || !g->in_off ||
        !g->out_arc || !g->in_arc) {
        pgraph_free(g);
        return BK_ENOMEM;
    }
    return BK_OK;
}

/* CSR lists by counting sort: arcs stay in index order within each node's list. */
void pgraph_build_adjacency(struct pgraph *g)
{
    for (int a = 0; a < g->narcs; a++) {
        g->out_off[g->src[a] + 1]++;
        g->in_off[g->dst[a] + 1]++;
    }
    for (int v = 0; v < g->nnodes; v++) {
        g->out_off[v + 1] += g->out_off[v];
        g->in_off[v + 1] += g->in_off[v];
    }
    int *on = malloc(((size_t)g->nnodes + 1) * sizeof *on);
    int *in = malloc(((size_t)g->nnodes + 1) * sizeof *in);
    if (on && in) {
        memcpy(on, g->out_off, ((size_t)g->nnodes + 1) * sizeof *on);
        memcpy(in, g->in_off, ((size_t)g->nnodes + 1) * sizeof *in);
        for (int a = 0; a < g->narcs; a++) {
            g->out_arc[on[g->src[a]]++] = a;
            g->in_arc[in[g->dst[a]]++] = a;
        }
    }
    free(on);
    free(in);
}

/* Reverse arcs: the arc dst->src of the same topology kind, found through dst's out-list. */
static void link_reverses(struct pgraph *g, const struct topo *t)
{
    for (int a = 0; a < g->narcs; a++) {
        g->rev[a] = -1;
        for (int i = g->out_off[g->dst[a]]; i < g->out_off[g->dst[a] + 1]; i++) {
            int b = g->out_arc[i];
            if (g->dst[b] == g->src[a] &&
                (!t || t->links[g->link[b]].kind == t->links[g->link[a]].kind)) {
                g->rev[a] = b;
                break;
            }
        }
    }
}

enum bk_status pgraph_build(struct pgraph *g, const struct topo *t, unsigned kinds)
{
    memset(g, 0, sizeof *g);
    int narcs = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (kinds & PG_KIND(t->links[i].kind))
            narcs++;
    BK_CHECK(pgraph_alloc_arrays(g, t->nnodes, narcs));
    g->ngpus = t->ngpus;
    g->kinds = kinds;
    int a = 0;
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        if (!(kinds & PG_KIND(l->kind)))
            continue;
        g->src[a] = l->src;
        g->dst[a] = l->dst;
        g->cap[a] = l->gbps;
        g->link[a] = i;
        a++;
    }
    pgraph_build_adjacency(g);
    if (!g->out_off)
        return BK_ENOMEM;
    link_reverses(g, t);
    return BK_OK;
}

enum bk_status pgraph_build_part(struct pgraph *g, const struct topo *t, unsigned kinds,
                                 const int *node, int nnodes, int ngpus)
{
    memset(g, 0, sizeof *g);
    int *local = malloc((size_t)t->nnodes * sizeof *local);
    if (!local)
        return BK_ENOMEM;
    for (int v = 0; v < t->nnodes; v++)
        local[v] = -1;
    for (int i = 0; i < nnodes; i++)
        local[node[i]] = i;
    int narcs = 0;
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        narcs += (kinds & PG_KIND(l->kind)) && local[l->src] >= 0 && local[l->dst] >= 0;
    }
    enum bk_status st = pgraph_alloc_arrays(g, nnodes, narcs);
    if (st != BK_OK) {
        free(local);
        return st;
    }
    g->ngpus = ngpus;
    g->kinds = kinds;
    int a = 0;
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        if (!(kinds & PG_KIND(l->kind)) || local[l->src] < 0 || local[l->dst] < 0)
            continue;
        g->src[a] = local[l->src];
        g->dst[a] = local[l->dst];
        g->cap[a] = l->gbps;
        g->link[a] = i;
        a++;
    }
    free(local);
    pgraph_build_adjacency(g);
    link_reverses(g, t);
    return BK_OK;
}

enum bk_status pgraph_reverse(struct pgraph *out, const struct pgraph *g)
{
    memset(out, 0, sizeof *out);
    BK_CHECK(pgraph_alloc_arrays(out, g->nnodes, g->narcs));
    out->ngpus = g->ngpus;
    out->kinds = g->kinds;
    for (int a = 0; a < g->narcs; a++) {
        out->src[a] = g->dst[a];
        out->dst[a] = g->src[a];
        out->cap[a] = g->cap[a];
        out->link[a] = g->link[a];
        out->rev[a] = g->rev[a];
    }
    if (g->node) {
        if (!(out->node = malloc((size_t)g->nnodes * sizeof *out->node))) {
            pgraph_free(out);
            return BK_ENOMEM;
        }
        memcpy(out->node, g->node, (size_t)g->nnodes * sizeof *out->node);
    }
    pgraph_build_adjacency(out);
    return BK_OK;
}

int pgraph_is_symmetric(const struct pgraph *g)
{
    for (int a = 0; a < g->narcs; a++)
        if (g->rev[a] < 0 || g->cap[g->rev[a]] != g->cap[a])
            return 0;
    return 1;
}

static int reaches_all_gpus(const struct pgraph *g, int from, int *queue, unsigned char *seen)
{
    memset(seen, 0, (size_t)g->nnodes);
    int head = 0, tail = 0, gpus = 0;
    queue[tail++] = from;
    seen[from] = 1;
    while (head < tail) {
        int v = queue[head++];
        if (v < g->ngpus)
            gpus++;
        for (int i = g->out_off[v]; i < g->out_off[v + 1]; i++) {
            int w = g->dst[g->out_arc[i]];
            if (!seen[w]) {
                seen[w] = 1;
                queue[tail++] = w;
            }
        }
    }
    return gpus == g->ngpus;
}

int pgraph_gpus_connected(const struct pgraph *g)
{
    if (g->ngpus <= 1)
        return 1;
    int *queue = malloc((size_t)g->nnodes * sizeof *queue);
    unsigned char *seen = malloc((size_t)g->nnodes);
    int ok = queue && seen;
    /* A search from every GPU: O(GPUs x arcs), small even for a 512-GPU cluster. */
    for (int s = 0; ok && s < g->ngpus; s++)
        ok = reaches_all_gpus(g, s, queue, seen);
    free(queue);
    free(seen);
    return ok;
}

int pgraph_has_relays(const struct pgraph *g)
{
    for (int a = 0; a < g->narcs; a++)
        if (g->src[a] >= g->ngpus || g->dst[a] >= g->ngpus)
            return 1;
    return 0;
}

int pgraph_uniform_plane(const struct pgraph *g, int *sw, int *to, int *from)
{
    int n = g->ngpus, m = g->out_off[1] - g->out_off[0];
    if (n < 2 || m < 1 || m >= n)
        return 0;
    double c = g->cap[g->out_arc[0]];
    for (int k = 0; k < m; k++)
        sw[k] = g->dst[g->out_arc[g->out_off[0] + k]];
    for (int i = 0; i < n * m; i++)
        to[i] = from[i] = -1;
    for (int a = 0; a < g->narcs; a++) {
        int u = g->src[a], v = g->dst[a], k = -1;
        if ((u < n) == (v < n) || g->cap[a] != c)
            return 0; /* GPU-GPU or switch-switch arcs, or another capacity */
        for (int x = 0; x < m && k < 0; x++)
            k = sw[x] == (u < n ? v : u) ? x : -1;
        int *slot = k < 0 ? NULL : u < n ? &to[u * m + k] : &from[k * n + v];
        if (!slot || *slot >= 0)
            return 0; /* another switch, or two arcs to one */
        *slot = a;
    }
    for (int i = 0; i < n * m; i++)
        if (to[i] < 0 || from[i] < 0)
            return 0;
    return m;
}
