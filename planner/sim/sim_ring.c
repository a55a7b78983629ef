/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_ring.c - the NCCL baseline on the simulator's model: rings (Simple protocol) and, for
 * allreduce, double binary trees.
 *
 * Rings: each of the planner's nrings channels gets an equal share of the data and n virtual
 * hop links of B / nrings GB/s (B: the planner's summed ring rate, whose LP already fits the
 * arcs) times the copy efficiency of the GPU generation (sim_params.eff), as the trees get.
 * A step moves one chunk over one hop and costs NCCL's per-step latency for the slowest link
 * kind on that hop, then the bytes. Each rank sends one step after another; a step can only
 * forward what the previous step delivered:
 *   broadcast, reduce:           a pipeline of n-1 hops along the ring from (or to) the root;
 *   allgather, reduce-scatter:   n-1 steps per loop of one chunk per rank;
 *   allreduce:                   2(n-1) steps per loop of n chunks (reduce-scatter, all-gather).
 * Double binary trees: NCCL trees.cc's in-order binary tree over ring positions and its mirror
 * (even n) or shift (odd n); each carries half the data, up (reduce) then down (broadcast),
 * chunk by chunk, over the real arcs of the widest relay-only path of each edge.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/pgraph.h"
#include "sim/sim.h"
#include "sim/sim_engine.h"
#include "sim/sim_hops.h"

/* One call's view: the hop table of its tier (paths and ring order) and each hop's step cost
 * under this call's parameters. */
struct nb {
    const struct sim_job *j;
    const struct sim_params *p;
    int n;
    const struct sim_hops *hops; /* ring tier (virtual hops) or every kind (double binary trees) */
    const int *order;            /* [n] ring order, from the ring's tier */
    double *step;                /* [n*n] NCCL step cost of each hop */
    int *ord, *used;             /* scratch */
};

/* NCCL's per-step cost of each hop: that of the slowest link kind on its path. */
BK_MUST_USE
static enum bk_status step_costs(struct nb *b)
{
    const struct sim_hops *h = b->hops;
    int n = b->n;
    b->step = calloc((size_t)n * n + 1, sizeof *b->step);
    if (!b->step)
        return BK_ENOMEM;
    for (int ij = 0; ij < n * n; ij++) {
        const int *pa = h->path + (size_t)ij * (size_t)h->maxlen;
        for (int x = 0; x < h->plen[ij]; x++) {
            double s = b->p->nccl_step_us[b->j->topo->links[h->h.link[pa[x]]].kind];
            b->step[ij] = s > b->step[ij] ? s : b->step[ij];
        }
    }
    return BK_OK;
}

/* ------------------------------------------------------------------ rings */

BK_MUST_USE
static enum bk_status ring_tasks(struct nb *b, struct sim_eng *e, int ch, size_t m, size_t chunk)
{
    int n = b->n, *last = b->used, *prevstep = b->ord, id;
    const int *ord = b->order;
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
    int n = b->n, id;
    const int *ord = b->order;
    const struct sim_hops *h = b->hops;
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
    for (int q = 0; q < len; q++)
        for (int r = 0; r < n; r++)
            if (par[r] == bfs[q])
                bfs[len++] = r;
    enum bk_status st = len == n ? BK_OK : BK_EINTERNAL;
    for (size_t x = 0; st == BK_OK && x < m; x += chunk) {
        double bytes = (double)((m - x < chunk ? m - x : chunk) * es);
        int join;
        st = sim_eng_task(e, 0, 0, NULL, 0, &join); /* the root has reduced this chunk */
        for (int i = n - 1; st == BK_OK && i > 0; i--) { /* children before parents */
            int r = bfs[i], hop = ord[r] * n + ord[par[r]];
            const int *pa = h->path + (size_t)hop * (size_t)h->maxlen;
            if (h->plen[hop] == 0 || h->plen[ord[par[r]] * n + ord[r]] == 0) {
                st = BK_EUSAGE; /* an edge with no path either way */
                break;
            }
            st = sim_eng_task(e, b->step[hop], bytes, pa, h->plen[hop], &id);
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
            const int *pa = h->path + (size_t)hop * (size_t)h->maxlen;
            st = sim_eng_task(e, b->step[hop], bytes, pa, h->plen[hop], &id);
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
    b.used = malloc((size_t)n * sizeof *b.used);
    enum bk_status st = b.ord && b.used ? BK_OK : BK_ENOMEM;
    /* The ring order comes from the ring's tier; double binary trees then route over all. */
    struct sim_hops own_ring, own_all;
    memset(&own_ring, 0, sizeof own_ring);
    memset(&own_all, 0, sizeof own_all);
    const struct sim_hops *ring_hops = NULL;
    if (st == BK_OK)
        st = sim_hops_get(j->memo, j->topo, j->ring->kinds ? j->ring->kinds : PG_ALL_KINDS,
                          &own_ring, &ring_hops);
    if (st == BK_OK) {
        b.order = ring_hops->order;
        b.hops = ring_hops;
    }
    if (st == BK_OK && dbt)
        st = sim_hops_get(j->memo, j->topo, PG_ALL_KINDS, &own_all, &b.hops);
    if (st == BK_OK)
        st = step_costs(&b);
    for (int i = 0; st == BK_OK && i < n; i++) {
        int hop = b.order[i] * n + b.order[(i + 1) % n];
        if (!dbt && b.hops->plen[hop] == 0)
            st = BK_EUSAGE;
    }
    struct sim_eng e;
    memset(&e, 0, sizeof e);
    int narcs = b.hops ? b.hops->h.narcs : 0;
    double *cap = malloc(((size_t)nch * n + (size_t)narcs + 1) * sizeof *cap);
    if (st == BK_OK && !cap)
        st = BK_ENOMEM;
    int nres = dbt ? narcs : nch * n;
    double eff = p->eff[sim_generation(j->topo)]; /* copies reach this much, as the trees' do */
    for (int r = 0; st == BK_OK && r < nres; r++)
        cap[r] = (dbt ? b.hops->h.cap[r] : j->ring->gbps / nch) * eff;
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
        *us += p->call_us + p->nccl_launch_us; /* the host's work, as the trees', and the launch */
    if (st == BK_EUSAGE)
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "simulation: a ring hop or tree edge has no path between its GPUs");
    else if (st == BK_EINTERNAL)
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "simulation: the NCCL work graph did not finish");
    sim_eng_free(&e);
    free(cap);
    sim_hops_free(&own_ring);
    sim_hops_free(&own_all);
    free(b.step);
    free(b.ord);
    free(b.used);
    return st;
}
