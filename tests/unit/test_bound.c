/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_bound.c - max-flow, the broadcast/allgather bounds and the integral (Lovasz) packer.
 * Anchors are in GB/s (one V100 NVLink = 25 GB/s per direction, P100 = 20), GPU numbers as
 * nvidia-smi prints them. The bounds are also checked against brute force over every node set.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "pack/bound.h"
#include "graph/maxflow.h"
#include "pack/pack_integral.h"
#include "graph/pgraph.h"
#include "testutil.h"

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (1 + fabs(b));
}
#define NEAR(a, b) near((a), (b))

static void load(const char *fx, const int *gpus, int n, unsigned kinds, struct pgraph *g)
{
    struct topo t;
    tu_load_alloc(fx, gpus, n, &t);
    cr_assert_eq(pgraph_build(g, &t, kinds), BK_OK);
    topo_free(&t);
}

static double bcast(const struct pgraph *g, int root)
{
    double b = -1;
    cr_assert_eq(bound_broadcast(g, root, &b), BK_OK);
    return b;
}

/* Capacity of the arcs leaving node set `mask`; its GPU count in *k. */
static double out_cap(const struct pgraph *g, unsigned mask, int *k)
{
    double c = 0;
    for (int a = 0; a < g->narcs; a++)
        if ((mask >> g->src[a] & 1u) && !(mask >> g->dst[a] & 1u))
            c += g->cap[a];
    *k = 0;
    for (int v = 0; v < g->ngpus; v++)
        *k += mask >> v & 1u;
    return c;
}

/* Edmonds by definition: the cheapest S holding the root and missing some GPU. */
static double brute_bcast(const struct pgraph *g, int root)
{
    double best = INFINITY;
    unsigned all = (1u << g->ngpus) - 1;
    for (unsigned s = 0; s < 1u << g->nnodes; s++) {
        int k;
        if ((s >> root & 1u) && (s & all) != all) {
            double c = out_cap(g, s, &k);
            best = c < best ? c : best;
        }
    }
    return best;
}

/* ForestColl by definition: n * min over S with 1..n-1 GPUs of B+(S) / |S n GPUs|. */
static double brute_allgather(const struct pgraph *g)
{
    double best = INFINITY;
    for (unsigned s = 0; s < 1u << g->nnodes; s++) {
        int k;
        double c = out_cap(g, s, &k);
        if (k > 0 && k < g->ngpus && c / k < best)
            best = c / k;
    }
    return g->ngpus * best;
}

Test(bound, broadcast_anchors)
{
    static const struct {
        const char *fx;
        int gpus[8], n;
        double want; /* from GPU rank 0 */
    } cases[] = {
        {"dgx1v.topo", {0}, 0, 150},    {"dgx1v.topo", {0, 2, 3}, 3, 75},
        {"dgx1v.topo", {0, 1, 3}, 3, 50}, {"dgx1p.topo", {0}, 0, 80},
        {"dgx1p.topo", {0, 1, 4}, 3, 20}, {"dgx-a100.topo", {0}, 0, 300},
        {"dgx2.topo", {0}, 0, 150},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++) {
        struct pgraph g;
        load(cases[i].fx, cases[i].gpus, cases[i].n, PG_NVLINK, &g);
        cr_expect(NEAR(bcast(&g, 0), cases[i].want), "%s case %zu: %g", cases[i].fx, i,
                  bcast(&g, 0));
        double lo = INFINITY, m = -1;
        for (int r = 0; r < g.ngpus; r++)
            lo = fmin(lo, bcast(&g, r));
        cr_assert_eq(bound_broadcast_min(&g, NULL, &m), BK_OK);
        cr_expect(NEAR(m, lo), "%s: min %g vs %g", cases[i].fx, m, lo);
        pgraph_free(&g);
    }
    struct pgraph g; /* every root of a full DGX-1V */
    load("dgx1v.topo", NULL, 0, PG_NVLINK, &g);
    for (int r = 0; r < 8; r++)
        cr_expect(NEAR(bcast(&g, r), 150), "root %d", r);
    double x;
    cr_expect_eq(bound_broadcast(&g, 8, &x), BK_EINTERNAL);
    pgraph_free(&g);
}

Test(bound, allgather_anchors)
{
    struct pgraph g;
    double b = 0;
    load("dgx1v.topo", NULL, 0, PG_NVLINK, &g);
    cr_assert_eq(bound_allgather(&g, &b), BK_OK);
    cr_expect(NEAR(b, 8.0 / 7 * 150), "dgx1v allgather %g", b);
    pgraph_free(&g);
    load("dgx-a100.topo", NULL, 0, PG_NVLINK, &g);
    cr_assert_eq(bound_allgather(&g, &b), BK_OK);
    cr_expect(NEAR(b, 8.0 / 7 * 300), "a100 allgather %g", b);
    pgraph_free(&g);
}

/* Both bounds against enumeration, and every max-flow's cut side against its value. */
static void check_brute(const struct pgraph *g, const char *what)
{
    cr_assert_leq(g->nnodes, 20, "%s: too many nodes to enumerate", what);
    double ag = -1;
    cr_assert_eq(bound_allgather(g, &ag), BK_OK);
    cr_expect(NEAR(ag, brute_allgather(g)), "%s: allgather %g vs %g", what, ag,
              brute_allgather(g));
    /* Started from an upper bound it reaches the same value, and one below it comes back:
     * min(upper, exact) either way. */
    double from;
    for (double f = 0.25; f <= 4; f *= 2) {
        cr_assert_eq(bound_allgather_below(g, f * ag, NULL, &from), BK_OK);
        cr_expect(NEAR(from, fmin(f, 1) * ag), "%s: from %g x the bound: %g vs %g", what, f,
                  from, ag);
    }
    struct maxflow *m;
    cr_assert_eq(maxflow_new(&m, g, 0, 0), BK_OK);
    unsigned char side[32];
    for (int r = 0; r < g->ngpus; r++) {
        cr_expect(NEAR(bcast(g, r), brute_bcast(g, r)), "%s: root %d", what, r);
        for (int v = 0; v < g->ngpus; v++) {
            if (v == r)
                continue;
            double f = maxflow_run(m, r, v, INFINITY, side);
            unsigned mask = 0;
            for (int x = 0; x < g->nnodes; x++)
                mask |= (unsigned)side[x] << x;
            int k;
            cr_expect(side[r] && !side[v] && NEAR(out_cap(g, mask, &k), f), "%s: cut %d->%d",
                      what, r, v);
            double lim = maxflow_run(m, r, v, f / 2, NULL);
            cr_expect(lim <= f / 2 + 1e-12 && lim >= f / 2 - MAXFLOW_EPS, "%s: limit", what);
        }
    }
    maxflow_free(m);
}

Test(bound, brute_force)
{
    struct pgraph g;
    load("dgx1v.topo", (int[]){0, 2, 3}, 3, PG_NVLINK, &g);
    check_brute(&g, "dgx1v {0,2,3}");
    pgraph_free(&g);
    load("dgx1p.topo", (int[]){0, 1, 2, 3}, 4, PG_NVLINK, &g);
    check_brute(&g, "dgx1p {0,1,2,3}");
    pgraph_free(&g);
    /* With relays: PCIe switches and both CPUs carry flow. */
    load("dgx1v.topo", (int[]){0, 2, 5}, 3, PG_ALL_KINDS, &g);
    cr_expect(pgraph_has_relays(&g));
    check_brute(&g, "dgx1v {0,2,5} all kinds");
    pgraph_free(&g);
    load("dgx1v.topo", (int[]){1, 4, 7}, 3, PG_PCIE_TIER, &g);
    check_brute(&g, "dgx1v {1,4,7} pcie");
    pgraph_free(&g);
}

/* 0->1 50/10, 1->2 30/20, 0->2 5/40 (forward/backward rates). */
static const char asym[] = "topology asym\n"
                           "gpu g0 model=V100\ngpu g1 model=V100\ngpu g2 model=V100\n"
                           "link g0 g1 bw=50 bw-rev=10\n"
                           "link g1 g2 bw=30 bw-rev=20\n"
                           "link g0 g2 bw=5 bw-rev=40\n";

Test(bound, reduce_is_reversed_broadcast)
{
    struct pgraph g, rg;
    load("dgx1v.topo", (int[]){0, 2, 3}, 3, PG_NVLINK, &g);
    cr_assert_eq(pgraph_reverse(&rg, &g), BK_OK);
    for (int r = 0; r < 3; r++)
        cr_expect(NEAR(bcast(&g, r), bcast(&rg, r)));
    pgraph_free(&g);
    pgraph_free(&rg);

    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("asym.topo", asym, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK, "%s",
                 diag_first_error(&d) ? diag_first_error(&d) : "?");
    cr_assert_eq(pgraph_build(&g, &t, PG_ALL_KINDS), BK_OK);
    cr_assert_eq(pgraph_reverse(&rg, &g), BK_OK);
    cr_expect(!pgraph_is_symmetric(&g));
    /* By hand: lambda(0,1) = 50 + 5 = 55, lambda(0,2) = 5 + 30 = 35; in reverse, lambda(1,0) =
     * 10 + 30 = 40 and lambda(2,0) = 40 + 10 = 50. */
    cr_expect(NEAR(bcast(&g, 0), 35), "bcast %g", bcast(&g, 0));
    cr_expect(NEAR(bcast(&rg, 0), 40), "reduce %g", bcast(&rg, 0));
    check_brute(&g, "asym");
    check_brute(&rg, "asym reversed");
    pgraph_free(&g);
    pgraph_free(&rg);
    topo_free(&t);
    diag_free(&d);
}

/* Own check of a packing: spanning single-arc trees, loads within capacity, total rate. */
static void check_pack(const struct pgraph *g, int root, const struct ptree_set *s, double want,
                       int max_trees)
{
    char why[256];
    cr_expect(ptree_set_check(s, g, PACK_BROADCAST, 1e-9, why, sizeof why), "%s", why);
    cr_expect_leq(s->n, max_trees);
    double *load = calloc((size_t)g->narcs, sizeof *load), total = 0;
    for (int i = 0; i < s->n; i++) {
        const struct ptree *t = &s->t[i];
        cr_assert_eq(t->root, root);
        total += t->rate;
        for (int v = 0; v < g->ngpus; v++) {
            int hops = 0;
            for (int x = v; x != root; x = t->parent[x])
                cr_assert(x >= 0 && ++hops <= g->ngpus, "tree %d does not reach GPU %d", i, v);
            if (v == root)
                continue;
            cr_assert_eq(t->path_off[v + 1] - t->path_off[v], 1);
            int a = t->path_arc[t->path_off[v]];
            cr_assert(g->src[a] == t->parent[v] && g->dst[a] == v);
            load[a] += t->rate;
        }
    }
    for (int a = 0; a < g->narcs; a++)
        cr_expect_leq(load[a], g->cap[a] + 1e-9, "arc %d overloaded", a);
    cr_expect(NEAR(total, want), "packed %g, want %g", total, want);
    free(load);
}

Test(pack_integral, anchors)
{
    static const struct {
        const char *fx;
        int gpus[8], n;
        double unit, want;
        int roots; /* check roots 0..roots-1 */
    } cases[] = {
        {"dgx1v.topo", {0}, 0, 25, 150, 8}, {"dgx1v.topo", {0, 2, 3}, 3, 25, 75, 1},
        {"dgx1p.topo", {0}, 0, 20, 80, 8},  {"dgx1p.topo", {0, 1, 4}, 3, 20, 20, 3},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++) {
        struct pgraph g;
        load(cases[i].fx, cases[i].gpus, cases[i].n, PG_NVLINK, &g);
        double unit = pack_integral_unit(&g);
        cr_expect(NEAR(unit, cases[i].unit), "%s unit %g", cases[i].fx, unit);
        for (int r = 0; r < cases[i].roots; r++) {
            struct pack_problem p = {&g, PACK_BROADCAST, r};
            struct ptree_set s;
            ptree_set_init(&s);
            cr_assert_eq(pack_integral(&p, unit, &s), BK_OK);
            double want = r == 0 ? cases[i].want : bcast(&g, r);
            check_pack(&g, r, &s, want, (int)lround(want / unit));
            ptree_set_free(&s);
        }
        pgraph_free(&g);
    }
}

Test(pack_integral, refuses)
{
    struct pgraph g;
    struct ptree_set s;
    ptree_set_init(&s);
    load("dgx1v.topo", (int[]){0, 2, 5}, 3, PG_ALL_KINDS, &g);
    struct pack_problem p = {&g, PACK_BROADCAST, 0};
    cr_expect_eq(pack_integral(&p, 1, &s), BK_EINTERNAL); /* relays */
    pgraph_free(&g);
    load("dgx1v.topo", NULL, 0, PG_NVLINK, &g);
    p.g = &g;
    cr_expect_eq(pack_integral(&p, 0, &s), BK_EINTERNAL);
    p.kind = PACK_ALLGATHER;
    cr_expect_eq(pack_integral(&p, 25, &s), BK_EINTERNAL);
    cr_expect_eq(s.n, 0);
    pgraph_free(&g);

    /* 0.3 and 100 GB/s: the common unit 0.1 would need 1000 units on one arc. */
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("odd.topo",
                                "gpu a model=V100\ngpu b model=V100\ngpu c model=V100\n"
                                "link a b bw=0.3\nlink b c bw=100\n",
                                TOPO_FMT_AUTO, NULL, &t, &d),
                 BK_OK);
    cr_assert_eq(pgraph_build(&g, &t, PG_ALL_KINDS), BK_OK);
    cr_expect_eq(pack_integral_unit(&g), 0);
    pgraph_free(&g);
    topo_free(&t);
    diag_free(&d);
}

/* Sinks chosen by symmetry: on four identical DGX-1V servers, the first server's GPUs as the
 * allgather's sinks, and as the broadcast minimum's with the second server's, give the values of
 * every GPU a sink; no sink at all gives something else, so the sinks are the ones used. */
Test(bound, sinks_of_one_server_per_class, .timeout = 60)
{
    struct pgraph g;
    load("cluster-4x-dgx1v.topo", NULL, 0, PG_ALL_KINDS, &g);
    cr_assert_eq(g.ngpus, 32);
    unsigned char first[32], two[32], none[32] = {0};
    for (int v = 0; v < 32; v++) {
        first[v] = v < 8;
        two[v] = v < 16;
    }
    double all = -1, some = -1, empty = -1;
    cr_assert_eq(bound_allgather_below(&g, INFINITY, NULL, &all), BK_OK);
    cr_assert_eq(bound_allgather_below(&g, INFINITY, first, &some), BK_OK);
    cr_assert_eq(bound_allgather_below(&g, INFINITY, none, &empty), BK_OK);
    cr_expect(NEAR(some, all), "allgather: %g with one server's sinks, %g with all", some, all);
    cr_expect(!NEAR(empty, all), "allgather: %g without sinks", empty);
    cr_assert_eq(bound_broadcast_min(&g, NULL, &all), BK_OK);
    cr_assert_eq(bound_broadcast_min(&g, two, &some), BK_OK);
    cr_assert_eq(bound_broadcast_min(&g, none, &empty), BK_OK);
    cr_expect(NEAR(some, all), "broadcast: %g with two servers' sinks, %g with all", some, all);
    cr_expect(!NEAR(empty, all), "broadcast: %g without sinks", empty);
    pgraph_free(&g);
}
