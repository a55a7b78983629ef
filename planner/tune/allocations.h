/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * allocations.h - --all-allocations: every set of 2 or more GPUs that the topology joins,
 * planned (and tuned) one by one, for a per-SKU library whose blinkCommInitAll picks the plan
 * for whatever GPUs a scheduler hands out.
 */
#ifndef BK_ALLOCATIONS_H
#define BK_ALLOCATIONS_H

#include "core/bk.h"
#include "core/diag.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "topo/topo.h"

/* 2^12 GPU sets is the most one library holds. */
#define ALLOCATIONS_MAX_GPUS 12

struct allocations {
    int n;
    struct topo *topos;       /* [n] each allocation's restricted topology */
    struct plan_set *sets;    /* [n] its plans (sets[i].topo is &topos[i]) */
};

/* Plan every joined set of full's GPUs in ascending bit-mask order (sets the topology does not
 * join are skipped quietly); tuned on sim unless sim is NULL. Errors: BK_EUSAGE (fewer than 2
 * or more than ALLOCATIONS_MAX_GPUS GPUs, with a diagnostic), and what planning returns. */
BK_MUST_USE
enum bk_status plan_allocations(const struct topo *full, const struct plan_opts *o,
                                const struct sim_params *sim, struct allocations *out,
                                struct diag *d);
void allocations_free(struct allocations *a);

#endif
