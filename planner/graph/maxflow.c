/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * maxflow.c - Dinic's maximum-flow algorithm on a pgraph plus a few extra nodes and arcs.
 *
 * The bounds (bound.c) and the integral packer (pack_integral.c) run thousands of max-flows on
 * one small graph (10 to 600 nodes), so everything is allocated once in maxflow_new and a run
 * only resets residual capacities. Residual arcs are internal: arc i (pgraph arcs first, then the
 * extra arcs in the order they were added) is residual edge 2i, its reverse is 2i+1, so the
 * partner of edge e is e ^ 1. Adjacency is a CSR built lazily (after arcs are added) listing each
 * node's edges in edge-index order, which fixes the search order and keeps results deterministic.
 * Residuals at or below MAXFLOW_EPS count as saturated. Never prints, never aborts.
 */
#include "graph/maxflow.h"

#include <math.h>
#include <stdlib.h>

struct maxflow {
    const struct pgraph *g;
    int nnodes;     /* g->nnodes + extra nodes */
    int narcs;      /* pgraph arcs + extra arcs added so far */
    int max_arcs;   /* pgraph arcs + extra arcs allowed */
    int *to;        /* [2*max_arcs] head of each residual edge */
    double *cap;    /* [max_arcs] capacity of each arc (pgraph arcs may be overridden) */
    double *res;    /* [2*max_arcs] residual capacity during a run */
    int *adj_off;   /* [nnodes+1] CSR offsets into adj */
    int *adj;       /* [2*max_arcs] edges leaving each node (forward arcs and reverse edges) */
    int *level;     /* [nnodes] BFS level, -1 when unreached */
    int *it;        /* [nnodes] Dinic's current-edge pointer (an index into adj) */
    int *queue;     /* [nnodes] */
    struct frame *stack; /* [nnodes] push's explicit stack: one frame per level of the path */
    int adj_dirty;  /* an arc was added since adj was built */
};

/* One level of push's depth-first search: node u was asked for f and has sent `sent`. */
struct frame {
    int u;
    double f, sent;
};

enum bk_status maxflow_new(struct maxflow **out, const struct pgraph *g, int extra_nodes,
                           int extra_arcs)
{
    *out = NULL;
    if (extra_nodes < 0 || extra_arcs < 0)
        return BK_EINTERNAL;
    struct maxflow *m = calloc(1, sizeof *m);
    if (!m)
        return BK_ENOMEM;
    m->g = g;
    m->nnodes = g->nnodes + extra_nodes;
    m->narcs = g->narcs;
    m->max_arcs = g->narcs + extra_arcs;
    size_t na = (size_t)m->max_arcs, nn = (size_t)m->nnodes;
    /* +1 everywhere so that empty graphs still get valid (non-NULL) arrays. */
    m->to = malloc((2 * na + 1) * sizeof *m->to);
    m->cap = malloc((na + 1) * sizeof *m->cap);
    m->res = malloc((2 * na + 1) * sizeof *m->res);
    m->adj_off = malloc((nn + 1) * sizeof *m->adj_off);
    m->adj = malloc((2 * na + 1) * sizeof *m->adj);
    m->level = malloc((nn + 1) * sizeof *m->level);
    m->it = malloc((nn + 1) * sizeof *m->it);
    m->queue = malloc((nn + 1) * sizeof *m->queue);
    m->stack = malloc((nn + 1) * sizeof *m->stack);
    if (!m->to || !m->cap || !m->res || !m->adj_off || !m->adj || !m->level || !m->it ||
        !m->queue || !m->stack) {
        maxflow_free(m);
        return BK_ENOMEM;
    }
    for (int a = 0; a < g->narcs; a++) {
        m->to[2 * a] = g->dst[a];
        m->to[2 * a + 1] = g->src[a];
        m->cap[a] = g->cap[a];
    }
    m->adj_dirty = 1;
    *out = m;
    return BK_OK;
}

void maxflow_free(struct maxflow *m)
{
    if (!m)
        return;
    free(m->to);
    free(m->cap);
    free(m->res);
    free(m->adj_off);
    free(m->adj);
    free(m->level);
    free(m->it);
    free(m->queue);
    free(m->stack);
    free(m);
}

int maxflow_add_arc(struct maxflow *m, int u, int v, double cap)
{
    if (m->narcs >= m->max_arcs || u < 0 || v < 0 || u >= m->nnodes || v >= m->nnodes)
        return -1;
    int a = m->narcs++;
    m->to[2 * a] = v;
    m->to[2 * a + 1] = u;
    m->cap[a] = cap;
    m->adj_dirty = 1;
    return a - m->g->narcs;
}

void maxflow_set_extra_cap(struct maxflow *m, int handle, double cap)
{
    int a = m->g->narcs + handle;
    if (handle >= 0 && a < m->narcs)
        m->cap[a] = cap;
}

enum bk_status maxflow_set_cap(struct maxflow *m, int arc, double cap)
{
    if (arc < 0 || arc >= m->g->narcs)
        return BK_EINTERNAL; /* a caller's arc of another graph */
    m->cap[arc] = cap;
    return BK_OK;
}

void maxflow_reset_caps(struct maxflow *m)
{
    for (int a = 0; a < m->g->narcs; a++)
        m->cap[a] = m->g->cap[a];
}

/* Tail of residual edge e: the head of its partner. */
static int edge_tail(const struct maxflow *m, int e)
{
    return m->to[e ^ 1];
}

/* Counting sort of the 2*narcs residual edges by tail; stable, so each list is in edge order. */
static void build_adj(struct maxflow *m)
{
    int n = m->nnodes, ne = 2 * m->narcs;
    for (int v = 0; v <= n; v++)
        m->adj_off[v] = 0;
    for (int e = 0; e < ne; e++)
        m->adj_off[edge_tail(m, e) + 1]++;
    for (int v = 0; v < n; v++)
        m->adj_off[v + 1] += m->adj_off[v];
    for (int v = 0; v < n; v++)
        m->it[v] = m->adj_off[v];
    for (int e = 0; e < ne; e++)
        m->adj[m->it[edge_tail(m, e)]++] = e;
    m->adj_dirty = 0;
}

/*
 * Level graph by BFS over edges with residual > MAXFLOW_EPS. With t >= 0 it stops expanding
 * once t's level is known (deeper nodes cannot lie on a shortest path); with t < 0 it labels
 * everything reachable (the min-cut side). Returns 1 if t was reached.
 */
static int bfs(struct maxflow *m, int s, int t)
{
    for (int v = 0; v < m->nnodes; v++)
        m->level[v] = -1;
    int head = 0, tail = 0;
    m->level[s] = 0;
    m->queue[tail++] = s;
    while (head < tail) {
        int u = m->queue[head++];
        if (t >= 0 && m->level[t] >= 0 && m->level[u] >= m->level[t])
            break;
        for (int i = m->adj_off[u]; i < m->adj_off[u + 1]; i++) {
            int e = m->adj[i], v = m->to[e];
            if (m->level[v] < 0 && m->res[e] > MAXFLOW_EPS) {
                m->level[v] = m->level[u] + 1;
                m->queue[tail++] = v;
            }
        }
    }
    return t >= 0 && m->level[t] >= 0;
}

/*
 * Push up to f from s towards t along the level graph; returns what was pushed. The current-edge
 * pointer only moves past an edge once it is saturated or leads nowhere, so each phase is
 * O(V*E). This is the textbook recursive DFS run on an explicit stack (m->stack), so a long
 * path (a chain of 100,000 PCIe switches) cannot overflow the C stack: levels strictly increase
 * along the path, so it holds at most nnodes frames, and a node is never on it twice, which
 * keeps it[u] (the edge a frame descended along) fixed while the frames above it run. The
 * arithmetic and its order are those of the recursion, so flows are bit for bit the same.
 */
static double push(struct maxflow *m, int s, int t, double f)
{
    struct frame *st = m->stack;
    int top = 0;
    st[0] = (struct frame){s, f, 0};
    double ret = 0; /* what the frame just popped sent */
    int returning = 0;
    for (;;) {
        struct frame *fr = &st[top];
        int u = fr->u;
        if (returning) {
            /* The child pushed ret along the current edge of u. */
            returning = 0;
            if (ret > 0) {
                int e = m->adj[m->it[u]];
                m->res[e] -= ret;
                m->res[e ^ 1] += ret;
                fr->sent += ret;
                if (fr->f - fr->sent <= MAXFLOW_EPS) {
                    ret = fr->sent; /* keep the pointer: e may still have room */
                    goto pop;
                }
            }
            m->it[u]++;
        } else if (u == t) {
            ret = fr->f;
            goto pop;
        }
        int descended = 0;
        for (; m->it[u] < m->adj_off[u + 1]; m->it[u]++) {
            int e = m->adj[m->it[u]], v = m->to[e];
            if (m->res[e] <= MAXFLOW_EPS || m->level[v] != m->level[u] + 1)
                continue;
            double want = fr->f - fr->sent;
            if (m->res[e] < want)
                want = m->res[e];
            st[++top] = (struct frame){v, want, 0};
            descended = 1;
            break;
        }
        if (descended)
            continue;
        ret = fr->sent;
    pop:
        if (top == 0)
            return ret;
        top--;
        returning = 1;
    }
}

double maxflow_run(struct maxflow *m, int s, int t, double limit, unsigned char *side)
{
    if (m->adj_dirty)
        build_adj(m);
    for (int a = 0; a < m->narcs; a++) {
        m->res[2 * a] = m->cap[a] > 0 ? m->cap[a] : 0;
        m->res[2 * a + 1] = 0;
    }
    double flow = 0;
    if (s != t && s >= 0 && t >= 0 && s < m->nnodes && t < m->nnodes) {
        while (flow < limit - MAXFLOW_EPS && bfs(m, s, t)) {
            for (int v = 0; v < m->nnodes; v++)
                m->it[v] = m->adj_off[v];
            double d;
            while (flow < limit - MAXFLOW_EPS && (d = push(m, s, t, limit - flow)) > 0)
                flow += d;
        }
    }
    if (side) {
        /* Nodes reachable from s in the residual graph: the smallest min-cut source side. */
        if (s >= 0 && s < m->nnodes) {
            bfs(m, s, -1);
            for (int v = 0; v < m->nnodes; v++)
                side[v] = m->level[v] >= 0;
        } else {
            for (int v = 0; v < m->nnodes; v++)
                side[v] = 0;
        }
    }
    return flow;
}
