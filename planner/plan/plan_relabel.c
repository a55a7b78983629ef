/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_relabel.c - a plan carried onto another root by an automorphism of the allocation
 * (topo_auto.h): every tree's GPUs and arcs relabelled, so the copy has the original's rate,
 * bound and simulated times (plan_tune copies its tuning). Each copy is checked as a packing on
 * the allocation (ptree_set_check) before it is kept.
 *
 * The automorphisms come from the GPU orbits on one server and from swaps of identical servers
 * on several (plan_roots_find), so a cluster of S servers packs the roots of one server and
 * relabels the rest.
 */
#include <stdlib.h>
#include <string.h>

#include "plan/plan_cluster.h"
#include "plan/plan_internal.h"

void plan_roots_free(struct plan_roots *pr)
{
    topo_orbits_free(&pr->orb);
    topo_link_index_free(&pr->links);
    free(pr->perm);
    free(pr->tier_arc);
    free(pr->pcie_arc);
    memset(pr, 0, sizeof *pr);
}

/* arc[l]: the arc of g taken from link l, or -1. */
BK_MUST_USE
static enum bk_status arcs_of_links(const struct pgraph *g, const struct topo *t, int **out)
{
    int *arc = malloc(((size_t)t->nlinks + 1) * sizeof *arc);
    if (!arc)
        return BK_ENOMEM;
    for (int l = 0; l < t->nlinks; l++)
        arc[l] = -1;
    for (int a = 0; a < g->narcs; a++)
        arc[g->link[a]] = a;
    *out = arc;
    return BK_OK;
}

enum bk_status plan_roots_find(struct plan_roots *pr, const struct plan_set *s)
{
    const struct topo *t = s->topo;
    memset(pr, 0, sizeof *pr);
    enum bk_status st;
    if (s->cluster) {
        pr->twin = plan_cluster_twins(s->cluster);
        pr->perm = malloc(((size_t)t->nnodes + 1) * sizeof *pr->perm);
        st = pr->perm ? BK_OK : BK_ENOMEM;
    } else {
        st = topo_gpu_orbits(t, &pr->orb);
    }
    if (st == BK_OK)
        st = topo_link_index_build(&pr->links, t);
    if (st == BK_OK)
        st = arcs_of_links(&s->tier, t, &pr->tier_arc);
    if (st == BK_OK && s->has_pcie_tier)
        st = arcs_of_links(&s->pcie_tier, t, &pr->pcie_arc);
    if (st != BK_OK)
        plan_roots_free(pr);
    return st;
}

const int *plan_roots_source(struct plan_roots *pr, const struct topo *t, int r, int *rep)
{
    *rep = r;
    if (pr->orb.rep && pr->orb.rep[r] != r) {
        *rep = pr->orb.rep[r];
        return pr->orb.perm + (size_t)r * (size_t)t->nnodes;
    }
    int sv = t->nodes[r].server;
    if (!pr->twin || sv < 0 || sv >= t->nservers || pr->twin[sv] == sv)
        return NULL;
    topo_server_swap(t, pr->twin[sv], sv, pr->perm);
    *rep = pr->perm[r];
    return pr->perm;
}

/* The arc of g (arc_of_link of its links) that perm takes arc a to, or -1. */
static int arc_image(const struct plan_roots *pr, const int *arc_of_link,
                     const struct pgraph *g, const int *perm, int a)
{
    const struct topo_link *L = &pr->links.t->links[g->link[a]];
    int l = topo_link_find(&pr->links, perm[L->src], perm[L->dst], L->kind);
    return l < 0 ? -1 : arc_of_link[l];
}

BK_MUST_USE
static enum bk_status map_trees(const struct plan_trees *src, const struct topo *t,
                                const struct plan_roots *pr, const struct pgraph *base,
                                const int *arc_of_link, const int *perm,
                                struct plan_trees *dst, struct diag *d)
{
    *dst = *src;
    ptree_set_init(&dst->trees);
    if (src->trees.n == 0)
        return BK_OK;
    int n = t->ngpus;
    int *parent = malloc((size_t)n * sizeof *parent), *len = malloc((size_t)n * sizeof *len);
    const int **path = malloc((size_t)n * sizeof *path);
    int most = 0; /* arcs in the longest tree */
    for (int i = 0; i < src->trees.n; i++)
        if (src->trees.t[i].path_off[n] > most)
            most = src->trees.t[i].path_off[n];
    int *arcs = malloc(((size_t)most + 1) * sizeof *arcs);
    enum bk_status st = parent && len && path && arcs ? BK_OK : BK_ENOMEM;
    for (int i = 0; st == BK_OK && i < src->trees.n; i++) {
        const struct ptree *tr = &src->trees.t[i];
        int at = 0;
        for (int v = 0; v < n && st == BK_OK; v++) {
            int w = perm[v];
            parent[w] = tr->parent[v] < 0 ? -1 : perm[tr->parent[v]];
            len[w] = tr->path_off[v + 1] - tr->path_off[v];
            path[w] = arcs + at;
            for (int k = 0; k < len[w]; k++) {
                int a = arc_image(pr, arc_of_link, base, perm, tr->path_arc[tr->path_off[v] + k]);
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
    free(parent);
    free(len);
    free(path);
    free(arcs);
    if (st != BK_OK)
        ptree_set_free(&dst->trees);
    return st;
}

enum bk_status plan_relabel(struct plan_set *s, const struct plan_roots *pr, int from,
                            const int *perm, int keep_trees, struct diag *d)
{
    BK_CHECK(bk_grow_int((void **)&s->v, &s->cap, s->n, sizeof *s->v));
    const struct plan *src = &s->v[from];
    struct plan *p = &s->v[s->n];
    *p = *src;
    p->root = src->root < 0 ? -1 : perm[src->root];
    p->relabels = from + 1;
    p->ilp_model = NULL;
    int n = s->topo->ngpus; /* GPUs are the first nodes, node g being GPU rank g */
    if (!(p->relabel_map = malloc((size_t)n * sizeof *p->relabel_map)))
        return BK_ENOMEM;
    for (int g = 0; g < n; g++)
        p->relabel_map[g] = perm[g];
    memset(&p->tune, 0, sizeof p->tune);
    ptree_set_init(&p->ring_chains);
    ptree_set_init(&p->main.trees);
    ptree_set_init(&p->pcie.trees);
    if (keep_trees) {
        enum bk_status st = map_trees(&src->main, s->topo, pr, &s->tier, pr->tier_arc, perm,
                                      &p->main, d);
        if (st != BK_OK) {
            free(p->relabel_map);
            return st;
        }
        st = src->has_hybrid ? map_trees(&src->pcie, s->topo, pr, &s->pcie_tier, pr->pcie_arc,
                                         perm, &p->pcie, d)
                             : BK_OK;
        if (st != BK_OK) {
            ptree_set_free(&p->main.trees);
            free(p->relabel_map);
            return st;
        }
    }
    s->n++;
    return BK_OK;
}
