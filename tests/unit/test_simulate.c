/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_simulate.c - blinkc --simulate: the table's shape (header lines, the column line, one
 * row per collective and size), its numbers against the plan (never above the bound; the
 * {0,2,3} broadcast beating rings as the plan says it should), parameter overrides, usage
 * errors and determinism.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define COLUMNS "size collective root algo chunk time_us algbw busbw tree_time_us ring_time_us " \
                "ring_algbw dbt_time_us speedup"

/* The table's rows (lines not starting with '#'), and its last '#' line squeezed. */
static int rows(const char *out, char *columns, size_t cap)
{
    int n = 0;
    for (const char *p = out; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (*p == '#') {
            size_t k = 0;
            int space = 1;
            for (size_t i = 1; i < len && k + 1 < cap; i++) {
                if (p[i] == ' ') {
                    space = 1;
                    continue;
                }
                if (space && k)
                    columns[k++] = ' ';
                space = 0;
                columns[k++] = p[i];
            }
            columns[k] = '\0';
        } else if (len) {
            n++;
        }
        p += len + (e != NULL);
    }
    return n;
}

Test(simulate, broadcast_table_beats_rings_within_the_bound)
{
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"builtin:dgx1v", "--gpus", "0,2,3", "--simulate",
                                            "--collective", "broadcast", "--root", "0", "-b",
                                            "1M", "-e", "512M", "-f", "8", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    char columns[256];
    cr_expect_eq(rows(r.out, columns, sizeof columns), 4, "%s", r.out); /* 1M 8M 64M 512M */
    cr_expect_str_eq(columns, COLUMNS);
    /* The 512 MiB row: trees with the hybrid's PCIe tree below their 75 + 6 GB/s, rings below
     * 50, trees faster. */
    const char *row = strstr(r.out, "\n   536870912");
    cr_assert_not_null(row, "%s", r.out);
    double size, chunk, t, algbw, busbw, tt, rt, ralgbw, speedup;
    int root;
    char coll[32], algo[32], dbt[32];
    cr_assert_eq(sscanf(row, "%lf %31s %d %31s %lf %lf %lf %lf %lf %lf %lf %31s %lf", &size, coll,
                        &root, algo, &chunk, &t, &algbw, &busbw, &tt, &rt, &ralgbw, dbt,
                        &speedup),
                 13);
    cr_expect_str_eq(coll, "broadcast");
    cr_expect_str_eq(algo, "hyb"); /* the hybrid wins here, so the plan runs it */
    cr_expect_float_eq(tt, t, 1e-9);
    cr_expect(algbw <= 81.0 && algbw > 60.0, "algbw %g", algbw);
    cr_expect(ralgbw <= 50.0 && ralgbw > 40.0, "ring algbw %g", ralgbw);
    cr_expect_float_eq(busbw, algbw, 1e-9); /* broadcast: busbw = algbw */
    cr_expect(speedup > 1.3, "speedup %g", speedup);
    cr_expect_str_eq(dbt, "-");
    tu_run_free(&r);
}

Test(simulate, overrides_usage_and_determinism)
{
    struct tu_run a, b, slow;
    const char *args[] = {"builtin:dgx1v", "--gpus", "0-3", "--simulate", "--collective",
                          "allreduce", "-b", "64K", "-e", "4M", NULL};
    tu_run_blinkc(&a, args);
    tu_run_blinkc(&b, args);
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_expect_str_eq(a.out, b.out);
    const char *slow_args[] = {"builtin:dgx1v", "--gpus", "0-3", "--simulate", "--collective",
                               "allreduce", "-b", "64K", "-e", "64K", "--sim-param",
                               "step=500", NULL};
    tu_run_blinkc(&slow, slow_args);
    cr_assert_eq(slow.status, 0, "%s", slow.err);
    double t_fast, t_slow;
    const char *fa = strstr(a.out, "\n       65536"), *fs = strstr(slow.out, "\n       65536");
    cr_assert(fa && fs, "%s\n%s", a.out, slow.out);
    /* tree_time_us: the plan hands 64 KiB to NCCL anyway once hand-overs cost this much. */
    const char *fmt = "%*f %*s %*s %*s %*f %*f %*f %*f %lf";
    cr_assert_eq(sscanf(fa, fmt, &t_fast), 1);
    cr_assert_eq(sscanf(fs, fmt, &t_slow), 1);
    cr_expect_gt(t_slow, t_fast + 400, "%g vs %g", t_slow, t_fast);
    tu_run_free(&a), tu_run_free(&b), tu_run_free(&slow);
    static const char *const bad[][4] = {{"--simulate", "-b", "8M", "-e"},
                                         {"--simulate", "--sim-param", "warp=9", NULL},
                                         {"--simulate", "-f", "1", NULL},
                                         {"--simulate", "-b", "lots", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[6] = {bad[i][0], bad[i][1], bad[i][2], bad[i][3],
                               bad[i][3] && !strcmp(bad[i][3], "-e") ? "1M" : NULL, NULL};
        tu_run_blinkc(&a, argv);
        cr_expect_eq(a.status, 2, "case %zu: %s", i, a.err);
        tu_run_free(&a);
    }
}
