/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * oracle.h - cheapest spanning trees under arc lengths: the step that MWU packing and LP column
 * generation both repeat.
 *
 * Tree edges are GPU-to-GPU paths through relays only, each charged separately, so the cheapest
 * tree is found exactly on the GPUs' metric closure: shortest relay paths between every GPU pair
 * (Dijkstra that never continues through a GPU), then
 *   PACK_BROADCAST / PACK_ALLGATHER: a minimum-cost arborescence from the root (Chu-Liu/Edmonds);
 *   PACK_ALLREDUCE: a minimum spanning tree (Prim) where a path costs its arcs plus their
 *                   reverse arcs, oriented away from `root`.
 * Ties are broken by lowest index everywhere, so the same lengths always give the same tree.
 */
#ifndef BK_ORACLE_H
#define BK_ORACLE_H

#include "bk.h"
#include "ptree.h"

struct oracle; /* workspace for one pgraph */

enum bk_status oracle_new(struct oracle **out, const struct pgraph *g);
void oracle_free(struct oracle *o);

/*
 * The cheapest tree for `kind` rooted at `root` under len[narcs] (each >= 0, finite). Writes a
 * fresh tree (rate 0) into *out and its cost into *cost (the sum over its load multiplicities of
 * len). Returns BK_ESOLVE when no spanning tree exists (some GPU unreachable).
 */
enum bk_status oracle_min_tree(struct oracle *o, enum pack_kind kind, int root, const double *len,
                               struct ptree *out, double *cost);

#endif
