/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_cluster.h - Blink's three phases for several servers, composed into trees over the whole
 * cluster.
 *
 * Each data partition becomes one tree of the cluster: an intra-server tree in every server,
 * joined through one GPU per server (the partition's owner there) and its NIC. Reducing up such
 * a tree and broadcasting back down is exactly Blink's intra-server reduce, cross-server
 * allreduce among the owners, and intra-server broadcast, pipelined per partition; the plan file
 * can then state and check it like any other plan.
 *  - allreduce: per partition, a one-hop star among the owners, each server the hub of 1/S of
 *    the data (reduce-scatter + all-gather across servers), owners rotated over the ports;
 *  - broadcast (reduce mirrored): the root's server broadcasts inside, and a chain of NICs
 *    carries each partition through the other servers, which broadcast inside from its owner;
 *  - allgather (reduce-scatter mirrored): one such chain tree per root.
 * Identical servers are planned once.
 */
#ifndef BK_PLAN_CLUSTER_H
#define BK_PLAN_CLUSTER_H

#include "plan/plan.h"

struct plan_cluster;

/* *out = NULL when t is one server or cannot be planned in phases (then plan it flat). */
BK_MUST_USE
enum bk_status plan_cluster_new(struct plan_cluster **out, const struct topo *t,
                                const struct pgraph *g);
void plan_cluster_free(struct plan_cluster *pc);

/* twin[sv] for each server of the topology: topo_server_twins. */
const int *plan_cluster_twins(const struct plan_cluster *pc);

/* Plan pl->coll (root pl->root) on g, the cluster graph, and rg, its reverse. */
BK_MUST_USE
enum bk_status plan_cluster_tier(struct plan_cluster *pc, struct plan *pl,
                                 const struct pgraph *rg, const struct plan_opts *o,
                                 struct plan_trees *out, struct diag *d);

#endif
