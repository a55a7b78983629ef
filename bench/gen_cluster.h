/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * gen_cluster.h - synthetic clusters for the benchmark: N DGX-1V servers on one switch.
 */
#ifndef BENCH_GEN_CLUSTER_H
#define BENCH_GEN_CLUSTER_H

#include "strbuf.h"

/* Append a .topo text of `servers` DGX-1V servers (topologies/dgx1v.topo's machine, four NICs
 * each) joined by one non-blocking InfiniBand switch. nic_gbps 0: 100 Gb/s EDR NICs behind
 * their PCIe Gen3 x16 slots, as built; otherwise every NIC, and its PCIe slot, at nic_gbps
 * GB/s per direction. */
void gen_dgx1v_cluster(struct strbuf *sb, int servers, double nic_gbps);

#endif
