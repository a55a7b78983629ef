/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_tree.c - a plan's tree set turned into the runtime's work graph (runtime/src/exec.c),
 * then run on the flow engine.
 *
 * Every (rank, tree) has an up, a push and a down stream, so the tasks of one stream are chained
 * in order; each wait of exec.c becomes a dependency on the task that recorded the event (slot
 * k = c % 2):
 *   down, rank v, chunk c:  copy parent -> v after v's chunk c-1 copy and the parent's chunk c
 *                           (the root has it at once; for allreduce once it has reduced c);
 *   up, rank v, chunk c:    for each child in rank order, reduce its pushed chunk c into v's
 *                           accumulator on v's reduction units (after that child's push of c;
 *                           the first, unless v is the root, also after v's own push of c-2,
 *                           which frees out-slot k); the last reduction frees v's in-slots k;
 *   push, rank v != root:   push v's partial of chunk c (a leaf's input) over v's edge into the
 *                           parent's in-slot, after v's last reduction of c (if v has children)
 *                           and, for c >= 2, after the parent's last reduction of c-2.
 * Children push in parallel, each on its own stream and edge, and a rank reduces chunk c+1 in
 * while its push of chunk c is on the wire.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_engine.h"

struct tb {
    const struct sim_job *j;
    const struct sim_params *p;
    const struct pgraph *g;
    struct sim_eng e;
    int n, up, down;
    int *kids, *kstart, *order, *queue;
    int *down_res, *down_off, *up_res; /* per rank, its parent edge's arcs (down and up) */
    double *lat;                       /* per rank, launch + path latency of its edge */
    int *prev_up, *prev_push, *prev_down, *down_done; /* [n]: each stream's last task */
    int *cons, *pushed; /* [2n]: per rank and slot, its last reduction and its push */
};

static double arc_alpha(const struct tb *b, int a)
{
    const struct topo *t = b->j->topo;
    int l = b->g->link ? b->g->link[a] : -1;
    enum topo_link_kind k = t && l >= 0 && l < t->nlinks ? t->links[l].kind : TOPO_NVLINK;
    return b->p->alpha_us[k];
}

/* Children in rank order and a breadth-first order from the root (as emit_model.c builds it). */
static enum bk_status tree_shape(struct tb *b, const struct ptree *tr, struct diag *d)
{
    int n = b->n;
    if (tr->ngpus != n || tr->root < 0 || tr->root >= n)
        goto bad;
    for (int v = 0; v <= n; v++)
        b->kstart[v] = 0;
    for (int v = 0; v < n; v++)
        if (v != tr->root) {
            if (tr->parent[v] < 0 || tr->parent[v] >= n)
                goto bad;
            b->kstart[tr->parent[v] + 1]++;
        }
    for (int v = 0; v < n; v++)
        b->kstart[v + 1] += b->kstart[v];
    for (int v = 0; v < n; v++)
        b->queue[v] = b->kstart[v];
    for (int v = 0; v < n; v++)
        if (v != tr->root)
            b->kids[b->queue[tr->parent[v]]++] = v;
    int len = 0;
    b->order[len++] = tr->root;
    for (int h = 0; h < len; h++)
        for (int k = b->kstart[b->order[h]]; k < b->kstart[b->order[h] + 1]; k++)
            b->order[len++] = b->kids[k];
    if (len != n)
        goto bad;
    /* Edge paths: the tree's arcs carry data down; up crosses their reverses for allreduce,
     * and the arcs themselves for reduce-like plans (planned on the reversed graph). */
    int off = 0;
    for (int v = 0; v < n; v++) {
        b->down_off[v] = off;
        b->lat[v] = b->p->copy_launch_us;
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

static enum bk_status task(struct tb *b, double delay, double bytes, const int *res, int nres,
                           int *id)
{
    return sim_eng_task(&b->e, delay, bytes, res, nres, id);
}

/* One chunk of one tree, in exec.c's enqueue order: up children first, then down parents
 * first. */
static enum bk_status chunk_tasks(struct tb *b, const struct ptree *tr, size_t c, double bytes)
{
    int n = b->n, root = tr->root;
    int k = (int)(c % 2);
    for (int i = n - 1; b->up && i >= 0; i--) {
        int v = b->order[i];
        for (int j = b->kstart[v]; j < b->kstart[v + 1]; j++) {
            int unit = b->g->narcs + v, rd;
            BK_CHECK(task(b, b->p->reduce_launch_us, bytes, &unit, b->p->reduce_gbps > 0, &rd));
            BK_CHECK(sim_eng_dep(&b->e, b->prev_up[v], rd));
            BK_CHECK(sim_eng_dep(&b->e, b->pushed[2 * b->kids[j] + k], rd));
            if (j == b->kstart[v] && v != root && c >= 2)
                BK_CHECK(sim_eng_dep(&b->e, b->pushed[2 * v + k], rd));
            b->prev_up[v] = b->cons[2 * v + k] = rd;
        }
        if (v != root) {
            int cp, nres = b->down_off[v + 1] - b->down_off[v];
            BK_CHECK(task(b, b->lat[v], bytes, b->up_res + b->down_off[v], nres, &cp));
            BK_CHECK(sim_eng_dep(&b->e, b->prev_push[v], cp));
            if (b->kstart[v + 1] > b->kstart[v])
                BK_CHECK(sim_eng_dep(&b->e, b->cons[2 * v + k], cp));
            if (c >= 2)
                BK_CHECK(sim_eng_dep(&b->e, b->cons[2 * tr->parent[v] + k], cp));
            b->prev_push[v] = b->pushed[2 * v + k] = cp;
        }
    }
    for (int i = 0; b->down && i < n; i++) {
        int v = b->order[i], cp;
        if (v == root) {
            b->down_done[v] = b->up ? b->prev_up[v] : -1;
            continue;
        }
        int nres = b->down_off[v + 1] - b->down_off[v];
        BK_CHECK(task(b, b->lat[v], bytes, b->down_res + b->down_off[v], nres, &cp));
        BK_CHECK(sim_eng_dep(&b->e, b->prev_down[v], cp));
        BK_CHECK(sim_eng_dep(&b->e, b->down_done[tr->parent[v]], cp));
        b->prev_down[v] = b->down_done[v] = cp;
    }
    return BK_OK;
}

/* floor(n * s / w) without overflow, as exec.c's split_at. */
static size_t split_at(size_t n, unsigned long long s, unsigned long long w)
{
    unsigned long long q = n / w, r = n % w;
    return (size_t)(q * s + r * s / w);
}

static enum bk_status build(struct tb *b, double bytes, size_t chunk_bytes, struct diag *d)
{
    const struct ptree_set *ts = b->j->trees;
    int sharded = b->j->coll == COLL_ALLGATHER || b->j->coll == COLL_REDUCESCATTER;
    size_t es = b->p->elem_bytes ? b->p->elem_bytes : 1;
    double per = sharded ? bytes / ((double)b->n * (double)es) : bytes / (double)es;
    size_t count = per > 0 ? (size_t)per : 0;
    size_t chunk = chunk_bytes / es ? chunk_bytes / es : 1;
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
        size_t lo = split_at(count, before, total), hi = split_at(count, before + w, total);
        if (hi <= lo)
            continue;
        BK_CHECK(tree_shape(b, tr, d));
        for (int v = 0; v < b->n; v++) {
            b->prev_up[v] = b->prev_push[v] = b->prev_down[v] = b->down_done[v] = -1;
            b->cons[2 * v] = b->cons[2 * v + 1] = b->pushed[2 * v] = b->pushed[2 * v + 1] = -1;
        }
        size_t nchunks = (hi - lo + chunk - 1) / chunk;
        for (size_t c = 0; c < nchunks; c++) {
            size_t x = lo + c * chunk, m = hi - x < chunk ? hi - x : chunk;
            BK_CHECK(chunk_tasks(b, tr, c, (double)(m * es)));
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
    b.queue = malloc(n * sizeof *b.queue);
    b.down_off = malloc((n + 1) * sizeof *b.down_off);
    b.down_res = malloc(arcs * sizeof *b.down_res);
    b.up_res = malloc(arcs * sizeof *b.up_res);
    b.lat = malloc(n * sizeof *b.lat);
    b.prev_up = malloc(n * sizeof *b.prev_up);
    b.prev_down = malloc(n * sizeof *b.prev_down);
    b.prev_push = malloc(n * sizeof *b.prev_push);
    b.down_done = malloc(n * sizeof *b.down_done);
    b.cons = malloc(2 * n * sizeof *b.cons);
    b.pushed = malloc(2 * n * sizeof *b.pushed);
    enum bk_status st = BK_ENOMEM;
    if (cap && b.kids && b.kstart && b.order && b.queue && b.down_off && b.down_res && b.up_res &&
        b.lat && b.prev_up && b.prev_push && b.prev_down && b.down_done && b.cons &&
        b.pushed) {
        /* Resources: the graph's arcs, then one reduction unit per GPU. */
        for (int a = 0; a < j->g->narcs; a++)
            cap[a] = j->g->cap[a];
        for (int v = 0; v < b.n; v++)
            cap[j->g->narcs + v] = p->reduce_gbps > 0 ? p->reduce_gbps : 1;
        st = sim_eng_init(&b.e, j->g->narcs + b.n, cap);
    }
    if (st == BK_OK)
        st = build(&b, bytes, chunk_bytes, d);
    if (st == BK_OK)
        st = sim_eng_run(&b.e, us);
    if (st == BK_EINTERNAL && !diag_first_error(d))
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "simulation: the work graph did not finish");
    sim_eng_free(&b.e);
    free(cap);
    free(b.kids);
    free(b.kstart);
    free(b.order);
    free(b.queue);
    free(b.down_off);
    free(b.down_res);
    free(b.up_res);
    free(b.lat);
    free(b.prev_up);
    free(b.prev_down);
    free(b.prev_push);
    free(b.down_done);
    free(b.cons);
    free(b.pushed);
    return st;
}
