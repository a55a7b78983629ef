/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_relabel.c - a plan carried onto another root by an automorphism of the allocation
 * (topo_auto.h): every tree's GPUs and arcs relabelled, so the copy has the original's rate,
 * bound and simulated times (plan_tune copies its tuning). Each copy is checked as a packing on
 * the allocation (ptree_set_check) before it is kept.
 */
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"

/* amap[a]: the arc of g that perm takes arc a to (same kind), or -1 where there is none. */
static void arc_map(const struct pgraph *g, const struct topo *t, const int *perm, int *amap)
{
    for (int a = 0; a < g->narcs; a++) {
        int s = perm[g->src[a]], dd = perm[g->dst[a]];
        enum topo_link_kind k = t->links[g->link[a]].kind;
        amap[a] = -1;
        for (int j = g->out_off[s]; j < g->out_off[s + 1] && amap[a] < 0; j++) {
            int b = g->out_arc[j];
            if (g->dst[b] == dd && t->links[g->link[b]].kind == k)
                amap[a] = b;
        }
    }
}

BK_MUST_USE
static enum bk_status map_trees(const struct plan_trees *src, const struct topo *t,
                                const struct pgraph *base, const int *perm,
                                struct plan_trees *dst, struct diag *d)
{
    *dst = *src;
    ptree_set_init(&dst->trees);
    if (src->trees.n == 0)
        return BK_OK;
    int n = t->ngpus;
    int *amap = malloc(((size_t)base->narcs + 1) * sizeof *amap);
    int *parent = malloc((size_t)n * sizeof *parent), *len = malloc((size_t)n * sizeof *len);
    const int **path = malloc((size_t)n * sizeof *path);
    int most = 0; /* arcs in the longest tree */
    for (int i = 0; i < src->trees.n; i++)
        if (src->trees.t[i].path_off[n] > most)
            most = src->trees.t[i].path_off[n];
    int *arcs = malloc(((size_t)most + 1) * sizeof *arcs);
    enum bk_status st = amap && parent && len && path && arcs ? BK_OK : BK_ENOMEM;
    if (st == BK_OK)
        arc_map(base, t, perm, amap);
    for (int i = 0; st == BK_OK && i < src->trees.n; i++) {
        const struct ptree *tr = &src->trees.t[i];
        int at = 0;
        for (int v = 0; v < n && st == BK_OK; v++) {
            int w = perm[v];
            parent[w] = tr->parent[v] < 0 ? -1 : perm[tr->parent[v]];
            len[w] = tr->path_off[v + 1] - tr->path_off[v];
            path[w] = arcs + at;
            for (int k = 0; k < len[w]; k++) {
                int a = amap[tr->path_arc[tr->path_off[v] + k]];
                if (a < 0)
                    st = BK_EINTERNAL;
                arcs[at++] = a;
            }
        }
        struct ptree out;
        if (st == BK_OK && (st = ptree_make(&out, n, perm[tr->root], parent, path, len)) == BK_OK) {
            out.rate = tr->rate;
            st = ptree_set_add_new(&dst->trees, &out);
            ptree_free(&out);
        }
    }
    char why[160] = "";
    if (st == BK_OK && !ptree_set_check(&dst->trees, dst->g, dst->pack, 1e-9, why, sizeof why))
        st = BK_EINTERNAL;
    if (st == BK_EINTERNAL)
        diag_add(d, DIAG_ERROR, t->source, DIAG_NOWHERE,
                 "internal error: a plan relabelled by a symmetry of the allocation is no "
                 "packing on it (%s)", why[0] ? why : "an arc has no image");
    free(amap);
    free(parent);
    free(len);
    free(path);
    free(arcs);
    if (st != BK_OK)
        ptree_set_free(&dst->trees);
    return st;
}

enum bk_status plan_relabel(struct plan_set *s, int from, const int *perm, struct diag *d)
{
    BK_CHECK(bk_grow_int((void **)&s->v, &s->cap, s->n, sizeof *s->v));
    const struct plan *src = &s->v[from];
    struct plan *p = &s->v[s->n];
    *p = *src;
    p->root = src->root < 0 ? -1 : perm[src->root];
    p->relabels = from + 1;
    p->ilp_model = NULL;
    memset(&p->tune, 0, sizeof p->tune);
    ptree_set_init(&p->ring_chains);
    ptree_set_init(&p->main.trees);
    ptree_set_init(&p->pcie.trees);
    BK_CHECK(map_trees(&src->main, s->topo, &s->tier, perm, &p->main, d));
    if (src->has_hybrid) {
        enum bk_status st = map_trees(&src->pcie, s->topo, &s->pcie_tier, perm, &p->pcie, d);
        if (st != BK_OK) {
            ptree_set_free(&p->main.trees);
            return st;
        }
    }
    s->n++;
    return BK_OK;
}
