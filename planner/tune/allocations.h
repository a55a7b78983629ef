/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * allocations.h - --all-allocations: every set of 2 or more GPUs that the topology joins, for a
 * per-SKU library whose blinkCommInitAll picks the plan for whatever GPUs a scheduler hands out.
 *
 * Sets that a symmetry of the server (topo_auto.h) takes onto each other are one class: its
 * first set (the lowest bit mask) is planned and tuned, and every other set runs those plans,
 * relabelled, its ranks on the GPUs the symmetry takes the first set's onto. On an NVSwitch
 * server that leaves a few classes per size (the HGX H100: 13 of 247 sets, its PCIe tree
 * telling the rest apart), which lets one library hold every set of 16 GPUs.
 */
#ifndef BK_ALLOCATIONS_H
#define BK_ALLOCATIONS_H

#include "core/bk.h"
#include "core/diag.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "topo/topo.h"

/* 2^16 GPU sets is the most one library holds (DGX-2, MI250's 16 GCDs). */
#define ALLOCATIONS_MAX_GPUS 16

struct allocations {
    int n;
    struct topo *topos;       /* [n] each allocation's restricted topology */
    struct plan_set *sets;    /* [n] its plans (sets[i].topo is &topos[i]); empty where
                                 same[i] != i */
    int *same;                /* [n] the allocation whose plans this one runs: itself, or the
                                 first of its class (an earlier index) */
    int *devices;             /* [n * ALLOCATIONS_MAX_GPUS] where same[i] != i: the GPU of
                                 the full topology that each rank of same[i]'s plans runs on */
    int classes;              /* allocations planned (same[i] == i) */
};

/* Every joined set of full's GPUs in ascending bit-mask order (sets the topology does not join
 * are skipped quietly), the first of each class planned and, unless sim is NULL, tuned on sim
 * (the simulations on `jobs` threads; the library is the same for any number). Errors:
 * BK_EUSAGE (fewer than 2 or more than ALLOCATIONS_MAX_GPUS GPUs, with a diagnostic), and what
 * planning returns. */
BK_MUST_USE
enum bk_status plan_allocations(const struct topo *full, const struct plan_opts *o,
                                const struct sim_params *sim, int jobs, struct allocations *out,
                                struct diag *d);
void allocations_free(struct allocations *a);

#endif
