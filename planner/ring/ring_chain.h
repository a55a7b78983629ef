/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring_chain.h - NCCL's ring algorithms written as chain trees the runtime already runs.
 *
 * A plan hands message sizes where rings beat its trees to NCCL (plan_tune.h). Where NCCL is
 * not there (the host backend, a CUDA build without NCCL) the runtime runs the same rings
 * itself, as chains along each ring of the planner's ring set (ring.h), each weighted by its
 * ring's rate:
 *   broadcast, allgather: from the root (each rank for allgather) forward round the ring;
 *   reduce, reducescatter: forward round the ring into the root (each rank), as NCCL's ring
 *                          reduce and reduce-scatter move data;
 *   allreduce:             one chain into each rank on every ring, 1/n of the ring's share each:
 *                          reduced forward into that rank, then broadcast back down the chain
 *                          (the reverse direction). Over a ring and its reverse this moves the
 *                          bytes of NCCL's reduce-scatter + all-gather.
 * Only the RING_CHAIN_MAX_RINGS heaviest rings are used: NCCL itself runs a handful of
 * channels, and the runtime gives every tree of a schedule its own streams. The trees carry
 * parents only (no arcs): they index no graph.
 */
#ifndef BK_RING_CHAIN_H
#define BK_RING_CHAIN_H

#include "core/bk.h"
#include "core/collective.h"
#include "graph/ptree.h"
#include "ring/ring.h"

#define RING_CHAIN_MAX_RINGS 2

/* The chain trees of collective c (root: broadcast and reduce) over r's heaviest rings into out
 * (which must be empty). No rings (one GPU, or none found): out stays empty. */
BK_MUST_USE
enum bk_status ring_chain_trees(const struct ring_result *r, enum collective c, int root,
                                struct ptree_set *out);

#endif
