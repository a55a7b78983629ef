/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_internal.h - what plan.c and plan_pack.c share: solving one packing problem.
 */
#ifndef BK_PLAN_INTERNAL_H
#define BK_PLAN_INTERNAL_H

#include "plan/plan.h"

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
BK_MUST_USE
enum bk_status plan_copy_reversed(const struct plan_trees *src, const struct pgraph *g,
                                  const struct pgraph *rg, struct plan_trees *dst);

/* Append plan `from` of s relabelled by perm, an automorphism of s->topo (node -> node), with
 * relabels set; the copy's trees are checked as a packing on the allocation (BK_EINTERNAL, with
 * a diagnostic, if they are not). plan_relabel.c. */
BK_MUST_USE
enum bk_status plan_relabel(struct plan_set *s, int from, const int *perm, struct diag *d);

/* Round a rate down to 1e-4 GB/s, so printed rates never add up past a capacity. */
double plan_snap_rate(double gbps);

#endif
