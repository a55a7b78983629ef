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
 * Ties are broken by lowest index everywhere, so the same lengths always give the same tree:
 * among equally long paths the one with fewer arcs, then the lowest last arc; among equally cheap
 * in-edges the lowest source GPU. Edmonds is dense, O(n^3) at worst (a few ms at 256 GPUs).
 */
#ifndef BK_ORACLE_H
#define BK_ORACLE_H

#include "core/bk.h"
#include "graph/ptree.h"

struct oracle; /* workspace for one pgraph */

/*
 * Workspace for g (O(ngpus * nnodes + ngpus^2) memory), reused by every call; g must outlive it
 * and stay unchanged. Returns BK_ENOMEM, or BK_EINTERNAL for a malformed graph.
 */
BK_MUST_USE
enum bk_status oracle_new(struct oracle **out, const struct pgraph *g);
void oracle_free(struct oracle *o); /* NULL is fine */

/*
 * The cheapest tree for `kind` rooted at `root` under len[narcs] (each >= 0, finite). Writes a
 * fresh tree (rate 0) into *out and its cost into *cost (the sum over its load multiplicities of
 * len, so both directions for PACK_ALLREDUCE). PACK_ALLREDUCE uses only arcs with a reverse arc
 * (an undirected edge needs both). Only *out is allocated per call (the caller frees it with
 * ptree_free); the closure is kept and reused while len's contents and the kind's directedness
 * stay the same, so asking for every root under one set of lengths costs one closure.
 * Returns BK_ESOLVE when no spanning tree exists (some GPU unreachable), BK_EINTERNAL for a bad
 * root, kind or length, BK_ENOMEM. On failure *out is left empty (zeroed).
 */
BK_MUST_USE
enum bk_status oracle_min_tree(struct oracle *o, enum pack_kind kind, int root, const double *len,
                               struct ptree *out, double *cost);

#endif
