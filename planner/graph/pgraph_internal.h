/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pgraph_internal.h - what the graph builders (pgraph.c, pgraph_staged.c) share.
 */
#ifndef BK_PGRAPH_INTERNAL_H
#define BK_PGRAPH_INTERNAL_H

#include "graph/pgraph.h"

/* Arrays for nnodes nodes and narcs arcs (node stays NULL); frees g on failure. */
BK_MUST_USE
enum bk_status pgraph_alloc_arrays(struct pgraph *g, int nnodes, int narcs);

/* The CSR lists from src and dst (arcs in index order within each node's list). */
void pgraph_build_adjacency(struct pgraph *g);

#endif
