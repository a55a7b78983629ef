/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_tune.c - the per-size choice (plan_tune.h) and NCCL's rings as chain trees
 * (ring_chain.h). On the model a tuned plan is never slower than NCCL from 1 MiB up, at sizes
 * between and beyond the sampled ones too; the ranges are well formed; where theory says
 * rings cannot be beaten (allreduce on the full DGX-1V: Nash-Williams' 600 / 7 GB/s equals the
 * rings' 150 x 8 / 14) the plan hands those sizes to NCCL, and where trees have more bandwidth
 * ({0,2,3}: 62.5 against 37.5 GB/s) it keeps them; the chains move data as NCCL's rings do.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "plan/plan.h"
#include "tune/plan_tune.h"
#include "ring/ring_chain.h"
#include "sim/sim.h"
#include "testutil.h"

#define ALL_COLLS ((1u << COLL_COUNT) - 1)

/* NCCL's time on the model the tuning compares with: its calibrated cost model (sim_nccl.c),
 * the fastest of its algorithms and protocols. */
static double nccl_us(const struct plan_set *ps, const struct plan *pl, double bytes,
                      const struct sim_params *sp)
{
    struct sim_nccl nc;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(sim_rings(ps, pl->coll, bytes, sp, &nc, &d), BK_OK);
    diag_free(&d);
    cr_assert(isfinite(nc.best_us) && nc.best_us > 0);
    return nc.best_us;
}

/* What the plan runs at this size, and its time; *trees says whether that is the trees (alone,
 * or with the hybrid's PCIe trees). */
static double plan_us(const struct plan_set *ps, const struct plan *pl, double bytes,
                      const struct sim_params *sp, int *trees)
{
    const struct plan_range *r = plan_range_at(pl, bytes);
    cr_assert_not_null(r);
    *trees = r->algo != PLAN_ALGO_RINGS;
    if (!*trees)
        return nccl_us(ps, pl, bytes, sp);
    double us;
    struct diag d;
    diag_init(&d);
    struct sim_job j;
    struct ptree_set both;
    ptree_set_init(&both);
    sim_job_plan(&j, ps, pl);
    if (r->algo == PLAN_ALGO_HYBRID) {
        cr_assert_eq(plan_hybrid_set(ps, pl, &j.g, &both), BK_OK);
        cr_assert_eq(both.n, pl->main.trees.n + pl->pcie.trees.n);
        j.trees = &both;
    }
    j.proto = r->proto == PLAN_PROTO_LL ? SIM_LL : SIM_SIMPLE;
    cr_assert_eq(sim_run(&j, bytes, r->chunk_bytes, sp, &us, &d), BK_OK);
    ptree_set_free(&both);
    diag_free(&d);
    return us;
}

static void plan_tuned(const int *gpus, int n, unsigned colls, struct topo *t,
                       struct plan_set *ps, struct sim_params *sp)
{
    struct diag d;
    diag_init(&d);
    sim_params_default(sp);
    tu_plan_alloc("dgx1v.topo", gpus, n, colls, 0, t, ps);
    cr_assert_eq(plan_tune(ps, sp, &d), BK_OK);
    diag_free(&d);
    for (int i = 0; i < ps->n; i++) {
        const struct plan_tuning *tu = &ps->v[i].tune;
        cr_assert_gt(tu->n, 0);
        cr_expect_eq(tu->r[0].min_bytes, 0);
        for (int k = 1; k < tu->n; k++) {
            cr_expect_gt(tu->r[k].min_bytes, tu->r[k - 1].min_bytes);
            cr_expect(tu->r[k].algo != tu->r[k - 1].algo ||
                      tu->r[k].chunk_bytes != tu->r[k - 1].chunk_bytes ||
                      tu->r[k].proto != tu->r[k - 1].proto, "unmerged ranges");
        }
        for (int k = 0; k < tu->n; k++) {
            size_t max = tu->r[k].proto == PLAN_PROTO_LL ? SIM_LL_CHUNK_MAX : PLAN_TUNE_MAX_CHUNK;
            cr_expect(tu->r[k].chunk_bytes >= SIM_CHUNK_MIN && tu->r[k].chunk_bytes <= max &&
                      !(tu->r[k].chunk_bytes & (tu->r[k].chunk_bytes - 1)), "chunk %zu",
                      tu->r[k].chunk_bytes);
            /* LL only where it was timed, on trees: rings ranges keep Simple. */
            cr_expect(tu->r[k].proto == PLAN_PROTO_SIMPLE ||
                      (tu->r[k].algo == PLAN_ALGO_TREES &&
                       tu->r[k].at_bytes <= PLAN_TUNE_LL_MAX_BYTES), "LL range at %.0f",
                      tu->r[k].at_bytes);
        }
    }
}

/* Every collective (broadcast and reduce from rank 0) at 1 MiB x 2^(k/2) up to 2 GiB: between
 * the samples, on them and beyond the last. Returns how many (plan, size) pairs ran trees. */
static int never_slower(const int *gpus, int n)
{
    struct topo t;
    struct plan_set ps;
    struct sim_params sp;
    plan_tuned(gpus, n, ALL_COLLS, &t, &ps, &sp);
    int tree_rows = 0;
    for (int i = 0; i < ps.n; i++)
        for (int k = 0; k <= 22; k++) {
            double bytes = floor(1048576.0 * pow(2, k / 2.0) / 64) * 64;
            int trees;
            double mine = plan_us(&ps, &ps.v[i], bytes, &sp, &trees);
            double nccl = nccl_us(&ps, &ps.v[i], bytes, &sp);
            tree_rows += trees;
            cr_expect_leq(mine, nccl * (1 + 1e-9), "%d GPUs, %s root %d at %.0f bytes: %s %.2f "
                          "us, NCCL %.2f us", n, collective_name(ps.v[i].coll), ps.v[i].root,
                          bytes, trees ? "trees" : "rings", mine, nccl);
        }
    plan_set_free(&ps);
    topo_free(&t);
    return tree_rows;
}

Test(tune, full_dgx1v_never_slower_than_nccl, .timeout = 600)
{
    never_slower(NULL, 0);
}

Test(tune, partial_dgx1v_never_slower_and_trees_used, .timeout = 600)
{
    cr_expect_gt(never_slower((const int[]){0, 2, 3}, 3), 0);
    cr_expect_gt(never_slower((const int[]){0, 1, 4, 5, 6}, 5), 0);
}

Test(tune, rings_where_theory_says_so_trees_where_they_have_bandwidth, .timeout = 300)
{
    struct topo t;
    struct plan_set ps;
    struct sim_params sp;
    unsigned ar = 1u << COLL_ALLREDUCE;
    plan_tuned(NULL, 0, ar, &t, &ps, &sp);
    const struct plan *pl = tu_find_plan(&ps, COLL_ALLREDUCE, -1);
    for (double b = 1 << 20; b <= (double)(1u << 31); b *= 2)
        cr_expect_eq(plan_range_at(pl, b)->algo, PLAN_ALGO_RINGS, "full DGX-1V at %.0f", b);
    plan_set_free(&ps);
    topo_free(&t);
    plan_tuned((const int[]){0, 2, 3}, 3, ar, &t, &ps, &sp);
    pl = tu_find_plan(&ps, COLL_ALLREDUCE, -1);
    for (double b = 4 << 20; b <= (double)(1u << 31); b *= 2) /* alone, or with PCIe trees */
        cr_expect_neq(plan_range_at(pl, b)->algo, PLAN_ALGO_RINGS, "{0,2,3} at %.0f", b);
    plan_set_free(&ps);
    topo_free(&t);
}

/* The simulated time of pl's trees at `bytes` with the protocol's own best chunk. */
static double best_us(const struct plan_set *ps, const struct plan *pl, enum sim_proto proto,
                      double bytes, const struct sim_params *sp)
{
    struct sim_job j;
    sim_job_plan(&j, ps, pl);
    j.proto = proto;
    size_t chunk;
    double us;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(sim_best_chunk(&j, bytes, sp, &chunk, &us, &d), BK_OK);
    diag_free(&d);
    return us;
}

/* LL's hand-overs cost less and its bytes twice as much: on the model, {0,2,3}'s allreduce
 * trees run faster with LL at 64 KiB and slower at 64 MiB, and where that makes the trees
 * beat NCCL the plan runs them with LL ({0,1,2,4,5}: small sizes) and Simple beyond. */
Test(tune, ll_at_small_sizes_simple_at_large, .timeout = 300)
{
    struct topo t;
    struct plan_set ps;
    struct sim_params sp;
    unsigned ar = 1u << COLL_ALLREDUCE;
    plan_tuned((const int[]){0, 2, 3}, 3, ar, &t, &ps, &sp);
    const struct plan *pl = tu_find_plan(&ps, COLL_ALLREDUCE, -1);
    cr_expect_lt(best_us(&ps, pl, SIM_LL, 64 << 10, &sp),
                 best_us(&ps, pl, SIM_SIMPLE, 64 << 10, &sp));
    cr_expect_gt(best_us(&ps, pl, SIM_LL, 64 << 20, &sp),
                 best_us(&ps, pl, SIM_SIMPLE, 64 << 20, &sp));
    for (double b = 4 << 20; b <= (double)(1u << 30); b *= 2)
        cr_expect_eq(plan_range_at(pl, b)->proto, PLAN_PROTO_SIMPLE, "{0,2,3} at %.0f", b);
    plan_set_free(&ps);
    topo_free(&t);
    plan_tuned((const int[]){0, 1, 2, 4, 5}, 5, ar, &t, &ps, &sp);
    pl = tu_find_plan(&ps, COLL_ALLREDUCE, -1);
    for (double b = 0; b <= 256 << 10; b += 64 << 10) {
        const struct plan_range *r = plan_range_at(pl, b);
        cr_expect(r->algo == PLAN_ALGO_TREES && r->proto == PLAN_PROTO_LL,
                  "{0,1,2,4,5} at %.0f: %s", b, r->algo == PLAN_ALGO_RINGS ? "NCCL" : "Simple");
        int trees; /* what it runs at the samples beats NCCL */
        if (b > 0)
            cr_expect_lt(plan_us(&ps, pl, b, &sp, &trees), nccl_us(&ps, pl, b, &sp));
    }
    for (double b = 4 << 20; b <= (double)(1u << 30); b *= 2) {
        const struct plan_range *r = plan_range_at(pl, b);
        cr_expect(r->algo == PLAN_ALGO_TREES && r->proto == PLAN_PROTO_SIMPLE,
                  "{0,1,2,4,5} at %.0f", b);
    }
    plan_set_free(&ps);
    topo_free(&t);
}

/* Chains: one per ring (broadcast, reduce) or per ring and rank, over the heaviest rings; each a
 * path round its ring, data moving forward (parent before child on broadcast, child before
 * parent on reduce), and the weights of each data group summing to those rings' rate. */
Test(tune, ring_chains_follow_the_rings)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx1v.topo", NULL, 0, 1u << COLL_BROADCAST, 0, &t, &ps);
    const struct ring_result *r = &ps.ring;
    int n = r->n;
    cr_assert_gt(r->nrings, RING_CHAIN_MAX_RINGS, "the test needs more rings than are kept");
    /* The kept rings: the heaviest, in the LP's order. */
    int kept[RING_CHAIN_MAX_RINGS], nk = 0;
    double kept_gbps = 0;
    for (int k = 0; k < r->nrings; k++) {
        int heavier = 0;
        for (int j = 0; j < r->nrings; j++)
            heavier += r->rate[j] > r->rate[k] || (r->rate[j] == r->rate[k] && j < k);
        if (heavier < RING_CHAIN_MAX_RINGS) {
            kept[nk++] = k;
            kept_gbps += r->rate[k];
        }
    }
    cr_assert_eq(nk, RING_CHAIN_MAX_RINGS);
    for (int c = 0; c < COLL_COUNT; c++) {
        struct ptree_set s;
        ptree_set_init(&s);
        cr_assert_eq(ring_chain_trees(r, (enum collective)c, 3, &s), BK_OK);
        int per_ring = c == COLL_BROADCAST || c == COLL_REDUCE ? 1 : n;
        cr_expect_eq(s.n, nk * per_ring, "%s", collective_name(c));
        double sum = 0;
        for (int i = 0; i < s.n; i++) {
            const struct ptree *tr = &s.t[i];
            const int *ord = r->order + (size_t)kept[i / per_ring] * (size_t)n;
            int forward = c == COLL_BROADCAST || c == COLL_ALLGATHER;
            int kids[64] = {0};
            for (int k = 0; k < n; k++) {
                int v = ord[k], next = ord[(k + 1) % n], prev = ord[(k + n - 1) % n];
                if (v == tr->root)
                    continue;
                cr_expect_eq(tr->parent[v], forward ? prev : next);
                kids[tr->parent[v]]++;
            }
            for (int v = 0; v < n; v++)
                cr_expect_leq(kids[v], 1, "a chain");
            if (c == COLL_BROADCAST || c == COLL_REDUCE)
                cr_expect_eq(tr->root, 3);
            if (tr->root == 3)
                sum += tr->rate;
        }
        double want = c == COLL_ALLREDUCE ? kept_gbps / n : kept_gbps;
        cr_expect_float_eq(sum, want, 1e-9, "%s: %g vs %g", collective_name(c), sum, want);
        ptree_set_free(&s);
    }
    plan_set_free(&ps);
    topo_free(&t);
}
