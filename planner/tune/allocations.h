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
 *
 * Above 16 GPUs the sets are not listed: the library holds one plan per class of the server's
 * GPU blocks (topo_gpu_blocks: the Grace pairs of a GB200 NVL72 give 701 classes of its 2^72
 * sets), and the runtime finds a job's class by the block counts of its devices.
 */
#ifndef BK_ALLOCATIONS_H
#define BK_ALLOCATIONS_H

#include "core/bk.h"
#include "core/diag.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "topo/topo.h"

/* 2^16 GPU sets is the most one library lists (DGX-2, MI250's 16 GCDs); above, classes. */
#define ALLOCATIONS_MAX_GPUS 16
/* The most classes a library by blocks holds. */
#define ALLOCATIONS_MAX_CLASSES 20000

struct allocations {
    int n;
    struct topo *topos;       /* [n] each allocation's restricted topology */
    struct plan_set *sets;    /* [n] its plans (sets[i].topo is &topos[i]); empty where
                                 same[i] != i */
    int *same;                /* [n] the allocation whose plans this one runs: itself, or the
                                 first of its class (an earlier index) */
    int *devices;             /* [n * ALLOCATIONS_MAX_GPUS] where same[i] != i: the GPU of
                                 the full topology that each rank of same[i]'s plans runs on;
                                 NULL in a library by classes */
    int classes;              /* allocations planned (same[i] == i) */
    int ndevices;             /* a library by classes: the server's GPUs; else 0 */
    int *block;               /* [ndevices] the block of each device, or NULL: the library
                                 lists every set (each allocation is one of its sets) */
};

/* Every joined set of full's GPUs in ascending bit-mask order (sets the topology does not join
 * are skipped quietly), the first of each class planned and, unless sim is NULL, tuned on sim
 * (the simulations on `jobs` threads; the library is the same for any number); above
 * ALLOCATIONS_MAX_GPUS, one set per class of the blocks, by size. Errors: BK_EUSAGE (fewer
 * than 2 GPUs, or more without blocks, or with more than ALLOCATIONS_MAX_CLASSES classes, with
 * a diagnostic), and what planning returns. */
BK_MUST_USE
enum bk_status plan_allocations(const struct topo *full, const struct plan_opts *o,
                                const struct sim_params *sim, int jobs, struct allocations *out,
                                struct diag *d);
void allocations_free(struct allocations *a);

/* full restricted to gpus[0..k) into t, quietly: BK_EINPUT where the topology does not join
 * them (such a set is no allocation, and is skipped without a word). */
BK_MUST_USE
enum bk_status allocation_restrict(const struct topo *full, const int *gpus, int k,
                                   struct topo *t);

/* alloc_classes.c: plan_allocations above ALLOCATIONS_MAX_GPUS, before tuning: out's classes
 * planned, their blocks by device. */
BK_MUST_USE
enum bk_status plan_allocation_classes(const struct topo *full, const struct plan_opts *o,
                                       struct allocations *out, struct diag *d);

#endif
