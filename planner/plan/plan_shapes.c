/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_shapes.c - structured candidate trees, tried before any packing:
 *   stars:  depth-1 trees, every GPU fed straight from the root (Blink's one-hop trees; on a
 *           switch fabric, each GPU the root of 1/n of the data is optimal for allgather and
 *           allreduce);
 *   chains: the root, then every other GPU in rank order, each hop through one switch plane
 *           (the relays reachable from one switch next to the root). Chains are what reaches a broadcast
 *           bound on switch fabrics, where a star would send every copy out of the root.
 */
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"

/* Shortest path u -> v through relays only (BFS, lowest arc first), and only relays of the
 * plane when in_plane is not NULL; returns its arc count, or -1. */
static int plane_path(const struct pgraph *g, const unsigned char *in_plane, int u, int v,
                      int *path, int *pred, int *queue)
{
    for (int i = 0; i < g->nnodes; i++)
        pred[i] = -2;
    int head = 0, tail = 0;
    queue[tail++] = u;
    pred[u] = -1;
    while (head < tail && pred[v] == -2) {
        int x = queue[head++];
        for (int i = g->out_off[x]; i < g->out_off[x + 1]; i++) {
            int a = g->out_arc[i], w = g->dst[a];
            if (pred[w] != -2 || (w < g->ngpus ? w != v : in_plane && !in_plane[w]))
                continue;
            pred[w] = a;
            if (w >= g->ngpus)
                queue[tail++] = w;
        }
    }
    if (pred[v] == -2)
        return -1;
    int n = 0;
    for (int w = v; w != u; w = g->src[pred[w]])
        n++;
    for (int w = v, k = n; w != u; w = g->src[pred[w]])
        path[--k] = pred[w];
    return n;
}

/* Stars rooted at r: the direct star when r has an arc to every GPU, and one star per relay
 * next to r, reaching every GPU through that relay. */
BK_MUST_USE
static enum bk_status add_stars(const struct pgraph *g, int r, struct ptree_set *cand)
{
    int n = g->ngpus;
    enum bk_status st = BK_OK;
    int *parent = malloc((size_t)n * sizeof *parent);
    int *len = calloc((size_t)n, sizeof *len);
    int *buf = malloc((size_t)n * (size_t)(g->nnodes + 1) * sizeof *buf);
    const int **paths = calloc((size_t)n, sizeof *paths);
    int *pred = malloc((size_t)g->nnodes * sizeof *pred);
    int *queue = malloc((size_t)g->nnodes * sizeof *queue);
    if (!parent || !len || !buf || !paths || !pred || !queue) {
        st = BK_ENOMEM;
        goto out;
    }
    /* The direct star: every GPU one arc away (full NVLink meshes). */
    int direct = 1;
    for (int v = 0; v < n && direct; v++) {
        if (v == r)
            continue;
        int found = -1;
        for (int i = g->out_off[r]; i < g->out_off[r + 1] && found < 0; i++)
            if (g->dst[g->out_arc[i]] == v)
                found = g->out_arc[i];
        direct = found >= 0;
        buf[v * (g->nnodes + 1)] = found;
        paths[v] = &buf[v * (g->nnodes + 1)];
        len[v] = 1;
        parent[v] = r;
    }
    if (direct && n > 1) {
        struct ptree t;
        BK_CHECK_GOTO(ptree_make(&t, n, r, parent, paths, len), st, out);
        st = ptree_set_add(cand, &t, NULL);
        ptree_free(&t);
        if (st != BK_OK)
            goto out;
    }
    /* One star per relay next to r: every GPU reached through that relay. */
    for (int i = g->out_off[r]; i < g->out_off[r + 1]; i++) {
        int a = g->out_arc[i];
        if (g->dst[a] < n)
            continue;
        int ok = 1;
        for (int v = 0; v < n && ok; v++) {
            if (v == r)
                continue;
            int *p = &buf[v * (g->nnodes + 1)];
            p[0] = a;
            int k = plane_path(g, NULL, g->dst[a], v, p + 1, pred, queue);
            ok = k >= 0;
            len[v] = k + 1;
            paths[v] = p;
            parent[v] = r;
        }
        if (!ok)
            continue;
        struct ptree t;
        BK_CHECK_GOTO(ptree_make(&t, n, r, parent, paths, len), st, out);
        st = ptree_set_add(cand, &t, NULL);
        ptree_free(&t);
        if (st != BK_OK)
            goto out;
    }
out:
    free(parent);
    free(len);
    free(buf);
    free(paths);
    free(pred);
    free(queue);
    return st;
}

enum bk_status plan_stars(const struct pack_problem *p, struct ptree_set *cand)
{
    if (p->kind == PACK_BROADCAST)
        return add_stars(p->g, p->root, cand);
    for (int r = 0; r < p->g->ngpus; r++)
        BK_CHECK(add_stars(p->g, r, cand));
    return BK_OK;
}


/* Mark the relays reachable from relay s through relays only: one switch plane. */
static void mark_plane(const struct pgraph *g, int s, unsigned char *in_plane, int *queue)
{
    memset(in_plane, 0, (size_t)g->nnodes);
    int head = 0, tail = 0;
    queue[tail++] = s;
    in_plane[s] = 1;
    while (head < tail) {
        int u = queue[head++];
        for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++) {
            int w = g->dst[g->out_arc[i]];
            if (w >= g->ngpus && !in_plane[w]) {
                in_plane[w] = 1;
                queue[tail++] = w;
            }
        }
    }
}

/* The chain from r through the plane of relay s: r, then the other GPUs in rank order, each
 * hop the shortest path inside the plane. */
BK_MUST_USE
static enum bk_status add_chain(const struct pgraph *g, int r, int s, struct ptree_set *cand,
                                unsigned char *in_plane, int *queue, int *pred, int *order,
                                int *parent, int *len, int *buf, const int **paths)
{
    int n = g->ngpus, stride = g->nnodes + 1, k = 0;
    mark_plane(g, s, in_plane, queue);
    order[k++] = r;
    /* Every GPU must touch the plane; the chain then visits them in rank order (each GPU's
     * links into and out of the plane carry the chain once each way at most). */
    for (int v = 0; v < n; v++) {
        if (v == r)
            continue;
        int touches = 0;
        for (int i = g->in_off[v]; i < g->in_off[v + 1] && !touches; i++)
            touches = g->src[g->in_arc[i]] >= n && in_plane[g->src[g->in_arc[i]]];
        if (!touches)
            return BK_OK;
        order[k++] = v;
    }
    for (int i = 1; i < n; i++) {
        int u = order[i - 1], v = order[i];
        int *p = &buf[v * stride];
        int m = plane_path(g, in_plane, u, v, p, pred, queue);
        if (m <= 0)
            return BK_OK;
        parent[v] = u;
        len[v] = m;
        paths[v] = p;
    }
    struct ptree t;
    BK_CHECK(ptree_make(&t, n, r, parent, paths, len));
    enum bk_status st = ptree_set_add(cand, &t, NULL);
    ptree_free(&t);
    return st;
}

enum bk_status plan_chains(const struct pack_problem *p, struct ptree_set *cand)
{
    const struct pgraph *g = p->g;
    int n = g->ngpus, r = p->root;
    size_t nn = (size_t)g->nnodes;
    unsigned char *in_plane = malloc(nn);
    int *queue = malloc(nn * sizeof *queue), *pred = malloc(nn * sizeof *pred);
    int *order = malloc((size_t)n * sizeof *order), *parent = calloc((size_t)n, sizeof *parent);
    int *len = calloc((size_t)n, sizeof *len);
    int *buf = malloc((size_t)n * (nn + 1) * sizeof *buf);
    const int **paths = calloc((size_t)n, sizeof *paths);
    enum bk_status st = BK_ENOMEM;
    if (in_plane && queue && pred && order && parent && len && buf && paths) {
        st = BK_OK;
        for (int i = g->out_off[r]; st == BK_OK && i < g->out_off[r + 1]; i++) {
            int s = g->dst[g->out_arc[i]];
            if (s >= n)
                st = add_chain(g, r, s, cand, in_plane, queue, pred, order, parent, len, buf,
                               paths);
        }
    }
    free(in_plane);
    free(queue);
    free(pred);
    free(order);
    free(parent);
    free(len);
    free(buf);
    free(paths);
    return st;
}
