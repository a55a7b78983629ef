/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * smi_util.h - what test_smi and test_smi_input share: reading `nvidia-smi topo -m` text into a
 * topology (a fixture by its path from the source tree, or inline text), a node's PCIe parent,
 * and two topologies' graphs compared node by node and link by link (Criterion assertions).
 */
#ifndef SMI_UTIL_H
#define SMI_UTIL_H

#include "testutil.h"

/* Read the source tree's file rel (model: --gpu-model, or NULL) into t; d gets the messages. */
enum bk_status read_rel(const char *rel, const char *model, struct topo *t, struct diag *d);
/* read_rel, which must succeed. */
void read_ok(const char *rel, const char *model, struct topo *t, struct diag *d);
/* Inline smi text, which must read. */
void read_str_ok(const char *text, const char *model, struct topo *t, struct diag *d);
/* The node a GPU or NIC hangs from: its only pcie neighbour. */
int up(const struct topo *t, int n);
/* a and b: the same nodes and links, in the same order. */
void assert_same_graph(const struct topo *a, const struct topo *b);

#endif
