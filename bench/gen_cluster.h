/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * gen_cluster.h - synthetic clusters for the benchmark: N DGX-1V servers on one switch.
 */
#ifndef BENCH_GEN_CLUSTER_H
#define BENCH_GEN_CLUSTER_H

#include "strbuf.h"

/* Append a .topo text of `servers` DGX-1V servers (topologies/dgx1v.topo's machine, four
 * 100 Gb/s NICs each) joined by one non-blocking InfiniBand switch. */
void gen_dgx1v_cluster(struct strbuf *sb, int servers);

#endif
