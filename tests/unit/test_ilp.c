/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_ilp.c - the GLPK stages: the generic LP against glpsol on a hand-written MathProg model,
 * column generation against the closed-form optima of blink-and-peers.md 5-6 (Edmonds,
 * Nash-Williams, ForestColl), the fewest-trees MIP, its CPLEX-LP dump re-solved by glpsol, and
 * the error hook turning a GLPK fault into a status.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ilp/ilp.h"
#include "pack/mwu.h"
#include "pack/pack_integral.h"
#include "testutil.h"

/* glpsol's "Objective:  NAME = VALUE (...)" from a -o report file; NAN when missing. */
static double glpsol_objective(const char *const *argv, const char *report)
{
    struct tu_run r;
    tu_run_argv(&r, argv);
    double v = NAN;
    FILE *f = fopen(report, "r");
    char line[512];
    while (r.status == 0 && f && fgets(line, sizeof line, f))
        if (strncmp(line, "Objective:", 10) == 0 && strchr(line, '='))
            v = strtod(strchr(line, '=') + 1, NULL);
    if (f)
        fclose(f);
    unlink(report);
    tu_run_free(&r);
    return v;
}

static void need_glpsol(void)
{
    struct tu_run r;
    const char *argv[] = {"glpsol", "--version", NULL};
    tu_run_argv(&r, argv);
    int ok = r.status == 0;
    tu_run_free(&r);
    if (!ok)
        cr_skip_test("glpsol is not installed");
}

/* (a) tests/data/ilp/ring4.mod through the C API: same rings, same rows. */
Test(ilp_lp, matches_glpsol_reference_model)
{
    need_glpsol();
    static const double cap[4][4] = {
        {0, 25, 25, 50}, {25, 0, 50, 25}, {25, 50, 0, 50}, {50, 25, 50, 0}};
    static const int ring[6][4] = {{0, 1, 2, 3}, {0, 3, 2, 1}, {0, 1, 3, 2},
                                   {0, 2, 3, 1}, {0, 2, 1, 3}, {0, 3, 1, 2}};
    enum lp_row_type type[14];
    double rhs[14], obj[6], val[40], x[6], value = 0;
    int off[7], row[40], nz = 0, arc_row[4][4], nrows = 0;
    for (int u = 0; u < 4; u++)
        for (int v = 0; v < 4; v++)
            if (u != v) {
                arc_row[u][v] = nrows;
                type[nrows] = LP_LE;
                rhs[nrows++] = cap[u][v];
            }
    type[12] = LP_EQ, rhs[12] = 0; /* x1 - x2 = 0 */
    type[13] = LP_GE, rhs[13] = 5; /* x5 + x6 >= 5 */
    for (int r = 0; r < 6; r++) {
        off[r] = nz;
        obj[r] = 1;
        for (int k = 0; k < 4; k++) {
            row[nz] = arc_row[ring[r][k]][ring[r][(k + 1) % 4]];
            val[nz++] = 1;
        }
        if (r < 2)
            row[nz] = 12, val[nz++] = r == 0 ? 1 : -1;
        if (r >= 4)
            row[nz] = 13, val[nz++] = 1;
    }
    off[6] = nz;
    struct lp_model m = {14, 6, type, rhs, obj, off, row, val};
    struct diag d;
    diag_init(&d);
    cr_assert_eq(ilp_solve_lp(&m, x, &value, &d), BK_OK);
    char *mod = tu_src_path("tests/data/ilp/ring4.mod");
    char out[] = "/tmp/blinkc-test-glpsol-XXXXXX";
    close(mkstemp(out));
    const char *argv[] = {"glpsol", "--math", mod, "-o", out, NULL};
    double ref = glpsol_objective(argv, out);
    cr_assert(isfinite(ref), "glpsol gave no objective");
    cr_assert_float_eq(value, ref, 1e-6, "ilp_solve_lp %g, glpsol %g", value, ref);
    /* The primal point itself must satisfy every row. */
    double act[14] = {0}, sum = 0;
    for (int j = 0; j < 6; j++) {
        cr_assert_geq(x[j], -1e-9);
        sum += x[j];
        for (int k = off[j]; k < off[j + 1]; k++)
            act[row[k]] += val[k] * x[j];
    }
    for (int i = 0; i < 12; i++)
        cr_assert_leq(act[i], rhs[i] + 1e-6);
    cr_assert_float_eq(act[12], 0, 1e-6);
    cr_assert_geq(act[13], 5 - 1e-6);
    cr_assert_float_eq(sum, value, 1e-6);
    free(mod);
    diag_free(&d);
}

Test(ilp_lp, infeasible_unbounded_and_bad_index)
{
    enum lp_row_type le = LP_LE, ge = LP_GE;
    double rhs = 1, big = 5, one = 1, x[1], v;
    int off[2] = {0, 1}, r0 = 0, r7 = 7;
    struct diag d;
    diag_init(&d);
    struct lp_model plain = {1, 1, &le, &rhs, &one, off, &r0, &one}; /* max x, x <= 1 */
    cr_assert_eq(ilp_solve_lp(&plain, x, &v, &d), BK_OK);
    cr_assert_float_eq(v, 1, 1e-9);
    struct lp_model nofeas = {1, 1, &ge, &big, &one, off, &r0, &one};
    double neg = -1;
    nofeas.col_val = &neg; /* -x >= 5 with x >= 0 */
    cr_assert_eq(ilp_solve_lp(&nofeas, x, &v, &d), BK_ESOLVE);
    cr_assert(diag_contains(&d, DIAG_ERROR, "infeasible"));
    struct lp_model unb = {1, 1, &ge, &rhs, &one, off, &r0, &one}; /* max x, x >= 1 */
    cr_assert_eq(ilp_solve_lp(&unb, x, &v, &d), BK_ESOLVE);
    cr_assert(diag_contains(&d, DIAG_ERROR, "unbounded"));
    struct lp_model bad = {1, 1, &le, &rhs, &one, off, &r7, &one}; /* row 7 of 1 */
    cr_assert_eq(ilp_solve_lp(&bad, x, &v, &d), BK_EINTERNAL);
    cr_assert(diag_contains(&d, DIAG_ERROR, "out of range"));
    diag_free(&d);
}

/* (e) A GLPK fault is a status and a message, and GLPK works again afterwards. */
Test(ilp_glpk, error_hook_returns_status)
{
    struct diag d;
    diag_init(&d);
    cr_assert_eq(ilp_glpk_selftest_fault(&d), BK_EINTERNAL);
    cr_assert(diag_contains(&d, DIAG_ERROR, "out of range"), "%s", diag_first_error(&d));
    enum lp_row_type le = LP_LE;
    double rhs = 2, one = 1, x[1], v = 0;
    int off[2] = {0, 1}, r0 = 0;
    struct lp_model m = {1, 1, &le, &rhs, &one, off, &r0, &one};
    cr_assert_eq(ilp_solve_lp(&m, x, &v, &d), BK_OK);
    cr_assert_float_eq(v, 2, 1e-9);
    cr_assert_eq(strncmp(ilp_solver_version(), "GLPK ", 5), 0);
    diag_free(&d);
}

/* ------------------------------------------------------------ column generation and the MIP */

struct fx {
    struct topo t;
    struct pgraph g;
    struct oracle *o;
    struct ptree_set cand;
    struct pack_problem p;
    struct ilp_report rep;
    double value;
};

/* Solve the packing LP on fixture/gpus and check the candidates' rates independently: feasible
 * loads, and summing (per root, for allgather) to the reported value. */
static void fx_lp(struct fx *f, const char *fixture, const int *gpus, int n, enum pack_kind kind)
{
    memset(f, 0, sizeof *f);
    tu_load_alloc(fixture, gpus, n, &f->t);
    cr_assert_eq(pgraph_build(&f->g, &f->t, PG_NVLINK), BK_OK);
    cr_assert_eq(oracle_new(&f->o, &f->g), BK_OK);
    ptree_set_init(&f->cand);
    f->p = (struct pack_problem){&f->g, kind, 0};
    struct diag d;
    diag_init(&d);
    enum bk_status st = ilp_lp_optimum(&f->p, f->o, &f->cand, &f->value, &f->rep, &d);
    cr_assert_eq(st, BK_OK, "%s", diag_first_error(&d) ? diag_first_error(&d) : "?");
    char why[256];
    cr_assert(ptree_set_check(&f->cand, &f->g, kind, 1e-6, why, sizeof why), "%s", why);
    for (int r = 0; r < (kind == PACK_ALLGATHER ? f->g.ngpus : 1); r++) {
        double got = kind == PACK_ALLGATHER ? ptree_set_root_rate(&f->cand, r)
                                            : ptree_set_rate(&f->cand);
        cr_assert_geq(got, f->value - 1e-6, "root %d carries %g of %g", r, got, f->value);
    }
    cr_assert_eq(f->rep.lp_columns, f->cand.n);
    diag_free(&d);
}

static void fx_free(struct fx *f)
{
    ptree_set_free(&f->cand);
    oracle_free(f->o);
    pgraph_free(&f->g);
    topo_free(&f->t);
}

static const int g023[] = {0, 2, 3};

/* (b) Edmonds: min cut out of the root. Full DGX-1V: 6 links = 150; {0,2,3}: GPU0 has 3 links
 * (1 to GPU2, 2 to GPU3) = 75. DGX-A100: 12 links per GPU through the switches = 300. */
Test(ilp_cg, broadcast_reaches_edmonds)
{
    struct fx f;
    fx_lp(&f, "dgx1v.topo", NULL, 0, PACK_BROADCAST);
    cr_assert_float_eq(f.value, 150, 1e-6);
    fx_free(&f);
    fx_lp(&f, "dgx1v.topo", g023, 3, PACK_BROADCAST);
    cr_assert_float_eq(f.value, 75, 1e-6);
    fx_free(&f);
    fx_lp(&f, "dgx-a100.topo", NULL, 0, PACK_BROADCAST);
    cr_assert_float_eq(f.value, 300, 1e-6);
    fx_free(&f);
}

/* ForestColl with uniform per-GPU bandwidth B = 150: the worst cut is "all GPUs but v", whose
 * only way in is v's 150 GB/s and which must deliver 7 roots' data: R = 150/7 per root. */
Test(ilp_cg, allgather_reaches_forestcoll)
{
    struct fx f;
    fx_lp(&f, "dgx1v.topo", NULL, 0, PACK_ALLGATHER);
    cr_assert_float_eq(f.value, 150.0 / 7, 1e-6);
    fx_free(&f);
}

/* Nash-Williams strength (fractional): {0,2,3} has 1+2+2 links over 3 parts: 5/2 links = 62.5;
 * full DGX-1V: 24 links / 7 (the all-singletons partition) = 24/7 links. */
Test(ilp_cg, allreduce_reaches_nash_williams)
{
    struct fx f;
    fx_lp(&f, "dgx1v.topo", g023, 3, PACK_ALLREDUCE);
    cr_assert_float_eq(f.value, 62.5, 1e-6);
    fx_free(&f);
    fx_lp(&f, "dgx1v.topo", NULL, 0, PACK_ALLREDUCE);
    cr_assert_float_eq(f.value, 24.0 / 7 * 25, 1e-6);
    fx_free(&f);
}

/* (c) + (d) Fewest trees on full DGX-1V broadcast. Column generation alone ends at a basic LP
 * solution of many trees; with Lovasz's integral trees (pack_integral.h) also in the pool, an
 * Edmonds packing of 6 unit trees exists among the candidates and the MIP must find <= 6. The
 * dump re-solved by glpsol gives the same tree count. */
Test(ilp_mip, fewest_trees_and_dump)
{
    struct fx f;
    fx_lp(&f, "dgx1v.topo", NULL, 0, PACK_BROADCAST);
    int cg_only = f.cand.n;
    cr_assert_eq(pack_integral(&f.p, pack_integral_unit(&f.g), &f.cand), BK_OK);
    cr_assert_gt(f.cand.n, cg_only);
    struct diag d0;
    diag_init(&d0);
    cr_assert_eq(ilp_lp_optimum(&f.p, f.o, &f.cand, &f.value, &f.rep, &d0), BK_OK);
    cr_assert_float_eq(f.value, 150, 1e-6);
    diag_free(&d0);
    struct strbuf dump, dump2;
    sb_init(&dump);
    sb_init(&dump2);
    struct ilp_opts opt = {10000, ILP_DEFAULT_SLACK, &dump};
    struct ptree_set out, out2;
    ptree_set_init(&out);
    ptree_set_init(&out2);
    struct ilp_report rep = {0};
    struct diag d;
    diag_init(&d);
    cr_assert_eq(ilp_fewest_trees(&f.p, &f.cand, f.value, &opt, &out, &rep, &d), BK_OK);
    cr_assert_eq(rep.mip_status, 0, "%s", d.n ? d.msgs[0].text : "");
    cr_assert_leq(out.n, 6);
    cr_assert_eq(rep.trees_after, out.n);
    cr_assert_geq(ptree_set_rate(&out), 0.999 * 150);
    char why[256];
    cr_assert(ptree_set_check(&out, &f.g, PACK_BROADCAST, 1e-6, why, sizeof why), "%s", why);
    /* Deterministic dump: the same model twice gives the same bytes, with no path in them. */
    opt.dump = &dump2;
    cr_assert_eq(ilp_fewest_trees(&f.p, &f.cand, f.value, &opt, &out2, &rep, &d), BK_OK);
    cr_assert(dump.len > 0 && dump.len == dump2.len);
    cr_assert_eq(memcmp(dump.data, dump2.data, dump.len), 0);
    cr_assert_null(strstr(dump.data, "/tmp"));
    need_glpsol();
    char *lp = tu_temp_file(".lp", dump.data, dump.len);
    char rpt[] = "/tmp/blinkc-test-glpsol-XXXXXX";
    close(mkstemp(rpt));
    const char *argv[] = {"glpsol", "--lp", lp, "-o", rpt, NULL};
    double trees = glpsol_objective(argv, rpt);
    cr_assert_float_eq(trees, out.n, 1e-6, "glpsol: %g trees, ilp_fewest_trees: %d", trees, out.n);
    unlink(lp);
    free(lp);
    sb_free(&dump);
    sb_free(&dump2);
    ptree_set_free(&out);
    ptree_set_free(&out2);
    diag_free(&d);
    fx_free(&f);
}

/* An unreachable target makes the MIP infeasible: the LP solution comes back, with a warning. */
Test(ilp_mip, infeasible_falls_back_to_lp)
{
    struct fx f;
    fx_lp(&f, "dgx1v.topo", g023, 3, PACK_BROADCAST);
    struct ilp_opts opt = {1000, ILP_DEFAULT_SLACK, NULL};
    struct ptree_set out;
    ptree_set_init(&out);
    struct ilp_report rep = {0};
    struct diag d;
    diag_init(&d);
    cr_assert_eq(ilp_fewest_trees(&f.p, &f.cand, 2 * f.value, &opt, &out, &rep, &d), BK_OK);
    cr_assert_eq(rep.mip_status, 2);
    cr_assert(diag_contains(&d, DIAG_WARNING, "infeasible"));
    cr_assert_float_eq(ptree_set_rate(&out), f.value, 1e-6);
    cr_assert_eq(out.n, rep.trees_before);
    ptree_set_free(&out);
    diag_free(&d);
    fx_free(&f);
}

/* A spent budget is a result: the LP solution is GLPK's first incumbent, so even a 1 ms budget
 * (counted work, which here ends the root relaxation early) ends with a feasible answer and
 * mip_status 1. Allgather on full DGX-1V from MWU's thousands of trees is
 * far from provable in 1 ms, and also makes the MIP take only a subset of the candidates. */
Test(ilp_mip, time_limit_keeps_incumbent)
{
    struct fx f;
    memset(&f, 0, sizeof f);
    tu_load_alloc("dgx1v.topo", NULL, 0, &f.t);
    cr_assert_eq(pgraph_build(&f.g, &f.t, PG_NVLINK), BK_OK);
    cr_assert_eq(oracle_new(&f.o, &f.g), BK_OK);
    f.p = (struct pack_problem){&f.g, PACK_ALLGATHER, 0};
    struct mwu_opts mo = {MWU_DEFAULT_EPSILON, 0};
    struct mwu_stats ms;
    cr_assert_eq(mwu_pack(&f.p, f.o, &mo, &f.cand, &ms), BK_OK);
    struct diag d;
    diag_init(&d);
    cr_assert_eq(ilp_lp_optimum(&f.p, f.o, &f.cand, &f.value, &f.rep, &d), BK_OK);
    cr_assert_float_eq(f.value, 150.0 / 7, 1e-6);
    struct ilp_opts opt = {1, ILP_DEFAULT_SLACK, NULL};
    struct ptree_set out;
    ptree_set_init(&out);
    struct ilp_report rep = {0};
    cr_assert_eq(ilp_fewest_trees(&f.p, &f.cand, f.value, &opt, &out, &rep, &d), BK_OK);
    cr_assert_eq(rep.mip_status, 1);
    cr_assert(rep.mip_gap > 0 && rep.mip_gap <= 1);
    cr_assert_leq(rep.trees_after, rep.trees_before);
    if (f.cand.n > 1000)
        cr_assert(rep.mip_candidates >= rep.trees_before && rep.mip_candidates <= 1000);
    char why[256];
    cr_assert(ptree_set_check(&out, &f.g, PACK_ALLGATHER, 1e-6, why, sizeof why), "%s", why);
    for (int r = 0; r < f.g.ngpus; r++)
        cr_assert_geq(ptree_set_root_rate(&out, r), (1 - ILP_DEFAULT_SLACK) * f.value - 1e-6);
    ptree_set_free(&out);
    diag_free(&d);
    fx_free(&f);
}
