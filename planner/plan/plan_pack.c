/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_pack.c - one packing problem, from candidates to the fewest exact trees.
 *
 * Candidates come from three sources: structured shapes (one-hop stars and switch-plane chains,
 * plan_shapes.c), Lovasz's exact integral packing where capacities are whole links, and Blink's
 * MWU. Column generation then reaches the exact LP optimum, and Blink's ILP keeps that rate with
 * the fewest trees. When the shapes alone reach the bound, they are used as they are.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pack/mwu.h"
#include "pack/oracle.h"
#include "pack/pack_integral.h"
#include "plan/plan_internal.h"

/* Ratio at which a plan counts as reaching its bound (the 0.999). */
#define REACHES_BOUND 0.999

/* How many of MWU's trees, per GPU, seed the exact stages. */
#define MWU_SEEDS_PER_GPU 4

static int heavier_first(const void *pa, const void *pb)
{
    const struct ptree *a = pa, *b = pb;
    if (a->rate != b->rate)
        return a->rate > b->rate ? -1 : 1;
    return ptree_shape_cmp(a, b);
}

double plan_snap_rate(double gbps)
{
    return floor(gbps * 1e4 + 1e-6) / 1e4;
}

/* The problem's value of a tree set: summed rate, or for allgather the smallest per-root rate. */
static double set_value(const struct pack_problem *p, const struct ptree_set *s)
{
    if (p->kind != PACK_ALLGATHER)
        return ptree_set_rate(s);
    double v = INFINITY;
    for (int r = 0; r < p->g->ngpus; r++) {
        double rr = ptree_set_root_rate(s, r);
        if (rr < v)
            v = rr;
    }
    return p->g->ngpus ? v : 0;
}

BK_MUST_USE
static enum bk_status fewest(const struct pack_problem *p, struct ptree_set *cand, double target,
                             const struct plan_opts *o, struct strbuf *dump, struct plan_trees *out,
                             struct diag *d)
{
    struct ilp_opts io = {o->time_limit_ms, o->slack, dump};
    struct ilp_report rep;
    memset(&rep, 0, sizeof rep);
    BK_CHECK(ilp_fewest_trees(p, cand, target, &io, &out->trees, &rep, d));
    out->stats.ilp_status = rep.mip_status;
    out->stats.trees_before = rep.trees_before;
    return BK_OK;
}

enum bk_status plan_pack(const struct pack_problem *p, double bound, const struct plan_opts *o,
                         struct strbuf *dump, struct plan_trees *out, struct diag *d)
{
    struct ptree_set cand;
    ptree_set_init(&cand);
    ptree_set_init(&out->trees);
    memset(&out->stats, 0, sizeof out->stats);
    struct oracle *orc = NULL;
    double value = 0;
    enum bk_status st;
    BK_CHECK_GOTO(oracle_new(&orc, p->g), st, out);

    /* Structured trees first, the fewest first: where they reach the bound nothing else is
       needed. Balanced plane trees (allgather on a uniform switch plane, one or two per root),
       then stars and chains. */
    for (int stage = p->kind == PACK_ALLGATHER ? 0 : 1; stage < 2; stage++) {
        ptree_set_clear(&cand);
        if (stage == 0)
            BK_CHECK_GOTO(plan_plane_trees(p->g, &cand), st, out);
        else
            BK_CHECK_GOTO(plan_stars(p, &cand), st, out);
        if (stage == 1 && p->kind == PACK_BROADCAST)
            BK_CHECK_GOTO(plan_chains(p, &cand), st, out);
        if (cand.n == 0 || bound <= 0)
            continue;
        BK_CHECK_GOTO(ilp_lp_optimum(p, NULL, &cand, &value, NULL, d), st, out);
        if (value >= REACHES_BOUND * bound) {
            out->stats.lp_columns = cand.n;
            out->stats.lp_value = value;
            st = fewest(p, &cand, value, o, dump, out, d);
            goto out;
        }
    }

    if (p->kind == PACK_BROADCAST && !pgraph_has_relays(p->g)) {
        double unit = pack_integral_unit(p->g);
        struct ptree_set integral;
        ptree_set_init(&integral);
        if (unit > 0)
            st = pack_integral(p, unit, &integral);
        double reached = ptree_set_rate(&integral);
        out->stats.integral_trees = integral.n;
        /* Exact already: MWU could only find an approximation of what this proves optimal, so
         * the ILP works on the integral trees (at their own rates) and the stars. */
        int exact = st == BK_OK && bound > 0 && reached >= bound * (1 - 1e-9);
        for (int i = 0; exact && i < cand.n; i++)
            cand.t[i].rate = 0;
        for (int i = 0; st == BK_OK && i < integral.n; i++)
            st = ptree_set_add(&cand, &integral.t[i], NULL);
        ptree_set_free(&integral);
        if (st != BK_OK)
            goto out;
        if (exact) {
            out->stats.lp_columns = cand.n;
            out->stats.lp_value = reached;
            st = fewest(p, &cand, reached, o, dump, out, d);
            goto out;
        }
    }

    struct mwu_opts mo = {o->epsilon, 0};
    struct mwu_stats ms;
    struct ptree_set mwu_trees;
    ptree_set_init(&mwu_trees);
    st = mwu_pack(p, orc, &mo, &mwu_trees, &ms);
    /* MWU's heaviest trees seed the LP; column generation adds any tree the optimum needs. The
     * thousands of light ones would only slow the LP and the ILP down, except where the
     * heaviest alone are far from MWU's solution (mwu_seed_all). */
    if (st == BK_OK)
        qsort(mwu_trees.t, (size_t)mwu_trees.n, sizeof *mwu_trees.t, heavier_first);
    int keep = o->mwu_seed_all ? mwu_trees.n : MWU_SEEDS_PER_GPU * p->g->ngpus;
    for (int i = 0; st == BK_OK && i < mwu_trees.n && i < keep; i++)
        st = ptree_set_add(&cand, &mwu_trees.t[i], NULL);
    ptree_set_free(&mwu_trees);
    if (st != BK_OK)
        goto out;
    out->stats.mwu_rounds = ms.rounds;
    out->stats.mwu_trees = ms.distinct;
    out->stats.mwu_value = ms.value;

    struct ilp_report rep;
    memset(&rep, 0, sizeof rep);
    BK_CHECK_GOTO(ilp_lp_optimum(p, orc, &cand, &value, &rep, d), st, out);
    out->stats.lp_columns = rep.lp_columns;
    out->stats.lp_value = value;
    st = fewest(p, &cand, value, o, dump, out, d);
out:
    if (st == BK_OK) {
        for (int i = 0; i < out->trees.n; i++)
            out->trees.t[i].rate = plan_snap_rate(out->trees.t[i].rate);
        ptree_set_drop_below(&out->trees, 1e-4);
        ptree_set_sort(&out->trees);
        out->algbw = set_value(p, &out->trees);
        if (p->kind == PACK_ALLGATHER)
            out->algbw *= p->g->ngpus;
    }
    oracle_free(orc);
    ptree_set_free(&cand);
    return st;
}
