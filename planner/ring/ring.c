/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring.c - the NCCL-style ring baseline: the best fractional packing of directed Hamiltonian
 * rings over the GPUs, on the same fluid model (arc capacities in GB/s) the trees are packed on.
 *
 * Two methods (blink-and-peers 6, "an LP over enumerated cycles"):
 *  - exhaustive: for n <= RING_ENUM_MAX GPUs (8 with relays) without NVSwitches, every directed
 *    Hamiltonian cycle (GPU 0 first) whose hops all have a path is a column; each hop takes its
 *    widest relay-only path. The LP max sum x_C s.t. sum_C mult_C(a) x_C <= cap[a] is exact over
 *    that ring family.
 *  - heuristic (NVSwitch graphs, more GPUs): a few ring orders, each with its reverse: rank
 *    order, the order with the widest narrowest hop, and for several servers one order per cut
 *    point of each server's own cycle. A hop through NVSwitches splits over all switch ports (a
 *    multi-commodity flow, one rate t_o per order shared by its hops); other hops take one
 *    widest path, as NCCL's channels do. One LP over all orders.
 * A hop "through relays only" never passes another GPU: NCCL forwards through GPUs only as ring
 * members, never as a router.
 */
#include "ring/ring.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "ilp/ilp.h"
#include "graph/pgraph.h"

#define RING_ENUM_MAX 9       /* (n-1)! <= 40320 columns */
#define RING_ENUM_MAX_RELAY 8 /* relay hops have longer columns: 5040 at most */
#define RING_EPS 1e-9         /* GB/s below this is no capacity */
#define RING_DFS_BUDGET 20000 /* steps per Hamiltonian-cycle search */

/* ---- a growable column-major LP, handed to ilp_solve_lp ---- */

struct lpb {
    int nrows, rcap, ncols, ccap, nnz, zcap;
    enum lp_row_type *type;
    double *rhs, *obj, *val;
    int *off, *row;
};

static void lpb_free(struct lpb *b)
{
    free(b->type);
    free(b->rhs);
    free(b->obj);
    free(b->val);
    free(b->off);
    free(b->row);
    memset(b, 0, sizeof *b);
}

/* Room for one more row, column (and its end offset) or entry: capacities double together. */
BK_MUST_USE
static enum bk_status lpb_reserve(struct lpb *b)
{
    if (b->nrows == b->rcap) {
        int nc = b->rcap ? 2 * b->rcap : 64;
        enum lp_row_type *t = realloc(b->type, (size_t)nc * sizeof *t);
        b->type = t ? t : b->type;
        double *r = realloc(b->rhs, (size_t)nc * sizeof *r);
        b->rhs = r ? r : b->rhs;
        if (!t || !r)
            return BK_ENOMEM;
        b->rcap = nc;
    }
    if (b->ncols + 1 >= b->ccap) {
        int nc = b->ccap ? 2 * b->ccap : 64;
        double *o = realloc(b->obj, (size_t)nc * sizeof *o);
        b->obj = o ? o : b->obj;
        int *f = realloc(b->off, (size_t)nc * sizeof *f);
        b->off = f ? f : b->off;
        if (!o || !f)
            return BK_ENOMEM;
        b->ccap = nc;
    }
    if (b->nnz == b->zcap) {
        int nc = b->zcap ? 2 * b->zcap : 256;
        int *w = realloc(b->row, (size_t)nc * sizeof *w);
        b->row = w ? w : b->row;
        double *v = realloc(b->val, (size_t)nc * sizeof *v);
        b->val = v ? v : b->val;
        if (!w || !v)
            return BK_ENOMEM;
        b->zcap = nc;
    }
    return BK_OK;
}

BK_MUST_USE
static enum bk_status lpb_row(struct lpb *b, enum lp_row_type type, double rhs, int *id)
{
    BK_CHECK(lpb_reserve(b));
    b->type[b->nrows] = type;
    b->rhs[b->nrows] = rhs;
    *id = b->nrows++;
    return BK_OK;
}

/* Start a new column; its entries follow with lpb_entry. */
BK_MUST_USE
static enum bk_status lpb_col(struct lpb *b, double obj)
{
    BK_CHECK(lpb_reserve(b));
    b->off[b->ncols] = b->nnz;
    b->obj[b->ncols++] = obj;
    b->off[b->ncols] = b->nnz;
    return BK_OK;
}

BK_MUST_USE
static enum bk_status lpb_entry(struct lpb *b, int row, double v)
{
    BK_CHECK(lpb_reserve(b));
    b->row[b->nnz] = row;
    b->val[b->nnz++] = v;
    b->off[b->ncols] = b->nnz;
    return BK_OK;
}

BK_MUST_USE
static enum bk_status lpb_solve(const struct lpb *b, double *x, double *value, struct diag *d)
{
    struct lp_model m = {b->nrows, b->ncols, b->type, b->rhs, b->obj, b->off, b->row, b->val};
    return ilp_solve_lp(&m, x, value, d);
}

/*
 * Relays a hop may pass: those of its own servers, and network switches when it joins two
 * servers. NCCL never routes through a third server's PCIe, nor loops a hop inside one server
 * out through the network.
 */
static int relay_ok(const struct topo *t, int v, int si, int sj)
{
    if (t->nodes[v].kind == TOPO_NET_SWITCH)
        return si != sj;
    return t->nodes[v].server == si || t->nodes[v].server == sj;
}

/* ---- widest relay-only paths ---- */

/* Scratch for path searches, sized by node count. */
struct scratch {
    const struct topo *t;
    double *bw;
    int *pred, *queue;
    unsigned char *done;
};

BK_MUST_USE
static enum bk_status scratch_init(struct scratch *s, const struct topo *t, int nnodes)
{
    s->t = t;
    size_t n = (size_t)nnodes;
    s->bw = malloc(n * sizeof *s->bw);
    s->pred = malloc(n * sizeof *s->pred);
    s->queue = malloc(n * sizeof *s->queue);
    s->done = malloc(n);
    return s->bw && s->pred && s->queue && s->done ? BK_OK : BK_ENOMEM;
}

static void scratch_free(struct scratch *s)
{
    free(s->bw);
    free(s->pred);
    free(s->queue);
    free(s->done);
}

/*
 * Bottleneck (widest-path) label-setting from GPU s over arcs with cap c[a] > RING_EPS, leaving s
 * and relays only. Afterwards s->bw[v] is the widest s->v capacity (0: unreachable). Max-min is
 * isotone under extension, so the Dijkstra argument holds. O(V^2 + E); V is small.
 */
static void widest_from(const struct pgraph *g, const double *c, int src, int sj,
                        struct scratch *s)
{
    int si = s->t->nodes[src].server;
    for (int v = 0; v < g->nnodes; v++) {
        s->bw[v] = 0;
        s->done[v] = 0;
    }
    s->bw[src] = DBL_MAX;
    for (;;) {
        int u = -1;
        for (int v = 0; v < g->nnodes; v++)
            if (!s->done[v] && s->bw[v] > 0 && (u < 0 || s->bw[v] > s->bw[u]))
                u = v;
        if (u < 0)
            break;
        s->done[u] = 1;
        if (u != src && u < g->ngpus)
            continue; /* another GPU ends a hop: it does not route */
        for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++) {
            int a = g->out_arc[i];
            double b = s->bw[u] < c[a] ? s->bw[u] : c[a];
            int v = g->dst[a];
            if (v >= g->ngpus && !relay_ok(s->t, v, si, sj))
                continue;
            if (c[a] > RING_EPS && b > s->bw[v])
                s->bw[g->dst[a]] = b;
        }
    }
}

/*
 * The widest src->dst path, fewest arcs among the widest, then the first found scanning arcs in
 * index order (BFS over arcs of capacity >= the width). Arcs go to path[], count to *len.
 * Returns the width, 0 if there is no path.
 */
static double widest_path(const struct pgraph *g, const double *c, int src, int dst, int *path,
                          int *len, struct scratch *s)
{
    *len = 0;
    int si = s->t->nodes[src].server, sj = s->t->nodes[dst].server;
    widest_from(g, c, src, sj, s);
    double w = s->bw[dst];
    if (w <= 0)
        return 0;
    for (int v = 0; v < g->nnodes; v++)
        s->pred[v] = -2;
    s->pred[src] = -1;
    int head = 0, tail = 0;
    s->queue[tail++] = src;
    while (head < tail && s->pred[dst] == -2) {
        int u = s->queue[head++];
        if (u != src && u < g->ngpus)
            continue;
        for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++) {
            int a = g->out_arc[i], v = g->dst[a];
            if (c[a] >= w && s->pred[v] == -2 && (v < g->ngpus || relay_ok(s->t, v, si, sj))) {
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
    return w;
}

/* A list of ring orders, n GPUs each. */
struct orders {
    int n, count, cap;
    int *v; /* [cap * n] */
};

/* Append ord as it is. */
BK_MUST_USE
static enum bk_status orders_push(struct orders *o, const int *ord)
{
    int n = o->n;
    if ((o->count + 1) * n > o->cap) {
        int nc = o->cap ? 2 * o->cap : 16 * n;
        int *v = realloc(o->v, (size_t)nc * sizeof *v);
        if (!v)
            return BK_ENOMEM;
        o->v = v;
        o->cap = nc;
    }
    memcpy(o->v + (size_t)o->count * n, ord, (size_t)n * sizeof *ord);
    o->count++;
    return BK_OK;
}

/* Add ord, rotated so GPU 0 comes first, unless already present. */
BK_MUST_USE
static enum bk_status orders_add(struct orders *o, const int *ord)
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
static enum bk_status keep_rings(struct ring_result *r, const struct orders *o, const int *col,
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

/* ---- exhaustive: every Hamiltonian cycle, widest-path hops ---- */

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

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
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
    qsort(e->tmp, (size_t)m, sizeof *e->tmp, cmp_int);
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
static enum bk_status ring_exhaustive(const struct topo *t, const struct pgraph *g,
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

/* ---- heuristic: chosen orders, hops split over relay paths (concurrent flow) ---- */

/* ord and its reverse (rev is scratch). */
BK_MUST_USE
static enum bk_status orders_add_pair(struct orders *o, const int *ord, int *rev)
{
    for (int k = 0; k < o->n; k++)
        rev[k] = ord[o->n - 1 - k];
    BK_CHECK(orders_add(o, ord));
    return orders_add(o, rev);
}

/*
 * Mark in useful[] the nodes on some relay-only path from GPU i to GPU j: reachable from i and
 * reaching j, passing relays only. Flow elsewhere could only circulate, so it is left out.
 * Keeps the LP small: a 32-GPU cluster has ~100 relay arcs, but most hops are direct.
 */
static void hop_nodes(const struct topo *t, const struct pgraph *g, int i, int j,
                      unsigned char *useful, unsigned char *fwd, int *queue)
{
    int si = t->nodes[i].server, sj = t->nodes[j].server;
    memset(fwd, 0, (size_t)g->nnodes);
    memset(useful, 0, (size_t)g->nnodes);
    /* GPUs joined by a direct link do not split (NCCL's NVL path type): one widest path. */
    for (int p = g->out_off[i]; p < g->out_off[i + 1]; p++)
        if (g->dst[g->out_arc[p]] == j) {
            useful[i] = useful[j] = 1;
            return;
        }
    int head = 0, tail = 0;
    queue[tail++] = i;
    fwd[i] = 1;
    while (head < tail) {
        int u = queue[head++];
        if (u != i && u < g->ngpus)
            continue;
        for (int p = g->out_off[u]; p < g->out_off[u + 1]; p++) {
            int v = g->dst[g->out_arc[p]];
            if (!fwd[v] && (v == j || (v >= g->ngpus && relay_ok(t, v, si, sj)))) {
                fwd[v] = 1;
                queue[tail++] = v;
            }
        }
    }
    if (!fwd[j])
        return;
    head = tail = 0;
    queue[tail++] = j;
    useful[j] = 1;
    while (head < tail) {
        int u = queue[head++];
        if (u == i)
            continue;
        for (int p = g->in_off[u]; p < g->in_off[u + 1]; p++) {
            int v = g->src[g->in_arc[p]];
            if (fwd[v] && !useful[v] && (v == i || v >= g->ngpus)) {
                useful[v] = 1;
                queue[tail++] = v;
            }
        }
    }
}

/*
 * The LP over the orders: per order a rate t_o; all hops share the arc capacities; maximise
 * sum t_o. A hop through NVSwitches splits: a flow from its first GPU to its second through
 * useful relays (out = t_o at the source, conservation at relays), since a ring uses every
 * switch port (NCCL models the NVSwitch as one node). Any other hop, like NCCL's channels, takes
 * one path: the direct link, or the widest relay path, charged to t_o's own column. An order
 * with a hop that has no path is left out.
 */
BK_MUST_USE
static enum bk_status flow_lp(const struct topo *t, const struct pgraph *g,
                              const struct orders *o, struct scratch *sc, struct ring_result *r,
                              struct diag *d)
{
    int n = o->n, V = g->nnodes;
    size_t na = g->narcs > 0 ? (size_t)g->narcs : 1;
    struct lpb lp = {0};
    enum bk_status st = BK_ENOMEM;
    double *x = NULL, *mult = calloc(na, sizeof *mult);
    int *rowof = malloc((size_t)n * V * sizeof *rowof), *path = malloc((size_t)V * sizeof *path);
    int *tcol = malloc((size_t)o->count * sizeof *tcol), *queue = malloc((size_t)V * sizeof *queue);
    unsigned char *useful = malloc((size_t)n * V), *fwd = malloc((size_t)V);
    unsigned char *split = malloc((size_t)n);
    if (!mult || !rowof || !path || !tcol || !queue || !useful || !fwd || !split)
        goto out;
    for (int a = 0; a < g->narcs; a++) {
        int id;
        BK_CHECK_GOTO(lpb_row(&lp, LP_LE, g->cap[a], &id), st, out);
    }
    for (int q = 0; q < o->count; q++) {
        const int *ord = o->v + (size_t)q * n;
        int ok = 1, nrows0 = lp.nrows;
        tcol[q] = -1;
        /* Classify the hops; fixed paths add to mult[], split hops get their rows. */
        for (int h = 0; h < n && ok; h++) {
            int i = ord[h], j = ord[(h + 1) % n], len = 0;
            unsigned char *u = useful + (size_t)h * V;
            int *row = rowof + (size_t)h * V;
            hop_nodes(t, g, i, j, u, fwd, queue);
            split[h] = 0;
            for (int v = g->ngpus; v < V; v++)
                split[h] |= u[v] && t->nodes[v].kind == TOPO_NVSWITCH;
            if (!split[h]) {
                ok = widest_path(g, g->cap, i, j, path, &len, sc) > 0;
                for (int k = 0; k < len; k++)
                    mult[path[k]] += 1;
                continue;
            }
            for (int v = 0; v < V; v++) {
                row[v] = -1;
                if (u[v] && v != j)
                    BK_CHECK_GOTO(lpb_row(&lp, LP_EQ, 0.0, &row[v]), st, out);
            }
        }
        if (!ok) { /* drop the order and its rows */
            lp.nrows = nrows0;
            memset(mult, 0, na * sizeof *mult);
            continue;
        }
        tcol[q] = lp.ncols;
        BK_CHECK_GOTO(lpb_col(&lp, 1.0), st, out);
        for (int a = 0; a < g->narcs; a++)
            if (mult[a] != 0)
                BK_CHECK_GOTO(lpb_entry(&lp, a, mult[a]), st, out);
        memset(mult, 0, na * sizeof *mult);
        for (int h = 0; h < n; h++)
            if (split[h])
                BK_CHECK_GOTO(lpb_entry(&lp, rowof[(size_t)h * V + ord[h]], -1.0), st, out);
        for (int h = 0; h < n; h++) {
            if (!split[h])
                continue;
            int i = ord[h];
            const unsigned char *u = useful + (size_t)h * V;
            const int *row = rowof + (size_t)h * V;
            for (int a = 0; a < g->narcs; a++) {
                int s = g->src[a], e = g->dst[a];
                if (!u[s] || !u[e] || e == i || (s != i && s < g->ngpus))
                    continue;
                BK_CHECK_GOTO(lpb_col(&lp, 0.0), st, out);
                BK_CHECK_GOTO(lpb_entry(&lp, a, 1.0), st, out);
                BK_CHECK_GOTO(lpb_entry(&lp, row[s], 1.0), st, out);
                if (row[e] >= 0)
                    BK_CHECK_GOTO(lpb_entry(&lp, row[e], -1.0), st, out);
            }
        }
    }
    r->gbps = 0;
    r->nrings = 0;
    st = BK_OK;
    if (lp.ncols == 0)
        goto out;
    st = BK_ENOMEM;
    x = malloc((size_t)lp.ncols * sizeof *x);
    if (!x)
        goto out;
    BK_CHECK_GOTO(lpb_solve(&lp, x, &r->gbps, d), st, out);
    BK_CHECK_GOTO(keep_rings(r, o, tcol, x), st, out);
out:
    free(x);
    free(mult);
    lpb_free(&lp);
    free(rowof);
    free(path);
    free(tcol);
    free(queue);
    free(useful);
    free(fwd);
    free(split);
    return st;
}

/* w[i*n+j]: the widest relay-only GPU i -> GPU j path under capacities c (0: none); one search
 * per source and target server, since the relays allowed depend on both (relay_ok). */
static void hop_widths(const struct pgraph *g, const double *c, struct scratch *s, double *w)
{
    int n = g->ngpus;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int sj = s->t->nodes[j].server, first = 1;
            for (int k = 0; k < j && first; k++)
                first = s->t->nodes[k].server != sj;
            if (!first)
                continue; /* filled with the first GPU of its server */
            widest_from(g, c, i, sj, s);
            for (int k = j; k < n; k++)
                if (s->t->nodes[k].server == sj)
                    w[i * n + k] = i == k ? 0 : s->bw[k];
        }
}

/* Is every vertex reachable from 0, and 0 from every vertex, in the graph w >= th? */
static int strongly_connected(const double *w, int m, double th, int *queue, unsigned char *seen)
{
    for (int dir = 0; dir < 2; dir++) {
        memset(seen, 0, (size_t)m);
        int head = 0, tail = 0, cnt = 1;
        queue[tail++] = 0;
        seen[0] = 1;
        while (head < tail) {
            int u = queue[head++];
            for (int v = 0; v < m; v++) {
                double x = dir ? w[v * m + u] : w[u * m + v];
                if (!seen[v] && x >= th) {
                    seen[v] = 1;
                    cnt++;
                    queue[tail++] = v;
                }
            }
        }
        if (cnt < m)
            return 0;
    }
    return 1;
}

struct nbr {
    double w;
    int v;
};

static int cmp_nbr(const void *a, const void *b)
{
    const struct nbr *x = a, *y = b;
    if (x->w != y->w)
        return x->w < y->w ? 1 : -1;
    return (x->v > y->v) - (x->v < y->v);
}

static int cmp_double_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

struct ham {
    const double *w;        /* [m*m] local widths */
    const struct nbr *nbr;  /* per vertex, every vertex by width desc, then index */
    int m;
    double th;
    long budget;
    int *ord;
    unsigned char *used;
};

/* Widest neighbour first; a budget bounds the search as NCCL's does (2^14 steps there). */
static int ham_dfs(struct ham *h, int k)
{
    int m = h->m, last = h->ord[k - 1];
    if (k == m)
        return h->w[last * m + h->ord[0]] >= h->th;
    for (int p = 0; p < m; p++) {
        const struct nbr *nb = &h->nbr[last * m + p];
        if (nb->w < h->th)
            break; /* sorted: no wider neighbour follows */
        if (h->used[nb->v] || --h->budget < 0)
            continue;
        h->used[nb->v] = 1;
        h->ord[k] = nb->v;
        if (ham_dfs(h, k + 1))
            return 1;
        h->used[nb->v] = 0;
        if (h->budget < 0)
            return 0;
    }
    return 0;
}

/* Binary search over the distinct widths ths[0..nth) (descending) for the widest threshold whose
 * graph has a cycle the DFS finds; feasibility is monotone up to the budget. Returns its index or
 * -1; the cycle (local indices, 0 first) goes to ord. */
static int widest_threshold(struct ham *h, const double *ths, int nth, int *queue, int *ord)
{
    int lo = 0, hi = nth - 1, best = -1;
    while (lo <= hi) {
        int mid = best < 0 ? hi : lo + (hi - lo) / 2;
        h->th = ths[mid];
        h->budget = RING_DFS_BUDGET;
        h->ord[0] = 0;
        int ok = strongly_connected(h->w, h->m, h->th, queue, h->used);
        if (ok) {
            memset(h->used, 0, (size_t)h->m);
            h->used[0] = 1;
            ok = ham_dfs(h, 1);
        }
        if (ok) {
            best = mid;
            memcpy(ord, h->ord, (size_t)h->m * sizeof *ord);
            hi = mid - 1;
        } else if (best < 0) {
            break; /* not even the narrowest threshold has a cycle */
        } else {
            lo = mid + 1;
        }
    }
    return best;
}

/*
 * A cycle over the GPUs set[0..m) (set[0] first) maximising its narrowest hop under the widths w
 * ([n*n]); the GPUs go to ord[0..m), the narrowest hop to *res (0: no cycle found).
 */
BK_MUST_USE
static enum bk_status bottleneck_cycle(const double *w, int n, const int *set, int m, int *ord,
                                       double *res)
{
    *res = 0;
    if (m == 1) {
        ord[0] = set[0];
        *res = DBL_MAX;
        return BK_OK;
    }
    size_t mm = (size_t)m * m;
    double *wm = malloc(mm * sizeof *wm), *ths = malloc(mm * sizeof *ths);
    struct nbr *nbr = malloc(mm * sizeof *nbr);
    int *queue = malloc((size_t)m * sizeof *queue), *cur = malloc((size_t)m * sizeof *cur);
    int *loc = malloc((size_t)m * sizeof *loc);
    unsigned char *used = malloc((size_t)m);
    enum bk_status st = BK_ENOMEM;
    if (!wm || !ths || !nbr || !queue || !cur || !loc || !used)
        goto out;
    int nth = 0;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < m; j++) {
            double x = i == j ? 0 : w[set[i] * n + set[j]];
            wm[i * m + j] = x;
            nbr[i * m + j] = (struct nbr){x, j};
            if (x > RING_EPS)
                ths[nth++] = x;
        }
        qsort(nbr + (size_t)i * m, (size_t)m, sizeof *nbr, cmp_nbr);
    }
    qsort(ths, (size_t)nth, sizeof *ths, cmp_double_desc);
    int u = 0;
    for (int k = 0; k < nth; k++)
        if (u == 0 || ths[k] != ths[u - 1])
            ths[u++] = ths[k];
    struct ham h = {wm, nbr, m, 0, 0, cur, used};
    if (widest_threshold(&h, ths, u, queue, loc) >= 0) {
        *res = DBL_MAX;
        for (int k = 0; k < m; k++) {
            double x = wm[loc[k] * m + loc[(k + 1) % m]];
            *res = x < *res ? x : *res;
            ord[k] = set[loc[k]];
        }
    }
    st = BK_OK;
out:
    free(wm);
    free(ths);
    free(nbr);
    free(queue);
    free(cur);
    free(loc);
    free(used);
    return st;
}

/*
 * Multi-server orders (NCCL's shape: one NVLink path through each server, NICs between). Each
 * server's GPUs get their own widest cycle; order k cuts every server's cycle before its k-th
 * GPU, so the rings enter and leave the servers through different GPUs, PCIe switches and NICs.
 * Servers follow in order of their first GPU rank.
 */
BK_MUST_USE
static enum bk_status server_orders(const struct topo *t, int n, const double *w,
                                    struct orders *o, int *ord, int *rev)
{
    int *srv = malloc((size_t)n * sizeof *srv), *set = malloc((size_t)n * sizeof *set);
    int *cyc = malloc((size_t)n * sizeof *cyc), *start = malloc(((size_t)n + 1) * sizeof *start);
    enum bk_status st = BK_ENOMEM;
    if (!srv || !set || !cyc || !start)
        goto out;
    int ns = 0, mmax = 0, pos = 0;
    for (int v = 0; v < n; v++) {
        int k = 0;
        while (k < ns && srv[k] != t->nodes[v].server)
            k++;
        if (k == ns)
            srv[ns++] = t->nodes[v].server;
    }
    st = BK_OK;
    if (ns < 2)
        goto out;
    /* cyc[start[k] ..) is server k's cycle. */
    for (int k = 0; k < ns; k++) {
        int m = 0;
        double res;
        for (int v = 0; v < n; v++)
            if (t->nodes[v].server == srv[k])
                set[m++] = v;
        start[k] = pos;
        BK_CHECK_GOTO(bottleneck_cycle(w, n, set, m, cyc + pos, &res), st, out);
        if (res <= 0)
            memcpy(cyc + pos, set, (size_t)m * sizeof *set); /* no cycle: rank order */
        pos += m;
        mmax = m > mmax ? m : mmax;
    }
    start[ns] = pos;
    for (int cut = 0; cut < mmax; cut++) {
        int p = 0;
        for (int k = 0; k < ns; k++) {
            int m = start[k + 1] - start[k];
            for (int q = 0; q < m; q++)
                ord[p++] = cyc[start[k] + (cut + q) % m];
        }
        BK_CHECK_GOTO(orders_add_pair(o, ord, rev), st, out);
    }
out:
    free(srv);
    free(set);
    free(cyc);
    free(start);
    return st;
}

BK_MUST_USE
static enum bk_status ring_heuristic(const struct topo *t, const struct pgraph *g,
                                     struct ring_result *r, struct diag *d)
{
    int n = g->ngpus;
    struct orders o = {n, 0, 0, NULL};
    struct scratch s = {0};
    enum bk_status st = BK_ENOMEM;
    double res;
    int *ord = malloc((size_t)n * sizeof *ord), *rev = malloc((size_t)n * sizeof *rev);
    int *all = malloc((size_t)n * sizeof *all);
    double *w = malloc((size_t)n * n * sizeof *w);
    if (!ord || !rev || !all || !w)
        goto out;
    BK_CHECK_GOTO(scratch_init(&s, t, g->nnodes), st, out);
    for (int k = 0; k < n; k++)
        all[k] = k;
    BK_CHECK_GOTO(orders_add_pair(&o, all, rev), st, out);
    hop_widths(g, g->cap, &s, w);
    BK_CHECK_GOTO(bottleneck_cycle(w, n, all, n, ord, &res), st, out);
    if (res > 0)
        BK_CHECK_GOTO(orders_add_pair(&o, ord, rev), st, out);
    BK_CHECK_GOTO(server_orders(t, n, w, &o, ord, rev), st, out);
    BK_CHECK_GOTO(flow_lp(t, g, &o, &s, r, d), st, out);
    r->exhaustive = 0;
    st = BK_OK;
out:
    scratch_free(&s);
    free(o.v);
    free(ord);
    free(rev);
    free(all);
    free(w);
    return st;
}

static int has_nvswitch(const struct topo *t, const struct pgraph *g)
{
    for (int a = 0; a < g->narcs; a++)
        if (t->nodes[g->src[a]].kind == TOPO_NVSWITCH)
            return 1;
    return 0;
}

enum bk_status ring_best(const struct topo *t, struct ring_result *r, struct diag *d)
{
    static const unsigned passes[] = {PG_NVLINK, PG_ALL_KINDS};
    memset(r, 0, sizeof *r);
    r->kinds = PG_NVLINK;
    r->exhaustive = 1;
    if (t->ngpus <= 1)
        return BK_OK;
    for (size_t p = 0; p < BK_ARRAY_LEN(passes); p++) {
        struct pgraph g;
        enum bk_status st = BK_OK;
        BK_CHECK(pgraph_build(&g, t, passes[p]));
        ring_result_free(r);
        r->kinds = passes[p];
        r->exhaustive = 1;
        /* With NVSwitches, rings through different switch ports matter: hops split. */
        if (pgraph_gpus_connected(&g)) {
            int limit = pgraph_has_relays(&g) ? RING_ENUM_MAX_RELAY : RING_ENUM_MAX;
            if (g.ngpus <= limit && !has_nvswitch(t, &g))
                st = ring_exhaustive(t, &g, r, d);
            else
                st = ring_heuristic(t, &g, r, d);
        }
        pgraph_free(&g);
        BK_CHECK(st);
        if (r->gbps > RING_EPS)
            return BK_OK;
    }
    ring_result_free(r);
    r->kinds = PG_ALL_KINDS;
    diag_warning(d, t->source, DIAG_NOWHERE,
                 "no ring connects all %d GPUs; the ring baseline is 0 GB/s", t->ngpus);
    return BK_OK;
}

void ring_result_free(struct ring_result *r)
{
    free(r->order);
    free(r->rate);
    memset(r, 0, sizeof *r);
}

double ring_algbw(double B, int ngpus, enum collective c)
{
    if (ngpus <= 1)
        return 0;
    double n = ngpus;
    switch (c) {
    case COLL_BROADCAST:
    case COLL_REDUCE:
        return B;
    case COLL_ALLREDUCE: /* 2(n-1) steps of M/n each: t = 2(n-1)/n * M/B */
        return B * n / (2 * (n - 1));
    case COLL_ALLGATHER:
    case COLL_REDUCESCATTER: /* n-1 steps of M/n */
        return B * n / (n - 1);
    default:
        return 0;
    }
}
