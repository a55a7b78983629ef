/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * maxflow.h - maximum flow (Dinic) on a pgraph, with optional extra arcs.
 *
 * Used for the planner's upper bounds (Edmonds' branching theorem: broadcast rate = min over v
 * of maxflow(root, v)) and by the integral packer's feasibility checks. Capacities are doubles
 * in GB/s; flows below MAXFLOW_EPS are treated as zero so results are stable across machines.
 */
#ifndef BK_MAXFLOW_H
#define BK_MAXFLOW_H

#include "core/bk.h"
#include "graph/pgraph.h"

#define MAXFLOW_EPS 1e-9

struct maxflow; /* reusable workspace for one graph */

/*
 * Create a workspace for g plus up to `extra_nodes` extra nodes (numbered g->nnodes...) and
 * `extra_arcs` extra arcs (added with maxflow_add_arc). Everything is allocated here, so runs
 * allocate nothing; g must outlive the workspace. One workspace serves one thread at a time.
 * Fails with BK_ENOMEM, or BK_EINTERNAL for negative counts.
 */
BK_MUST_USE
enum bk_status maxflow_new(struct maxflow **out, const struct pgraph *g, int extra_nodes,
                           int extra_arcs);
void maxflow_free(struct maxflow *m);

/* Add an extra arc u->v (u, v < g->nnodes + extra_nodes); returns its handle for
 * maxflow_set_extra_cap, 0, 1, 2... in the order added, or -1 when the workspace is full or a
 * node is out of range. Capacities <= 0 mean "no arc". */
int maxflow_add_arc(struct maxflow *m, int u, int v, double cap);
void maxflow_set_extra_cap(struct maxflow *m, int handle, double cap);

/* Override the capacity of pgraph arc a (e.g. to 0 to remove it); maxflow_reset_caps restores
 * every pgraph arc to g->cap. */
BK_MUST_USE
enum bk_status maxflow_set_cap(struct maxflow *m, int arc, double cap);
void maxflow_reset_caps(struct maxflow *m);

/*
 * Maximum flow from s to t (Dinic), from scratch with the current capacities; stops early once
 * `limit` is reached (pass INFINITY for the exact value), and then returns a value in
 * [limit - MAXFLOW_EPS, limit]. If side is not NULL (nnodes + extra_nodes entries), side[v] = 1
 * for the nodes reachable from s in the residual graph: the smallest source side of a minimum
 * cut when the limit was not reached (only a cut of value >= the flow otherwise). s == t gives 0.
 */
double maxflow_run(struct maxflow *m, int s, int t, double limit, unsigned char *side);

#endif
