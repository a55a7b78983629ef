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

#include "bk.h"
#include "ptree.h"

/*
 * The common unit of g's capacities: the largest u from the set {gcd of capacities rounded to
 * 1e-6} such that every capacity is a whole multiple of u and no capacity exceeds 64 units; 0
 * when there is none (then the integral packer does not apply).
 */
double pack_integral_unit(const struct pgraph *g);

/* Pack unit-rate arborescences from p->root (p->kind must be PACK_BROADCAST, g relay-free);
 * appends them, merged by shape, to *out. */
enum bk_status pack_integral(const struct pack_problem *p, double unit, struct ptree_set *out);

#endif
