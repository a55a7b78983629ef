/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * bound.h - the physical limits every plan is measured against, computed from max-flows alone,
 * independently of the tree packers. All values are algorithm bandwidths in GB/s.
 *
 *   broadcast from r:   min over GPUs v != r of maxflow(r, v)   (Edmonds' branching theorem);
 *   reduce to r:        the same on the reversed graph;
 *   allgather:          n * R*, R* = min over node sets S holding some but not all GPUs of
 *                       B+(S) / |S n GPUs|  (ForestColl's optimum);
 *   reduce-scatter:     the same on the reversed graph.
 * Relays (switches, CPUs, NICs) carry flow but need not receive data.
 */
#ifndef BK_BOUND_H
#define BK_BOUND_H

#include "core/bk.h"
#include "graph/pgraph.h"

/* Broadcast bound from GPU `root`; 0 when some GPU is unreachable, and 0 with a single GPU
 * (nothing to send: callers handle n = 1 themselves). BK_EINTERNAL for a root out of range;
 * otherwise fails only with BK_ENOMEM. */
BK_MUST_USE
enum bk_status bound_broadcast(const struct pgraph *g, int root, double *gbps);

/* The smallest broadcast bound over all roots (the global min cut between GPUs), with 2(n-1)
 * max-flows, from and to GPU 0; 0 with a single GPU. sinks (NULL for all): the GPUs v to take
 * those max-flows with, where every other GPU is the image of one of them under a symmetry of
 * g that fixes GPU 0 (so its flows are the same). */
BK_MUST_USE
enum bk_status bound_broadcast_min(const struct pgraph *g, const unsigned char *sinks,
                                   double *gbps);

/* Allgather bound n * R* (exact: Newton-Dinkelbach iteration on super-source max-flows, see
 * bound.c); 0 when the GPUs are not strongly connected, and 0 with a single GPU. BK_EINTERNAL if
 * the iteration fails to settle (a bug). */
BK_MUST_USE
enum bk_status bound_allgather(const struct pgraph *g, double *gbps);

/* min(upper, bound_allgather): the same iteration started from upper (an upper bound known
 * already, such as a cut's; INFINITY for none), so a good one leaves a single round of n
 * max-flows, which proves it, where the iteration would take several from a GPU's own rate.
 * sinks (NULL for all): the GPUs to take a round's max-flows to, where every other GPU is the
 * image of one of them under a symmetry of g (the source feeds every GPU alike). */
BK_MUST_USE
enum bk_status bound_allgather_below(const struct pgraph *g, double upper,
                                     const unsigned char *sinks, double *gbps);

#endif
