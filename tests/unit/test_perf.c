/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_perf.c - blink-perf, the nccl-tests driver, on the host backend with the DGX-1V library:
 * nccl-tests' columns and footer, every collective checked with no wrong element, an injected
 * copy failure and a bad option giving their exit codes.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "testutil.h"

static char *perf_path(void)
{
    const char *build = getenv("BLINKC_BUILDDIR");
    return bk_asprintf("%s/bench/blink-perf", build ? build : ".");
}

/* Rows of the table: lines that do not start with '#'. */
static int data_rows(const char *out)
{
    int rows = 0;
    for (const char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
        rows += *p != '#' && *p != '\n';
    return rows;
}

Test(perf, every_collective_checks_out, .timeout = 120)
{
    static const char *const colls[] = {"broadcast", "reduce", "allreduce", "allgather",
                                        "reducescatter"};
    char *bin = perf_path();
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++) {
        struct tu_run r;
        /* 3 ranks on GPUs 0, 2, 3: 8 B to 32 KiB by 8x is 5 sizes. */
        tu_run_argv(&r, (const char *const[]){bin, "-C", colls[i], "-D", "0,2,3", "-b", "8",
                                              "-e", "32K", "-f", "8", "-d", "int32", "-o",
                                              "max", "-r", "1", "-n", "2", "-w", "1", NULL});
        cr_assert_eq(r.status, 0, "%s: %s%s", colls[i], r.out, r.err);
        cr_expect(strstr(r.out, "#wrong") && strstr(r.out, "algbw") && strstr(r.out, "busbw"));
        cr_expect(strstr(r.out, "out-of-place") && strstr(r.out, "in-place"));
        cr_expect(strstr(r.out, "# Out of bounds values : 0 OK"), "%s", r.out);
        cr_expect(strstr(r.out, "# Avg bus bandwidth"));
        cr_expect_eq(data_rows(r.out), 5, "%s", r.out);
        tu_run_free(&r);
    }
    free(bin);
}

Test(perf, failures_and_usage_have_their_exit_codes, .timeout = 60)
{
    char *bin = perf_path();
    struct tu_run r;
    setenv("BLINK_HOST_FAIL_COPY", "3", 1);
    tu_run_argv(&r, (const char *const[]){bin, "-b", "1K", "-e", "1K", "-n", "1", "-w", "0",
                                          NULL});
    unsetenv("BLINK_HOST_FAIL_COPY");
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "BLINK_HOST_FAIL_COPY"), "%s", r.err);
    cr_expect(strstr(r.out, "FAILED"));
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){bin, "-o", "xor", NULL});
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "Try 'blink-perf --help'"));
    tu_run_free(&r);
    /* A device list no plan was made for: an init error, exit 1. */
    tu_run_argv(&r, (const char *const[]){bin, "-D", "3,2,0", "-n", "1", NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "blinkCommInitAll"), "%s", r.err);
    tu_run_free(&r);
    free(bin);
}
