/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_smi_input.c - the `nvidia-smi topo -m` reader on bad and odd input: every error with its
 * position, truncations at every byte, a job's CPU set that must not merge the sockets, escape
 * sequences that lost their escape byte, and rows a terminal or a mail hard-wrapped.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/input.h"
#include "core/strbuf.h"
#include "smi_util.h"
#include "testutil.h"

/* Read text that must fail; check the first error's text and position. */
static void expect_error(const char *text, const char *model, const char *needle, int line,
                         int col)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    enum bk_status st = tu_read_string("bad.smi", text, TOPO_FMT_SMI, model, &t, &d);
    cr_assert_eq(st, BK_EINPUT);
    const struct diag_msg *m = NULL;
    for (size_t i = 0; i < d.n && !m; i++)
        if (d.msgs[i].level == DIAG_ERROR)
            m = &d.msgs[i];
    cr_assert(m && strstr(m->text, needle), "expected '%s', got '%s'", needle, m ? m->text : "");
    cr_assert_eq(m->loc.line, line, "%s: line %d", m->text, m->loc.line);
    cr_assert_eq(m->loc.col, col, "%s: col %d", m->text, m->loc.col);
    diag_free(&d);
}

Test(smi, errors)
{
    expect_error("        GPU0    GPU1\nGPU0     X      PIY\nGPU1    PIX      X\n", NULL,
                 "unknown cell 'PIY' in row GPU0, column GPU1", 2, 17);
    expect_error("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV2\tNV1\nGPU1\tNV1\t X \tNV1\n"
                 "GPU2\tNV1\tNV1\t X \n",
                 NULL, "is NV2 but row GPU1, column GPU0 (line 3, column 6) is NV1", 2, 10);
    expect_error("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tPIX\tPIX\nGPU1\tPIX\t X \tPIX\n", NULL,
                 "no row for column GPU2", 1, 12);
    expect_error("\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tPIX\t0-7\n", NULL,
                 "row GPU0 has 2 matrix cells but the header has 3", 2, 14);
    expect_error("\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPIX\tPIX\n", NULL,
                 "diagonal cell of row GPU1 is PIX", 3, 10);
    expect_error("\tGPU0\tGPU1\nGPU0\t X \tPIX\t7\nGPU1\tPIX\t X \n", NULL,
                 "extra cell '7' in row GPU0", 2, 14);
    expect_error("\tGPU0\tNIC0\nGPU0\t X \tNV1\nNIC0\tNV1\t X \n", NULL,
                 "NVLink joins GPUs only", 2, 10);
    expect_error("\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU0\tPIX\t X \n", NULL, "second row for GPU0",
                 3, 1);
    expect_error("hello\nworld\n", NULL, "no 'nvidia-smi topo -m' header", 1, 0);
    expect_error("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \n", "Z900", "unknown GPU model",
                 0, 0);
    /* Never a bandwidth the GPU cannot have: a cell over the part's links, or rows that add up
       past them without every pair linked (neither direct links nor one plane). */
    expect_error("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV18\tNV18\nGPU1\tNV18\t X \tNV18\n"
                 "GPU2\tNV18\tNV18\t X \n",
                 "A100", "NV18 between GPU0 and GPU1, but A100 GPUs have 12 NVLinks each", 2, 10);
    expect_error("\tGPU0\tGPU1\nGPU0\t X \tNV8\nGPU1\tNV8\t X \n", "RTX 3090",
                 "but RTX 3090 GPUs have 4 NVLinks each", 2, 10);
    expect_error("\tGPU0\tGPU1\tGPU2\tGPU3\nGPU0\t X \tNV4\tNV4\tSYS\n"
                 "GPU1\tNV4\t X \tSYS\tNV4\nGPU2\tNV4\tSYS\t X \tNV4\n"
                 "GPU3\tSYS\tNV4\tNV4\t X \n",
                 "V100", "row GPU0's NV# cells add up to 8 NVLinks, but V100 GPUs have 6 each", 2,
                 1);
}

/* Every truncation of the fixture reads or fails cleanly. */
Test(smi, truncations_never_crash)
{
    char *path = tu_src_path("topologies/dgx1v.smi.txt");
    struct input in;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(input_read(path, &in, &d), BK_OK);
    for (size_t n = 0; n < in.len; n += 7) {
        char *text = bk_strndup(in.data, n);
        struct topo t;
        struct diag dn;
        diag_init(&dn);
        enum bk_status st = tu_read_string("cut", text, TOPO_FMT_SMI, NULL, &t, &dn);
        cr_assert(st == BK_OK || (st == BK_EINPUT && dn.nerrors > 0), "cut at %zu", n);
        if (st == BK_OK)
            topo_free(&t);
        diag_free(&dn);
        free(text);
    }
    input_free(&in);
    free(path);
    diag_free(&d);
}

/* A batch job prints its cgroup's CPUs on every row (issue 18, item 2): the SYS cells still say
 * two sockets, and they win, with a warning; the graph is the one the true columns give. */
Test(smi, a_jobs_cpu_set_does_not_merge_the_sockets)
{
    char *path = tu_src_path("topologies/dgx1v.smi.txt");
    char *text = tu_slurp(path, NULL);
    cr_assert_not_null(text);
    struct strbuf sb;
    sb_init(&sb);
    for (const char *p = text; *p;) { /* every affinity pair becomes "0-3  0" */
        const char *a = strstr(p, "0-19,40-59"), *b = strstr(p, "20-39,60-79");
        const char *hit = a && (!b || a < b) ? a : b;
        if (!hit) {
            sb_puts(&sb, p);
            break;
        }
        const char *end = strchr(hit, '\n');
        sb_printf(&sb, "%.*s0-3               0", (int)(hit - p), p);
        p = end ? end : hit + strlen(hit);
    }
    struct topo t, truth;
    struct diag d, d2;
    read_str_ok(sb.data, "V100", &t, &d);
    read_ok("topologies/dgx1v.smi.txt", "V100", &truth, &d2);
    cr_expect(diag_contains(&d, DIAG_WARNING, "puts GPU0 and GPU5 on one CPU ('0'), but their "
                                              "cell says SYS"), "no warning");
    int cpus = 0;
    for (int i = 0; i < t.nnodes; i++)
        cpus += t.nodes[i].kind == TOPO_CPU;
    cr_expect_eq(cpus, 2, "a two-socket box became %d", cpus);
    cr_expect_eq(t.nlinks, truth.nlinks, "the graph differs from the true columns'");
    topo_free(&t), topo_free(&truth);
    diag_free(&d), diag_free(&d2);
    sb_free(&sb);
    free(text), free(path);
}

/* A paste that lost the escape bytes keeps their leftovers ("[4m", "[0m"): still the same graph,
 * with no warning (issue 18, item 4). */
Test(smi, escape_leftovers_without_their_escape_byte)
{
    char *path = tu_src_path("tests/data/smi/dgx1v-escapes.smi.txt");
    char *text = tu_slurp(path, NULL);
    cr_assert_not_null(text);
    int lost = 0;
    char *w = text;
    for (const char *r = text; *r; r++) {
        lost += *r == 0x1b;
        if (*r != 0x1b)
            *w++ = *r;
    }
    *w = '\0';
    cr_assert_gt(lost, 0, "the fixture has no escape to lose");
    cr_assert(strstr(text, "[4m") || strstr(text, "[1m") || strstr(text, "[0m"), "%s", text);
    struct topo t, ref;
    struct diag d, dr;
    read_str_ok(text, "V100", &t, &d);
    read_ok("topologies/dgx1v.smi.txt", "V100", &ref, &dr);
    assert_same_graph(&t, &ref);
    cr_expect_eq(d.nwarnings, 0);
    topo_free(&t), topo_free(&ref);
    diag_free(&d), diag_free(&dr);
    free(text), free(path);
}

/* The text hard-wrapped at `width` columns, as `fold -w` or an e-mail does. */
static char *folded(const char *text, int width)
{
    struct strbuf sb;
    sb_init(&sb);
    int col = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            col = 0;
        } else if (col == width) {
            sb_putc(&sb, '\n');
            col = 0;
        }
        sb_putc(&sb, *p);
        col += *p != '\n';
    }
    return sb_take(&sb);
}

/* Rows and headers wrapped where a gap falls are read to the same graph; a wrap that splits a
 * cell ("SY" + "S") is refused at that cell (issue 18, item 4). */
Test(smi, hard_wrapped_rows)
{
    char *path = tu_src_path("topologies/dgx1v.smi.txt");
    char *text = tu_slurp(path, NULL);
    cr_assert_not_null(text);
    struct topo ref;
    struct diag dr;
    read_ok("topologies/dgx1v.smi.txt", "V100", &ref, &dr);
    static const int widths[] = {60, 70, 80, 100};
    for (size_t i = 0; i < BK_ARRAY_LEN(widths); i++) {
        char *w = folded(text, widths[i]);
        struct topo t;
        struct diag d;
        diag_init(&d);
        cr_assert_eq(tu_read_string("wrapped.smi", w, TOPO_FMT_SMI, "V100", &t, &d), BK_OK,
                     "%d columns: %s", widths[i], diag_first_error(&d));
        assert_same_graph(&t, &ref);
        topo_free(&t);
        diag_free(&d);
        free(w);
    }
    /* Wraps that split a label, a cell or an affinity value are refused at the first half. */
    static const struct {
        int width;
        const char *msg;
    } split[] = {
        {90, "header label 'NIC2' is split by a line wrap ('NI' here, 'C2' at the start of line 2)"},
        {110, "header label 'Affinity' is split by a line wrap ('Af' here, 'finity'"},
        {59, "header label 'GPU6' is split by a line wrap ('GPU' here, '6'"},
        {107, "row GPU0's affinity value '0-1' may be split by a line wrap (its rest '9,40-59' "
              "starts line 4)"},
        {108, "row GPU0's affinity value '0-19' may be split by a line wrap (its rest ',40-59'"},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(split); i++) {
        char *w = folded(text, split[i].width);
        struct topo t;
        struct diag d;
        diag_init(&d);
        cr_expect_eq(tu_read_string("split.smi", w, TOPO_FMT_SMI, "V100", &t, &d), BK_EINPUT,
                     "%d columns", split[i].width);
        cr_expect(diag_first_error(&d) && strstr(diag_first_error(&d), split[i].msg),
                  "%d columns: %s", split[i].width, diag_first_error(&d));
        diag_free(&d);
        free(w);
    }
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_expect_eq(tu_read_string("cell.smi", "\tGPU0\tGPU1\nGPU0\t X \tN\nV1\nGPU1\tNV1\t X\n",
                                TOPO_FMT_SMI, "V100", &t, &d),
                 BK_EINPUT);
    cr_expect(diag_first_error(&d) && strstr(diag_first_error(&d), "unknown cell 'N' in row GPU0"),
              "%s", diag_first_error(&d));
    diag_free(&d);
    /* Every width from 40 to 150 columns reads the graph or is refused with one of those. */
    for (int width = 40; width <= 150; width++) {
        char *w = folded(text, width);
        diag_init(&d);
        if (tu_read_string("any.smi", w, TOPO_FMT_SMI, "V100", &t, &d) == BK_OK) {
            assert_same_graph(&t, &ref);
            topo_free(&t);
        } else {
            const char *e = diag_first_error(&d);
            cr_expect(e && (strstr(e, "split by a line wrap") || strstr(e, "unknown cell")),
                      "%d columns: %s", width, e);
        }
        diag_free(&d);
        free(w);
    }
    topo_free(&ref);
    diag_free(&dr);
    free(text), free(path);
}
