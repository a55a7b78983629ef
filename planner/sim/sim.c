/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim.c - the schedule simulator's front: model defaults, jobs from a plan set, dispatch, and
 * the chunk-size search.
 */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "topo/topo_rates.h"

/* The scale on NCCL's latency tables that fits the published runs best (`bench_plan calibrate
 * --fit`, with call_us and nccl_nvls_eff). */
#define FITTED_LATENCY_SCALE 2.0

void sim_params_default(struct sim_params *p)
{
    /* Both sides, from docs/calibration/nccl-published.tsv (its README gives the fit and its
     * error). The call's host cost is the grid-search fit of all rows. Efficiencies: the
     * largest published size of each generation over the planner's ring rate: Volta 135.50 /
     * 150 (oci-bmgpu38, 1 GiB allreduce), Ampere 235.43 / 300 (oci-bmgpu48, 10 GiB allreduce;
     * NCCL's own tuner once capped A100 rings at 235), Hopper 362.16 / 450 (nccl#1047, 8 GiB
     * reduce-scatter on rings); Blackwell has no published row and takes Hopper's. They are
     * what NCCL's Simple protocol (data, fence, flag per step through staging buffers, as the
     * runtime's protocol) gets from the links, so the trees' links run at them too. The host
     * cost is NCCL 2.18 and later's: older NCCL spent more per call (fitted apart, 10 us). */
    p->call_us = 5;
    p->eff[0] = 135.50 / 150;
    p->eff[1] = 235.43 / 300;
    p->eff[2] = 362.16 / 450;
    p->eff[3] = p->eff[2];
    /* Per-arc latency: NCCL's smallest per-hop latencies, its LL-protocol ring hwLat
     * (src/graph/tuning.cc: NVLink 0.6, PCI 1.0, NET 2.7 us). NCCL has no class of its own for
     * CPU-to-CPU links (SYS paths count as PCI), so SMP takes the PCI value. */
    p->alpha_us[TOPO_NVLINK] = 0.6;
    p->alpha_us[TOPO_PCIE] = 1.0;
    p->alpha_us[TOPO_SMP] = 1.0;
    p->alpha_us[TOPO_NET] = 2.7;
    /* The runtime launches one kernel per call, as NCCL does: NCCL's Simple base latency
     * (8.4 us) times the latency scale fitted to the published runs. It hands chunks over as
     * NCCL's Simple protocol steps do: NCCL's Simple NVLink step (3.4 us) less the NVLink
     * latency that alpha adds per arc. The step is per chunk, where the fitted scale (per call,
     * from small messages) has no evidence, so it stays as NCCL's table has it. */
    p->launch_us = FITTED_LATENCY_SCALE * 8.4;
    p->step_us = 3.4 - 0.6;
    /* The LL protocol's hand-over: NCCL's LL NVLink step (0.6 us, its LL hwLat) less the same
     * NVLink latency alpha adds, so an LL edge over one NVLink costs what NCCL's LL hop does.
     * No fence and no flag word are left to pay for: the receiver polls the data lines. An
     * estimate until a GPU measures the runtime's LL (executor-review.md 5, row 4, expects
     * 0.5-1 us per edge in all). */
    p->ll_step_us = 0.6 - 0.6;
    /* An out-of-place add reads two operands and writes one: a third of a V100's 900 GB/s of
     * HBM2 (NVIDIA V100 datasheet), so 300 GB/s of output. */
    p->reduce_gbps = 300.0;
    p->elem_bytes = 4; /* float, as nccl-tests runs by default */
    /* NCCL, flow-level, Simple protocol (src/graph/tuning.cc): baseLat Ring 8.4 us per
     * collective; hwLat Ring per step NVLink 3.4, PCI 5.7, NET 9.6 us (SMP counts as PCI). */
    p->nccl_launch_us = 8.4;
    p->nccl_step_us[TOPO_NVLINK] = 3.4;
    p->nccl_step_us[TOPO_PCIE] = 5.7;
    p->nccl_step_us[TOPO_SMP] = 5.7;
    p->nccl_step_us[TOPO_NET] = 9.6;
    /* NCCL's calibrated model (sim_nccl.c): the latency scale and NVLS's efficiency are the
     * grid-search fit of all rows. */
    p->nccl_lat_scale = FITTED_LATENCY_SCALE;
    p->nccl_nvls_eff = 0.65;
}

void sim_job_plan(struct sim_job *j, const struct plan_set *ps, const struct plan *pl)
{
    j->algo = SIM_TREES;
    j->topo = ps->topo;
    j->coll = pl->coll;
    j->root = pl->root;
    j->g = pl->main.g;
    j->trees = &pl->main.trees;
    j->ring = &ps->ring;
    j->memo = NULL;
    j->proto = SIM_SIMPLE;
    j->seen = NULL;
}

void sim_job_rings(struct sim_job *j, const struct plan_set *ps, enum collective c, int root,
                   enum sim_algo algo)
{
    j->algo = algo;
    j->topo = ps->topo;
    j->coll = c;
    j->root = root;
    j->g = NULL;
    j->trees = NULL;
    j->ring = &ps->ring;
    j->memo = NULL;
    j->proto = SIM_SIMPLE;
    j->seen = NULL;
}

static int params_ok(const struct sim_params *p)
{
    for (int k = 0; k < TOPO_LINK_KINDS; k++)
        if (!(p->alpha_us[k] >= 0) || !(p->nccl_step_us[k] >= 0))
            return 0;
    for (int k = 0; k < SIM_GENERATIONS; k++)
        if (!(p->eff[k] > 0 && p->eff[k] <= 1))
            return 0;
    return p->launch_us >= 0 && p->step_us >= 0 && p->ll_step_us >= 0 && p->reduce_gbps >= 0 &&
           p->nccl_launch_us >= 0 && isfinite(p->reduce_gbps) && p->call_us >= 0 &&
           isfinite(p->call_us) && p->nccl_lat_scale >= 0 && isfinite(p->nccl_lat_scale) &&
           p->nccl_nvls_eff > 0 && p->nccl_nvls_eff <= 1;
}

void sim_seen_free(struct sim_seen *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

BK_MUST_USE
static enum bk_status run_seen(const struct sim_job *j, double bytes, size_t chunk_bytes,
                               const struct sim_params *p, double *us, struct diag *d)
{
    struct sim_seen *s = j->seen;
    for (int i = 0; i < s->n; i++)
        if (s->v[i].bytes == bytes && s->v[i].chunk == chunk_bytes && s->v[i].proto == j->proto) {
            *us = s->v[i].us;
            return BK_OK;
        }
    BK_CHECK(sim_run_trees(j, bytes, chunk_bytes, p, us, d));
    BK_CHECK(bk_grow_int((void **)&s->v, &s->cap, s->n, sizeof *s->v));
    s->v[s->n++] = (struct sim_seen_run){bytes, chunk_bytes, j->proto, *us};
    return BK_OK;
}

enum bk_status sim_run(const struct sim_job *j, double bytes, size_t chunk_bytes,
                       const struct sim_params *p, double *us, struct diag *d)
{
    *us = 0;
    if (!params_ok(p) || !(bytes >= 0) || !isfinite(bytes) || !j->topo ||
        (j->root >= j->topo->ngpus) || ((j->coll == COLL_BROADCAST || j->coll == COLL_REDUCE) &&
                                        j->root < 0)) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "simulation: negative or non-finite model parameters, size or root");
        return BK_EUSAGE;
    }
    if (j->algo == SIM_TREES) {
        if (!j->g || !j->trees) {
            diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "simulation: no trees to simulate");
            return BK_EUSAGE;
        }
        return j->seen ? run_seen(j, bytes, chunk_bytes, p, us, d)
                       : sim_run_trees(j, bytes, chunk_bytes, p, us, d);
    }
    return sim_run_nccl(j, bytes, chunk_bytes, p, us, d);
}

/* The chunk sizes worth trying for a message: powers of two from SIM_CHUNK_MIN up to the
 * message rounded up (at most SIM_CHUNK_MAX, or SIM_LL_CHUNK_MAX for LL trees); chunks so small
 * that the message needs more than SIM_MAX_CHUNKS of them only pay more launches, and skipping
 * them bounds the work. */
static void chunk_bounds(const struct sim_job *j, double bytes, size_t *lo, size_t *hi)
{
    size_t max = j->algo == SIM_TREES && j->proto == SIM_LL ? SIM_LL_CHUNK_MAX : SIM_CHUNK_MAX;
    *lo = *hi = SIM_CHUNK_MIN;
    while (*hi < max && (double)*hi < bytes)
        *hi *= 2;
    while (*lo < *hi && (double)*lo * SIM_MAX_CHUNKS < bytes)
        *lo *= 2;
}

enum bk_status sim_best_chunk(const struct sim_job *j, double bytes, const struct sim_params *p,
                              size_t *chunk_bytes, double *us, struct diag *d)
{
    size_t lo, hi;
    chunk_bounds(j, bytes, &lo, &hi);
    *chunk_bytes = hi;
    *us = INFINITY;
    /* From the largest chunk down; the smallest cost the most to simulate, so the search stops
     * once two sizes in a row were worse than the best (the time falls, or stays flat while a
     * chunk exceeds every share, then rises; one step of patience rides over ripples). */
    int worse = 0;
    for (size_t c = hi; worse < 2; c /= 2) {
        double t;
        BK_CHECK(sim_run(j, bytes, c, p, &t, d));
        if (t < *us * (1 - 1e-9)) {
            *us = t;
            *chunk_bytes = c;
            worse = 0;
        } else if (t > *us * (1 + 1e-9)) {
            worse++;
        }
        if (c <= lo)
            break;
    }
    return BK_OK;
}

enum bk_status sim_chunk_near(const struct sim_job *j, double bytes, const struct sim_params *p,
                              size_t start, size_t max, size_t *chunk_bytes, double *us,
                              struct diag *d)
{
    size_t lo, hi, c = start;
    chunk_bounds(j, bytes, &lo, &hi);
    while (max && hi > max && hi > lo)
        hi /= 2;
    while (c < lo)
        c *= 2;
    while (c > hi)
        c /= 2;
    *chunk_bytes = c;
    BK_CHECK(sim_run(j, bytes, c, p, us, d));
    /* Climb towards larger chunks while that helps, else towards smaller ones. */
    for (int dir = 0; dir < 2; dir++) {
        size_t from = *chunk_bytes;
        for (size_t x = from; dir == 0 ? x < hi : x > lo;) {
            x = dir == 0 ? x * 2 : x / 2;
            double t;
            BK_CHECK(sim_run(j, bytes, x, p, &t, d));
            if (!(t < *us * (1 - 1e-9)))
                break;
            *us = t;
            *chunk_bytes = x;
        }
        if (*chunk_bytes != from)
            break;
    }
    return BK_OK;
}

enum bk_status sim_tree_plan(const struct plan_set *ps, const struct plan *pl, double bytes,
                             size_t chunk_bytes, const struct sim_params *p, double *us,
                             struct diag *d)
{
    struct sim_job j;
    sim_job_plan(&j, ps, pl);
    return sim_run(&j, bytes, chunk_bytes, p, us, d);
}

enum bk_status sim_rings(const struct plan_set *ps, enum collective c, double bytes,
                         const struct sim_params *p, struct sim_nccl *out, struct diag *d)
{
    if (!params_ok(p)) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "simulation: a model parameter is invalid");
        return BK_EUSAGE;
    }
    return sim_nccl_model(ps->topo, &ps->ring, c, bytes, p, out, d);
}
