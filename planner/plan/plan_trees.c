/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_trees.c - one graph's tree sets, as every planner of a collective asks for them (plan.c
 * for a server, plan_cluster.c for each tier of a cluster): rooted trees, gathers, the
 * allreduce's candidates (undirected trees, or reduce-scatter and all-gather) and its choice,
 * and a set copied onto the reversed graph.
 */
#include "plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "core/strbuf.h"
#include "pack/bound.h"
#include "pack/mwu.h"

void plan_trees_free(struct plan_trees *pt)
{
    ptree_set_free(&pt->trees);
}

/* Copy src's trees onto the reversed graph: path arc a becomes rev[a], which in the reversed
 * graph runs the same way as a does here. Valid when every arc has an equal reverse arc. */
enum bk_status plan_copy_reversed(const struct plan_trees *src, const struct pgraph *g,
                                    const struct pgraph *rg, struct plan_trees *dst)
{
    *dst = *src;
    ptree_set_init(&dst->trees);
    dst->g = rg;
    for (int i = 0; i < src->trees.n; i++) {
        struct ptree t;
        BK_CHECK(ptree_copy(&t, &src->trees.t[i]));
        for (int k = 0; k < t.path_off[t.ngpus]; k++)
            t.path_arc[k] = g->rev[t.path_arc[k]];
        enum bk_status st = ptree_set_add(&dst->trees, &t, NULL);
        ptree_free(&t);
        BK_CHECK(st);
    }
    return BK_OK;
}

/* Broadcast (or, on the reversed graph, reduce) from one root. */
enum bk_status plan_rooted(const struct pgraph *g, unsigned kinds, int root,
                                  const struct plan_opts *o, struct strbuf *dump,
                                  struct plan_trees *out, struct diag *d)
{
    double bound;
    BK_CHECK(bound_broadcast(g, root, &bound));
    struct pack_problem p = {g, PACK_BROADCAST, root};
    BK_CHECK(plan_pack(&p, bound, o, dump, out, d));
    out->kinds = kinds;
    out->g = g;
    out->pack = PACK_BROADCAST;
    out->bound = bound;
    return BK_OK;
}

/* Allgather (or, on the reversed graph, reduce-scatter). */
BK_MUST_USE
enum bk_status plan_gather(const struct pgraph *g, unsigned kinds,
                                  const struct plan_opts *o, struct strbuf *dump,
                                  struct plan_trees *out, struct diag *d)
{
    double bound;
    BK_CHECK(bound_allgather(g, &bound));
    struct pack_problem p = {g, PACK_ALLGATHER, 0};
    BK_CHECK(plan_pack(&p, bound / g->ngpus, o, dump, out, d));
    out->kinds = kinds;
    out->g = g;
    out->pack = PACK_ALLGATHER;
    out->bound = bound;
    return BK_OK;
}

int plan_max_depth(const struct ptree_set *s)
{
    int depth = 0;
    for (int i = 0; i < s->n; i++) {
        int dd = ptree_depth(&s->t[i]);
        if (dd > depth)
            depth = dd;
    }
    return depth;
}

/*
 * Reduce-scatter + all-gather as allreduce trees: the per-root allgather trees, each reduced
 * towards its root and broadcast back, at half their allgather rate so that both directions of
 * every link fit (exact on full-duplex links; otherwise scaled down until feasible).
 */
BK_MUST_USE
static enum bk_status rsag_candidate(const struct plan_trees *ag, struct plan_trees *out)
{
    *out = *ag;
    ptree_set_init(&out->trees);
    out->pack = PACK_ALLREDUCE;
    const struct pgraph *g = ag->g;
    double *load = calloc((size_t)g->narcs + 1, sizeof *load);
    int *mult = calloc((size_t)g->narcs + 1, sizeof *mult);
    enum bk_status st = load && mult ? BK_OK : BK_ENOMEM;
    for (int i = 0; st == BK_OK && i < ag->trees.n; i++) {
        struct ptree t;
        st = ptree_copy(&t, &ag->trees.t[i]);
        if (st != BK_OK)
            break;
        t.rate /= 2;
        memset(mult, 0, (size_t)g->narcs * sizeof *mult);
        ptree_add_load(&t, g, PACK_ALLREDUCE, mult);
        for (int a = 0; a < g->narcs; a++)
            load[a] += mult[a] * t.rate;
        st = ptree_set_add(&out->trees, &t, NULL);
        ptree_free(&t);
    }
    double worst = 1;
    for (int a = 0; st == BK_OK && a < g->narcs; a++)
        if (load[a] / g->cap[a] > worst)
            worst = load[a] / g->cap[a];
    for (int i = 0; st == BK_OK && i < out->trees.n; i++)
        out->trees.t[i].rate = plan_snap_rate(out->trees.t[i].rate / worst);
    out->algbw = ptree_set_rate(&out->trees);
    free(load);
    free(mult);
    return st;
}

/* No allreduce without in-network reduction beats this: per unit of data every tree edge (and
 * every reduce-scatter + all-gather transfer) leaves one GPU and enters another, 2(n-1) in all,
 * so algbw <= min(GPU out-capacity, GPU in-capacity) / (2(n-1)). Stars reach it on switch
 * planes, where it spares the MWU a search it cannot win. */
double plan_allreduce_injection(const struct pgraph *g)
{
    double out = 0, in = 0;
    for (int a = 0; a < g->narcs; a++) {
        out += g->src[a] < g->ngpus ? g->cap[a] : 0;
        in += g->dst[a] < g->ngpus ? g->cap[a] : 0;
    }
    return g->ngpus > 1 ? fmin(out, in) / (2.0 * (g->ngpus - 1)) : 0;
}

/* Allreduce: undirected trees against reduce-scatter + all-gather; the faster wins, and at equal
 * speed the shallower (fewer pipeline steps). */
enum bk_status plan_allreduce(const struct pgraph *g, unsigned kinds,
                                     const struct plan_trees *ag_done, const struct plan_opts *o,
                                     struct strbuf *dump, struct plan *pl, struct plan_trees *out,
                                     struct diag *d)
{
    struct plan_trees tree, ag, rsag;
    memset(&tree, 0, sizeof tree);
    memset(&ag, 0, sizeof ag);
    memset(&rsag, 0, sizeof rsag);
    struct pack_problem p = {g, PACK_ALLREDUCE, 0};
    enum bk_status st;
    double inj = plan_allreduce_injection(g);
    if (!ag_done || ag_done->g != g) {
        BK_CHECK_GOTO(plan_gather(g, kinds, o, NULL, &ag, d), st, out);
        ag_done = &ag;
    }
    BK_CHECK_GOTO(rsag_candidate(ag_done, &rsag), st, out);
    /* RS + AG at the injection bound with one-hop trees, at most two per root (switch planes):
       undirected trees could only tie, deeper or with more trees, so they are not searched. */
    int settled = rsag.algbw >= 0.999 * inj && plan_max_depth(&rsag.trees) <= 1 &&
                  rsag.trees.n <= 2 * g->ngpus;
    if (!settled)
        BK_CHECK_GOTO(plan_pack(&p, inj, o, dump, &tree, d), st, out);
    tree.kinds = kinds;
    tree.g = g;
    tree.pack = PACK_ALLREDUCE;
    /* Bounds: the tree family's exact LP optimum, and the optimal RS + AG time. */
    double bound = fmax(tree.stats.lp_value, ag_done->bound / 2);
    int pick_tree;
    if (settled)
        pick_tree = 0;
    else if (tree.algbw > rsag.algbw * (1 + PLAN_SAME_SPEED))
        pick_tree = 1;
    else if (rsag.algbw > tree.algbw * (1 + PLAN_SAME_SPEED))
        pick_tree = 0;
    else /* as fast: the shallower (fewer pipeline steps), then the fewer trees */
        pick_tree = plan_max_depth(&tree.trees) < plan_max_depth(&rsag.trees) ||
                    (plan_max_depth(&tree.trees) == plan_max_depth(&rsag.trees) &&
                     tree.trees.n <= rsag.trees.n);
    if (pl) {
        pl->method = pick_tree ? "undirected trees" : "reduce-scatter + all-gather";
        pl->alt_algbw = pick_tree ? rsag.algbw : tree.algbw;
        pl->why = settled ? "at the bound with one-hop trees (undirected trees not searched)"
                  : tree.algbw > rsag.algbw * (1 + PLAN_SAME_SPEED) ||
                          rsag.algbw > tree.algbw * (1 + PLAN_SAME_SPEED)
                      ? "the faster"
                      : "as fast, and shallower or with fewer trees";
    }
    *out = pick_tree ? tree : rsag;
    ptree_set_init(pick_tree ? &tree.trees : &rsag.trees);
    out->bound = bound;
out:
    plan_trees_free(&tree);
    plan_trees_free(&ag);
    plan_trees_free(&rsag);
    return st;
}
