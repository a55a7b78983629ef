/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * gen_cluster.h - synthetic clusters for the benchmark: N servers of one kind on one switch.
 */
#ifndef BENCH_GEN_CLUSTER_H
#define BENCH_GEN_CLUSTER_H

#include "core/strbuf.h"

/* The server a generated cluster is made of. */
enum gen_server {
    GEN_DGX1V,   /* topologies/dgx1v.topo's machine: 8x V100 cube-mesh, four 100 Gb/s NICs */
    GEN_HGX_H100 /* topologies/hgx-h100.topo's machine: 8x H100, 4 NVSwitches, eight 400 Gb/s NICs */
};

/* "dgx1v", "hgx-h100". */
const char *gen_server_name(enum gen_server kind);

/* NICs per server: 4 (DGX-1V), 8 (HGX H100). */
int gen_server_nics(enum gen_server kind);

/* Append a .topo text of `servers` servers of `kind` joined by one non-blocking InfiniBand
 * switch (ib0), each server's names prefixed with "sK.". nic_gbps 0: the NICs at their built
 * rate (DGX-1V 100 Gb/s, HGX H100 400 Gb/s). Otherwise every NIC's line rate is nic_gbps GB/s
 * per direction; on DGX-1V its PCIe slot is given the same rate (as Figure 9b has always done),
 * while on HGX H100 the slot stays what the server has, PCIe Gen5 x16 (48 GB/s). */
void gen_cluster(struct strbuf *sb, enum gen_server kind, int servers, double nic_gbps);

/* gen_cluster(sb, GEN_DGX1V, servers, nic_gbps), byte for byte what it has always written. */
void gen_dgx1v_cluster(struct strbuf *sb, int servers, double nic_gbps);

#endif
