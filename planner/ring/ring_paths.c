/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring_paths.c - which relays a ring hop may pass, the widest relay-only paths, and lists of ring
 * orders.
 */
#include "ring/ring_internal.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

/*
 * Relays a hop may pass: those of its own servers, and network switches when it joins two
 * servers. NCCL never routes through a third server's PCIe, nor loops a hop inside one server
 * out through the network.
 */
int relay_ok(const struct topo *t, const struct pgraph *g, int v, int si, int sj)
{
    const struct topo_node *x = &t->nodes[pgraph_node(g, v)];
    if (x->kind == TOPO_NET_SWITCH)
        return si != sj;
    return x->server == si || x->server == sj;
}

int ring_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* ---- widest relay-only paths ---- */

BK_MUST_USE
enum bk_status scratch_init(struct scratch *s, const struct topo *t, int nnodes)
{
    s->t = t;
    size_t n = (size_t)nnodes;
    s->bw = calloc(n + 1, sizeof *s->bw);
    s->pred = malloc((n + 1) * sizeof *s->pred);
    s->queue = malloc(n * sizeof *s->queue);
    s->done = calloc(n + 1, 1);
    s->touched = malloc((n + 1) * sizeof *s->touched);
    s->front = malloc((n + 1) * sizeof *s->front);
    s->ntouched = 0;
    for (size_t v = 0; s->pred && v < n; v++)
        s->pred[v] = -2;
    return s->bw && s->pred && s->queue && s->done && s->touched && s->front ? BK_OK
                                                                              : BK_ENOMEM;
}

void scratch_free(struct scratch *s)
{
    free(s->bw);
    free(s->pred);
    free(s->queue);
    free(s->done);
    free(s->touched);
    free(s->front);
}

/*
 * Bottleneck (widest-path) label-setting from GPU s over arcs with cap c[a] > RING_EPS, leaving s
 * and relays only. Afterwards s->bw[v] is the widest s->v capacity (0: unreachable). Max-min is
 * isotone under extension, so the Dijkstra argument holds. Each step takes the widest labelled
 * node, the lowest-numbered of equals, from the labelled nodes only: a hop reaches two servers'
 * nodes, so the work does not grow with the cluster. Only the nodes labelled last time are reset.
 */
void widest_from(const struct pgraph *g, const double *c, int src, int sj,
                 struct scratch *s)
{
    int si = s->t->nodes[src].server, nfront = 0;
    for (int k = 0; k < s->ntouched; k++) {
        s->bw[s->touched[k]] = 0;
        s->done[s->touched[k]] = 0;
    }
    s->ntouched = 0;
    s->bw[src] = DBL_MAX;
    s->touched[s->ntouched++] = src;
    s->front[nfront++] = src;
    while (nfront > 0) {
        int at = 0;
        for (int k = 1; k < nfront; k++) {
            int v = s->front[k], u = s->front[at];
            if (s->bw[v] > s->bw[u] || (s->bw[v] == s->bw[u] && v < u))
                at = k;
        }
        int u = s->front[at];
        s->front[at] = s->front[--nfront];
        s->done[u] = 1;
        if (u != src && u < g->ngpus)
            continue; /* another GPU ends a hop: it does not route */
        for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++) {
            int a = g->out_arc[i];
            double b = s->bw[u] < c[a] ? s->bw[u] : c[a];
            int v = g->dst[a];
            if (v >= g->ngpus && !relay_ok(s->t, g, v, si, sj))
                continue;
            if (c[a] > RING_EPS && b > s->bw[v]) {
                if (s->bw[v] == 0) { /* newly labelled (a done node is never widened) */
                    s->touched[s->ntouched++] = v;
                    s->front[nfront++] = v;
                }
                s->bw[v] = b;
            }
        }
    }
}

/*
 * The widest src->dst path, fewest arcs among the widest, then the first found scanning arcs in
 * index order (BFS over arcs of capacity >= the width). Arcs go to path[], count to *len.
 * Returns the width, 0 if there is no path.
 */
double widest_path(const struct pgraph *g, const double *c, int src, int dst, int *path,
                   int *len, struct scratch *s)
{
    *len = 0;
    int si = s->t->nodes[src].server, sj = s->t->nodes[dst].server;
    widest_from(g, c, src, sj, s);
    double w = s->bw[dst];
    if (w <= 0)
        return 0;
    s->pred[src] = -1; /* every other node is -2 between calls */
    int head = 0, tail = 0;
    s->queue[tail++] = src;
    while (head < tail && s->pred[dst] == -2) {
        int u = s->queue[head++];
        if (u != src && u < g->ngpus)
            continue;
        for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++) {
            int a = g->out_arc[i], v = g->dst[a];
            if (c[a] >= w && s->pred[v] == -2 && (v < g->ngpus || relay_ok(s->t, g, v, si, sj))) {
                s->pred[v] = a;
                s->queue[tail++] = v;
            }
        }
    }
    int n = 0;
    for (int v = dst; v != src; v = g->src[s->pred[v]])
        n++;
    *len = n;
    for (int v = dst; v != src; v = g->src[s->pred[v]])
        path[--n] = s->pred[v];
    for (int k = 0; k < tail; k++) /* the nodes queued are the nodes given a pred */
        s->pred[s->queue[k]] = -2;
    return w;
}

/* Append ord as it is. */
BK_MUST_USE
enum bk_status orders_push(struct orders *o, const int *ord)
{
    int n = o->n;
    /* One element of the array is a whole order of n GPUs. */
    BK_CHECK(bk_grow_int((void **)&o->v, &o->cap, o->count, (size_t)n * sizeof *o->v));
    memcpy(o->v + (size_t)o->count * n, ord, (size_t)n * sizeof *ord);
    o->count++;
    return BK_OK;
}

/* Add ord, rotated so GPU 0 comes first, unless already present. */
BK_MUST_USE
enum bk_status orders_add(struct orders *o, const int *ord)
{
    int n = o->n, z = 0;
    while (ord[z] != 0)
        z++;
    BK_CHECK(orders_push(o, ord));
    int *last = o->v + (size_t)(o->count - 1) * n;
    for (int k = 0; k < n; k++)
        last[k] = ord[(z + k) % n];
    for (int q = 0; q + 1 < o->count; q++)
        if (memcmp(o->v + (size_t)q * n, last, (size_t)n * sizeof *last) == 0) {
            o->count--; /* already there */
            break;
        }
    return BK_OK;
}

/* Keep the orders the LP gave a rate (x[col[q]], col NULL: column q) in r. */
BK_MUST_USE
enum bk_status keep_rings(struct ring_result *r, const struct orders *o, const int *col,
                          const double *x)
{
    r->n = o->n;
    r->nrings = 0;
    r->order = malloc(((size_t)o->count * o->n + 1) * sizeof *r->order);
    r->rate = malloc(((size_t)o->count + 1) * sizeof *r->rate);
    if (!r->order || !r->rate)
        return BK_ENOMEM;
    for (int q = 0; q < o->count; q++) {
        int j = col ? col[q] : q;
        if (j < 0 || x[j] <= RING_EPS)
            continue;
        memcpy(r->order + (size_t)r->nrings * o->n, o->v + (size_t)q * o->n,
               (size_t)o->n * sizeof *r->order);
        r->rate[r->nrings++] = x[j];
    }
    return BK_OK;
}

