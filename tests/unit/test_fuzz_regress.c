/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_fuzz_regress.c - replays every input the fuzzers found (tests/fuzz/regress/HARNESS/)
 * through the harnesses' own entry points (tests/fuzz/fuzz_*.c, built here without libFuzzer),
 * so each crash, leak or broken invariant stays fixed. The seed fixtures of each format are
 * replayed too (for the cluster and plan harnesses, the bundles and plan files of
 * tests/fuzz/seeds/): every harness must take its real inputs, and each test has something to run.
 * Sanitizer findings need the --enable-sanitizers build; the invariants are checked in any.
 *
 * Findings not fixed yet wait in tests/fuzz/regress/HARNESS/pending/ (see docs/hardening.md):
 * replaying them would crash this test for everyone sharing the tree, so they run only with
 * BLINKC_FUZZ_PENDING=1 and are otherwise reported as a skipped test. A fix moves its input up
 * into HARNESS/, where it is replayed on every make check.
 */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "testutil.h"

typedef int (*fuzz_fn)(const uint8_t *data, size_t size);

/* Read a whole file; NULL on error. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
        }
    }
    if (ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Run fn on every file matching SRCDIR/pattern; returns how many there were. */
static int replay(fuzz_fn fn, const char *pattern)
{
    char *pat = tu_src_path(pattern);
    glob_t g;
    int n = 0;
    if (glob(pat, GLOB_MARK, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            size_t plen = strlen(g.gl_pathv[i]);
            if (plen && g.gl_pathv[i][plen - 1] == '/')
                continue; /* a directory (pending/) */
            size_t len = 0;
            uint8_t *data = slurp(g.gl_pathv[i], &len);
            cr_assert_not_null(data, "cannot read %s", g.gl_pathv[i]);
            int bad = fn(data, len);
            cr_expect_eq(bad, 0, "%s: harness invariant %d broken", g.gl_pathv[i], bad);
            free(data);
            n++;
        }
        globfree(&g);
    }
    free(pat);
    return n;
}

/* The harness's regressions, then its seeds (at least one must exist). */
static void replay_all(const char *name, fuzz_fn fn, const char *const *seeds)
{
    char regress[128];
    snprintf(regress, sizeof regress, "tests/fuzz/regress/%s/*", name);
    replay(fn, regress);
    int nseeds = 0;
    for (int i = 0; seeds[i]; i++)
        nseeds += replay(fn, seeds[i]);
    cr_assert_gt(nseeds, 0, "no seed fixture found for fuzz_%s", name);
}

/* A hung reader fails the test instead of hanging make check. */
TestSuite(fuzz_regress, .timeout = 120);

Test(fuzz_regress, text)
{
    static const char *const seeds[] = {"topologies/*.topo", NULL};
    replay_all("text", fuzz_text_one, seeds);
}

Test(fuzz_regress, hwloc)
{
    static const char *const seeds[] = {"topologies/*.hwloc.xml", NULL};
    replay_all("hwloc", fuzz_hwloc_one, seeds);
}

Test(fuzz_regress, nccl)
{
    static const char *const seeds[] = {"topologies/*.nccl.xml", "tests/data/nccl/*.xml", NULL};
    replay_all("nccl", fuzz_nccl_one, seeds);
}

Test(fuzz_regress, smi)
{
    static const char *const seeds[] = {"topologies/*.smi.txt", "tests/data/smi/*", NULL};
    replay_all("smi", fuzz_smi_one, seeds);
}

Test(fuzz_regress, tmpl)
{
    static const char *const seeds[] = {"templates/*.tmpl", NULL};
    replay_all("tmpl", fuzz_tmpl_one, seeds);
}

Test(fuzz_regress, cstr)
{
    static const char *const seeds[] = {"templates/*.tmpl", "topologies/*.smi.txt", NULL};
    replay_all("cstr", fuzz_cstr_one, seeds);
}

Test(fuzz_regress, cluster)
{
    static const char *const seeds[] = {"tests/fuzz/seeds/cluster/*", NULL};
    replay_all("cluster", fuzz_cluster_one, seeds);
}

Test(fuzz_regress, plan)
{
    static const char *const seeds[] = {"tests/fuzz/seeds/plan/*", NULL};
    replay_all("plan", fuzz_plan_one, seeds);
}

/* Findings still open: replayed on request only (see the top of this file). */
Test(fuzz_regress, pending)
{
    static const struct {
        const char *name;
        fuzz_fn fn;
    } h[] = {{"text", fuzz_text_one}, {"hwloc", fuzz_hwloc_one}, {"nccl", fuzz_nccl_one},
             {"smi", fuzz_smi_one},   {"tmpl", fuzz_tmpl_one},   {"cstr", fuzz_cstr_one},
             {"cluster", fuzz_cluster_one}, {"plan", fuzz_plan_one}};
    const char *on = getenv("BLINKC_FUZZ_PENDING");
    int run = on && strcmp(on, "1") == 0, n = 0;
    for (size_t i = 0; i < BK_ARRAY_LEN(h); i++) {
        char pat[128];
        snprintf(pat, sizeof pat, "tests/fuzz/regress/%s/pending/*", h[i].name);
        if (run) {
            n += replay(h[i].fn, pat);
        } else {
            char *full = tu_src_path(pat);
            glob_t g;
            if (glob(full, 0, NULL, &g) == 0) {
                n += (int)g.gl_pathc;
                globfree(&g);
            }
            free(full);
        }
    }
    if (!run && n > 0)
        cr_skip_test("%d open fuzzer finding(s) in tests/fuzz/regress/*/pending/ "
                     "(BLINKC_FUZZ_PENDING=1 replays them)", n);
}
