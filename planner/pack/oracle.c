/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * oracle.c - the cheapest spanning tree under arc lengths (oracle.h), called once per MWU round
 * and once per root in every column-generation pricing step.
 *
 * Three steps, all on workspace allocated by oracle_new (only the output tree is allocated per
 * call):
 *   1. metric closure over the GPUs: shortest relay-only paths between every ordered GPU pair
 *      (Dijkstra from each GPU that never expands another GPU; on relay-free graphs just the
 *      cheapest direct arc);
 *   2. a minimum arborescence (dense Chu-Liu/Edmonds with contraction levels kept so the chosen
 *      closure edges can be recovered) or, for allreduce, a minimum spanning tree (dense Prim);
 *   3. expansion of closure edges back into arc paths.
 * Why the closure is exact: every tree edge is charged its own path, so the cost of a tree is
 * the sum of the costs of its GPU-to-GPU paths, and each is cheapest on its own.
 */
#include "pack/oracle.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct oracle {
    const struct pgraph *g;
    int n, nn, relays;
    /* closure */
    double *dist; /* [n*n] cost u->v (INFINITY: none); allreduce: symmetric cost from min(u,v) */
    int *pred;    /* [n*nn] pred[u*nn+w]: last arc of the chosen u->w path, -1 none */
    /* The closure is reused while the lengths stay the same: allgather rounds and pricing
     * steps ask for every root under one set of lengths. */
    double *last_len; /* [narcs] lengths the closure was computed for */
    int last_mode;    /* -1: none yet; otherwise the `undirected` flag it was computed with */
    /* Dijkstra */
    double *nd;   /* [nn] tentative distance */
    int *nh;      /* [nn] its arc count (tie-break: fewer arcs) */
    int *heap;    /* [nn] binary heap of nodes */
    int *pos;     /* [nn] heap position; -1 not queued, -2 settled */
    /* Edmonds: two n*n cost/edge buffers and per-level records (at most n levels) */
    double *c0, *c1;
    int *e0, *e1;   /* original closure edge u*n+v behind each contracted edge */
    int *lin;       /* [n*n] lin[k*n+y]: original edge chosen into node y at level k */
    int *lcomp;     /* [n*n] lcomp[k*n+y]: y's node at level k+1 */
    int *lmap;      /* [n*n] lmap[k*n+v]: original GPU v's node at level k */
    int *lsize;     /* [n*n] lsize[k*n+y]: how many level-(k-1) nodes y merges */
    int *lroot;     /* [n] the root's node per level */
    double *win;    /* [n] cost of each node's chosen in-edge */
    int *inx, *visit, *id, *sel, *sel2, *parent;
    /* Prim */
    double *key;
    int *done;
    /* output */
    int *pbuf;        /* [n*nn] all paths */
    int *plen;        /* [n] */
    const int **pof;  /* [n] */
};

void oracle_free(struct oracle *o)
{
    if (!o)
        return;
    free(o->dist);
    free(o->pred);
    free(o->last_len);
    free(o->nd);
    free(o->nh);
    free(o->heap);
    free(o->pos);
    free(o->c0);
    free(o->c1);
    free(o->e0);
    free(o->e1);
    free(o->lin);
    free(o->lcomp);
    free(o->lmap);
    free(o->lsize);
    free(o->lroot);
    free(o->win);
    free(o->inx);
    free(o->visit);
    free(o->id);
    free(o->sel);
    free(o->sel2);
    free(o->parent);
    free(o->key);
    free(o->done);
    free(o->pbuf);
    free(o->plen);
    free(o->pof);
    free(o);
}

static void *alloc_n(size_t count, size_t size)
{
    return malloc((count ? count : 1) * size);
}

enum bk_status oracle_new(struct oracle **out, const struct pgraph *g)
{
    *out = NULL;
    if (!g || g->ngpus < 0 || g->nnodes < g->ngpus)
        return BK_EINTERNAL;
    struct oracle *o = calloc(1, sizeof *o);
    if (!o)
        return BK_ENOMEM;
    size_t n = (size_t)g->ngpus, nn = (size_t)g->nnodes;
    o->g = g;
    o->n = g->ngpus;
    o->nn = g->nnodes;
    o->relays = pgraph_has_relays(g);
    o->dist = alloc_n(n * n, sizeof *o->dist);
    o->pred = alloc_n(n * nn, sizeof *o->pred);
    o->last_len = alloc_n((size_t)(g->narcs > 0 ? g->narcs : 0), sizeof *o->last_len);
    o->last_mode = -1;
    o->nd = alloc_n(nn, sizeof *o->nd);
    o->nh = alloc_n(nn, sizeof *o->nh);
    o->heap = alloc_n(nn, sizeof *o->heap);
    o->pos = alloc_n(nn, sizeof *o->pos);
    o->c0 = alloc_n(n * n, sizeof *o->c0);
    o->c1 = alloc_n(n * n, sizeof *o->c1);
    o->e0 = alloc_n(n * n, sizeof *o->e0);
    o->e1 = alloc_n(n * n, sizeof *o->e1);
    o->lin = alloc_n(n * n, sizeof *o->lin);
    o->lcomp = alloc_n(n * n, sizeof *o->lcomp);
    o->lmap = alloc_n(n * n, sizeof *o->lmap);
    o->lsize = alloc_n(n * n, sizeof *o->lsize);
    o->lroot = alloc_n(n, sizeof *o->lroot);
    o->win = alloc_n(n, sizeof *o->win);
    o->inx = alloc_n(n, sizeof *o->inx);
    o->visit = alloc_n(n, sizeof *o->visit);
    o->id = alloc_n(n, sizeof *o->id);
    o->sel = alloc_n(n, sizeof *o->sel);
    o->sel2 = alloc_n(n, sizeof *o->sel2);
    o->parent = alloc_n(n, sizeof *o->parent);
    o->key = alloc_n(n, sizeof *o->key);
    o->done = alloc_n(n, sizeof *o->done);
    o->pbuf = alloc_n(n * nn, sizeof *o->pbuf);
    o->plen = alloc_n(n, sizeof *o->plen);
    o->pof = alloc_n(n, sizeof *o->pof);
    if (!o->dist || !o->pred || !o->last_len || !o->nd || !o->nh || !o->heap || !o->pos || !o->c0 || !o->c1 ||
        !o->e0 || !o->e1 || !o->lin || !o->lcomp || !o->lmap || !o->lsize || !o->lroot ||
        !o->win || !o->inx || !o->visit || !o->id || !o->sel || !o->sel2 || !o->parent ||
        !o->key || !o->done || !o->pbuf || !o->plen || !o->pof) {
        oracle_free(o);
        return BK_ENOMEM;
    }
    *out = o;
    return BK_OK;
}

/* ------------------------------------------------------------------ metric closure */

/* Length of arc a as the oracle charges it; allreduce charges both directions. */
static double arc_len(const struct pgraph *g, const double *len, int a, int undirected)
{
    return undirected ? len[a] + len[g->rev[a]] : len[a];
}

/* Heap order: (distance, arc count, node index), a total order, so pops are deterministic. */
static int heap_less(const struct oracle *o, int x, int y)
{
    if (o->nd[x] != o->nd[y])
        return o->nd[x] < o->nd[y];
    if (o->nh[x] != o->nh[y])
        return o->nh[x] < o->nh[y];
    return x < y;
}

static void heap_up(struct oracle *o, int i)
{
    int x = o->heap[i];
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!heap_less(o, x, o->heap[p]))
            break;
        o->heap[i] = o->heap[p];
        o->pos[o->heap[i]] = i;
        i = p;
    }
    o->heap[i] = x;
    o->pos[x] = i;
}

static void heap_down(struct oracle *o, int i, int size)
{
    int x = o->heap[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= size)
            break;
        if (c + 1 < size && heap_less(o, o->heap[c + 1], o->heap[c]))
            c++;
        if (!heap_less(o, o->heap[c], x))
            break;
        o->heap[i] = o->heap[c];
        o->pos[o->heap[i]] = i;
        i = c;
    }
    o->heap[i] = x;
    o->pos[x] = i;
}

/*
 * Shortest paths from GPU u through relays only. Keys are (length, arcs), compared
 * lexicographically; both grow along a path, so Dijkstra stays exact. Among predecessors giving
 * the same key the lowest arc index wins; they are all settled before the node itself (their
 * arc count is smaller), so the choice does not depend on the heap's order.
 */
static void dijkstra(struct oracle *o, int u, const double *len, int undirected)
{
    const struct pgraph *g = o->g;
    int *pred = o->pred + (size_t)u * o->nn;
    for (int w = 0; w < o->nn; w++) {
        o->nd[w] = INFINITY;
        o->nh[w] = INT_MAX;
        o->pos[w] = -1;
        pred[w] = -1;
    }
    int size = 0;
    o->nd[u] = 0;
    o->nh[u] = 0;
    o->heap[size++] = u;
    o->pos[u] = 0;
    while (size > 0) {
        int x = o->heap[0];
        o->pos[x] = -2;
        if (--size > 0) {
            o->heap[0] = o->heap[size];
            o->pos[o->heap[0]] = 0;
            heap_down(o, 0, size);
        }
        if (x < o->n && x != u)
            continue; /* GPUs end paths: they are never relays */
        for (int i = g->out_off[x]; i < g->out_off[x + 1]; i++) {
            int a = g->out_arc[i], w = g->dst[a];
            if (o->pos[w] == -2 || (undirected && g->rev[a] < 0))
                continue;
            double d = o->nd[x] + arc_len(g, len, a, undirected);
            int h = o->nh[x] + 1;
            if (d < o->nd[w] || (d == o->nd[w] && (h < o->nh[w] || (h == o->nh[w] && a < pred[w])))) {
                o->nd[w] = d;
                o->nh[w] = h;
                pred[w] = a;
                if (o->pos[w] < 0) {
                    o->heap[size] = w;
                    o->pos[w] = size;
                    size++;
                }
                heap_up(o, o->pos[w]);
            }
        }
    }
    for (int v = 0; v < o->n; v++)
        o->dist[(size_t)u * o->n + v] = v == u ? INFINITY : o->nd[v];
}

/* Relay-free graphs: the closure is the cheapest direct arc (lowest index among equals). */
static void direct_closure(struct oracle *o, const double *len, int undirected)
{
    const struct pgraph *g = o->g;
    int n = o->n;
    for (int u = 0; u < n; u++) {
        int *pred = o->pred + (size_t)u * o->nn;
        double *d = o->dist + (size_t)u * n;
        for (int v = 0; v < n; v++) {
            d[v] = INFINITY;
            pred[v] = -1;
        }
        /* out-lists are in index order, so a strict comparison keeps the lowest index */
        for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++) {
            int a = g->out_arc[i], v = g->dst[a];
            if (v == u || v >= n || (undirected && g->rev[a] < 0))
                continue;
            double l = arc_len(g, len, a, undirected);
            if (l < d[v]) {
                d[v] = l;
                pred[v] = a;
            }
        }
    }
}

/* ------------------------------------------------------------------ Chu-Liu/Edmonds */

/*
 * Minimum arborescence from `root` on the closure (dense, O(n^2) per contraction level, at most
 * n levels). Each level subtracts the chosen in-edge cost from the edges entering cycle nodes,
 * which changes every arborescence's cost by the same constant, then contracts the cycles. The
 * levels' choices are kept, so expansion can walk back down: inside a contracted cycle every
 * node keeps its cycle in-edge except the one the edge from outside enters. Fills o->parent.
 */
BK_MUST_USE
static enum bk_status edmonds(struct oracle *o, int root)
{
    int n = o->n, N = n, R = root, k = 0;
    double *C = o->c0, *C2 = o->c1;
    int *E = o->e0, *E2 = o->e1;
    for (int x = 0; x < n; x++)
        for (int y = 0; y < n; y++) {
            C[x * n + y] = o->dist[(size_t)x * n + y];
            E[x * n + y] = x * n + y;
        }
    for (int v = 0; v < n; v++)
        o->lmap[v] = v;
    for (;;) {
        o->lroot[k] = R;
        int *lin = o->lin + (size_t)k * n;
        for (int y = 0; y < N; y++) {
            o->inx[y] = -1;
            if (y == R)
                continue;
            double best = INFINITY;
            for (int x = 0; x < N; x++)
                if (x != y && C[x * N + y] < best) {
                    best = C[x * N + y];
                    o->inx[y] = x;
                }
            if (o->inx[y] < 0)
                return BK_ESOLVE; /* nothing enters y: some GPU is unreachable */
            o->win[y] = best;
            lin[y] = E[o->inx[y] * N + y];
        }
        /* Cycles of the chosen in-edges, numbered first, in order of discovery. */
        int cnt = 0;
        for (int y = 0; y < N; y++) {
            o->visit[y] = -1;
            o->id[y] = -1;
        }
        for (int y = 0; y < N; y++) {
            int v = y;
            /* walk up until the root or a node some walk (this one: a cycle) reached */
            while (v != R && o->visit[v] < 0) {
                o->visit[v] = y;
                v = o->inx[v];
            }
            if (v != R && o->visit[v] == y && o->id[v] < 0) {
                for (int w = o->inx[v]; w != v; w = o->inx[w])
                    o->id[w] = cnt;
                o->id[v] = cnt++;
            }
        }
        if (cnt == 0)
            break;
        int *sz = o->lsize + (size_t)(k + 1) * n;
        for (int y = 0; y < N; y++)
            if (o->id[y] < 0)
                o->id[y] = cnt++;
        for (int Y = 0; Y < cnt; Y++)
            sz[Y] = 0;
        for (int y = 0; y < N; y++) {
            sz[o->id[y]]++;
            o->lcomp[(size_t)k * n + y] = o->id[y];
        }
        for (int v = 0; v < n; v++)
            o->lmap[(size_t)(k + 1) * n + v] = o->id[o->lmap[(size_t)k * n + v]];
        /* Contracted costs; scanning x, then y, upwards keeps the lowest pair among equals. */
        for (int i = 0; i < cnt * cnt; i++)
            C2[i] = INFINITY;
        for (int x = 0; x < N; x++)
            for (int y = 0; y < N; y++) {
                int X = o->id[x], Y = o->id[y];
                double c = C[x * N + y];
                if (X == Y || y == R || !(c < INFINITY))
                    continue;
                if (sz[Y] > 1)
                    c -= o->win[y];
                if (c < C2[X * cnt + Y]) {
                    C2[X * cnt + Y] = c;
                    E2[X * cnt + Y] = E[x * N + y];
                }
            }
        double *tc = C;
        C = C2;
        C2 = tc;
        int *te = E;
        E = E2;
        E2 = te;
        R = o->id[R];
        N = cnt;
        k++;
    }
    /* Expand: sel holds, per node of level k+1, the original edge entering it. */
    int *sel = o->sel, *sel2 = o->sel2;
    for (int y = 0; y < N; y++)
        sel[y] = y == R ? -1 : o->lin[(size_t)k * n + y];
    for (int lv = k - 1; lv >= 0; lv--) {
        int Nl = 0;
        for (int v = 0; v < n; v++)
            if (o->lmap[(size_t)lv * n + v] + 1 > Nl)
                Nl = o->lmap[(size_t)lv * n + v] + 1;
        const int *sz = o->lsize + (size_t)(lv + 1) * n;
        for (int y = 0; y < Nl; y++) {
            if (y == o->lroot[lv]) {
                sel2[y] = -1;
                continue;
            }
            int Y = o->lcomp[(size_t)lv * n + y], e = sel[Y];
            if (sz[Y] > 1 && o->lmap[(size_t)lv * n + e % n] != y)
                e = o->lin[(size_t)lv * n + y];
            sel2[y] = e;
        }
        int *t = sel;
        sel = sel2;
        sel2 = t;
    }
    for (int v = 0; v < n; v++) {
        o->parent[v] = v == root ? -1 : sel[v] / n;
        if (v != root && (sel[v] < 0 || sel[v] % n != v))
            return BK_EINTERNAL;
    }
    return BK_OK;
}

/* ------------------------------------------------------------------ Prim */

/* Symmetric allreduce cost of the pair, from the lower GPU's search. */
static double sym(const struct oracle *o, int u, int v)
{
    return u < v ? o->dist[(size_t)u * o->n + v] : o->dist[(size_t)v * o->n + u];
}

/* Minimum spanning tree grown from root (so parents already point away from it). */
BK_MUST_USE
static enum bk_status prim(struct oracle *o, int root)
{
    int n = o->n;
    for (int v = 0; v < n; v++) {
        o->done[v] = v == root;
        o->parent[v] = v == root ? -1 : root;
        o->key[v] = v == root ? 0 : sym(o, root, v);
    }
    for (int it = 1; it < n; it++) {
        int best = -1;
        for (int v = 0; v < n; v++)
            if (!o->done[v] && (best < 0 || o->key[v] < o->key[best]))
                best = v;
        if (!(o->key[best] < INFINITY))
            return BK_ESOLVE;
        o->done[best] = 1;
        for (int w = 0; w < n; w++)
            if (!o->done[w] && sym(o, best, w) < o->key[w]) {
                o->key[w] = sym(o, best, w);
                o->parent[w] = best;
            }
    }
    return BK_OK;
}

/* ------------------------------------------------------------------ paths */

/* Write the chosen path u->v (from u's search) into buf; returns its arc count or -1. */
static int walk(const struct oracle *o, int u, int v, int *buf)
{
    const int *pred = o->pred + (size_t)u * o->nn;
    int k = 0;
    for (int w = v; w != u; w = o->g->src[pred[w]]) {
        if (pred[w] < 0 || k >= o->nn)
            return -1;
        buf[k++] = pred[w];
    }
    for (int i = 0; i < k / 2; i++) {
        int t = buf[i];
        buf[i] = buf[k - 1 - i];
        buf[k - 1 - i] = t;
    }
    return k;
}

BK_MUST_USE
static enum bk_status build_paths(struct oracle *o, int root, int undirected)
{
    int *at = o->pbuf;
    for (int v = 0; v < o->n; v++) {
        o->pof[v] = at;
        o->plen[v] = 0;
        if (v == root)
            continue;
        int p = o->parent[v], k;
        if (!undirected || p < v) {
            k = walk(o, p, v, at);
        } else {
            /* stored as v->p: turn it round arc by arc (every usable arc has a reverse) */
            k = walk(o, v, p, at);
            for (int i = 0; i < k / 2; i++) {
                int t = at[i];
                at[i] = at[k - 1 - i];
                at[k - 1 - i] = t;
            }
            for (int i = 0; i < k; i++)
                at[i] = o->g->rev[at[i]];
        }
        if (k <= 0)
            return BK_EINTERNAL;
        o->plen[v] = k;
        at += k;
    }
    return BK_OK;
}

enum bk_status oracle_min_tree(struct oracle *o, enum pack_kind kind, int root, const double *len,
                               struct ptree *out, double *cost)
{
    memset(out, 0, sizeof *out);
    *cost = 0;
    if (!o || root < 0 || root >= o->n ||
        (kind != PACK_BROADCAST && kind != PACK_ALLGATHER && kind != PACK_ALLREDUCE))
        return BK_EINTERNAL;
    const struct pgraph *g = o->g;
    for (int a = 0; a < g->narcs; a++)
        if (!(len[a] >= 0) || !(len[a] < INFINITY))
            return BK_EINTERNAL;
    int undirected = kind == PACK_ALLREDUCE;
    size_t lbytes = (size_t)g->narcs * sizeof *len;
    if (o->last_mode != undirected || memcmp(o->last_len, len, lbytes) != 0) {
        if (o->relays)
            for (int u = 0; u < o->n; u++)
                dijkstra(o, u, len, undirected);
        else
            direct_closure(o, len, undirected);
        memcpy(o->last_len, len, lbytes);
        o->last_mode = undirected;
    }
    BK_CHECK(undirected ? prim(o, root) : edmonds(o, root));
    BK_CHECK(build_paths(o, root, undirected));
    BK_CHECK(ptree_make(out, o->n, root, o->parent, o->pof, o->plen));
    /* cost from the tree's own load, so it is exactly what ptree_add_load charges */
    double c = 0;
    for (int i = 0; i < out->path_off[out->ngpus]; i++) {
        int a = out->path_arc[i];
        c += arc_len(g, len, a, undirected);
    }
    *cost = c;
    return BK_OK;
}
