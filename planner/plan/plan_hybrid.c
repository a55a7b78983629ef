/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_hybrid.c - the set a hybrid plan runs: both tiers' trees on one graph (plan.h).
 */
#include "plan/plan.h"

#include <stdlib.h>

/* Append tiers's trees to out with each arc moved to the arc of its link in g. The tiers'
 * graphs and g take their arcs from the same links, so the map is one to one. */
BK_MUST_USE
static enum bk_status append_mapped(const struct plan_trees *tier, const int *arc_of_link,
                                    struct ptree_set *out)
{
    for (int i = 0; i < tier->trees.n; i++) {
        struct ptree t;
        BK_CHECK(ptree_copy(&t, &tier->trees.t[i]));
        for (int k = 0; k < t.path_off[t.ngpus]; k++)
            t.path_arc[k] = arc_of_link[tier->g->link[t.path_arc[k]]];
        enum bk_status st = ptree_set_add_new(out, &t);
        ptree_free(&t);
        BK_CHECK(st);
    }
    return BK_OK;
}

enum bk_status plan_hybrid_set(const struct plan_set *ps, const struct plan *pl,
                               const struct pgraph **g, struct ptree_set *out)
{
    ptree_set_init(out);
    *g = pl->main.g == &ps->tier_rev ? &ps->both_tiers_rev : &ps->both_tiers;
    int *arc_of_link = malloc(((size_t)ps->topo->nlinks + 1) * sizeof *arc_of_link);
    if (!arc_of_link)
        return BK_ENOMEM;
    for (int l = 0; l < ps->topo->nlinks; l++)
        arc_of_link[l] = -1;
    for (int a = 0; a < (*g)->narcs; a++)
        arc_of_link[(*g)->link[a]] = a;
    enum bk_status st = append_mapped(&pl->main, arc_of_link, out);
    if (st == BK_OK)
        st = append_mapped(&pl->pcie, arc_of_link, out);
    free(arc_of_link);
    if (st != BK_OK)
        ptree_set_free(out);
    return st;
}
