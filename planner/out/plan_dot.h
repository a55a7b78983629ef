/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_dot.h - a plan's trees drawn for Graphviz (--dot FILE).
 */
#ifndef BK_PLAN_DOT_H
#define BK_PLAN_DOT_H

#include <stddef.h>

#include "plan/plan.h"
#include "core/strbuf.h"

/*
 * One digraph per plan of ps, in order: every node of the allocation (GPUs as boxes, the root
 * of broadcast and reduce highlighted, switches, CPUs and NICs as ellipses), each physical link
 * once as a faint line, a legend (each tree's colour, root and rate), and every tree's path arcs
 * in the tree's own colour, as wide as the tree's rate allows (the widest tree 5 points);
 * allreduce's undirected trees without arrows. Past six trees, each tree is drawn in a panel
 * of its own (a cluster with copies of the GPUs and of the switches it crosses) instead of all
 * over one another. With collapse, switches are left out and each tree edge is one line from
 * parent to child. Only canonical ids and numbers are written: no
 * input text reaches the file.
 */
void plan_dot(struct strbuf *sb, const struct plan_set *ps, int collapse);

/* Plan k alone (--dot DIR writes one file per plan). */
void plan_dot_one(struct strbuf *sb, const struct plan_set *ps, int k, int collapse);

/* Plan k's file name in --dot DIR: "broadcast-gpu4.dot", "allreduce.dot". */
void plan_dot_name(char *out, size_t cap, const struct plan_set *ps, int k);

#endif
