/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * mwu.h - Blink's tree packing: the Garg-Koenemann multiplicative-weights method.
 *
 * Every arc starts at length delta/c; each round adds the cheapest tree (oracle.h) at its
 * bottleneck rate and lengthens the arcs it loads by (1 + eps * load / c); the rates are finally
 * scaled down to be feasible. The result is within (1 - eps)^2 of the optimum and usually holds
 * many distinct trees; the LP and ILP stages (ilp.h) finish exactly and cut the tree count.
 *
 * PACK_ALLGATHER rounds add one tree per root, all at the same rate, so every root ends up with
 * the same total (the concurrent version of the method).
 */
#ifndef BK_MWU_H
#define BK_MWU_H

#include "core/bk.h"
#include "pack/oracle.h"
#include "graph/ptree.h"

#define MWU_DEFAULT_EPSILON 0.1

struct mwu_opts {
    double epsilon;  /* in (0, 0.5]; smaller is closer to optimal and slower */
    long max_rounds; /* safety cap on rounds; 0 means no cap */
};

struct mwu_stats {
    long rounds;     /* oracle rounds run */
    int distinct;    /* distinct tree shapes produced */
    double value;    /* packed value: sum of rates (PACK_ALLGATHER: the rate per root) */
};

/*
 * Pack trees for p (PACK_ALLREDUCE: oriented away from GPU 0; the root does not matter). The
 * merged trees (one per shape, in order of first appearance) are scaled so that on their own
 * they are feasible and the most loaded arc is full (to 1e-12), then appended to *out with
 * ptree_set_add (so a shape already in *out gets the rate added). st (may be NULL) gets the
 * statistics. Returns BK_EUSAGE for bad options (epsilon outside (0, 0.5], max_rounds < 0, bad
 * kind or broadcast root), BK_ESOLVE with fewer than 2 GPUs or when no spanning tree exists,
 * BK_ENOMEM. max_rounds stops early with a packing that is still feasible but not (1-eps)^2.
 */
BK_MUST_USE
enum bk_status mwu_pack(const struct pack_problem *p, struct oracle *o, const struct mwu_opts *opt,
                        struct ptree_set *out, struct mwu_stats *st);

#endif
