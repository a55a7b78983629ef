/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_internal.h - what plan.c and plan_pack.c share: solving one packing problem.
 */
#ifndef BK_PLAN_INTERNAL_H
#define BK_PLAN_INTERNAL_H

#include "plan/plan.h"
#include "topo/topo_auto.h"

/*
 * Pack p exactly with as few trees as possible, into out->trees with out->stats filled (kinds,
 * g, pack, bound and algbw are left to the caller). `bound` is the known optimum or bound (0 if
 * unknown) in the problem's value units (allgather: the rate per root); one-hop stars are kept
 * when they reach it. dump: where the ILP goes, or NULL.
 */
BK_MUST_USE
enum bk_status plan_pack(const struct pack_problem *p, double bound, const struct plan_opts *o,
                         struct strbuf *dump, struct plan_trees *out, struct diag *d);

/* Structured candidates (plan_shapes.c), appended to cand: one-hop stars from the root (every
 * root for allgather and allreduce), and chains through each switch plane next to the root. */
BK_MUST_USE
enum bk_status plan_stars(const struct pack_problem *p, struct ptree_set *cand);
BK_MUST_USE
enum bk_status plan_chains(const struct pack_problem *p, struct ptree_set *cand);

/* Allgather on a uniform switch plane: one or two trees per root that reach the optimum
 * (plan_plane.c); nothing on other graphs. */
BK_MUST_USE
enum bk_status plan_plane_trees(const struct pgraph *g, struct ptree_set *cand);

/* Broadcast from one root on g (reduce: on the reversed graph), in out (plan.c). */
BK_MUST_USE
enum bk_status plan_rooted(const struct pgraph *g, unsigned kinds, int root,
                           const struct plan_opts *o, struct strbuf *dump,
                           struct plan_trees *out, struct diag *d);

/* Allreduce on g: undirected trees or RS + AG, whichever is faster; pl (may be NULL) gets the
 * method and the rejected candidate's rate. ag_done: allgather trees on g to reuse, or NULL. */
BK_MUST_USE
enum bk_status plan_allreduce(const struct pgraph *g, unsigned kinds,
                              const struct plan_trees *ag_done, const struct plan_opts *o,
                              struct strbuf *dump, struct plan *pl, struct plan_trees *out,
                              struct diag *d);

/* src's trees turned round onto rg, the reverse of g (needs full-duplex links). */
/* Two candidates closer than this (relative) count as equally fast; depth then decides. */
#define PLAN_SAME_SPEED 1e-3
void plan_trees_free(struct plan_trees *pt);
/* A gather's trees (allgather; reduce-scatter on the reversed graph). */
BK_MUST_USE
enum bk_status plan_gather(const struct pgraph *g, unsigned kinds, const struct plan_opts *o,
                           struct strbuf *dump, struct plan_trees *out, struct diag *d);
/* The deepest tree of s, in edges. */
int plan_max_depth(const struct ptree_set *s);
/* What no allreduce without in-network reduction beats on g (plan_trees.c says why). */
double plan_allreduce_injection(const struct pgraph *g);
BK_MUST_USE
enum bk_status plan_copy_reversed(const struct plan_trees *src, const struct pgraph *g,
                                  const struct pgraph *rg, struct plan_trees *dst);

/* Where a root's plan can come from: another root's, relabelled by a symmetry of the
 * allocation (the GPU orbits of one server; swaps of identical servers in a cluster).
 * plan_relabel.c. */
struct plan_roots {
    struct topo_orbits orb;        /* one server */
    const int *twin;               /* several: the cluster's (plan_cluster_twins) */
    int *perm;                     /* several: the swap plan_roots_source returned */
    struct topo_link_index links;
    int *tier_arc, *pcie_arc;      /* [nlinks] the arc of each link in s's tiers, or -1 */
};

BK_MUST_USE
enum bk_status plan_roots_find(struct plan_roots *pr, const struct plan_set *s);
void plan_roots_free(struct plan_roots *pr);

/* The relabelling (node -> node) that takes root *rep's plan onto root r's, or NULL where r is
 * its own (*rep = r). Valid until the next call. */
const int *plan_roots_source(struct plan_roots *pr, const struct topo *t, int r, int *rep);

/* Append plan `from` of s relabelled by perm, an automorphism of s->topo (node -> node), with
 * relabels set; the copy's trees are checked as a packing on the allocation (BK_EINTERNAL, with
 * a diagnostic, if they are not). Without keep_trees the copy keeps the numbers only, and no
 * trees (plan_opts.numbers_only_copies). */
BK_MUST_USE
enum bk_status plan_relabel(struct plan_set *s, const struct plan_roots *pr, int from,
                            const int *perm, int keep_trees, struct diag *d);

/* Round a rate down to 1e-4 GB/s, so printed rates never add up past a capacity. */
double plan_snap_rate(double gbps);

#endif
