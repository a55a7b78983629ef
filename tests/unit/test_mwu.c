/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_mwu.c - the cheapest-tree oracle against brute force, and MWU packings against optima
 * computed here by definition (GB/s; one V100/A100 NVLink = 25 GB/s per direction, P100 = 20;
 * GPU numbers as nvidia-smi prints them).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pack/mwu.h"
#include "pack/oracle.h"
#include "graph/pgraph.h"
#include "testutil.h"

static void load(const char *fx, const int *gpus, int n, unsigned kinds, struct pgraph *g)
{
    struct topo t;
    tu_load_alloc(fx, gpus, n, &t);
    cr_assert_eq(pgraph_build(g, &t, kinds), BK_OK);
    topo_free(&t);
}

/* Our own check: trees span, paths run parent -> relays -> child, loads fit. */
static void verify(const struct pgraph *g, enum pack_kind kind, const struct ptree_set *s)
{
    double *ld = calloc((size_t)g->narcs, sizeof *ld);
    for (int i = 0; i < s->n; i++) {
        const struct ptree *t = &s->t[i];
        cr_assert(t->ngpus == g->ngpus && t->rate >= 0 && t->parent[t->root] == -1);
        for (int v = 0; v < t->ngpus; v++) {
            int u = v, steps = 0;
            while (u != t->root && steps++ <= t->ngpus)
                u = t->parent[u];
            cr_assert_eq(u, t->root, "tree %d: gpu %d does not reach the root", i, v);
            if (v == t->root)
                continue;
            int at = t->parent[v];
            cr_assert(t->path_off[v + 1] > t->path_off[v]);
            for (int k = t->path_off[v]; k < t->path_off[v + 1]; k++) {
                int a = t->path_arc[k];
                cr_assert(g->src[a] == at && (k == t->path_off[v] || at >= g->ngpus));
                at = g->dst[a];
                ld[a] += t->rate;
                if (kind == PACK_ALLREDUCE) {
                    cr_assert(g->rev[a] >= 0);
                    ld[g->rev[a]] += t->rate;
                }
            }
            cr_assert_eq(at, v);
        }
    }
    for (int a = 0; a < g->narcs; a++)
        cr_assert(ld[a] <= g->cap[a] * (1 + 1e-9), "arc %d: %g > %g", a, ld[a], g->cap[a]);
    free(ld);
    char why[200];
    cr_assert(ptree_set_check(s, g, kind, 1e-9, why, sizeof why), "%s", why);
}

/* Pack, verify, and return the value (allgather: the smallest per-root rate). */
static double pack(const struct pgraph *g, enum pack_kind kind, int root, double eps,
                   struct ptree_set *s)
{
    struct oracle *o;
    cr_assert_eq(oracle_new(&o, g), BK_OK);
    struct pack_problem p = {g, kind, root};
    struct mwu_opts opt = {eps, 0};
    struct mwu_stats st;
    ptree_set_init(s);
    cr_assert_eq(mwu_pack(&p, o, &opt, s, &st), BK_OK);
    oracle_free(o);
    verify(g, kind, s);
    cr_assert(st.rounds > 0 && st.distinct == s->n);
    double v = ptree_set_rate(s);
    if (kind == PACK_ALLGATHER) {
        v = INFINITY;
        for (int r = 0; r < g->ngpus; r++)
            v = fmin(v, ptree_set_root_rate(s, r));
    }
    cr_assert(fabs(st.value - v) <= 1e-9 * v, "stats %g, trees %g", st.value, v);
    return v;
}

static void within(double v, double opt, double eps)
{
    cr_assert(v >= (1 - eps) * (1 - eps) * opt && v <= opt * (1 + 1e-9), "%g vs optimum %g", v, opt);
}

Test(mwu, broadcast_anchors)
{
    static const int sub[] = {0, 2, 3};
    static const struct {
        const char *fx;
        const int *gpus;
        int n;
        double opt; /* Edmonds: the root's out-capacity is the cheapest cut in all four */
    } c[] = {{"dgx1v.topo", NULL, 0, 150}, {"dgx1v.topo", sub, 3, 75},
             {"dgx1p.topo", NULL, 0, 80}, {"dgx-a100.topo", NULL, 0, 300}};
    /* A100: 6 chains 0->1->...->7, one through each switch at 50, reach 300 with path trees */
    for (size_t i = 0; i < BK_ARRAY_LEN(c); i++) {
        struct pgraph g;
        struct ptree_set s;
        load(c[i].fx, c[i].gpus, c[i].n, PG_NVLINK, &g);
        within(pack(&g, PACK_BROADCAST, 0, 0.1, &s), c[i].opt, 0.1);
        ptree_set_free(&s);
        pgraph_free(&g);
    }
}

/* With PCIe and the CPUs as relays, NVLink alone gives 150 and GPU0 can send only 150 + 12. */
Test(mwu, broadcast_all_kinds)
{
    struct pgraph g;
    struct ptree_set s;
    load("dgx1v.topo", NULL, 0, PG_ALL_KINDS, &g);
    cr_assert(pgraph_has_relays(&g));
    double v = pack(&g, PACK_BROADCAST, 0, 0.1, &s);
    cr_assert(v >= 0.81 * 150 && v <= 162 * (1 + 1e-9), "%g", v);
    ptree_set_free(&s);
    pgraph_free(&g);
}

/* ForestColl by definition on a relay-free graph: min over GPU sets S of B+(S) / |S|. */
static double forestcoll(const struct pgraph *g)
{
    double best = INFINITY;
    for (unsigned m = 1; m + 1 < 1u << g->ngpus; m++) {
        double out = 0;
        for (int a = 0; a < g->narcs; a++)
            if ((m >> g->src[a] & 1u) && !(m >> g->dst[a] & 1u))
                out += g->cap[a];
        best = fmin(best, out / __builtin_popcount(m));
    }
    return best;
}

/* Every GPU receives the other 7 roots' data over 150 GB/s of in-links, so 150/7 per root at
 * most; S = all but one GPU is that cut, and the brute force confirms no set is tighter. */
Test(mwu, allgather_dgx1v)
{
    struct pgraph g;
    struct ptree_set s;
    load("dgx1v.topo", NULL, 0, PG_NVLINK, &g);
    double opt = forestcoll(&g);
    cr_assert(fabs(opt - 150.0 / 7) < 1e-9, "%g", opt);
    within(pack(&g, PACK_ALLGATHER, 0, 0.1, &s), opt, 0.1);
    for (int r = 1; r < g.ngpus; r++)
        cr_assert(fabs(ptree_set_root_rate(&s, r) - ptree_set_root_rate(&s, 0)) < 1e-9);
    ptree_set_free(&s);
    pgraph_free(&g);
}

/* Nash-Williams strength by enumerating every partition (restricted growth strings). */
static double strength(const struct pgraph *g)
{
    int n = g->ngpus, blk[16] = {0}, mx[16] = {0};
    double best = INFINITY;
    for (;;) {
        int parts = mx[n - 1] + 1;
        if (parts > 1) {
            double cross = 0; /* undirected capacity: count each arc with its reverse once */
            for (int a = 0; a < g->narcs; a++)
                if (g->src[a] < g->dst[a] && g->rev[a] >= 0 && blk[g->src[a]] != blk[g->dst[a]])
                    cross += g->cap[a];
            best = fmin(best, cross / (parts - 1));
        }
        int i = n - 1;
        while (i > 0 && blk[i] == mx[i - 1] + 1)
            i--;
        if (i == 0)
            return best;
        blk[i]++;
        mx[i] = blk[i] > mx[i - 1] ? blk[i] : mx[i - 1];
        for (int j = i + 1; j < n; j++) {
            blk[j] = 0;
            mx[j] = mx[i];
        }
    }
}

Test(mwu, allreduce_strength)
{
    static const int sub[] = {0, 2, 3};
    /* full box: 24 links of 25 over 7 = 600/7; {0,2,3}: links 1,2,2 -> 125/2 */
    static const double hand[] = {600.0 / 7, 62.5};
    for (int i = 0; i < 2; i++) {
        struct pgraph g;
        struct ptree_set s;
        load("dgx1v.topo", i ? sub : NULL, i ? 3 : 0, PG_NVLINK, &g);
        double opt = strength(&g);
        cr_assert(fabs(opt - hand[i]) < 1e-9, "%g", opt);
        within(pack(&g, PACK_ALLREDUCE, 0, 0.1, &s), opt, 0.1);
        ptree_set_free(&s);
        pgraph_free(&g);
    }
}

Test(mwu, deterministic_and_usage)
{
    struct pgraph g;
    struct ptree_set a, b;
    load("dgx-a100.topo", NULL, 0, PG_NVLINK, &g);
    pack(&g, PACK_ALLREDUCE, 0, 0.2, &a);
    pack(&g, PACK_ALLREDUCE, 0, 0.2, &b);
    cr_assert_eq(a.n, b.n);
    for (int i = 0; i < a.n; i++)
        cr_assert(ptree_same_shape(&a.t[i], &b.t[i]) && a.t[i].rate == b.t[i].rate);
    ptree_set_free(&a);
    ptree_set_free(&b);
    struct oracle *o;
    cr_assert_eq(oracle_new(&o, &g), BK_OK);
    struct pack_problem p = {&g, PACK_BROADCAST, 0};
    static const double bad[] = {0, -0.1, 0.51, NAN};
    for (size_t i = 0; i < BK_ARRAY_LEN(bad); i++) {
        struct mwu_opts opt = {bad[i], 0};
        ptree_set_init(&a);
        cr_assert_eq(mwu_pack(&p, o, &opt, &a, NULL), BK_EUSAGE);
        cr_assert_eq(a.n, 0);
    }
    oracle_free(o);
    pgraph_free(&g);
}

/* ------------------------------------------------------------------ oracle vs brute force */

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* Bellman-Ford closure from u (relays only in between): d[v] for the GPUs. */
static void closure(const struct pgraph *g, const double *len, int und, int u, double *d)
{
    double *nd = malloc((size_t)g->nnodes * sizeof *nd);
    for (int w = 0; w < g->nnodes; w++)
        nd[w] = w == u ? 0 : INFINITY;
    for (int it = 0; it < g->nnodes; it++)
        for (int a = 0; a < g->narcs; a++) {
            int x = g->src[a];
            if ((x < g->ngpus && x != u) || (und && g->rev[a] < 0))
                continue;
            double l = nd[x] + len[a] + (und ? len[g->rev[a]] : 0);
            if (l < nd[g->dst[a]])
                nd[g->dst[a]] = l;
        }
    for (int v = 0; v < g->ngpus; v++)
        d[v] = nd[v];
    free(nd);
}

/* Cheapest tree by enumerating every parent array (n <= 5). */
static double brute(const struct pgraph *g, const double *len, int und, int root)
{
    int n = g->ngpus, par[5];
    double d[5][5], best = INFINITY;
    for (int u = 0; u < n; u++)
        closure(g, len, und, u, d[u]);
    int combos = 1;
    for (int v = 0; v < n; v++)
        combos *= n;
    for (int c = 0; c < combos; c++) {
        int x = c, ok = 1;
        double cost = 0;
        for (int v = 0; v < n; v++, x /= n)
            par[v] = v == root ? -1 : x % n;
        for (int v = 0; v < n && ok; v++) {
            if (v == root)
                continue;
            int u = v, steps = 0;
            while (u != root && u >= 0 && par[u] != u && steps++ <= n)
                u = par[u];
            ok = u == root;
            cost += ok ? d[par[v]][v] : 0;
        }
        if (ok && cost < best)
            best = cost;
    }
    return best;
}

static void oracle_vs_brute(const char *fx, const int *gpus, unsigned kinds)
{
    struct pgraph g;
    load(fx, gpus, 4, kinds, &g);
    struct oracle *o;
    cr_assert_eq(oracle_new(&o, &g), BK_OK);
    double *len = calloc((size_t)g.narcs, sizeof *len);
    uint64_t seed = 12345;
    for (int trial = 0; trial < 40; trial++) {
        for (int a = 0; a < g.narcs; a++) /* odd trials: small integers, so many ties */
            len[a] = trial & 1 ? (double)(lcg(&seed) % 4) : (double)lcg(&seed) / 4294967296.0;
        if (trial == 0)
            memset(len, 0, (size_t)g.narcs * sizeof *len);
        for (int und = 0; und < 2; und++)
            for (int root = 0; root < 4; root++) {
                enum pack_kind kind = und ? PACK_ALLREDUCE : PACK_BROADCAST;
                struct ptree_set s;
                double cost = -1, mine = 0;
                ptree_set_init(&s);
                struct ptree t;
                cr_assert_eq(oracle_min_tree(o, kind, root, len, &t, &cost), BK_OK);
                cr_assert_eq(t.root, root);
                cr_assert_eq(ptree_set_add(&s, &t, NULL), BK_OK);
                verify(&g, kind, &s);
                for (int k = 0; k < t.path_off[t.ngpus]; k++)
                    mine += len[t.path_arc[k]] + (und ? len[g.rev[t.path_arc[k]]] : 0);
                double want = brute(&g, len, und, root);
                cr_assert(fabs(cost - mine) <= 1e-12 * (1 + mine), "%g vs %g", cost, mine);
                cr_assert(fabs(cost - want) <= 1e-9 * (1 + want), "%s trial %d kind %d root %d: "
                          "%.17g, brute force %.17g", fx, trial, kind, root, cost, want);
                ptree_free(&t);
                ptree_set_free(&s);
            }
    }
    free(len);
    oracle_free(o);
    pgraph_free(&g);
}

Test(oracle, brute_force)
{
    static const int quad[] = {0, 1, 2, 3}, far[] = {0, 1, 2, 7};
    oracle_vs_brute("dgx1v.topo", quad, PG_NVLINK);  /* direct arcs only */
    oracle_vs_brute("dgx1v.topo", far, PG_ALL_KINDS); /* GPU7 via PCIe switches and CPUs */
    oracle_vs_brute("dgx-a100.topo", quad, PG_NVLINK); /* every pair through a switch */
}

Test(oracle, unreachable)
{
    static const int far[] = {0, 1, 2, 7}; /* GPU7 has no NVLink to 0, 1 or 2 */
    struct pgraph g;
    load("dgx1v.topo", far, 4, PG_NVLINK, &g);
    struct oracle *o;
    cr_assert_eq(oracle_new(&o, &g), BK_OK);
    double *len = calloc((size_t)g.narcs, sizeof *len);
    struct ptree t;
    double cost;
    cr_assert_eq(oracle_min_tree(o, PACK_BROADCAST, 0, len, &t, &cost), BK_ESOLVE);
    cr_assert_eq(oracle_min_tree(o, PACK_ALLREDUCE, 3, len, &t, &cost), BK_ESOLVE);
    free(len);
    oracle_free(o);
    pgraph_free(&g);
}
