/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_tree.c - a plan's tree set turned into the work graph of the runtime's protocol
 * (runtime/core/proto.h: one kernel per call, chunks handed over through the receiver's staging
 * slots with a flag each, SIM_SLOTS slots per connection), then run on the flow engine.
 *
 * Per tree and chunk c (a rank's steps of one phase run in chunk order, its two phases
 * independently, as the runtime's threadblocks run them):
 *   up, rank v != root:  one fused pass reads v's input and its children's slots, reduces, and
 *                        writes the parent's slot over v's edge: a flow over the edge's arcs and
 *                        (if v has children) v's reduction unit, after v's chunk c-1, every
 *                        child's chunk c, and (c >= SIM_SLOTS) the parent's chunk c-SIM_SLOTS,
 *                        which freed the slot;
 *   up, the root:        the same pass into the output, on its reduction unit only;
 *   down, v to child u:  v writes chunk c into u's slot once v has it (the root at once, or for
 *                        allreduce once it has reduced c) and v's pass of chunk c-1 is over,
 *                        and (c >= SIM_SLOTS) u is done with chunk c-SIM_SLOTS: u copied it out
 *                        (a leaf) or passed it on to all its children.
 * Links run at the copy efficiency of the GPU generation (sim_params.eff). Each hand-over costs
 * the protocol's step (Simple: fence, flag, poll; LL: the poll of the lines alone) plus each
 * arc's latency. With LL every flow carries SIM_LL_WIRE times the chunk's data, the lines'
 * flags included (the reduction pass, too, reads and writes lines), and a chunk holds at most
 * SIM_LL_CHUNK_MAX. The call's host work and its one kernel launch are added once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_engine.h"

/* Staging slots per connection: BK_SLOTS in runtime/core/proto.h. */
#define SIM_SLOTS 4

struct tb {
    const struct sim_job *j;
    const struct sim_params *p;
    const struct pgraph *g;
    struct sim_eng e;
    int n, up, down;
    int *kids, *kstart, *order;
    int *down_res, *down_off, *up_res; /* per rank, its parent edge's arcs (down and up) */
    double *lat;                       /* per rank, step + path latency of its edge */
    int *prev_up, *pass, *have;        /* [n]: last up step, last down pass, the chunk here */
    int *up_t, *done_t;                /* [SIM_SLOTS n]: up step and down "done" by slot */
    int *kid_t;                        /* [n]: one pass's tasks, one per child */
    int *res;                          /* [arcs + 1]: a task's resources */
};

static double arc_alpha(const struct tb *b, int a)
{
    const struct topo *t = b->j->topo;
    int l = b->g->link ? b->g->link[a] : -1;
    enum topo_link_kind k = t && l >= 0 && l < t->nlinks ? t->links[l].kind : TOPO_NVLINK;
    return b->p->alpha_us[k];
}

/* Children in rank order and a breadth-first order from the root (ptree_bfs, as emit_model.c
 * orders them). */
BK_MUST_USE
static enum bk_status tree_shape(struct tb *b, const struct ptree *tr, struct diag *d)
{
    int n = b->n;
    if (tr->ngpus != n || !ptree_bfs(tr, b->order, b->kstart, b->kids))
        goto bad;
    /* Edge paths: the tree's arcs carry data down; up crosses their reverses for allreduce,
     * and the arcs themselves for reduce-like plans (planned on the reversed graph). */
    int off = 0;
    for (int v = 0; v < n; v++) {
        b->down_off[v] = off;
        b->lat[v] = b->j->proto == SIM_LL ? b->p->ll_step_us : b->p->step_us;
        if (v == tr->root)
            continue;
        for (int i = tr->path_off[v]; i < tr->path_off[v + 1]; i++, off++) {
            int a = tr->path_arc[i];
            if (a < 0 || a >= b->g->narcs)
                goto bad;
            int ua = b->j->coll == COLL_ALLREDUCE ? b->g->rev[a] : a;
            if (ua < 0) {
                diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                         "simulation: an allreduce tree edge has no reverse arc for its way up");
                return BK_EUSAGE;
            }
            b->down_res[off] = a;
            b->up_res[off] = ua;
            b->lat[v] += arc_alpha(b, a);
        }
    }
    b->down_off[n] = off;
    return BK_OK;
bad:
    diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "simulation: a tree does not span the ranks");
    return BK_EINTERNAL;
}

BK_MUST_USE
static enum bk_status task(struct tb *b, double delay, double bytes, const int *res, int nres,
                           int *id)
{
    return sim_eng_task(&b->e, delay, bytes, res, nres, id);
}

/* Chunk c of tree tr going up: leaves first, so a rank's children have their step of chunk c
 * and its parent still holds the step of chunk c - SIM_SLOTS. */
BK_MUST_USE
static enum bk_status up_tasks(struct tb *b, const struct ptree *tr, size_t c, double bytes)
{
    int n = b->n, k = (int)(c % SIM_SLOTS);
    for (int i = n - 1; i >= 0; i--) {
        int v = b->order[i], nk = b->kstart[v + 1] - b->kstart[v], nres = 0, t;
        if (v != tr->root)
            for (int x = b->down_off[v]; x < b->down_off[v + 1]; x++)
                b->res[nres++] = b->up_res[x];
        if (nk > 0 && b->p->reduce_gbps > 0)
            b->res[nres++] = b->g->narcs + v; /* the reduction unit */
        BK_CHECK(task(b, v == tr->root ? 0 : b->lat[v], bytes, b->res, nres, &t));
        BK_CHECK(sim_eng_dep(&b->e, b->prev_up[v], t));
        for (int x = b->kstart[v]; x < b->kstart[v + 1]; x++)
            BK_CHECK(sim_eng_dep(&b->e, b->up_t[SIM_SLOTS * b->kids[x] + k], t));
        if (v != tr->root && c >= SIM_SLOTS)
            BK_CHECK(sim_eng_dep(&b->e, b->up_t[SIM_SLOTS * tr->parent[v] + k], t));
        b->prev_up[v] = b->up_t[SIM_SLOTS * v + k] = t;
    }
    return BK_OK;
}

/* Chunk c of tree tr going down: the root first, so a rank has chunk c before it passes it on
 * and its children still hold their "done" of chunk c - SIM_SLOTS. */
BK_MUST_USE
static enum bk_status down_tasks(struct tb *b, const struct ptree *tr, size_t c, double bytes)
{
    int n = b->n, k = (int)(c % SIM_SLOTS);
    for (int i = 0; i < n; i++) {
        int v = b->order[i], nk = b->kstart[v + 1] - b->kstart[v];
        if (v == tr->root)
            b->have[v] = b->up ? b->up_t[SIM_SLOTS * v + k] : -1;
        for (int x = 0; x < nk; x++) {
            int u = b->kids[b->kstart[v] + x], t;
            BK_CHECK(task(b, b->lat[u], bytes, b->down_res + b->down_off[u],
                          b->down_off[u + 1] - b->down_off[u], &t));
            BK_CHECK(sim_eng_dep(&b->e, b->have[v], t));
            BK_CHECK(sim_eng_dep(&b->e, b->pass[v], t));
            if (c >= SIM_SLOTS)
                BK_CHECK(sim_eng_dep(&b->e, b->done_t[SIM_SLOTS * u + k], t));
            b->kid_t[x] = b->have[u] = t;
        }
        int done = b->have[v];
        if (nk > 0) { /* the pass ends when every child has the chunk */
            BK_CHECK(task(b, 0, 0, NULL, 0, &done));
            for (int x = 0; x < nk; x++)
                BK_CHECK(sim_eng_dep(&b->e, b->kid_t[x], done));
            b->pass[v] = done;
        }
        b->done_t[SIM_SLOTS * v + k] = done;
    }
    return BK_OK;
}

/* The runtime's data split (blink_plan.h; proto.h's bk_split_at): floor(n * s / w), without
 * overflow, rounded to the nearest 256-byte unit of es-byte elements (down where up would pass
 * n), so every tree starts on a unit and small counts leave trees empty, as they run. */
#define SIM_SPLIT_ALIGN 256
size_t sim_split_at(size_t n, size_t es, unsigned long long s, unsigned long long w)
{
    if (s >= w)
        return w ? n : 0;
    unsigned long long q = n / w, r = n % w;
    size_t x = (size_t)(q * s + (unsigned long long)((unsigned __int128)r * s / w));
    size_t u = es && es <= SIM_SPLIT_ALIGN && SIM_SPLIT_ALIGN % es == 0 ? SIM_SPLIT_ALIGN / es : 1;
    size_t rem = x % u;
    x -= rem;
    if (2 * rem >= u && n - x >= u)
        x += u;
    return x;
}

BK_MUST_USE
static enum bk_status build(struct tb *b, double bytes, size_t chunk_bytes, struct diag *d)
{
    const struct ptree_set *ts = b->j->trees;
    int sharded = b->j->coll == COLL_ALLGATHER || b->j->coll == COLL_REDUCESCATTER;
    size_t es = b->p->elem_bytes ? b->p->elem_bytes : 1;
    double per = sharded ? bytes / ((double)b->n * (double)es) : bytes / (double)es;
    size_t count = per > 0 ? (size_t)per : 0;
    int ll = b->j->proto == SIM_LL;
    if (ll && chunk_bytes > SIM_LL_CHUNK_MAX)
        chunk_bytes = SIM_LL_CHUNK_MAX; /* the runtime's LL slot holds no more */
    size_t chunk = chunk_bytes / es ? chunk_bytes / es : 1;
    double wire = ll ? SIM_LL_WIRE : 1.0;
    for (int ti = 0; ti < ts->n; ti++) {
        const struct ptree *tr = &ts->t[ti];
        unsigned long long before = 0, total = 0;
        for (int i = 0; i < ts->n; i++) {
            if (sharded && ts->t[i].root != tr->root)
                continue;
            unsigned long long w = (unsigned long long)llround(ts->t[i].rate * 1e4);
            before += i < ti ? w : 0;
            total += w;
        }
        unsigned long long w = (unsigned long long)llround(tr->rate * 1e4);
        if (total == 0) {
            diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                     "simulation: a share of the data has no tree of positive rate");
            return BK_EUSAGE;
        }
        size_t lo = sim_split_at(count, es, before, total);
        size_t hi = sim_split_at(count, es, before + w, total);
        if (hi <= lo)
            continue;
        BK_CHECK(tree_shape(b, tr, d));
        for (int v = 0; v < b->n; v++) {
            b->prev_up[v] = b->pass[v] = b->have[v] = -1;
            for (int k = 0; k < SIM_SLOTS; k++)
                b->up_t[SIM_SLOTS * v + k] = b->done_t[SIM_SLOTS * v + k] = -1;
        }
        size_t nchunks = (hi - lo + chunk - 1) / chunk;
        for (size_t c = 0; c < nchunks; c++) {
            size_t x = lo + c * chunk, m = hi - x < chunk ? hi - x : chunk;
            if (b->up)
                BK_CHECK(up_tasks(b, tr, c, (double)(m * es) * wire));
            if (b->down)
                BK_CHECK(down_tasks(b, tr, c, (double)(m * es) * wire));
        }
    }
    return BK_OK;
}

enum bk_status sim_run_trees(const struct sim_job *j, double bytes, size_t chunk_bytes,
                             const struct sim_params *p, double *us, struct diag *d)
{
    struct tb b;
    memset(&b, 0, sizeof b);
    b.j = j;
    b.p = p;
    b.g = j->g;
    b.n = j->g->ngpus;
    enum collective c = j->coll;
    b.up = c == COLL_REDUCE || c == COLL_REDUCESCATTER || c == COLL_ALLREDUCE;
    b.down = c == COLL_BROADCAST || c == COLL_ALLGATHER || c == COLL_ALLREDUCE;
    *us = 0;
    size_t n = (size_t)b.n + 1, arcs = 1;
    for (int i = 0; i < j->trees->n; i++)
        if ((size_t)j->trees->t[i].path_off[j->trees->t[i].ngpus] + 1 > arcs)
            arcs = (size_t)j->trees->t[i].path_off[j->trees->t[i].ngpus] + 1;
    double *cap = malloc(((size_t)j->g->narcs + n) * sizeof *cap);
    b.kids = malloc(n * sizeof *b.kids);
    b.kstart = malloc((n + 1) * sizeof *b.kstart);
    b.order = malloc(n * sizeof *b.order);
    b.down_off = malloc((n + 1) * sizeof *b.down_off);
    b.down_res = malloc(arcs * sizeof *b.down_res);
    b.up_res = malloc(arcs * sizeof *b.up_res);
    b.lat = malloc(n * sizeof *b.lat);
    b.prev_up = malloc(n * sizeof *b.prev_up);
    b.pass = malloc(n * sizeof *b.pass);
    b.have = malloc(n * sizeof *b.have);
    b.kid_t = malloc(n * sizeof *b.kid_t);
    b.up_t = malloc(SIM_SLOTS * n * sizeof *b.up_t);
    b.done_t = malloc(SIM_SLOTS * n * sizeof *b.done_t);
    b.res = malloc((arcs + 1) * sizeof *b.res);
    enum bk_status st = BK_ENOMEM;
    if (cap && b.kids && b.kstart && b.order && b.down_off && b.down_res && b.up_res &&
        b.lat && b.prev_up && b.pass && b.have && b.kid_t && b.up_t && b.done_t && b.res) {
        /* Resources: the graph's arcs, then one reduction unit per GPU. */
        double eff = p->eff[sim_generation(j->topo)];
        for (int a = 0; a < j->g->narcs; a++)
            cap[a] = j->g->cap[a] * eff;
        for (int v = 0; v < b.n; v++)
            cap[j->g->narcs + v] = p->reduce_gbps > 0 ? p->reduce_gbps : 1;
        st = sim_eng_init(&b.e, j->g->narcs + b.n, cap);
    }
    if (st == BK_OK)
        st = build(&b, bytes, chunk_bytes, d);
    if (st == BK_OK)
        st = sim_eng_run(&b.e, us);
    if (st == BK_OK)
        *us += p->call_us + p->launch_us; /* the call's host work and its one kernel */
    if (st == BK_EINTERNAL && !diag_first_error(d))
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "simulation: the work graph did not finish");
    sim_eng_free(&b.e);
    free(cap);
    free(b.kids);
    free(b.kstart);
    free(b.order);
    free(b.down_off);
    free(b.down_res);
    free(b.up_res);
    free(b.lat);
    free(b.prev_up);
    free(b.pass);
    free(b.have);
    free(b.kid_t);
    free(b.up_t);
    free(b.done_t);
    free(b.res);
    return st;
}
