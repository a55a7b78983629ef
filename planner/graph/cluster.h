/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cluster.h - a multi-server topology seen as servers and the ports between them.
 *
 * Blink plans several servers in three phases (intra-server reduce, cross-server allreduce among
 * partition owners over their NICs, intra-server broadcast). This module gives those phases
 * what they need from the model: each server's own planning graph (its GPUs and the switches,
 * CPUs and NICs of that server, never the network), the identical-server classes so a class is
 * planned once, the ports (a NIC and a GPU next to it, with the PCIe path between them), the
 * network paths between NICs, and the capacity entering and leaving every server.
 */
#ifndef BK_CLUSTER_H
#define BK_CLUSTER_H

#include "core/bk.h"
#include "graph/pgraph.h"
#include "topo/topo.h"

/* A way in and out of a server: a GPU and its nearest NIC. */
struct cluster_port {
    int gpu;         /* cluster rank */
    int nic;         /* topology node */
    int up_off;      /* the arcs GPU -> NIC: port_arc[up_off .. up_off + up_len) */
    int up_len;
};

struct cluster_server {
    int id;          /* the topology's server number */
    int ngpus;
    int *node;       /* [nnodes] topology node of each local node; GPUs first, in rank order */
    int nnodes;
    int cls;         /* the first server with the same local graph (itself if none before) */
    struct pgraph g; /* the intra-server tier: NVLink if it joins the GPUs, else every kind but
                        the network; arcs keep the topology link index */
    struct cluster_port *ports;
    int nports;
    int *port_arc;   /* cluster-graph arcs of every port's path */
    double cap_out, cap_in; /* GB/s that can leave and enter the server (max-flows) */
};

struct cluster {
    const struct topo *t;
    const struct pgraph *g;   /* the cluster graph the composed trees index */
    int hierarchical;         /* 1 when the three phases apply (see cluster_build) */
    int nservers;             /* servers with GPUs of the allocation */
    struct cluster_server *s;
    int *server_of;           /* [ngpus] server of each rank */
    int *local_of;            /* [ngpus] local rank within its server */
    int *arc_of_link;         /* [t->nlinks] cluster-graph arc of each link, -1 if none */
    int **net_pred;           /* per topology node: BFS predecessor arcs from that NIC, lazily */
    int *net_comp;            /* [t->nnodes] a network switch's component among the switches,
                                 -1 for every other node */
};

/*
 * Split t (finalized, restricted) into servers over g, the graph of every link kind. Sets
 * c->hierarchical only when there are several servers, every server has a port and NVLink
 * joining its GPUs (or one GPU), the network joins every port to a port of every other server
 * (separate rails without a spine join only their own NICs), and g is full duplex; otherwise
 * the caller plans the allocation flat. Fails only with BK_ENOMEM.
 */
BK_MUST_USE
enum bk_status cluster_build(struct cluster *c, const struct topo *t, const struct pgraph *g);
void cluster_free(struct cluster *c);

/* 1 when the network joins NICs a and b (topology nodes): a net link between them, or switches
 * of one component that they link to. Paths end at NICs, so a NIC never relays. */
int cluster_nics_joined(const struct cluster *c, int a, int b);

/*
 * The port of server s to take data from port `from` of another server: its port want (modulo
 * its ports), or the first after it that the network joins to from's NIC; NULL if none is
 * (cluster_build plans flat where some port has none in some server).
 */
const struct cluster_port *cluster_port_toward(const struct cluster *c,
                                               const struct cluster_port *from, int s, int want);

/*
 * Append to arcs (room for g->nnodes arcs) the cluster-graph path carrying data from port a of
 * one server to port b of another: a's GPU up to its NIC, the network, b's NIC down to its GPU.
 * *len gets the arc count.
 */
BK_MUST_USE
enum bk_status cluster_cross_path(struct cluster *c, const struct cluster_port *a,
                                  const struct cluster_server *sa, const struct cluster_port *b,
                                  const struct cluster_server *sb, int *arcs, int *len);

#endif
