/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_fabrics.c - generated clusters plan to their bounds, or are refused with the reason
 * (issue 19). These tests run blinkc many times over large clusters, so they live outside
 * test_cluster, which also runs under valgrind (tests/valgrind.mk).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "testutil.h"

/* Every algbw_gbps of a plan file against the bound_gbps after it: the worst ratio. */
static double worst_ratio(const char *json)
{
    double worst = INFINITY;
    for (const char *p = json; (p = strstr(p, "\"algbw_gbps\": ")) != NULL;) {
        double a = strtod(p + 14, NULL);
        const char *b = strstr(p, "\"bound_gbps\": ");
        cr_assert_not_null(b);
        worst = fmin(worst, a / strtod(b + 14, NULL));
        p = b;
    }
    return worst;
}

/* Whole DGX A100s: two GPUs share a PCIe switch with two NICs, and each takes its own, so the
 * three phases use all eight NICs and reach every bound (they used four, at half). */
Test(fabrics, dgx_a100_servers_use_every_nic)
{
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--root", "0", "--servers", "4",
                                            "--plan-json", "-", "builtin:dgx-a100", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_geq(worst_ratio(r.out), 0.999);
    cr_expect_not_null(strstr(r.out, "\"algbw_gbps\": 192"), "broadcast at 8 x 24 GB/s");
    tu_run_free(&r);
}

/* The first algbw_gbps and bound_gbps after the plan of `coll`. */
static void plan_rates(const char *json, const char *coll, double *algbw, double *bound)
{
    char *key = bk_asprintf("\"collective\": \"%s\"", coll);
    const char *p = strstr(json, key);
    cr_assert_not_null(p, "no %s plan", coll);
    const char *a = strstr(p, "\"algbw_gbps\": "), *b = strstr(p, "\"bound_gbps\": ");
    cr_assert(a && b);
    *algbw = strtod(a + 14, NULL);
    *bound = strtod(b + 14, NULL);
    free(key);
}

/* ForestColl's 2 x 16 MI250 GCDs: Blink's phases reach 228.6 GB/s of allgather; the whole
 * graph reaches the ForestColl optimum, 354.13 GB/s, and allreduce half of it. */
Test(fabrics, mi250_pair_reaches_the_forestcoll_optimum, .timeout = 120)
{
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--servers", "2", "--collective",
                                            "allgather", "--collective", "allreduce",
                                            "--plan-json", "-", "builtin:mi250", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    double ag, ag_bound, ar, ar_bound;
    plan_rates(r.out, "allgather", &ag, &ag_bound);
    plan_rates(r.out, "allreduce", &ar, &ar_bound);
    cr_expect(fabs(ag_bound - 354.13) < 0.01, "allgather bound %.4f", ag_bound);
    cr_expect_geq(ag, 0.999 * 354.13);
    cr_expect_geq(ar, 0.999 * 354.13 / 2);
    cr_expect_geq(worst_ratio(r.out), 0.999);
    tu_run_free(&r);
}

/* Four HGX H100s with every NIC on one switch: a server receives 24/32 of the buffer through
 * its eight Gen5 x16 slots (8 x 48 GB/s), so allgather's optimum is 384 * 32 / 24 = 512 GB/s.
 * The phases reached 444.4. */
Test(fabrics, hgx_h100_servers_on_one_switch_reach_the_server_cut, .timeout = 120)
{
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--servers", "4", "--collective",
                                            "allgather", "--plan-json", "-", "builtin:hgx-h100",
                                            NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    double ag, bound;
    plan_rates(r.out, "allgather", &ag, &bound);
    cr_expect(fabs(bound - 512) < 0.01, "bound %.4f", bound);
    cr_expect_geq(ag, 0.999 * 512);
    tu_run_free(&r);
}

/* Issue 19's "internal error (no diagnostic was recorded)": every built-in server replicated
 * into 2 half-used and 4 whole servers plans, or is refused as a usage error with its reason
 * (no NIC to join servers), never with exit 3 or that message. */
Test(fabrics, generated_clusters_plan_or_say_why, .timeout = 300)
{
    static const char *const servers[] = {"dgx1p",    "dgx1v",    "dgx2",     "dgx-a100",
                                          "hgx-h100", "hgx-h200", "hgx-b200", "pcie8",
                                          "gb200-nvl72"};
    static const char *const shapes[][4] = {{"--servers", "2", "--gpus", "0-3,8-11"},
                                            {"--servers", "4", NULL, NULL}};
    char *json = tu_temp_file(".json", "", 0);
    for (size_t i = 0; i < BK_ARRAY_LEN(servers); i++)
        for (size_t k = 0; k < BK_ARRAY_LEN(shapes); k++) {
            char *in = bk_asprintf("builtin:%s", servers[i]);
            struct tu_run r;
            tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--root", "0",
                                                    "--plan-json", json, in, shapes[k][0],
                                                    shapes[k][1], shapes[k][2], shapes[k][3],
                                                    NULL});
            cr_expect(r.status == 0 || (r.status == 2 && strstr(r.err, "has no NIC")),
                      "%s %s %s: exit %d: %s", servers[i], shapes[k][0], shapes[k][1], r.status,
                      r.err);
            cr_expect_null(strstr(r.err, "no diagnostic was recorded"), "%s", servers[i]);
            tu_run_free(&r);
            free(in);
        }
    unlink(json);
    free(json);
}
