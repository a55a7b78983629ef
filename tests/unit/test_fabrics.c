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
