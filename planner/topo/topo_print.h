/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_print.h - human-readable views of a topology: the nvidia-smi-style matrix and link list
 * (--print-topology) and the one-paragraph summary of what was read.
 *
 * Text for people, not an interface: scripts use the plan JSON.
 */
#ifndef BK_TOPO_PRINT_H
#define BK_TOPO_PRINT_H

#include "core/strbuf.h"
#include "topo/topo.h"

/* The legend code between two nodes (GPUs or NICs): X, NV#, PIX, PXB, PHB, SYS or NET. */
void topo_relation(const struct topo *t, int a, int b, char *buf, size_t cap);

/* Matrix over GPUs and NICs in `nvidia-smi topo -m` layout, legend, then every link pair. */
void topo_print_matrix(struct strbuf *sb, const struct topo *t);

/* A short summary: format, servers, node counts, link totals, per-GPU NVLink budget. */
void topo_print_summary(struct strbuf *sb, const struct topo *t);

#endif
