/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_ring.c - the NCCL baseline on the simulator's model: rings (Simple protocol) and, for
 * allreduce, double binary trees.
 *
 * Rings: each of the planner's nrings channels gets an equal share of the data and n virtual
 * hop links of B / nrings GB/s (B: the planner's summed ring rate, whose LP already fits the
 * arcs). A step moves one chunk over one hop and costs NCCL's per-step latency for the slowest
 * link kind on that hop, then the bytes. Each rank sends one step after another; a step can
 * only forward what the previous step delivered:
 *   broadcast, reduce:           a pipeline of n-1 hops along the ring from (or to) the root;
 *   allgather, reduce-scatter:   n-1 steps per loop of one chunk per rank;
 *   allreduce:                   2(n-1) steps per loop of n chunks (reduce-scatter, all-gather).
 * Double binary trees: NCCL trees.cc's in-order binary tree over ring positions and its mirror
 * (even n) or shift (odd n); each carries half the data, up (reduce) then down (broadcast),
 * chunk by chunk, over the real arcs of the widest relay-only path of each edge.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "graph/pgraph.h"
#include "sim/sim.h"
#include "sim/sim_engine.h"

#define RING_ORDER_ENUM_MAX 9 /* (n-1)! <= 40320 orders */

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

struct nb {
    const struct sim_job *j;
    const struct sim_params *p;
    int n;
    struct pgraph h;  /* ring tier (virtual hops) or every kind (double binary trees) */
    double *w;        /* [n*n] hop widths */
    double *step;     /* [n*n] NCCL step cost of each hop */
    int *path, *plen; /* [n*n*maxlen], [n*n] hop paths in h */
    int maxlen;
    int *ord, *best, *used;
    double best_w;
};

BK_MUST_USE
static enum bk_status hops_init(struct nb *b, unsigned kinds)
{
    const struct topo *t = b->j->topo;
    BK_CHECK(pgraph_build(&b->h, t, kinds));
    int n = b->n, V = b->h.nnodes;
    b->maxlen = V > 0 ? V : 1;
    double *wd = malloc(((size_t)V + 1) * sizeof *wd);
    int *hops = malloc(((size_t)V + 1) * sizeof *hops);
    int *pred = malloc(((size_t)V + 1) * sizeof *pred);
    unsigned char *done = malloc((size_t)V + 1);
    b->w = calloc((size_t)n * n, sizeof *b->w);
    b->step = calloc((size_t)n * n, sizeof *b->step);
    b->plen = calloc((size_t)n * n, sizeof *b->plen);
    b->path = malloc((size_t)n * n * (size_t)b->maxlen * sizeof *b->path);
    enum bk_status st = wd && hops && pred && done && b->w && b->step && b->plen && b->path
                            ? BK_OK : BK_ENOMEM;
    for (int i = 0; st == BK_OK && i < n; i++)
        for (int k = 0; k < n; k++) {
            int ij = i * n + k, *pa = b->path + (size_t)ij * (size_t)b->maxlen;
            if (i == k)
                continue;
            b->w[ij] = widest(&b->h, i, k, pa, &b->plen[ij], wd, hops, pred, done);
            for (int x = 0; x < b->plen[ij]; x++) {
                double s = b->p->nccl_step_us[t->links[b->h.link[pa[x]]].kind];
                b->step[ij] = s > b->step[ij] ? s : b->step[ij];
            }
        }
    free(wd);
    free(hops);
    free(pred);
    free(done);
    return st;
}

static void hops_free(struct nb *b)
{
    pgraph_free(&b->h);
    free(b->w);
    free(b->step);
    free(b->plen);
    free(b->path);
    b->w = b->step = NULL;
    b->plen = b->path = NULL;
}

/* Depth-first search for the Hamiltonian cycle (rank 0 first) whose narrowest hop is widest;
 * the first found wins ties, so the order is deterministic. */
static void order_dfs(struct nb *b, int k, double bott)
{
    int n = b->n;
    if (bott <= b->best_w)
        return;
    if (k == n) {
        double wl = b->w[b->ord[n - 1] * n + b->ord[0]];
        double bw = wl < bott ? wl : bott;
        if (bw > b->best_w) {
            b->best_w = bw;
            memcpy(b->best, b->ord, (size_t)n * sizeof *b->ord);
        }
        return;
    }
    for (int v = 1; v < n; v++) {
        double wv = b->w[b->ord[k - 1] * n + v];
        if (b->used[v] || wv <= 0)
            continue;
        b->used[v] = 1;
        b->ord[k] = v;
        order_dfs(b, k + 1, wv < bott ? wv : bott);
        b->used[v] = 0;
    }
}

/* The ring order (b->best): the widest cycle over the tier's arcs, else rank order. */
static void ring_order(struct nb *b)
{
    int n = b->n;
    for (int v = 0; v < n; v++) {
        b->best[v] = v;
        b->used[v] = 0;
    }
    if (n > RING_ORDER_ENUM_MAX || n < 3)
        return;
    b->best_w = 0;
    b->ord[0] = 0;
    b->used[0] = 1;
    order_dfs(b, 1, DBL_MAX);
}

/* ------------------------------------------------------------------ rings */

BK_MUST_USE
static enum bk_status ring_tasks(struct nb *b, struct sim_eng *e, int ch, size_t m, size_t chunk)
{
    int n = b->n, *ord = b->best, *last = b->used, *prevstep = b->ord, id;
    size_t es = b->p->elem_bytes ? b->p->elem_bytes : 1;
    enum collective c = b->j->coll;
    for (int q = 0; q < n; q++)
        last[q] = prevstep[q] = -1;
    if (c == COLL_BROADCAST || c == COLL_REDUCE) {
        int rp = 0;
        for (int q = 0; q < n; q++)
            rp = ord[q] == b->j->root ? q : rp;
        int start = c == COLL_BROADCAST ? rp : (rp + 1) % n; /* the chain's first sender */
        for (size_t x = 0; x < m; x += chunk) {
            double bytes = (double)((m - x < chunk ? m - x : chunk) * es);
            for (int q = 0; q + 1 < n; q++) {
                int pos = (start + q) % n, vr = ch * n + pos;
                double st = b->step[ord[pos] * n + ord[(pos + 1) % n]];
                BK_CHECK(sim_eng_task(e, st, bytes, &vr, 1, &id));
                BK_CHECK(sim_eng_dep(e, last[q], id));
                BK_CHECK(sim_eng_dep(e, q ? last[q - 1] : -1, id)); /* already this chunk's */
                last[q] = id;
            }
        }
        return BK_OK;
    }
    int steps = c == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
    size_t per_loop = c == COLL_ALLREDUCE ? chunk * (size_t)n : chunk;
    for (size_t x = 0; x < m; x += per_loop) {
        size_t rem = m - x, piece = c == COLL_ALLREDUCE ? (rem + (size_t)n - 1) / (size_t)n : rem;
        piece = piece < chunk ? piece : chunk;
        double bytes = (double)(piece * es);
        for (int s = 0; s < steps; s++) {
            int *cur = b->ord + n; /* second half of ord[] holds this step's tasks */
            for (int pos = 0; pos < n; pos++) {
                int vr = ch * n + pos;
                double st = b->step[ord[pos] * n + ord[(pos + 1) % n]];
                BK_CHECK(sim_eng_task(e, st, bytes, &vr, 1, &id));
                BK_CHECK(sim_eng_dep(e, last[pos], id));
                BK_CHECK(sim_eng_dep(e, s ? prevstep[(pos + n - 1) % n] : -1, id));
                cur[pos] = last[pos] = id;
            }
            memcpy(prevstep, cur, (size_t)n * sizeof *cur);
        }
    }
    return BK_OK;
}

/* ------------------------------------------------------------------ double binary trees */

/* NCCL trees.cc: parent of rank r in the in-order binary tree over 0..n-1 rooted at 0. */
static int btree_parent(int n, int r)
{
    if (r == 0)
        return -1;
    int bit = 1;
    while (!(bit & r))
        bit <<= 1;
    int up = (r ^ bit) | (bit << 1);
    return up >= n ? r ^ bit : up;
}

static int dtree_parent(int n, int t, int r)
{
    if (t == 0)
        return btree_parent(n, r);
    if (n % 2 == 0) { /* mirror */
        int u = btree_parent(n, n - 1 - r);
        return u < 0 ? -1 : n - 1 - u;
    }
    int u = btree_parent(n, (r - 1 + n) % n); /* shift by one */
    return u < 0 ? -1 : (u + 1) % n;
}

BK_MUST_USE
static enum bk_status dbt_tasks(struct nb *b, struct sim_eng *e, int t, size_t m, size_t chunk)
{
    int n = b->n, *ord = b->best, id;
    size_t es = b->p->elem_bytes ? b->p->elem_bytes : 1;
    int *par = malloc((size_t)n * 4 * sizeof *par);
    if (!par)
        return BK_ENOMEM;
    int *bfs = par + n, *up = par + 2 * n, *down = par + 3 * n, root = 0, len = 0;
    for (int r = 0; r < n; r++) {
        par[r] = dtree_parent(n, t, r);
        root = par[r] < 0 ? r : root;
        up[r] = down[r] = -1;
    }
    bfs[len++] = root;
    for (int h = 0; h < len; h++)
        for (int r = 0; r < n; r++)
            if (par[r] == bfs[h])
                bfs[len++] = r;
    enum bk_status st = len == n ? BK_OK : BK_EINTERNAL;
    for (size_t x = 0; st == BK_OK && x < m; x += chunk) {
        double bytes = (double)((m - x < chunk ? m - x : chunk) * es);
        int join;
        st = sim_eng_task(e, 0, 0, NULL, 0, &join); /* the root has reduced this chunk */
        for (int i = n - 1; st == BK_OK && i > 0; i--) { /* children before parents */
            int r = bfs[i], hop = ord[r] * n + ord[par[r]];
            int *pa = b->path + (size_t)hop * (size_t)b->maxlen;
            if (b->plen[hop] == 0 || b->plen[ord[par[r]] * n + ord[r]] == 0) {
                st = BK_EUSAGE; /* an edge with no path either way */
                break;
            }
            st = sim_eng_task(e, b->step[hop], bytes, pa, b->plen[hop], &id);
            if (st == BK_OK)
                st = sim_eng_dep(e, up[r], id);
            for (int k = 0; st == BK_OK && k < n; k++)
                if (par[k] == r)
                    st = sim_eng_dep(e, up[k], id);
            up[r] = id;
            if (st == BK_OK && par[r] == root)
                st = sim_eng_dep(e, id, join);
        }
        for (int i = 1; st == BK_OK && i < n; i++) {
            int r = bfs[i], hop = ord[par[r]] * n + ord[r];
            int *pa = b->path + (size_t)hop * (size_t)b->maxlen;
            st = sim_eng_task(e, b->step[hop], bytes, pa, b->plen[hop], &id);
            if (st == BK_OK)
                st = sim_eng_dep(e, down[r], id);
            if (st == BK_OK)
                st = sim_eng_dep(e, par[r] == root ? join : down[par[r]], id);
            down[r] = id;
        }
    }
    free(par);
    return st;
}

/* ------------------------------------------------------------------ entry */

enum bk_status sim_run_nccl(const struct sim_job *j, double bytes, size_t chunk_bytes,
                            const struct sim_params *p, double *us, struct diag *d)
{
    struct nb b;
    memset(&b, 0, sizeof b);
    b.j = j;
    b.p = p;
    b.n = j->topo->ngpus;
    *us = 0;
    int n = b.n, dbt = j->algo == SIM_DBT;
    if (dbt && j->coll != COLL_ALLREDUCE) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "simulation: double binary trees run allreduce only");
        return BK_EUSAGE;
    }
    if (!j->ring || (!dbt && (j->ring->gbps <= 0 || n < 2))) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "simulation: no ring to simulate");
        return BK_EUSAGE;
    }
    if (n < 2)
        return BK_OK;
    int nch = dbt ? 1 : (j->ring->nrings > 0 ? j->ring->nrings : 1);
    b.ord = malloc((size_t)n * 2 * sizeof *b.ord);
    b.best = malloc((size_t)n * sizeof *b.best);
    b.used = malloc((size_t)n * sizeof *b.used);
    enum bk_status st = b.ord && b.best && b.used ? BK_OK : BK_ENOMEM;
    /* The ring order comes from the ring's tier; double binary trees then route over all. */
    if (st == BK_OK)
        st = hops_init(&b, j->ring->kinds ? j->ring->kinds : PG_ALL_KINDS);
    if (st == BK_OK)
        ring_order(&b);
    if (st == BK_OK && dbt) {
        hops_free(&b);
        st = hops_init(&b, PG_ALL_KINDS);
    }
    for (int i = 0; st == BK_OK && i < n; i++) {
        int hop = b.best[i] * n + b.best[(i + 1) % n];
        if (!dbt && b.plen[hop] == 0)
            st = BK_EUSAGE;
    }
    struct sim_eng e;
    memset(&e, 0, sizeof e);
    double *cap = malloc(((size_t)nch * n + (size_t)b.h.narcs + 1) * sizeof *cap);
    if (st == BK_OK && !cap)
        st = BK_ENOMEM;
    int nres = dbt ? b.h.narcs : nch * n;
    for (int r = 0; st == BK_OK && r < nres; r++)
        cap[r] = dbt ? b.h.cap[r] : j->ring->gbps / nch;
    if (st == BK_OK)
        st = sim_eng_init(&e, nres, cap);
    int sharded = j->coll == COLL_ALLGATHER || j->coll == COLL_REDUCESCATTER;
    size_t es = p->elem_bytes ? p->elem_bytes : 1;
    double per = sharded ? bytes / ((double)n * (double)es) : bytes / (double)es;
    size_t count = per > 0 ? (size_t)per : 0, chunk = chunk_bytes / es ? chunk_bytes / es : 1;
    int parts = dbt ? 2 : nch;
    for (int c = 0; st == BK_OK && c < parts; c++) {
        size_t lo = count * (size_t)c / (size_t)parts, hi = count * (size_t)(c + 1) / (size_t)parts;
        st = dbt ? dbt_tasks(&b, &e, c, hi - lo, chunk) : ring_tasks(&b, &e, c, hi - lo, chunk);
    }
    if (st == BK_OK)
        st = sim_eng_run(&e, us);
    if (st == BK_OK && *us > 0)
        *us += p->nccl_launch_us;
    if (st == BK_EUSAGE)
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "simulation: a ring hop or tree edge has no path between its GPUs");
    else if (st == BK_EINTERNAL)
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "simulation: the NCCL work graph did not finish");
    sim_eng_free(&e);
    free(cap);
    hops_free(&b);
    free(b.ord);
    free(b.best);
    free(b.used);
    return st;
}
