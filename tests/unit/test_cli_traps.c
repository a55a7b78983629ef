/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_cli_traps.c - command lines a first user or a script gets slightly wrong: an output
 * without a TOPOLOGY (an empty shell variable), one file named two ways, an option given twice,
 * --print-topology with --simulate; --explain's rates labelled per root or in all; and a table
 * where trees gain nothing saying why.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define RUN(r, ...) tu_run_blinkc((r), (const char *const[]){__VA_ARGS__, NULL})

/* A fresh empty directory under /tmp (caller removes it and frees). */
static char *fresh_dir(void)
{
    char *dir = strdup("/tmp/blinkc-traps-XXXXXX");
    cr_assert_not_null(dir);
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static char *in_dir(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    cr_assert_not_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* TOPO=; blinkc -o sku.cu $TOPO: no library of the built-in DGX-1V under the user's name. */
Test(traps, an_output_without_a_topology_is_a_usage_error)
{
    char *dir = fresh_dir(), *out = in_dir(dir, "sku.cu");
    const char *const cases[][4] = {
        {"-o", out, NULL},
        {"--plan-json", out, NULL},
        {"--msccl-xml", dir, NULL},
        {"--dot", out, NULL},
        {"--all-allocations", "-o", out, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tu_run r;
        tu_run_blinkc(&r, cases[i]);
        cr_expect_eq(r.status, 2, "case %zu: exit %d: %s", i, r.status, r.err);
        cr_expect(strstr(r.err, "needs a TOPOLOGY"), "case %zu: %s", i, r.err);
        cr_expect_neq(access(out, F_OK), 0, "case %zu wrote %s", i, out);
        tu_run_free(&r);
    }
    /* What a person reads still comes from the built-in default: the table, and standard
     * output. */
    struct tu_run r;
    RUN(&r, "--no-tune", "--collective", "allreduce");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "allreduce"), "%s", r.out);
    tu_run_free(&r);
    RUN(&r, "--no-tune", "--collective", "allreduce", "--plan-json", "-");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"format\": \"blink-plan\""), "%s", r.out);
    tu_run_free(&r);
    rmdir(dir);
    free(out), free(dir);
}

/* Two spellings of one path are one file: -o ./x --plan-json x kept only one of them. */
Test(traps, one_file_named_two_ways_is_refused)
{
    char *dir = fresh_dir(), *a = in_dir(dir, "x"), *b = in_dir(dir, "../");
    size_t n = strlen(b) + strlen(dir) + 4;
    char *other = malloc(n);
    cr_assert_not_null(other);
    /* dir/../<basename of dir>/x: the same file through its parent */
    snprintf(other, n, "%s%s/x", b, strrchr(dir, '/') + 1);
    struct tu_run r;
    RUN(&r, "--no-tune", "--collective", "allreduce", "-o", a, "--plan-json", other,
        "builtin:dgx1v");
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "both write to"), "%s", r.err);
    cr_expect_neq(access(a, F_OK), 0, "%s was written", a);
    tu_run_free(&r);
    /* Distinct files in one directory are still fine. */
    char *c = in_dir(dir, "y");
    RUN(&r, "--no-tune", "--collective", "allreduce", "-o", a, "--plan-json", c, "builtin:dgx1v");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(access(a, F_OK), 0);
    cr_expect_eq(access(c, F_OK), 0);
    tu_run_free(&r);
    unlink(a), unlink(c), rmdir(dir);
    free(a), free(b), free(c), free(other), free(dir);
}

Test(traps, an_option_with_a_value_is_given_once)
{
    const char *const cases[][8] = {
        {"-o", "x.cu", "-o", "y.cu", "builtin:dgx1v", NULL},
        {"--gpus", "0,1", "--gpus", "2,3", "builtin:dgx1v", NULL},
        {"--root", "0", "--root", "1", "builtin:dgx1v", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tu_run r;
        tu_run_blinkc(&r, cases[i]);
        cr_expect_eq(r.status, 2, "case %zu: exit %d", i, r.status);
        cr_expect(strstr(r.err, "given twice"), "case %zu: %s", i, r.err);
        tu_run_free(&r);
    }
    /* The options documented as repeatable still repeat. */
    struct tu_run r;
    RUN(&r, "--no-tune", "--gpus", "0,1", "--collective", "allreduce", "--collective",
        "allgather", "--link-rate", "nvlink2=20", "--link-rate", "pcie3=10", "builtin:dgx1v");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "allgather"), "%s", r.out);
    tu_run_free(&r);
}

/* Planning used to be skipped under --print-topology, and the simulation read no plans. */
Test(traps, print_topology_with_simulate_prints_both)
{
    struct tu_run r;
    RUN(&r, "--print-topology", "--simulate", "--gpus", "0,1", "--collective", "allreduce",
        "-b", "1M", "-e", "1M", "builtin:dgx1v");
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.out, "GPU0    X       NV1"), "%s", r.out);
    cr_expect(strstr(r.out, "# blinkc --simulate: 2 GPUs"), "%s", r.out);
    cr_expect(strstr(r.out, "allreduce"), "%s", r.out);
    tu_run_free(&r);
}

/* Allgather packs a tree set per root: the solver's rate is per root, the table's in all. */
Test(traps, explain_labels_per_root_rates)
{
    struct tu_run r;
    RUN(&r, "--explain", "--no-tune", "--gpus", "0,2,3", "--collective", "allgather",
        "builtin:dgx1v");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* 3 GPUs at 37.5 GB/s each: the table's algbw and bound are 112.5 (busbw 75). */
    cr_expect(strstr(r.out, "   112.5      75.0     112.5  1.000"), "%s", r.out);
    cr_expect(strstr(r.out, "exact LP 37.5 GB/s per root (112.5 in all)"), "%s", r.out);
    cr_expect(strstr(r.out, "trees: GB/s of each tree"), "%s", r.out);
    tu_run_free(&r);
}

/* The demo's second table, the whole DGX-1V, says why every row is 1.00x; a partial allocation,
 * where the trees win, has no such line. */
Test(traps, a_table_without_gains_says_why)
{
    struct tu_run r;
    RUN(&r, "-q", "--no-tune", "--collective", "broadcast", "--root", "0", "--collective",
        "allreduce", "builtin:dgx1v");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "1.00x"), "%s", r.out);
    cr_expect(strstr(r.out, "Every speedup is 1.00x: NCCL's rings already reach the bound"),
              "%s", r.out);
    tu_run_free(&r);
    RUN(&r, "-q", "--no-tune", "--gpus", "0,2,3", "--collective", "broadcast", "--root", "0",
        "--collective", "allreduce", "builtin:dgx1v");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "1.50x"), "%s", r.out);
    cr_expect_not(strstr(r.out, "Every speedup"), "%s", r.out);
    tu_run_free(&r);
}
