/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_explain.h - the human-readable account of a plan set (--explain, and the default job's
 * summary). Text for people, not an interface: scripts read the plan JSON.
 */
#ifndef BK_PLAN_EXPLAIN_H
#define BK_PLAN_EXPLAIN_H

#include "plan/plan.h"
#include "core/strbuf.h"

/* The table of plans (one row per plan: trees, algbw, bound, ratio, rings, speedup, method);
 * with `detail`, then for each plan the choices made, the solver stages and every tree. */
void plan_explain(struct strbuf *sb, const struct plan_set *ps, int detail);

#endif
