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

#include "bk.h"
#include "pgraph.h"

#define MAXFLOW_EPS 1e-9

struct maxflow; /* reusable workspace for one graph */

/*
 * Create a workspace for g plus up to `extra_nodes` extra nodes (numbered g->nnodes...) and
 * `extra_arcs` extra arcs (added with maxflow_add_arc). Fails only with BK_ENOMEM.
 */
enum bk_status maxflow_new(struct maxflow **out, const struct pgraph *g, int extra_nodes,
                           int extra_arcs);
void maxflow_free(struct maxflow *m);

/* Add an extra arc u->v; returns its handle (>= 0) for maxflow_set_extra_cap, or -1 when the
 * workspace is full. */
int maxflow_add_arc(struct maxflow *m, int u, int v, double cap);
void maxflow_set_extra_cap(struct maxflow *m, int handle, double cap);

/* Override the capacity of pgraph arc a (e.g. to 0 to remove it); maxflow_reset_caps restores
 * every pgraph arc to g->cap. */
void maxflow_set_cap(struct maxflow *m, int arc, double cap);
void maxflow_reset_caps(struct maxflow *m);

/*
 * Maximum flow from s to t; stops early once `limit` is reached (pass INFINITY for the exact
 * value). If side is not NULL, side[v] = 1 for nodes on the source side of a minimum cut
 * (meaningful when the limit was not reached).
 */
double maxflow_run(struct maxflow *m, int s, int t, double limit, unsigned char *side);

#endif
