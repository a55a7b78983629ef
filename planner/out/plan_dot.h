/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_dot.h - a plan's trees drawn for Graphviz (--dot FILE).
 */
#ifndef BK_PLAN_DOT_H
#define BK_PLAN_DOT_H

#include "plan/plan.h"
#include "core/strbuf.h"

/*
 * One digraph per plan of ps, in order: every node of the allocation (GPUs as boxes, switches,
 * CPUs and NICs as ellipses), each physical link once as a faint line, and every tree's path
 * arcs in the tree's own colour, as wide as the tree's rate allows (the widest tree 5 points).
 * Only canonical ids and numbers are written: no input text reaches the file.
 */
void plan_dot(struct strbuf *sb, const struct plan_set *ps);

#endif
