/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_json.h - the --plan-json document (contract: shared/spec/plan-json.md).
 *
 * This stage renders a finalized (and possibly restricted) topology and the plans computed for
 * it into memory; outfile.c writes the result atomically. It reads the model and never changes it.
 */
#ifndef BK_PLAN_JSON_H
#define BK_PLAN_JSON_H

#include "plan/plan.h"
#include "core/strbuf.h"
#include "topo/topo.h"

/* Render the whole document; ps may be NULL (no plans: "plans": []). */
void plan_json_render(struct strbuf *sb, const struct topo *t, const struct plan_set *ps);

/* Only the "plans" array (plan_json_plans.c). */
void plan_json_plans(struct strbuf *sb, const struct plan_set *ps);

/* Only the "topology" object, at the given indentation (two spaces per level). */
void plan_json_topology(struct strbuf *sb, const struct topo *t, int indent);

#endif
