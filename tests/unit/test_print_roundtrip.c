/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_print_roundtrip.c - --print-topology prints a matrix that nvidia-smi topo -m users read
 * as theirs, and blinkc reads that print back as `nvidia-smi topo -m` text to the same matrix,
 * legends and affinity columns: on every one-server fixture, the print of the print is the
 * print. (A cluster's NET cells are no nvidia-smi relation; clusters are left out.)
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "hostile_fixtures.h"
#include "testutil.h"

/* The print up to its link list, which nvidia-smi has no counterpart of. */
static char *matrix_part(const char *print)
{
    const char *links = strstr(print, "\nLinks (");
    return bk_strndup(print, links ? (size_t)(links - print) : strlen(print));
}

/* A "-" cell: two devices with no path, as in a graph without the host (mi250.topo, after
 * ForestColl's); nvidia-smi never prints one, so such prints do not read back. */
static int has_pathless_cell(const char *print)
{
    for (const char *p = strstr(print, "\n"); p && *p; p = strchr(p + 1, '\n'))
        if (p[1] == 'G' || p[1] == 'N') /* a GPU or NIC row */
            for (const char *c = p + 1; *c && *c != '\n'; c++)
                if (*c == '-' && c[-1] == ' ' && (c[1] == ' ' || c[1] == '\n'))
                    return 1;
    return 0;
}

static void check_fixture(int k)
{
    const struct hf_fixture *f = &hf_fixtures[k];
    if (strstr(f->rel, "cluster"))
        return;
    char *path = hf_path(f);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--print-topology", path, NULL});
    cr_assert_eq(r.status, 0, "%s: %s", f->rel, r.err);
    char *first = matrix_part(r.out);
    cr_assert(strstr(first, "CPU Affinity    NUMA Affinity\n"), "%s: %s", f->rel, first);
    cr_assert(strstr(first, "\nLegend:\n"));
    if (has_pathless_cell(first)) {
        cr_expect(strstr(f->rel, "mi250"), "%s: a pair without a path", f->rel);
        tu_run_free(&r);
        free(first), free(path);
        return;
    }
    char *again = tu_temp_file(".txt", r.out, strlen(r.out));
    tu_run_free(&r);
    tu_run_blinkc(&r, (const char *const[]){"-q", "--format", "smi", "--print-topology", again,
                                            NULL});
    cr_assert_eq(r.status, 0, "%s read back: %s", f->rel, r.err);
    char *second = matrix_part(r.out);
    cr_expect_str_eq(second, first, "%s: the print read back prints otherwise", f->rel);
    tu_run_free(&r);
    unlink(again);
    free(first), free(second), free(again), free(path);
}

#define FIXTURE_TEST(name, k)                                                                      \
    Test(print_roundtrip, name, .timeout = 120) { check_fixture(k); }
HF_EACH(FIXTURE_TEST)

Test(print_roundtrip, every_fixture_is_covered)
{
    cr_assert_eq(HF_NFIXTURES, HF_EACH_N, "add the new fixture to HF_EACH (hostile_fixtures.h)");
    hf_check_complete();
}

/* What nvidia-smi users look for: NODE kept as NODE, NUMA affinity per GPU, NIC names. */
Test(print_roundtrip, the_dgx1v_print_reads_like_nvidia_smi)
{
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--print-topology", "builtin:dgx1v", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "GPU0    X       NV1     NV1     NV2     NV2     SYS     SYS     SYS     "
                            "PIX     NODE    SYS     SYS     N/A             0\n"), "%s", r.out);
    cr_expect(strstr(r.out, "GPU7    SYS     SYS     SYS     NV1     NV2     NV1     NV2     X       "
                            "SYS     SYS     NODE    PIX     N/A             1\n"), "%s", r.out);
    cr_expect(strstr(r.out, "  NIC3: mlx5_3\n"));
    cr_expect(strstr(r.out, "  NODE = "));
    tu_run_free(&r);
}
