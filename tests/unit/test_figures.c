/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_figures.c - make figures' Figure 5 computation (bench/figures_fig5.c) against the table
 * of blink-and-peers.md 6.1: isomorphism classes, classes without an NVLink ring, and the
 * broadcast and allreduce ratios of trees over rings (max; geomean, to the table's 2-3 digits);
 * and one planned (not simulated) point of Figure 9b's extension to HGX H100
 * (bench/figures_cluster.c on bench/gen_cluster.c's servers).
 */
#include <criterion/criterion.h>
#include <math.h>

#include "figures.h"

#define NEAR2(x, y) (fabs((x) - (y)) <= 0.006) /* the table rounds to 2 decimals */

Test(figures, fig5_dgx1v_matches_the_reference_table)
{
    /* GPUs 3..8: classes, no-ring classes, bcast max; geomean, allreduce max; geomean. */
    static const int classes[6] = {7, 19, 14, 10, 2, 1}, no_ring[6] = {5, 15, 8, 0, 0, 0};
    static const double bmax[6] = {1.5, 1.5, 1.5, 1.5, 1.0, 1.0};
    static const double bgm[6] = {1.22, 1.11, 1.14, 1.18, 1.0, 1.0};
    static const double amax[6] = {1.67, 1.75, 2.0, 2.08, 1.29, 1.0};
    static const double agm[6] = {1.49, 1.35, 1.69, 1.67, 1.29, 1.0};
    struct fig5_row rows[6];
    cr_assert(fig5_box("dgx1v", rows));
    for (int k = 0; k < 6; k++) {
        const struct fig5_row *r = &rows[k];
        cr_expect_eq(r->gpus, k + 3);
        cr_expect_eq(r->classes, classes[k], "%d GPUs: %d classes", k + 3, r->classes);
        cr_expect_eq(r->no_ring, no_ring[k], "%d GPUs: %d without a ring", k + 3, r->no_ring);
        cr_expect_eq(r->ratios, classes[k] - no_ring[k]);
        cr_expect(NEAR2(r->bcast_max, bmax[k]), "%d GPUs: bcast max %g", k + 3, r->bcast_max);
        cr_expect(NEAR2(r->bcast_geomean, bgm[k]), "%d GPUs: bcast geomean %g", k + 3,
                  r->bcast_geomean);
        cr_expect(NEAR2(r->ar_max, amax[k]), "%d GPUs: allreduce max %g", k + 3, r->ar_max);
        cr_expect(NEAR2(r->ar_geomean, agm[k]), "%d GPUs: allreduce geomean %g", k + 3,
                  r->ar_geomean);
    }
    /* Every allocation is counted: C(8, n). */
    cr_expect_eq(rows[0].allocs, 56);
    cr_expect_eq(rows[5].allocs, 1);
}

Test(figures, fig9b_two_hgx_h100_servers_plan_at_least_rings)
{
    /* Figure 9b extended, its cheapest point, planned but not simulated: two HGX H100 servers
     * (gen_cluster.h, 8 GPUs and 8 NICs each) at 400 Gb/s per NIC. No allreduce can beat the
     * cut between the servers: 8 NICs, each held to its PCIe Gen5 x16 slot's 48 GB/s. */
    struct sim_params p;
    sim_params_default(&p);
    struct fig9_row r;
    struct strbuf err;
    sb_init(&err);
    int ok = fig9_kind_point(GEN_HGX_H100, 2, 50, 500e6, 0, 0, &p, &r, &err);
    cr_assert(ok, "%s", err.len ? err.data : "failed");
    sb_free(&err);
    cr_expect_eq(r.gpus, 16);
    cr_expect_eq(r.nics, 16);
    cr_expect_gt(r.plan_ring_gbps, 0);
    cr_expect_geq(r.plan_gbps, r.plan_ring_gbps, "plan %g < rings %g", r.plan_gbps,
                  r.plan_ring_gbps);
    cr_expect_leq(r.plan_gbps, 8 * 48.0 + 1e-6, "plan %g above the NIC cut", r.plan_gbps);
}
