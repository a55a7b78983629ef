/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pgraph.h - the planning graph: the part of a topology one tree set may use, as compact arrays.
 *
 * Node indices are the topology's own (GPUs first, in rank order, so GPU rank k is node k); every
 * other node is a relay. Arcs are the topology's directed links whose kind is in the chosen mask,
 * with their capacity in GB/s. CSR adjacency lists make every traversal O(arcs). The graph is
 * immutable once built; the planner stages only read it.
 */
#ifndef BK_PGRAPH_H
#define BK_PGRAPH_H

#include "core/bk.h"
#include "topo/topo.h"

/* Link-kind masks. */
#define PG_KIND(k) (1u << (k))
#define PG_NVLINK PG_KIND(TOPO_NVLINK)
#define PG_PCIE_TIER (PG_KIND(TOPO_PCIE) | PG_KIND(TOPO_SMP))
#define PG_ALL_KINDS ((1u << TOPO_LINK_KINDS) - 1u)

struct pgraph {
    int nnodes;   /* all topology nodes */
    int ngpus;    /* nodes 0..ngpus-1 are the GPUs, in rank order */
    int narcs;
    unsigned kinds;  /* the link-kind mask the arcs were taken with */
    int *src, *dst;  /* [narcs] endpoints */
    double *cap;     /* [narcs] GB/s, > 0 */
    int *rev;        /* [narcs] the arc dst->src of the same kind, or -1 */
    int *link;       /* [narcs] index into the topology's links */
    int *node;       /* [nnodes] the topology node each node stands for; NULL where node v is
                        the topology's node v (every graph but a staged one) */
    int *out_off, *out_arc; /* node v's out-arcs: out_arc[out_off[v] .. out_off[v+1]) */
    int *in_off, *in_arc;   /* node v's in-arcs, the same way */
};

/* Take the arcs of t whose kind is in `kinds`. Fails only with BK_ENOMEM. */
BK_MUST_USE
enum bk_status pgraph_build(struct pgraph *g, const struct topo *t, unsigned kinds);

/* The part of t on the nodes node[0..nnodes) (the first ngpus of them GPUs, in rank order),
 * renumbered 0..nnodes-1 in that order; arcs keep t's link index in `link`. */
BK_MUST_USE
enum bk_status pgraph_build_part(struct pgraph *g, const struct topo *t, unsigned kinds,
                                 const int *node, int nnodes, int ngpus);

/* The tier a host-staged edge crosses (pgraph_staged.c): the arcs of t whose kind is in
 * `kinds`, with every PCIe switch below a CPU split into an up half, which takes the links from
 * below it and leads towards the CPU, and a down half, which takes the links from above and
 * leads down. A path from GPU to GPU then turns in a CPU's memory, where a host-staged slot
 * lives, instead of crossing the switch peer to peer. The down halves are nodes t->nnodes on
 * (node[] names their switch); arcs keep t's link index, and each arc's reverse is its link's
 * reverse. Fails only with BK_ENOMEM. */
BK_MUST_USE
enum bk_status pgraph_build_staged(struct pgraph *g, const struct topo *t, unsigned kinds);

/* The graph a tree set of link kinds `kinds` may use: pgraph_build's, or where PCIe links are
 * among the kinds and some GPU of t has no peer access (topo_no_p2p), pgraph_build_staged's, so
 * that every path between GPUs over PCIe turns in host memory as the runtime moves it. */
BK_MUST_USE
enum bk_status pgraph_build_tier(struct pgraph *g, const struct topo *t, unsigned kinds);

/* The topology node graph node v stands for. */
static inline int pgraph_node(const struct pgraph *g, int v) { return g->node ? g->node[v] : v; }

/* The same graph with every arc turned round (reduce and reduce-scatter plan on it). Arc i of
 * out is arc i of g reversed, so loads map one to one. */
BK_MUST_USE
enum bk_status pgraph_reverse(struct pgraph *out, const struct pgraph *g);

void pgraph_free(struct pgraph *g);

/* 1 when every arc has a reverse arc of equal capacity (full-duplex links, the usual case). */
int pgraph_is_symmetric(const struct pgraph *g);

/* 1 when every GPU can reach every other GPU through arcs of the graph. */
int pgraph_gpus_connected(const struct pgraph *g);

/* 1 when some arc touches a non-GPU node (switches, CPUs or NICs relay traffic). */
int pgraph_has_relays(const struct pgraph *g);

/* A uniform switch plane: every GPU has one arc of the same capacity each way to each of the
 * same m switches, and there is nothing else. Returns m and fills the switches in GPU 0's arc
 * order into sw[m], the arc GPU v -> switch k into to[v*m+k] and the arc back into
 * from[k*n+v]; 0 when g is no such plane (sw, to, from then hold nothing useful). */
int pgraph_uniform_plane(const struct pgraph *g, int *sw, int *to, int *from);

#endif
