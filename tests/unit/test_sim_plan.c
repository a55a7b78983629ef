/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_sim_plan.c - the simulator on planner output: DGX-1V plans from plan_all simulated as
 * the runtime runs them, against the bandwidth each plan and the ring baseline report (going
 * down and, with the runtime's push model, going up), and determinism.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "plan/plan.h"
#include "sim/sim.h"
#include "testutil.h"

#define BIG (512.0 * 1024 * 1024)

/* DGX-1V (or an allocation of it): every collective, broadcast and reduce from rank 0. */
static void plan_alloc(const int *gpus, int n, struct topo *t, struct plan_set *ps)
{
    tu_plan_alloc("dgx1v.topo", gpus, n, (1u << COLL_COUNT) - 1, 0, t, ps);
}

/* The time bytes take at a planned rate of gbps: links run at V100's copy efficiency. */
static double at_rate(double bytes, double gbps)
{
    struct sim_params p;
    sim_params_default(&p);
    return bytes / (gbps * p.eff[0] * 1e3);
}

/* Best-chunk times of a plan's trees and of the rings. */
static void times(const struct plan_set *ps, const struct plan *pl, double bytes, double *tree,
                  double *ring)
{
    struct sim_params p;
    sim_params_default(&p);
    struct sim_job j;
    struct diag d;
    diag_init(&d);
    size_t chunk;
    sim_job_plan(&j, ps, pl);
    cr_assert_eq(sim_best_chunk(&j, bytes, &p, &chunk, tree, &d), BK_OK, "%s",
                 diag_first_error(&d));
    sim_job_rings(&j, ps, pl->coll, pl->root, SIM_RING);
    cr_assert_eq(sim_best_chunk(&j, bytes, &p, &chunk, ring, &d), BK_OK, "%s",
                 diag_first_error(&d));
    diag_free(&d);
}

Test(sim_plan, dgx1v_large_messages_run_near_the_planned_rates)
{
    /* Broadcast and allgather go down the trees only, every child pulling on its own stream,
     * so at 512 MiB they run at the planned rate plus pipeline fill and launches (the best
     * chunk balances the two: with depth d, launch o and T = M / rate, about
     * 2 sqrt((d - 1) o / T) of T, under 25% for d <= 7). The rings run at the planner's ring
     * rate the same way. */
    struct topo t;
    struct plan_set ps;
    plan_alloc(NULL, 0, &t, &ps);
    for (int c = 0; c < 2; c++) {
        const struct plan *pl = tu_find_plan(&ps, c ? COLL_ALLGATHER : COLL_BROADCAST, -1);
        double tree, ring;
        times(&ps, pl, BIG, &tree, &ring);
        double ideal = at_rate(BIG, pl->main.algbw), ring_ideal = at_rate(BIG, pl->ring_algbw);
        cr_expect(tree >= ideal && tree <= ideal * 1.3, "%s trees %g us, ideal %g",
                  collective_name(pl->coll), tree, ideal);
        cr_expect(ring >= ring_ideal && ring <= ring_ideal * 1.3, "%s rings %g us, ideal %g",
                  collective_name(pl->coll), ring, ring_ideal);
    }
    /* Going up, every child pushes its partial over its own link in parallel, so a parent of
     * fan-in k no longer takes its children in at 1/k of the rate (a parent pulling them in
     * turn put allreduce at 2.3x, reduce at 2.8x and reduce-scatter at 1.7x of the planned
     * time), and a rank reduces the next chunk while its push of this one is on the wire (its
     * reductions and pushes alternating on one stream put reduce at 1.58x, allreduce at 1.45x
     * and reduce-scatter at 1.37x). What is left is mostly pipeline fill (twice the depth for
     * allreduce): about 1.2x, 1.35x and 1.26x. Never faster than planned. */
    static const struct {
        enum collective c;
        double most;
    } up[] = {{COLL_REDUCE, 1.3}, {COLL_ALLREDUCE, 1.42}, {COLL_REDUCESCATTER, 1.32}};
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
        const struct plan *pl = tu_find_plan(&ps, up[i].c, -1);
        double tree, ring;
        times(&ps, pl, BIG, &tree, &ring);
        double ideal = at_rate(BIG, pl->main.algbw);
        cr_expect(tree >= ideal && tree <= ideal * up[i].most, "%s trees %g us, ideal %g",
                  collective_name(pl->coll), tree, ideal);
        cr_expect(ring >= at_rate(BIG, pl->ring_algbw));
    }
    plan_set_free(&ps);
    topo_free(&t);
}

Test(sim_plan, dgx1v_partial_trees_beat_rings)
{
    /* {0,2,3}: broadcast 3 links against rings' 2, allgather 4.5 against 3 (blink-and-peers
     * 6.2): 1.5x at the rate, a little less with launches and fill. */
    struct topo t;
    struct plan_set ps;
    plan_alloc((int[]){0, 2, 3}, 3, &t, &ps);
    for (int c = 0; c < 2; c++) {
        const struct plan *pl = tu_find_plan(&ps, c ? COLL_ALLGATHER : COLL_BROADCAST, -1);
        double tree, ring;
        times(&ps, pl, BIG, &tree, &ring);
        cr_expect(ring / tree > 1.4 && ring / tree <= 1.5 * 1.001, "%s: trees %g us, rings %g us",
                  collective_name(pl->coll), tree, ring);
    }
    /* Going up, children push in parallel: allreduce, reduce-scatter and reduce run within 10%
     * of their planned rate and beat the rings by 1.4x too (pulling children in turn,
     * allreduce and reduce-scatter ran at 0.84x and 0.77x of the rings; with a rank's
     * reductions and push on one stream, reduce ran at 1.25x of its planned time). */
    for (int c = 0; c < 3; c++) {
        static const enum collective up[] = {COLL_ALLREDUCE, COLL_REDUCESCATTER, COLL_REDUCE};
        const struct plan *pl = tu_find_plan(&ps, up[c], -1);
        double tree, ring;
        times(&ps, pl, BIG, &tree, &ring);
        double ideal = at_rate(BIG, pl->main.algbw);
        cr_expect(tree >= ideal && tree <= ideal * 1.1, "%s trees %g us, ideal %g",
                  collective_name(pl->coll), tree, ideal);
        cr_expect(ring / tree > 1.4, "%s: trees %g us, rings %g us", collective_name(pl->coll),
                  tree, ring);
    }
    plan_set_free(&ps);
    topo_free(&t);
}

Test(sim_plan, deterministic_and_nccl_pick)
{
    struct topo t;
    struct plan_set ps;
    plan_alloc(NULL, 0, &t, &ps);
    const struct plan *pl = tu_find_plan(&ps, COLL_ALLREDUCE, -1);
    struct sim_params p;
    sim_params_default(&p);
    struct diag d;
    diag_init(&d);
    double a, b;
    cr_assert_eq(sim_tree_plan(&ps, pl, 32e6, 1 << 20, &p, &a, &d), BK_OK);
    cr_assert_eq(sim_tree_plan(&ps, pl, 32e6, 1 << 20, &p, &b, &d), BK_OK);
    cr_expect_eq(a, b, "%.17g then %.17g", a, b);
    struct sim_nccl x, y;
    cr_assert_eq(sim_rings(&ps, COLL_ALLREDUCE, 32e6, &p, &x, &d), BK_OK);
    cr_assert_eq(sim_rings(&ps, COLL_ALLREDUCE, 32e6, &p, &y, &d), BK_OK);
    cr_expect(x.ring_us == y.ring_us && x.dbt_us == y.dbt_us);
    cr_expect(x.dbt_us > 0 && x.best_us == fmin(x.ring_us, x.dbt_us));
    /* A memo kept across collectives, sizes and parameters changes no time of the flow-level
     * NCCL, only the work. */
    struct sim_memo *memo;
    cr_assert_eq(sim_memo_new(&memo), BK_OK);
    for (int c = 0; c < COLL_COUNT; c++)
        for (double bytes = 1e3; bytes <= 1e9; bytes *= 31.6)
            for (int algo = SIM_RING; algo <= (c == COLL_ALLREDUCE ? SIM_DBT : SIM_RING); algo++) {
                struct sim_params q = p;
                q.nccl_step_us[TOPO_NVLINK] *= bytes > 1e6 ? 3 : 1; /* steps are per call */
                struct sim_job j;
                sim_job_rings(&j, &ps, (enum collective)c, 0, (enum sim_algo)algo);
                double plain, kept;
                cr_assert_eq(sim_run(&j, bytes, 1 << 16, &q, &plain, &d), BK_OK);
                j.memo = memo;
                cr_assert_eq(sim_run(&j, bytes, 1 << 16, &q, &kept, &d), BK_OK);
                cr_expect(plain == kept, "%s (algo %d) at %g B: %.17g without the memo, %.17g "
                          "with it", collective_name((enum collective)c), algo, bytes, plain, kept);
            }
    sim_memo_free(memo);
    /* A slower hand-over of each chunk can only slow the schedule down. */
    p.step_us *= 2;
    cr_assert_eq(sim_tree_plan(&ps, pl, 32e6, 1 << 20, &p, &b, &d), BK_OK);
    cr_expect_gt(b, a);
    diag_free(&d);
    plan_set_free(&ps);
    topo_free(&t);
}
