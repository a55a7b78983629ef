/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_report.h - blinkc --simulate: the plans' schedules against NCCL's on the flow model, as a
 * table in the manner of nccl-tests that scripts and the figures read.
 */
#ifndef BK_SIM_REPORT_H
#define BK_SIM_REPORT_H

#include <stddef.h>

#include "plan/plan.h"
#include "sim/sim.h"
#include "core/strbuf.h"

struct sim_report_opts {
    size_t min_bytes, max_bytes; /* nccl-tests' -b and -e */
    double factor;               /* -f: each size is the previous times this (> 1) */
    struct sim_params params;
};

/* Sizes 1 MiB to 256 MiB by 4, and the model's default parameters. */
void sim_report_opts_default(struct sim_report_opts *o);

/*
 * For each plan of ps (one root per rooted collective, as planned) and each size: the best chunk,
 * the time of the plan's trees, and of NCCL's rings (and, for allreduce, double binary trees)
 * on the same model, each at its own best chunk. '#' lines first, the last naming the columns:
 *   size collective root chunk time_us algbw busbw ring_time_us ring_algbw dbt_time_us speedup
 * Sizes in bytes as nccl-tests counts them, times in us, bandwidths in GB/s (1e9 B/s); speedup
 * is NCCL's faster time over the trees'. "-" where a column does not apply.
 */
BK_MUST_USE
enum bk_status sim_report(struct strbuf *sb, const struct plan_set *ps,
                          const struct sim_report_opts *o, struct diag *d);

/* Set one parameter from "KEY=VALUE", a key blinkc(1) SIMULATION lists (us; GB/s for
 * reduce-gbps; a fraction above 0 and at most 1 for eff-* and nccl-nvls-eff). 0 and a reason
 * if invalid. */
int sim_params_set(struct sim_params *p, const char *key_value, const char **why);

#endif
