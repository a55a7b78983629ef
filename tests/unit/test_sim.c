/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_sim.c - the simulator against closed forms (issue 5: within 1%) on hand-made
 * topologies: a single link, a chain, a ring and a star; plus the engine's fair sharing and
 * determinism. Closed forms are written here from the model's own parameters: a chunk of C
 * bytes handed over one tree edge costs tau = step + sum of alphas + C / (b eff) (eff: the copy
 * efficiency; these topologies name no GPU, so Volta's), a pipeline of K chunks through d edges
 * in series takes (K + d - 1) tau, and a call adds its host work and one launch.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../runtime/core/proto.h" /* bk_split_at, the runtime's own split */
#include "graph/pgraph.h"
#include "ring/ring.h"
#include "sim/sim.h"
#include "sim/sim_engine.h"
#include "testutil.h"

#define MIB (1024.0 * 1024.0)
#define M (64 * MIB)
#define C ((size_t)1 << 20)
#define WITHIN(x, want, tol) (fabs((x) - (want)) <= (tol) * (want))

static void load(const char *text, struct topo *t, struct pgraph *g)
{
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("sim.topo", text, TOPO_FMT_TEXT, NULL, t, &d), BK_OK, "%s",
                 diag_first_error(&d) ? diag_first_error(&d) : "?");
    diag_free(&d);
    cr_assert_eq(pgraph_build(g, t, PG_ALL_KINDS), BK_OK);
}

/* The arcs from u to v: a direct arc, else the two arcs through relay `via`. */
static int path(const struct pgraph *g, int u, int v, int via, int *out)
{
    for (int a = 0; a < g->narcs; a++)
        if (g->src[a] == u && g->dst[a] == v) {
            out[0] = a;
            return 1;
        }
    int n = path(g, u, via, -1, out);
    return n + path(g, via, v, -1, out + n);
}

/* A tree from parent[] whose edges are direct arcs (or go through `via`). */
static void add_tree(struct ptree_set *s, const struct pgraph *g, int root, const int *parent,
                     int via, double rate)
{
    int n = g->ngpus, arcs[8][2], len[8] = {0};
    const int *of[8];
    for (int v = 0; v < n; v++) {
        if (v != root)
            len[v] = path(g, parent[v], v, via, arcs[v]);
        of[v] = arcs[v];
    }
    struct ptree tr;
    cr_assert_eq(ptree_make(&tr, n, root, parent, of, len), BK_OK);
    tr.rate = rate;
    cr_assert_eq(ptree_set_add_new(s, &tr), BK_OK);
    ptree_free(&tr);
}

static double run_trees(const struct topo *t, const struct pgraph *g, const struct ptree_set *s,
                        enum collective c, double bytes, size_t chunk)
{
    struct sim_params p;
    sim_params_default(&p);
    struct sim_job j = {SIM_TREES, t, c, c == COLL_BROADCAST || c == COLL_REDUCE ? 0 : -1, g, s,
                        NULL, NULL};
    struct diag d;
    diag_init(&d);
    double us = -1;
    cr_assert_eq(sim_run(&j, bytes, chunk, &p, &us, &d), BK_OK, "%s",
                 diag_first_error(&d) ? diag_first_error(&d) : "?");
    diag_free(&d);
    return us;
}

static double tau(double alpha_sum, double chunk, double gbps)
{
    struct sim_params p;
    sim_params_default(&p);
    return p.step_us + alpha_sum + chunk / (gbps * p.eff[0] * 1e3);
}

static const char one_link[] = "topology one\ngpu g0\ngpu g1\nlink g0 g1 bw=10\n";

Test(sim, single_link_broadcast_and_reduce)
{
    struct topo t;
    struct pgraph g, rg;
    struct ptree_set s;
    struct sim_params p;
    sim_params_default(&p);
    load(one_link, &t, &g);
    ptree_set_init(&s);
    add_tree(&s, &g, 0, (int[]){-1, 0}, -1, 10);
    double K = M / (double)C, a = p.alpha_us[TOPO_NVLINK];
    double want = p.call_us + p.launch_us + K * tau(a, C, 10);
    double got = run_trees(&t, &g, &s, COLL_BROADCAST, M, C);
    cr_expect(WITHIN(got, want, 0.01), "broadcast %g us, closed form %g", got, want);
    /* Reduce: the leaf sends its chunks back to back (the root's pass over each is shorter than
     * a hand-over, so slots free in time); the root reduces the last one after it. */
    cr_assert_eq(pgraph_reverse(&rg, &g), BK_OK);
    double red = C / (p.reduce_gbps * 1e3);
    want = p.call_us + p.launch_us + K * tau(a, C, 10) + red;
    got = run_trees(&t, &rg, &s, COLL_REDUCE, M, C);
    cr_expect(WITHIN(got, want, 0.01), "reduce %g us, closed form %g", got, want);
    /* Allreduce: the same way up, and the child pulls each reduced chunk back on the other
     * arc while the next one comes up: K tau + reduce + tau. */
    want = p.call_us + p.launch_us + K * tau(a, C, 10) + red + tau(a, C, 10);
    got = run_trees(&t, &g, &s, COLL_ALLREDUCE, M, C);
    cr_expect(WITHIN(got, want, 0.01), "allreduce %g us, closed form %g", got, want);
    /* Chunk search: with nothing to pipeline, one chunk is best. */
    struct sim_job j = {SIM_TREES, &t, COLL_BROADCAST, 0, &g, &s, NULL, NULL};
    size_t best;
    double us;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(sim_best_chunk(&j, M, &p, &best, &us, &d), BK_OK);
    cr_expect_eq(best, (size_t)M, "best chunk %zu", best);
    cr_expect(WITHIN(us, p.call_us + p.launch_us + tau(a, M, 10), 0.01));
    diag_free(&d);
    ptree_set_free(&s);
    pgraph_free(&g);
    pgraph_free(&rg);
    topo_free(&t);
}

/* LL (sim.h): a chunk's hand-over costs ll_step instead of step, and every byte crosses the
 * link twice over (16-byte lines of 8 data bytes), in chunks of at most SIM_LL_CHUNK_MAX. So on
 * one link it wins a small message by (step - ll_step) less one more pass of its bytes, and
 * loses a large one by the bytes' second pass less what the cheaper hand-overs save. */
static double run_proto(const struct topo *t, const struct pgraph *g, const struct ptree_set *s,
                        enum sim_proto proto, double bytes, size_t chunk)
{
    struct sim_params p;
    sim_params_default(&p);
    struct sim_job j = {SIM_TREES, t, COLL_BROADCAST, 0, g, s, NULL, NULL, proto};
    struct diag d;
    diag_init(&d);
    double us = -1;
    cr_assert_eq(sim_run(&j, bytes, chunk, &p, &us, &d), BK_OK);
    diag_free(&d);
    return us;
}

Test(sim, ll_pays_less_per_hop_and_more_per_byte)
{
    struct topo t;
    struct pgraph g;
    struct ptree_set s;
    struct sim_params p;
    sim_params_default(&p);
    cr_assert_lt(p.ll_step_us, p.step_us);
    load(one_link, &t, &g);
    ptree_set_init(&s);
    add_tree(&s, &g, 0, (int[]){-1, 0}, -1, 10);
    double a = p.alpha_us[TOPO_NVLINK], rate = 10 * p.eff[0] * 1e3; /* bytes per us */
    double fixed = p.call_us + p.launch_us;
    /* 1 KiB in one chunk. */
    double small = 1024;
    double simple = run_proto(&t, &g, &s, SIM_SIMPLE, small, SIM_CHUNK_MIN);
    double ll = run_proto(&t, &g, &s, SIM_LL, small, SIM_CHUNK_MIN);
    cr_expect(WITHIN(simple, fixed + p.step_us + a + small / rate, 0.01), "simple %g", simple);
    cr_expect(WITHIN(ll, fixed + p.ll_step_us + a + 2 * small / rate, 0.01), "ll %g", ll);
    double gain = p.step_us - p.ll_step_us - small / rate;
    cr_assert_gt(gain, 0);
    cr_expect(WITHIN(simple - ll, gain, 0.05), "1 KiB: LL gains %g us, the model %g",
              simple - ll, gain);
    /* 64 MiB: Simple in 1 MiB chunks, LL in its largest (a larger request is cut to it). */
    double Kc = M / (double)C, Kl = M / (double)SIM_LL_CHUNK_MAX;
    simple = run_proto(&t, &g, &s, SIM_SIMPLE, M, C);
    ll = run_proto(&t, &g, &s, SIM_LL, M, SIM_LL_CHUNK_MAX);
    double want_simple = fixed + Kc * (p.step_us + a + C / rate);
    double want_ll = fixed + Kl * (p.ll_step_us + a + 2.0 * SIM_LL_CHUNK_MAX / rate);
    cr_expect(WITHIN(simple, want_simple, 0.01), "simple %g, closed form %g", simple,
              want_simple);
    cr_expect(WITHIN(ll, want_ll, 0.01), "ll %g, closed form %g", ll, want_ll);
    cr_assert_gt(want_ll, want_simple * 1.5);
    cr_expect_gt(ll, simple * 1.5, "64 MiB: LL %g us, Simple %g us", ll, simple);
    cr_expect_eq(run_proto(&t, &g, &s, SIM_LL, M, C), ll, "an LL chunk holds at most %zu",
                 SIM_LL_CHUNK_MAX);
    /* The chunk search stays within LL's chunks. */
    struct sim_job j = {SIM_TREES, &t, COLL_BROADCAST, 0, &g, &s, NULL, NULL, SIM_LL};
    size_t best;
    double us;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(sim_best_chunk(&j, M, &p, &best, &us, &d), BK_OK);
    cr_expect_leq(best, SIM_LL_CHUNK_MAX);
    cr_assert_eq(sim_chunk_near(&j, M, &p, C, 0, &best, &us, &d), BK_OK);
    cr_expect_leq(best, SIM_LL_CHUNK_MAX);
    diag_free(&d);
    ptree_set_free(&s);
    pgraph_free(&g);
    topo_free(&t);
}

Test(sim, seen_runs_are_taken_not_run_again)
{
    struct topo t;
    struct pgraph g;
    struct ptree_set s;
    struct sim_params p;
    sim_params_default(&p);
    load(one_link, &t, &g);
    ptree_set_init(&s);
    add_tree(&s, &g, 0, (int[]){-1, 0}, -1, 10);
    double plain = run_proto(&t, &g, &s, SIM_SIMPLE, M, C);
    double plain_ll = run_proto(&t, &g, &s, SIM_LL, M, SIM_LL_CHUNK_MAX);
    struct sim_seen seen = {0};
    struct sim_job j = {SIM_TREES, &t, COLL_BROADCAST, 0, &g, &s, NULL, NULL, SIM_SIMPLE,
                        &seen};
    struct diag d;
    diag_init(&d);
    double us = -1;
    cr_assert_eq(sim_run(&j, M, C, &p, &us, &d), BK_OK);
    cr_expect_eq(us, plain, "with a seen list %g, without %g", us, plain);
    cr_assert_eq(seen.n, 1);
    /* The same run again is taken from the list: a planted time comes back. */
    seen.v[0].us = 12345;
    cr_assert_eq(sim_run(&j, M, C, &p, &us, &d), BK_OK);
    cr_expect_eq(us, 12345);
    cr_expect_eq(seen.n, 1);
    /* Another chunk or protocol is another run. */
    cr_assert_eq(sim_run(&j, M, C / 2, &p, &us, &d), BK_OK);
    j.proto = SIM_LL;
    cr_assert_eq(sim_run(&j, M, SIM_LL_CHUNK_MAX, &p, &us, &d), BK_OK);
    cr_expect_eq(us, plain_ll);
    cr_expect_eq(seen.n, 3);
    sim_seen_free(&seen);
    cr_expect_eq(seen.n, 0);
    diag_free(&d);
    ptree_set_free(&s);
    pgraph_free(&g);
    topo_free(&t);
}

static const char fan[] = "topology fan\ngpu g0\ngpu g1\ngpu g2\n"
                          "link g0 g1 bw=10\nlink g0 g2 bw=10\n";

Test(sim, fan_in_children_push_in_parallel)
{
    /* Each child sends its chunk to the parent over its own link, so two children take as
     * long as one; the parent then reduces both in one pass. */
    struct topo t;
    struct pgraph g, rg;
    struct ptree_set s;
    struct sim_params p;
    sim_params_default(&p);
    load(fan, &t, &g);
    cr_assert_eq(pgraph_reverse(&rg, &g), BK_OK);
    ptree_set_init(&s);
    add_tree(&s, &g, 0, (int[]){-1, 0, 0}, -1, 10);
    double K = M / (double)C;
    double want = p.call_us + p.launch_us + K * tau(p.alpha_us[TOPO_NVLINK], C, 10) +
                  C / (p.reduce_gbps * 1e3);
    double got = run_trees(&t, &rg, &s, COLL_REDUCE, M, C);
    cr_expect(WITHIN(got, want, 0.01), "reduce %g us, closed form %g", got, want);
    /* Going down, the parent writes both children's slots at once, over two links. */
    want = p.call_us + p.launch_us + K * tau(p.alpha_us[TOPO_NVLINK], C, 10);
    got = run_trees(&t, &g, &s, COLL_BROADCAST, M, C);
    cr_expect(WITHIN(got, want, 0.01), "broadcast %g us, closed form %g", got, want);
    ptree_set_free(&s);
    pgraph_free(&g);
    pgraph_free(&rg);
    topo_free(&t);
}

/* The simulator's split and the runtime's are two copies (the planner does not include the
 * runtime's headers): the same result on edge cases and on a seeded sweep of sizes, element
 * widths and weights, up to counts past 2^32 and weights near 2^63. */
Test(sim, split_matches_the_runtimes)
{
    static const size_t widths[] = {1, 2, 3, 4, 8, 12, 16, 256, 512};
    static const size_t counts[] = {0, 1, 63, 64, 65, 127, 128, 255, 256, 1000, 4096, 65537,
                                    (size_t)1 << 32, ((size_t)1 << 40) + 3};
    static const unsigned long long totals[] = {1, 2, 3, 7, 12, 1000, 1ull << 40,
                                                (1ull << 63) - 1};
    for (size_t a = 0; a < BK_ARRAY_LEN(widths); a++)
        for (size_t b = 0; b < BK_ARRAY_LEN(counts); b++)
            for (size_t c = 0; c < BK_ARRAY_LEN(totals); c++) {
                unsigned long long w = totals[c];
                unsigned long long ss[] = {0, 1, w / 3, w / 2, w - 1, w, w + 1};
                for (size_t d = 0; d < BK_ARRAY_LEN(ss); d++)
                    cr_expect_eq(sim_split_at(counts[b], widths[a], ss[d], w),
                                 bk_split_at(counts[b], widths[a], ss[d], w),
                                 "n %zu es %zu s %llu w %llu", counts[b], widths[a], ss[d], w);
            }
    unsigned long long x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (size_t)(x >> (x & 31)) & (((size_t)1 << 36) - 1), es = widths[x % 9];
        unsigned long long w = 1 + (x >> 3) % 100000, s = (x >> 20) % (w + 2);
        size_t got = sim_split_at(n, es, s, w), want = bk_split_at(n, es, s, w);
        if (got != want)
            cr_assert_fail("n %zu es %zu s %llu w %llu: %zu vs %zu", n, es, s, w, got, want);
    }
    cr_expect_eq(sim_split_at(0, 4, 0, 0), bk_split_at(0, 4, 0, 0));
}

static const char triangle[] = "topology triangle\ngpu g0\ngpu g1\ngpu g2\n"
                               "link g0 g1 bw=10\nlink g0 g2 bw=10\nlink g1 g2 bw=10\n";

Test(sim, shares_are_cut_on_256_byte_units_as_the_runtime_cuts_them)
{
    /* Two trees of equal rate from g0: a star (one hop) and a chain (two). 256 bytes of floats
     * are one 256-byte unit, which the runtime gives the first tree whole (proto.h's
     * bk_split_at rounds 32 elements up to 64), so the chain stays empty and the call costs
     * one hop; 1 KiB gives each tree 128 elements, and the chain's second hop shows. */
    struct topo t;
    struct pgraph g;
    struct ptree_set s;
    struct sim_params p;
    sim_params_default(&p);
    cr_assert_eq(p.elem_bytes, 4);
    load(triangle, &t, &g);
    ptree_set_init(&s);
    add_tree(&s, &g, 0, (int[]){-1, 0, 0}, -1, 10);
    add_tree(&s, &g, 0, (int[]){-1, 0, 1}, -1, 10);
    double fixed = p.call_us + p.launch_us, hop = p.step_us + p.alpha_us[TOPO_NVLINK];
    double one = run_trees(&t, &g, &s, COLL_BROADCAST, 256, C);
    cr_expect(WITHIN(one, fixed + hop + 256 / (10 * p.eff[0] * 1e3), 0.001),
              "256 B: %g us, one hop from %g", one, fixed);
    double two = run_trees(&t, &g, &s, COLL_BROADCAST, 1024, C);
    cr_expect_geq(two, fixed + 2 * hop, "1 KiB: %g us, two hops from %g", two, fixed);
    ptree_set_free(&s);
    pgraph_free(&g);
    topo_free(&t);
}

static const char chain[] = "topology chain\ngpu g0\ngpu g1\ngpu g2\ngpu g3\n"
                            "link g0 g1 bw=10\nlink g1 g2 bw=10\nlink g2 g3 bw=10\n";

Test(sim, chain_pipelines_by_depth)
{
    struct topo t;
    struct pgraph g;
    struct ptree_set s;
    struct sim_params p;
    sim_params_default(&p);
    load(chain, &t, &g);
    ptree_set_init(&s);
    add_tree(&s, &g, 0, (int[]){-1, 0, 1, 2}, -1, 10);
    double K = M / (double)C, d = 3, tu = tau(p.alpha_us[TOPO_NVLINK], C, 10);
    double got = run_trees(&t, &g, &s, COLL_BROADCAST, M, C);
    double want = p.call_us + p.launch_us + (K + d - 1) * tu;
    cr_expect(WITHIN(got, want, 0.01), "%g against %g", got, want);
    /* The best chunk is near the continuous optimum sqrt(M (step + alpha) b / (d - 1)). */
    struct sim_job j = {SIM_TREES, &t, COLL_BROADCAST, 0, &g, &s, NULL, NULL};
    size_t best;
    double us;
    struct diag dg;
    diag_init(&dg);
    cr_assert_eq(sim_best_chunk(&j, M, &p, &best, &us, &dg), BK_OK);
    double opt = sqrt(M * (p.step_us + p.alpha_us[TOPO_NVLINK]) * 1e4 * p.eff[0] / (d - 1));
    cr_expect(best >= opt / 2 && best <= opt * 2, "best %zu, optimum %g", best, opt);
    cr_expect(us <= run_trees(&t, &g, &s, COLL_BROADCAST, M, best / 2));
    cr_expect(us <= run_trees(&t, &g, &s, COLL_BROADCAST, M, best * 2));
    /* Reduce up the chain: each middle rank receives, reduces and sends a chunk in one pass,
     * at the link's rate (its reduction unit is faster), so the chunks pipeline like the
     * broadcast's, and the root's last pass into the output follows: (K + d - 1) tau + red. */
    struct pgraph rg;
    cr_assert_eq(pgraph_reverse(&rg, &g), BK_OK);
    double red = C / (p.reduce_gbps * 1e3);
    want = p.call_us + p.launch_us + (K + d - 1) * tu + red;
    got = run_trees(&t, &rg, &s, COLL_REDUCE, M, C);
    cr_expect(WITHIN(got, want, 0.01), "reduce %g against %g", got, want);
    pgraph_free(&rg);
    diag_free(&dg);
    ptree_set_free(&s);
    pgraph_free(&g);
    topo_free(&t);
}

static const char ring4[] = "topology ring4\ngpu g0\ngpu g1\ngpu g2\ngpu g3\n"
                            "link g0 g1 bw=10\nlink g1 g2 bw=10\nlink g2 g3 bw=10\n"
                            "link g3 g0 bw=10\n";

Test(sim, ring_topology_trees_and_nccl_rings)
{
    struct topo t;
    struct pgraph g;
    struct ptree_set s;
    struct sim_params p;
    sim_params_default(&p);
    load(ring4, &t, &g);
    /* Trees: both ways round, each with half the data, on disjoint arcs: depth 3 each. */
    ptree_set_init(&s);
    add_tree(&s, &g, 0, (int[]){-1, 0, 1, 2}, -1, 10);
    add_tree(&s, &g, 0, (int[]){-1, 2, 3, 0}, -1, 10);
    double K = M / 2 / (double)C, tu = tau(p.alpha_us[TOPO_NVLINK], C, 10);
    double got = run_trees(&t, &g, &s, COLL_BROADCAST, M, C);
    double want = p.call_us + p.launch_us + (K + 2) * tu;
    cr_expect(WITHIN(got, want, 0.01), "trees %g against %g", got, want);

    /* NCCL rings: the two directed cycles at 10 GB/s each. */
    struct ring_result r;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(ring_best(&t, &r, &d), BK_OK);
    cr_expect(WITHIN(r.gbps, 20, 1e-6), "ring rate %g", r.gbps);
    int n = 4, nch = r.nrings > 0 ? r.nrings : 1;
    double step = p.nccl_step_us[TOPO_NVLINK] + C / (r.gbps / nch * p.eff[0] * 1e3);
    double per_ch = M / nch, Kc = per_ch / (double)C;
    struct sim_job j = {SIM_RING, &t, COLL_BROADCAST, 0, NULL, NULL, &r, NULL};
    double us;
    cr_assert_eq(sim_run(&j, M, C, &p, &us, &d), BK_OK);
    want = p.call_us + p.nccl_launch_us + (Kc + n - 2) * step;
    cr_expect(WITHIN(us, want, 0.01), "ring broadcast %g against %g", us, want);
    j.coll = COLL_ALLREDUCE;
    cr_assert_eq(sim_run(&j, M, C, &p, &us, &d), BK_OK);
    want = p.call_us + p.nccl_launch_us + per_ch / (n * (double)C) * 2 * (n - 1) * step;
    cr_expect(WITHIN(us, want, 0.01), "ring allreduce %g against %g", us, want);
    j.coll = COLL_ALLGATHER;
    cr_assert_eq(sim_run(&j, M, C, &p, &us, &d), BK_OK);
    want = p.call_us + p.nccl_launch_us + per_ch / n / (double)C * (n - 1) * step;
    cr_expect(WITHIN(us, want, 0.01), "ring allgather %g against %g", us, want);
    /* Double binary trees need edge 0-2, which no relay-only path joins here. */
    j.coll = COLL_ALLREDUCE;
    j.algo = SIM_DBT;
    cr_expect_eq(sim_run(&j, M, C, &p, &us, &d), BK_EUSAGE);
    j.coll = COLL_BROADCAST;
    cr_expect_eq(sim_run(&j, M, C, &p, &us, &d), BK_EUSAGE);
    ring_result_free(&r);
    diag_free(&d);
    ptree_set_free(&s);
    pgraph_free(&g);
    topo_free(&t);
}

static const char star[] = "topology star\ngpu g0\ngpu g1\ngpu g2\ngpu g3\nnvswitch s0\n"
                           "link g0 s0 bw=10\nlink g1 s0 bw=10\nlink g2 s0 bw=10\n"
                           "link g3 s0 bw=10\n";

Test(sim, star_shares_the_root_uplink)
{
    struct topo t;
    struct pgraph g;
    struct ptree_set s;
    struct sim_params p;
    sim_params_default(&p);
    load(star, &t, &g);
    int sw = tu_node(&t, "nvs0");
    ptree_set_init(&s);
    add_tree(&s, &g, 0, (int[]){-1, 0, 0, 0}, sw, 10);
    /* One hop through the switch: three hand-overs share g0's uplink, in lockstep. */
    double K = M / (double)C, a = 2 * p.alpha_us[TOPO_NVLINK];
    double want = p.call_us + p.launch_us + K * (p.step_us + a + 3 * C / (10e3 * p.eff[0]));
    double got = run_trees(&t, &g, &s, COLL_BROADCAST, M, C);
    cr_expect(WITHIN(got, want, 0.01), "star %g against %g", got, want);
    /* Double binary trees run here (every pair meets at the switch), no faster than any
     * allreduce can: 2 (n - 1) / n of the data through each GPU's 10 GB/s uplink. */
    struct ring_result r;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(ring_best(&t, &r, &d), BK_OK);
    struct sim_job j = {SIM_DBT, &t, COLL_ALLREDUCE, -1, NULL, NULL, &r, NULL};
    double us;
    cr_assert_eq(sim_run(&j, M, C, &p, &us, &d), BK_OK, "%s", diag_first_error(&d));
    cr_expect(us >= 1.5 * M / (10e3 * p.eff[0]) && us < 4 * M / (10e3 * p.eff[0]), "dbt %g", us);
    ring_result_free(&r);
    diag_free(&d);
    ptree_set_free(&s);
    pgraph_free(&g);
    topo_free(&t);
}

/* ------------------------------------------------------------------ the engine */

static double flow_end(struct sim_eng *e, int id) { return e->finish[id]; }

Test(sim_engine, two_flows_take_twice_as_long_and_share_fairly)
{
    struct sim_eng e;
    double cap[] = {10, 2, 9};
    int A = 0, B[] = {0, 1}, D = 2, id[8];
    double end;
    cr_assert_eq(sim_eng_init(&e, 3, cap), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 0, 1e6, &A, 1, &id[0]), BK_OK);
    cr_assert_eq(sim_eng_run(&e, &end), BK_OK);
    cr_expect(WITHIN(end, 100, 1e-9), "one flow %g", end);
    cr_assert_eq(sim_eng_task(&e, 0, 1e6, &A, 1, &id[1]), BK_OK);
    cr_assert_eq(sim_eng_run(&e, &end), BK_OK);
    cr_expect(WITHIN(end, 200, 1e-9), "two flows %g", end);
    cr_expect(WITHIN(flow_end(&e, id[0]), 200, 1e-9));
    sim_eng_free(&e);

    /* Max-min: f2 is held to 2 GB/s by resource 1, so f1 gets the other 8 of resource 0. */
    cr_assert_eq(sim_eng_init(&e, 3, cap), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 0, 8e5, &A, 1, &id[0]), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 0, 4e5, B, 2, &id[1]), BK_OK);
    /* Three flows on resource 2 (9 GB/s): they end at 100, 166.7 and 200 us. */
    for (int k = 0; k < 3; k++)
        cr_assert_eq(sim_eng_task(&e, 0, 3e5 * (k + 1), &D, 1, &id[2 + k]), BK_OK);
    /* A delay after a flow: 5 us of launch, 1e5 bytes at 10 GB/s, then 3 us. */
    cr_assert_eq(sim_eng_task(&e, 3, 0, NULL, 0, &id[5]), BK_OK);
    cr_assert_eq(sim_eng_dep(&e, id[0], id[5]), BK_OK);
    cr_assert_eq(sim_eng_run(&e, &end), BK_OK);
    cr_expect(WITHIN(flow_end(&e, id[0]), 100, 1e-9), "f1 %g", flow_end(&e, id[0]));
    cr_expect(WITHIN(flow_end(&e, id[1]), 200, 1e-9), "f2 %g", flow_end(&e, id[1]));
    cr_expect(WITHIN(flow_end(&e, id[2]), 100, 1e-9));
    cr_expect(WITHIN(flow_end(&e, id[3]), 500.0 / 3, 1e-9), "%g", flow_end(&e, id[3]));
    cr_expect(WITHIN(flow_end(&e, id[4]), 200, 1e-9));
    cr_expect(WITHIN(flow_end(&e, id[5]), 103, 1e-9));
    cr_expect(WITHIN(end, 200, 1e-9));
    sim_eng_free(&e);
}

Test(sim_engine, cycle_and_bad_capacity_are_errors)
{
    struct sim_eng e;
    double cap[] = {10};
    int r = 0, a, b;
    double end;
    cr_assert_eq(sim_eng_init(&e, 1, cap), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 1, 1e4, &r, 1, &a), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 1, 1e4, &r, 1, &b), BK_OK);
    cr_assert_eq(sim_eng_dep(&e, a, b), BK_OK);
    cr_assert_eq(sim_eng_dep(&e, b, a), BK_OK);
    cr_expect_eq(sim_eng_run(&e, &end), BK_EINTERNAL);
    sim_eng_free(&e);
    double bad[] = {0};
    cr_expect_neq(sim_eng_init(&e, 1, bad), BK_OK);
}

Test(sim_engine, flows_leave_and_join_the_resources_they_cross)
{
    /* 1 GB/s each (1000 bytes per us). a on r0 and b on r0 + r1 share r0; b and c share r1:
     * all run at 500 until a and b end at 2 us, then c has r1 alone (2000 bytes more, at 1000).
     * d crosses r2 twice, so it counts twice there: 500. e starts 1 us after a on r0, alone. */
    struct sim_eng e;
    double cap[] = {1, 1, 1};
    int r0 = 0, r01[] = {0, 1}, r1 = 1, r22[] = {2, 2}, id[5];
    double end;
    cr_assert_eq(sim_eng_init(&e, 3, cap), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 0, 1000, &r0, 1, &id[0]), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 0, 1000, r01, 2, &id[1]), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 0, 3000, &r1, 1, &id[2]), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 0, 1000, r22, 2, &id[3]), BK_OK);
    cr_assert_eq(sim_eng_task(&e, 1, 500, &r0, 1, &id[4]), BK_OK);
    cr_assert_eq(sim_eng_dep(&e, id[0], id[4]), BK_OK);
    cr_assert_eq(sim_eng_run(&e, &end), BK_OK);
    static const double want[] = {2, 2, 4, 2, 3.5};
    for (int k = 0; k < 5; k++)
        cr_expect(WITHIN(flow_end(&e, id[k]), want[k], 1e-9), "flow %d ends at %g, not %g", k,
                  flow_end(&e, id[k]), want[k]);
    cr_expect(WITHIN(end, 4, 1e-9));
    sim_eng_free(&e);
}
