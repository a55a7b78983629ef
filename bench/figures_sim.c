/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * figures_sim.c - Figures 6 and 7 on the schedule simulator: broadcast on every DGX-1V
 * allocation, blinkc's trees against NCCL (its calibrated cost model), and the hybrid PCIe +
 * NVLink split against NVLink alone. Only the simulator's API is used (sim.h), so a change to
 * the schedules it models changes the numbers and nothing here.
 */
#include <math.h>
#include <string.h>

#include "alloc_util.h"
#include "figures.h"
#include "plan/plan.h"

/* Plan broadcast on t from root (-1: every root), hybrid or not. 1 on success. */
static int plan_bcast(const struct topo *t, int root, int hybrid, struct plan_set *ps,
                      struct strbuf *err)
{
    struct plan_opts o;
    plan_opts_default(&o);
    o.collectives = 1u << COLL_BROADCAST;
    o.root = root;
    o.hybrid = hybrid;
    struct diag d;
    diag_init(&d);
    enum bk_status st = plan_all(t, &o, ps, &d);
    if (st != BK_OK)
        sb_printf(err, "planning broadcast: %s\n", diag_first_error(&d));
    diag_free(&d);
    return st == BK_OK;
}

/* Best-chunk time of a job, in us. 1 on success. */
static int best_time(const struct sim_job *j, double bytes, const struct sim_params *p,
                     double *us, struct strbuf *err)
{
    struct diag d;
    size_t chunk;
    diag_init(&d);
    enum bk_status st = sim_best_chunk(j, bytes, p, &chunk, us, &d);
    if (st != BK_OK)
        sb_printf(err, "simulating: %s\n", diag_first_error(&d));
    diag_free(&d);
    return st == BK_OK;
}

/* What NCCL would take for the call: its calibrated cost model (sim_rings), in us. */
static int nccl_time(const struct plan_set *ps, enum collective c, double bytes,
                     const struct sim_params *p, double *us, struct strbuf *err)
{
    struct diag d;
    struct sim_nccl nc;
    diag_init(&d);
    enum bk_status st = sim_rings(ps, c, bytes, p, &nc, &d);
    if (st != BK_OK)
        sb_printf(err, "simulating NCCL: %s\n", diag_first_error(&d));
    diag_free(&d);
    *us = nc.best_us;
    return st == BK_OK;
}

/* One class: every root of its first allocation. */
static int fig6_class(const struct topo *t, double bytes, const struct sim_params *p,
                      struct fig6_row *row, struct strbuf *err)
{
    struct plan_set ps;
    if (!plan_bcast(t, -1, 0, &ps, err))
        return 0;
    int ok = 1;
    row->gpus = t->ngpus;
    row->nvlink_ring = ps.ring.kinds == PG_NVLINK;
    row->trees_gbps = INFINITY;
    row->speedup_min = INFINITY;
    row->speedup_max = 0;
    for (int i = 0; ok && i < ps.n; i++) {
        const struct plan *pl = &ps.v[i];
        struct sim_job j;
        double tree_us, ring_us;
        sim_job_plan(&j, &ps, pl);
        ok = best_time(&j, bytes, p, &tree_us, err);
        ok = ok && nccl_time(&ps, pl->coll, bytes, p, &ring_us, err);
        if (!ok)
            break;
        double gbps = bytes / tree_us / 1e3, s = ring_us / tree_us;
        if (gbps < row->trees_gbps) {
            row->trees_gbps = gbps;
            row->ring_gbps = bytes / ring_us / 1e3;
            row->root = pl->root;
            row->speedup = s;
        }
        row->speedup_min = fmin(row->speedup_min, s);
        row->speedup_max = fmax(row->speedup_max, s);
    }
    int nplans = ps.n;
    plan_set_free(&ps);
    if (ok && nplans == 0)
        sb_printf(err, "no broadcast plan on GPUs %s\n", row->alloc);
    return ok && nplans > 0;
}

int fig6_dgx1v(double bytes, const struct sim_params *p, struct fig6_row *rows,
               struct strbuf *err)
{
    struct topo full;
    if (!alloc_read_builtin("dgx1v", &full)) {
        sb_puts(err, "cannot read builtin:dgx1v\n");
        return -1;
    }
    int nrows = 0, ok = 1;
    for (int n = 3; ok && n <= 8; n++) {
        char keys[FIG6_MAX_ROWS][65];
        int first = nrows;
        for (unsigned mask = 0; ok && mask < 256; mask++) {
            if (__builtin_popcount(mask) != n)
                continue;
            struct topo t;
            if (!alloc_restrict_mask(&full, mask, &t))
                continue;
            char key[65];
            alloc_nvlink_key(&t, key);
            int seen = 0;
            for (int c = first; c < nrows && !seen; c++)
                seen = strcmp(keys[c], key) == 0;
            if (!seen && nrows < FIG6_MAX_ROWS) {
                memcpy(keys[nrows], key, sizeof key);
                struct fig6_row *r = &rows[nrows];
                memset(r, 0, sizeof *r);
                alloc_mask_text(mask, r->alloc, sizeof r->alloc);
                ok = fig6_class(&t, bytes, p, r, err);
                nrows++;
            }
            topo_free(&t);
        }
    }
    topo_free(&full);
    return ok ? nrows : -1;
}

/* NVLink-alone and hybrid times of broadcast from rank 0 on one allocation, as the generated
 * code runs them: the plan's trees, and its trees with its PCIe trees as one set (their edges
 * host-staged: paths through the CPUs' memory), each at its best chunk. *pcie_share: the PCIe
 * trees' part of the data (their weight); 0 where the plan has none, and the hybrid time is
 * then the NVLink time. */
static int fig7_alloc(const struct topo *t, double bytes, const struct sim_params *p,
                      double *nvl_us, double *hyb_us, double *pcie_share, struct strbuf *err)
{
    struct plan_set ps;
    if (!plan_bcast(t, 0, 1, &ps, err))
        return 0;
    const struct plan *pl = &ps.v[0];
    struct sim_job j;
    sim_job_plan(&j, &ps, pl);
    int ok = best_time(&j, bytes, p, nvl_us, err);
    *hyb_us = *nvl_us;
    *pcie_share = 0;
    if (ok && pl->has_hybrid && pl->pcie.trees.n > 0) {
        struct ptree_set both;
        ok = plan_hybrid_set(&ps, pl, &j.g, &both) == BK_OK;
        j.trees = &both;
        ok = ok && best_time(&j, bytes, p, hyb_us, err);
        ptree_set_free(&both);
        *pcie_share = plan_hybrid_share(pl);
    }
    plan_set_free(&ps);
    return ok;
}

int fig7_dgx1v(double bytes, const struct sim_params *p, struct fig7_row rows[6],
               struct strbuf *err)
{
    struct topo full;
    if (!alloc_read_builtin("dgx1v", &full)) {
        sb_puts(err, "cannot read builtin:dgx1v\n");
        return 0;
    }
    int ok = 1;
    for (int n = 3; ok && n <= 8; n++) {
        struct fig7_row *r = &rows[n - 3];
        memset(r, 0, sizeof *r);
        r->gpus = n;
        for (unsigned mask = 0; ok && mask < 256; mask++) {
            if (__builtin_popcount(mask) != n)
                continue;
            struct topo t;
            if (!alloc_restrict_mask(&full, mask, &t))
                continue;
            double nvl_us, hyb_us, share;
            ok = fig7_alloc(&t, bytes, p, &nvl_us, &hyb_us, &share, err);
            topo_free(&t);
            if (!ok)
                break;
            r->allocs++;
            r->hybrid_allocs += share > 0;
            r->nvl_gbps += bytes / nvl_us / 1e3;
            r->hybrid_gbps += bytes / hyb_us / 1e3;
            r->gain += nvl_us / hyb_us;
            int wins = hyb_us * 1.02 <= nvl_us; /* plan_tune.c's TREE_MARGIN */
            r->hybrid_wins += wins;
            r->code_gain += wins ? nvl_us / hyb_us : 1;
            r->pcie_share += share;
        }
        if (r->allocs) {
            r->nvl_gbps /= r->allocs;
            r->hybrid_gbps /= r->allocs;
            r->gain /= r->allocs;
            r->code_gain /= r->allocs;
            r->pcie_share /= r->allocs;
        }
    }
    topo_free(&full);
    return ok;
}
