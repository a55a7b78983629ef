/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_tune.h - what each plan runs at each message size: its trees, with the chunk the
 * simulator finds fastest, or NCCL's rings where those are faster on the model.
 *
 * The Blink paper tunes the chunk at run time; blinkc does it at plan time on the simulator
 * (sim.h), so the choice is written into the generated code and shown by --explain. Sizes are
 * sampled by doubling from PLAN_TUNE_MIN_BYTES to PLAN_TUNE_MAX_BYTES. At each, the trees' best
 * chunk up to PLAN_TUNE_MAX_CHUNK is searched from the last size's (sim_chunk_near), and NCCL
 * is timed at its own best chunk (its rings, and for allreduce its double binary trees). Up to
 * PLAN_TUNE_LL_MAX_BYTES, and while it is the faster, the trees are timed with the LL protocol
 * too (chunks up to SIM_LL_CHUNK_MAX). The sizes from one sample to the next run the trees,
 * with the first sample's chunk and protocol, only where the trees beat NCCL at both ends with
 * them; where both protocols do, the faster over the interval runs. The sizes below the first
 * sample follow it, and those beyond the last follow it only while the trees' time grows no
 * faster than NCCL's. Everything else goes to NCCL. Neighbouring sizes with the same choice
 * (algorithm, chunk and protocol) merge into one range.
 *
 * Rings win where the trees' per-copy launches and pipeline fill cost more than they gain:
 * small messages, and allocations such as the full DGX-1V where rings already use every link.
 * Those sizes go to NCCL, visibly: the range says so, and so do --explain and the runtime
 * (BLINK_DEBUG=INFO). Deterministic; never prints.
 */
#ifndef BK_PLAN_TUNE_H
#define BK_PLAN_TUNE_H

#include "core/bk.h"
#include "core/diag.h"
#include "plan/plan.h"
#include "sim/sim.h"

#define PLAN_TUNE_MIN_BYTES ((double)(64 << 10))
#define PLAN_TUNE_MAX_BYTES ((double)(1 << 30))
/* The runtime stages every chunk in per-tree slots (blink_plan.h), so a chunk costs memory on
 * every rank: at most NCCL's own buffer size (NCCL_BUFFSIZE, 4 MiB). */
#define PLAN_TUNE_MAX_CHUNK ((size_t)4 << 20)
/* LL is timed up to this size (and only while it beats Simple): beyond, its doubled bytes cost
 * more than the hand-overs it saves. On DGX-1P, DGX-1V (and its allocations with an NVLink
 * ring), DGX-2, DGX A100, HGX H100 and HGX B200 no LL range starts above 1 MiB, and timing LL
 * up to 4 MiB changed none there, only the planning time.
 * It also keeps an LL call within its flags' rounds: at most 2 MiB / SIM_CHUNK_MIN = 512
 * chunks per tree, where the runtime allows BK_LL_MAX_CHUNKS (4092, runtime/core/proto.h) before
 * it falls back to Simple. */
#define PLAN_TUNE_LL_MAX_BYTES ((double)(2 << 20))
/* The hybrid set (a plan's NVLink and PCIe trees together, plan_hybrid_set) is timed from this
 * size up: below it the host-staged edges' hand-overs cost more than the PCIe share saves. */
#define PLAN_TUNE_HYBRID_MIN_BYTES ((double)(1 << 20))

/* Fill in every plan's tune (replacing what was there). Plans of several servers stay untuned
 * for now (trees at every size, the runtime's default chunk): simulating their 32 and more
 * ranks at every size takes minutes; make figures times them (Figure 9b). */
BK_MUST_USE
enum bk_status plan_tune(struct plan_set *ps, const struct sim_params *p, struct diag *d);

/*
 * plan_tune on each of sets[0..n), its plans simulated on `jobs` threads, the calling one
 * among them (tune_jobs.c). The plans do not depend on jobs; nor do the diagnostics, which come
 * in the order of the sets and their plans. On failure, that of the first plan in that order.
 */
BK_MUST_USE
enum bk_status plan_tune_sets(struct plan_set *const *sets, int n, const struct sim_params *p,
                              int jobs, struct diag *d);

/* The two halves of plan_tune: tune plan i of ps (one a symmetry does not copy; it writes
 * only that plan's tune, so plans of sets apart can be tuned at once), then copy each
 * relabelled plan's tuning from the plan it relabels. */
BK_MUST_USE
enum bk_status plan_tune_plan(struct plan_set *ps, int i, const struct sim_params *p,
                              struct diag *d);
BK_MUST_USE
enum bk_status plan_tune_copies(struct plan_set *ps);

/* The range of pl that covers a message of `bytes`; NULL when pl is not tuned. */
const struct plan_range *plan_range_at(const struct plan *pl, double bytes);

#endif
