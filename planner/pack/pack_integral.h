/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pack_integral.h - exact integral broadcast packing (Lovasz's constructive proof of Edmonds'
 * theorem) when every capacity is a whole multiple of one unit (e.g. 25 GB/s NVLinks).
 *
 * With k = floor(bound / unit), it grows k arc-disjoint unit arborescences one arc at a time,
 * accepting arc uv only if every GPU not yet in the tree keeps max-flow >= (trees still to build)
 * from the root in what is left; Lovasz shows such an arc always exists. Used on relay-free
 * graphs, where it reaches the bound exactly with at most k trees.
 */
#ifndef BK_PACK_INTEGRAL_H
#define BK_PACK_INTEGRAL_H

#include "core/bk.h"
#include "graph/ptree.h"

/*
 * The common unit of g's capacities: the largest u from the set {gcd of capacities rounded to
 * 1e-6} such that every capacity is a whole multiple of u and no capacity exceeds 64 units; 0
 * when there is none (then the integral packer does not apply).
 */
double pack_integral_unit(const struct pgraph *g);

/*
 * Pack unit-rate arborescences from p->root (p->kind must be PACK_BROADCAST, g relay-free, unit
 * from pack_integral_unit). Capacities become round(cap / unit) units; k = min over GPUs v of
 * maxflow(root, v) on those units (= floor(bound_broadcast / unit)). Tree j takes, in
 * lowest-arc-index order, the first arc uv (u in the tree, v not, a unit left) after whose
 * removal every GPU outside the tree, v included, still has max-flow >= k - j - 1.
 * Appends the k trees (rate = unit each, trees of one shape merged, so rates are multiples of
 * unit) to *out, only once all were built; appends nothing when k = 0.
 * Errors: BK_EINTERNAL for a wrong kind, relays, unit <= 0 or a bad root (callers check first)
 * or if no arc passes (impossible by Lovasz's lemma); BK_ENOMEM.
 */
BK_MUST_USE
enum bk_status pack_integral(const struct pack_problem *p, double unit, struct ptree_set *out);

#endif
