/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_join.h - a cluster made from server topologies: copies of finalized one-server models
 * (from any reader), their names prefixed per server, every NIC joined by one net link to a
 * single non-blocking network switch. `blinkc --servers N` replicates one server this way and
 * the cluster file (topo_cluster.c) joins the servers it names.
 *
 * It works on the normalised model, after the readers, so hwloc XML, NCCL XML and nvidia-smi
 * servers join as well as .topo ones; the result is what a hand-written multi-server .topo
 * (blinkc-topology(5), Servers) gives for the same machines. It never prints.
 */
#ifndef BK_TOPO_JOIN_H
#define BK_TOPO_JOIN_H

#include <stddef.h>

#include "core/bk.h"
#include "core/diag.h"
#include "topo/topo.h"
#include "topo/topo_rates.h"

/* Servers per cluster. Each has a GPU and the planner refuses more than 1024 GPUs in all, so a
 * larger cluster could never be planned; the cap also bounds the copy before planning starts. */
#define TOPO_JOIN_MAX_SERVERS 1024
/* Nodes of the whole cluster: keeps counts and allocations far from int overflow whatever the
 * server (a 64 MiB input can declare about a million nodes). */
#define TOPO_JOIN_MAX_NODES (1 << 20)

/* The name of the network switch the join adds (server 0's, as in a hand-written file). */
#define TOPO_JOIN_SWITCH "net0"

struct topo_join_server {
    const struct topo *t;        /* finalized, fit (topo_join_unfit) */
    const char *prefix;          /* its nodes are named PREFIX.NAME */
    const struct diag_loc *at;   /* every node and link declared here, or NULL: keep their own
                                    (when the cluster's source is the server's file) */
};

struct topo_join_opts {
    const char *file;            /* where the cluster is described, for errors (NULL: the */
    struct diag_loc loc;         /* command line) */
    double nic_gbps;             /* every NIC's line rate, GB/s; 0: each NIC's own, else
                                    rates->net */
    const struct topo_rates *rates;
    /* Where the rate was set, for the note on NICs their PCIe link caps: e.g. "--nic-gbps 100"
       with file NULL, or "nic-speed 400Gb/s" at a cluster file's line. */
    const char *rate_what;
    const char *rate_file;
    struct diag_loc rate_loc;
};

/*
 * Why t cannot be one server of a cluster (it describes several servers, already has a network,
 * or has no NIC), written to why; 0 when it can.
 */
int topo_join_unfit(const struct topo *t, char *why, size_t cap);

/*
 * Add the n servers to out (initialised and empty; the caller names it and finalizes): server k
 * becomes server k, GPUs numbered server by server in each server's own order, then the switch
 * and one net link per NIC. Records a note when the NIC rate exceeds some NIC's PCIe link. Fails
 * with BK_ENOMEM, BK_EINPUT (too many nodes, with an error) or BK_EINTERNAL.
 */
BK_MUST_USE
enum bk_status topo_join(const struct topo_join_server *s, int n, const struct topo_join_opts *o,
                         struct topo *out, struct diag *d);

/*
 * --servers: n copies of the finalized topology `server` (prefixes s0, s1, ...), named
 * "cluster-<n>x-<name>" and finalized into out. A bad n or an unfit server is a usage error
 * (BK_EUSAGE, with a diagnostic).
 */
BK_MUST_USE
enum bk_status topo_replicate(const struct topo *server, int n, const struct topo_join_opts *o,
                              struct topo *out, struct diag *d);

#endif
