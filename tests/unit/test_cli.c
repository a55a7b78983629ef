/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_cli.c - the command line: streams and exit codes of --help, --version and usage errors,
 * the agreement between the option table (--help) and the man page, the man pages' lint, and
 * the default job on the built-in DGX-1V, and --debug's trail.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/json_read.h"
#include "core/strbuf.h"
#include "testutil.h"

#define RUN(r, ...) tu_run_blinkc((r), (const char *const[]){__VA_ARGS__, NULL})

Test(cli, help_and_version_go_to_stdout_and_exit_0)
{
    struct tu_run r;
    RUN(&r, "--help");
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "Usage: blinkc"));
    cr_assert_str_empty(r.err);
    tu_run_free(&r);
    RUN(&r, "-V");
    cr_assert_eq(r.status, 0);
    cr_assert(strncmp(r.out, "blinkc ", 7) == 0);
    cr_assert_str_empty(r.err);
    tu_run_free(&r);
}

Test(cli, usage_errors_exit_2_with_a_hint)
{
    const char *const cases[][5] = {
        {"--no-such-option", NULL},
        {"--format", "yaml", NULL},
        {"--gpus", "0,,1", NULL},
        {"--gpus", "a", NULL},
        {"--gpu-model", "K80", NULL},
        {"--link-rate", "nvlink9=3", NULL},
        {"a.topo", "b.topo", NULL},
        {"--plan-json", NULL},
        {"--servers", "1", NULL},
        {"--servers", "1025", NULL},
        {"--servers", "4x", NULL},
        {"--servers", "2.5", NULL},
        {"--nic-gbps", "100", NULL},                  /* without --servers */
        {"--servers", "2", "--nic-gbps", "0", NULL},
        {"--servers", "2", "--nic-gbps", "100Gb/s", NULL},
        {"--servers", "2", "builtin:pcie8", NULL},    /* no NIC */
        {"--servers", "2", "builtin:cluster-4x-dgx1v", NULL},
        {"--root", "gpuX", NULL},
        {"--root", "-1", NULL},
        {"-j", "0", NULL},
        {"--jobs", "257", NULL},
        {"-j", "2x", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tu_run r;
        tu_run_blinkc(&r, cases[i]);
        cr_assert_eq(r.status, 2, "case %zu: status %d, stderr %s", i, r.status, r.err);
        cr_assert(strncmp(r.err, "blinkc: ", 8) == 0, "case %zu: %s", i, r.err);
        const char *nl = strchr(r.err, '\n'), *e = strstr(r.err, "error: ");
        cr_assert(e && nl && e < nl, "case %zu: one prefix style, 'blinkc: error:': %s", i, r.err);
        cr_assert(strstr(r.err, "Try 'blinkc --help'"), "case %zu", i);
        cr_assert_str_empty(r.out);
        tu_run_free(&r);
    }
}

/* Every "--name" in text, as a sorted, de-duplicated, comma-joined list. */
static char *long_options(const char *text, int man)
{
    char *names[128];
    int n = 0;
    const char *dash = man ? "\\-\\-" : "--";
    for (const char *p = text; (p = strstr(p, dash)) && n < 128;) {
        p += strlen(dash);
        struct strbuf sb;
        sb_init(&sb);
        while (*p && (((*p >= 'a' && *p <= 'z') || *p == '-' || *p == '\\'))) {
            if (*p != '\\')
                sb_putc(&sb, *p);
            p++;
        }
        char *name = sb_take(&sb);
        int dup = name[0] == '\0';
        for (int i = 0; i < n && !dup; i++)
            dup = strcmp(names[i], name) == 0;
        if (dup)
            free(name);
        else
            names[n++] = name;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *tmp = names[j];
            names[j] = names[j - 1];
            names[j - 1] = tmp;
        }
    struct strbuf out;
    sb_init(&out);
    for (int i = 0; i < n; i++) {
        sb_printf(&out, "%s%s", i ? "," : "", names[i]);
        free(names[i]);
    }
    return sb_take(&out);
}

Test(cli, help_and_man_page_list_the_same_options)
{
    struct tu_run r;
    RUN(&r, "--help");
    char *path = tu_src_path("man/blinkc.1.in");
    char *man = tu_slurp(path, NULL);
    cr_assert_not_null(man, "cannot open %s", path);
    /* Only the OPTIONS section lists options. */
    char *start = strstr(man, ".SH OPTIONS"), *end = start ? strstr(start + 1, ".SH ") : NULL;
    cr_assert(start && end);
    *end = '\0';
    char *from_help = long_options(r.out, 0), *from_man = long_options(start, 1);
    cr_assert_str_eq(from_help, from_man);
    cr_assert(strstr(from_help, "plan-json"));
    free(from_help), free(from_man), free(man), free(path);
    tu_run_free(&r);
}

/* The man page's paragraph of option `name` with escapes and font changes removed, or NULL. */
static char *man_paragraph(const char *man, const char *name)
{
    struct strbuf h;
    sb_init(&h);
    sb_puts(&h, "\\-\\-");
    for (const char *c = name; *c; c++)
        sb_puts(&h, *c == '-' ? "\\-" : (char[]){*c, 0});
    const char *p = man, *found = NULL;
    while (!found && (p = strstr(p, "\n.TP\n"))) {
        p += 5;
        const char *nl = strchr(p, '\n'), *at = strstr(p, h.data);
        if (at && nl && at < nl && (at[h.len] == ' ' || at[h.len] == '\n'))
            found = p;
    }
    sb_free(&h);
    if (!found)
        return NULL;
    p = found;
    const char *end = strstr(p, "\n.TP");
    struct strbuf sb;
    sb_init(&sb);
    for (; *p && (!end || p < end); p++) {
        if (*p == '\\' && (p[1] == 'f') && p[2])
            p += 2; /* \fR, \fP ... */
        else if (*p == '\\' && p[1] == '-')
            sb_putc(&sb, '-'), p++;
        else if (*p == '\\' && p[1] == '(' && p[2] && p[3])
            p += 3;
        else if (*p == '\n' && p[1] == '.') /* a macro line: drop the macro name */
            for (sb_putc(&sb, ' '), p++; p[1] && p[1] != ' ' && p[1] != '\n';)
                p++;
        else if (*p != '"' && *p != '\\')
            sb_putc(&sb, *p == '\n' ? ' ' : *p);
    }
    return sb_take(&sb);
}

/* Each --help line's argument name, default and "A to B" range are the man page's too. */
Test(cli, help_values_and_ranges_match_the_man_page)
{
    struct tu_run r;
    RUN(&r, "--help");
    char *path = tu_src_path("man/blinkc.1.in");
    char *man = tu_slurp(path, NULL);
    cr_assert_not_null(man);
    int checked = 0;
    for (const char *line = r.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *dd = strstr(line, "--"), *nl = strchr(line, '\n');
        if (!dd || (nl && dd > nl) || strncmp(line, "  ", 2) != 0)
            continue;
        char name[40], arg[40] = "", rest[200] = "";
        if (sscanf(dd + 2, "%39[a-z0-9-] %39[A-Z|a-zN=_]", name, arg) < 1)
            continue;
        snprintf(rest, sizeof rest, "%.*s", nl ? (int)(nl - dd) : 199, dd);
        char *para = man_paragraph(man, name);
        cr_assert_not_null(para, "--%s is not in the man page", name);
        const char *q = strstr(para, name) + strlen(name);
        q += strspn(q, " ");
        if (arg[0] >= 'A' && arg[0] <= 'Z')
            cr_expect(strncmp(q, arg, strlen(arg)) == 0,
                      "--%s %s: the man page names another argument: %.80s", name, arg, para);
        const char *def = strstr(rest, "(default ");
        if (def) {
            char want[64];
            snprintf(want, sizeof want, "default %.*s", (int)strcspn(def + 9, ")"), def + 9);
            cr_expect(strstr(para, want), "--%s: help says '%s', the man page does not: %s",
                      name, want, para);
            checked++;
        }
        const char *to = strstr(rest, " to ");
        if (to && to > rest + 1 && to[-1] >= '0' && to[-1] <= '9') {
            const char *a = to;
            while (a > rest && ((a[-1] >= '0' && a[-1] <= '9') || a[-1] == '.'))
                a--;
            char want[64];
            snprintf(want, sizeof want, "%.*s to %.*s", (int)(to - a), a,
                     (int)strspn(to + 4, "0123456789."), to + 4);
            cr_expect(strstr(para, want), "--%s: help says '%s', the man page does not: %s",
                      name, want, para);
            checked++;
        }
        free(para);
    }
    cr_expect_geq(checked, 7, "only %d values were compared", checked);
    free(man), free(path);
    tu_run_free(&r);
}

/* --templates' paragraph names every template under templates/, and nothing else. */
Test(cli, man_page_names_every_template)
{
    char *path = tu_src_path("man/blinkc.1.in"), *dir = tu_src_path("templates");
    char *man = tu_slurp(path, NULL);
    cr_assert_not_null(man);
    char *para = man_paragraph(man, "templates");
    cr_assert_not_null(para);
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp);
    int n = 0, named = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".tmpl") != 0)
            continue;
        n++;
        named += strstr(para, e->d_name) != NULL;
        cr_expect(strstr(para, e->d_name), "--templates does not name %s", e->d_name);
    }
    closedir(dp);
    int mentioned = 0;
    for (const char *p = para; (p = strstr(p, ".tmpl")); p++)
        mentioned++;
    cr_expect_eq(mentioned, n, "the man page names %d templates, templates/ has %d", mentioned, n);
    cr_expect_gt(named, 0);
    free(para), free(man), free(path), free(dir);
}

Test(cli, man_pages_pass_lint)
{
    /* blinkc.1 as built, with its version and date filled in. */
    const char *build = getenv("BLINKC_BUILDDIR");
    char *pages[] = {bk_asprintf("%s/man/blinkc.1", build ? build : "."),
                     tu_src_path("man/blinkc-topology.5"), tu_src_path("man/blink.3"),
                     tu_src_path("man/blink-nccl.7")};
    char *built = tu_slurp(pages[0], NULL);
    cr_assert_not_null(built, "%s is not built", pages[0]);
    cr_expect_not(strstr(built, "@VERSION@") || strstr(built, "@DATE@"), "%s keeps a placeholder",
                  pages[0]);
    cr_expect(strstr(built, "\"blinkc " PACKAGE_VERSION "\""), "%s lacks its version", pages[0]);
    free(built);
    for (int i = 0; i < 4; i++) {
        struct tu_run r;
        tu_run_argv(&r, (const char *const[]){"groff", "-man", "-ww", "-z", pages[i], NULL});
        cr_assert_eq(r.status, 0, "%s", pages[i]);
        cr_assert_str_empty(r.err, "groff on %s: %s", pages[i], r.err);
        tu_run_free(&r);
        tu_run_argv(&r, (const char *const[]){"mandoc", "-T", "lint", "-W", "warning", pages[i],
                                              NULL});
        if (r.status != -1 || r.err[0]) /* mandoc is optional */
            cr_assert_str_empty(r.out, "mandoc on %s: %s", pages[i], r.out);
        tu_run_free(&r);
        free(pages[i]);
    }
}

/* Which topology a run without one reads; --no-tune, since tuning all 8 GPUs takes a minute
 * under valgrind (test_tune and test_outputs tune them; the 2-GPU run below tunes here). */
Test(cli, default_job_reads_the_builtin_dgx1v)
{
    struct tu_run r;
    RUN(&r, "-q", "--no-tune");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "8 gpu"), "%s", r.out);
    cr_assert(strstr(r.out, "16 nvlink pairs (24 NVLinks)"), "%s", r.out);
    tu_run_free(&r);
    RUN(&r, "--gpus", "0,1", "builtin:dgx1v");
    cr_assert_eq(r.status, 0);
    cr_assert_not(strstr(r.err, "no TOPOLOGY given"));
    tu_run_free(&r);
    RUN(&r, "builtin:dgx9");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "no built-in topology 'dgx9'"));
    tu_run_free(&r);
}

Test(cli, print_topology_uses_the_smi_legend)
{
    struct tu_run r;
    RUN(&r, "--print-topology", "--gpus", "0,1,2,3", "builtin:dgx1v");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* Row GPU0 of the DGX-1V matrix in topology-facts.md 4.3: X NV1 NV1 NV2. */
    cr_assert(strstr(r.out, "GPU0    X       NV1     NV1     NV2"), "%s", r.out);
    cr_assert(strstr(r.out, "gpu0     -> gpu3     nvlink  x2   50.0 GB/s"), "%s", r.out);
    tu_run_free(&r);
}

/* --debug (or BLINKC_DEBUG=1) adds where a failure passed inside blinkc; nothing else does. */
Test(cli, debug_prints_the_failure_trail)
{
    static const char text[] = "gpu 0\nlink 0 9 nvlink\n";
    char *path = tu_temp_file(".topo", text, sizeof text - 1);
    struct tu_run r;
    RUN(&r, path);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect_not(strstr(r.err, "blinkc: trail:"), "%s", r.err);
    tu_run_free(&r);
    RUN(&r, "--debug", path);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "attributes are written KEY=VALUE"), "%s", r.err);
    cr_expect(strstr(r.err, "blinkc: trail: planner/read/topo_text.c:"), "%s", r.err);
    cr_expect(strstr(r.err, ": input\n"), "%s", r.err);
    tu_run_free(&r);
    setenv("BLINKC_DEBUG", "1", 1);
    RUN(&r, "-q", path);
    unsetenv("BLINKC_DEBUG");
    cr_expect(strstr(r.err, "blinkc: trail: planner/read/topo_text.c:"), "%s", r.err);
    tu_run_free(&r);
    remove(path);
    free(path);
}

/* --servers and --nic-gbps say what is wrong (the exit codes are checked above). */
Test(cli, servers_errors_say_why)
{
    const char *const cases[][5] = {
        {"--servers", "1", NULL, "'1' is not a whole number of servers from 2 to 1024"},
        {"--nic-gbps", "100", NULL, "--nic-gbps goes with --servers"},
        {"--servers", "2", "builtin:pcie8", "it has no NIC"},
        {"--servers", "2", "builtin:cluster-4x-dgx1v", "it describes 4 servers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tu_run r;
        tu_run_blinkc(&r, (const char *const[]){cases[i][0], cases[i][1], cases[i][2], NULL});
        cr_assert_eq(r.status, 2, "case %zu: %s", i, r.err);
        cr_assert(strstr(r.err, cases[i][3]), "case %zu: %s", i, r.err);
        tu_run_free(&r);
    }
}

/* What the plan file's ranges say the code runs, merged as a reader would say it. */
static void expected_runs(const struct json_value *ranges, struct strbuf *sb)
{
    cr_assert(ranges && ranges->n > 0, "the plan was not tuned");
    for (int i = 0; i < ranges->n;) {
        const char *algo = json_get(&ranges->items[i], "algo")->string;
        int j = i;
        while (j < ranges->n && strcmp(json_get(&ranges->items[j], "algo")->string, algo) == 0)
            j++;
        const char *name = strcmp(algo, "rings") == 0 ? "NCCL" : algo; /* trees, hybrid */
        double at = json_get(&ranges->items[j < ranges->n ? j : i], "min_bytes")->number;
        const char *unit = at >= 1 << 30 ? "G" : at >= 1 << 20 ? "M" : at >= 1 << 10 ? "K" : "";
        double scaled = at / (*unit == 'G' ? 1 << 30 : *unit == 'M' ? 1 << 20 : *unit ? 1 << 10 : 1);
        if (i == 0 && j == ranges->n)
            sb_printf(sb, "%s at every size", name);
        else
            sb_printf(sb, "%s %s %g%s%s", name, j == ranges->n ? "from" : "to", scaled, unit,
                      j == ranges->n ? "" : ", ");
        i = j;
    }
}

/* The default table: busbw as nccl-tests computes it, and per plan the sizes that go to the
 * trees and to NCCL exactly as the plan file (and so the generated code) has them. */
Test(cli, the_table_says_what_the_code_runs)
{
    struct tu_run table, plan;
    RUN(&table, "-q", "--gpus", "0,2,3", "builtin:dgx1v");
    RUN(&plan, "-q", "--gpus", "0,2,3", "-o", "/dev/null", "--plan-json", "-", "builtin:dgx1v");
    cr_assert_eq(table.status, 0, "%s", table.err);
    cr_assert_eq(plan.status, 0, "%s", plan.err);
    struct input in;
    cr_assert_eq(input_from_memory("plan", plan.out, strlen(plan.out), &in), BK_OK);
    struct diag d;
    diag_init(&d);
    struct json_value doc;
    cr_assert_eq(json_parse(&in, &doc, &d), BK_OK);
    const struct json_value *plans = json_get(&doc, "plans");
    cr_assert(plans && plans->n == 9, "3 broadcasts, 3 reduces and 3 unrooted plans");
    const char *row = strstr(table.out, "\nbroadcast");
    for (int i = 0; i < plans->n; i++) {
        cr_assert_not_null(row, "the table has fewer rows than the plan file");
        row++;
        const struct json_value *p = &plans->items[i];
        const char *coll = json_get(p, "collective")->string;
        double algbw = json_get(p, "algbw_gbps")->number, busbw = 0, shown = 0;
        cr_assert(strncmp(row, coll, strlen(coll)) == 0, "row %d is not %s: %.40s", i, coll, row);
        cr_assert_eq(sscanf(row + 22, "%*d %lf %lf", &shown, &busbw), 2, "%.60s", row);
        double factor = strcmp(coll, "allreduce") == 0 ? 4.0 / 3 : !strcmp(coll, "allgather") ||
                        !strcmp(coll, "reducescatter") ? 2.0 / 3 : 1;
        cr_expect(fabs(shown - algbw) < 0.06 && fabs(busbw - algbw * factor) < 0.06,
                  "%s: algbw %.1f busbw %.1f, want %.1f and %.1f", coll, shown, busbw, algbw,
                  algbw * factor);
        struct strbuf want;
        sb_init(&want);
        expected_runs(json_get(p, "ranges"), &want);
        const char *end = strchr(row, '\n');
        cr_assert_not_null(end);
        int len = (int)(end - row);
        cr_expect(len >= (int)want.len && strncmp(end - want.len, want.data, want.len) == 0,
                  "%s: the table says '%.*s', the plan file '%s'", coll, len - 87, row + 87,
                  want.data);
        sb_free(&want);
        row = strchr(row, '\n');
    }
    json_free(&doc);
    input_free(&in);
    diag_free(&d);
    tu_run_free(&table);
    tu_run_free(&plan);
}

/* --explain says, for every plan with PCIe trees, whether the code runs them and from which size:
 * one "runs from" line per plan whose ranges in the plan file name the hybrid. */
Test(cli, explain_says_where_the_hybrid_runs)
{
    struct tu_run ex, plan;
    RUN(&ex, "-q", "--explain", "--gpus", "0,2,3", "builtin:dgx1v");
    RUN(&plan, "-q", "-o", "/dev/null", "--plan-json", "-", "--gpus", "0,2,3", "builtin:dgx1v");
    cr_assert_eq(ex.status, 0, "%s", ex.err);
    cr_assert_eq(plan.status, 0, "%s", plan.err);
    int hybrid_plans = 0, runs_from = 0;
    const char *at = plan.out;
    while ((at = strstr(at, "\"collective\": "))) {
        const char *next = strstr(at + 1, "\"collective\": ");
        const char *hy = strstr(at, "\"algo\": \"hybrid\"");
        hybrid_plans += hy && (!next || hy < next);
        at++;
    }
    for (const char *p = ex.out; (p = strstr(p, "edges host-staged")); p++)
        runs_from += strncmp(strstr(p, ": ") + 2, "emitted, runs from ", 19) == 0;
    cr_expect_gt(hybrid_plans, 0);
    cr_expect_eq(runs_from, hybrid_plans, "%s", ex.out);
    cr_expect(strstr(ex.out, "with 7.4% of the data: emitted, runs from 1M (simulated)"), "%s",
              ex.out);
    cr_expect(!strstr(ex.out, "not emitted"));
    tu_run_free(&ex);
    tu_run_free(&plan);
}

/* --root takes a rank or the GPU the tables name; errors and --simulate say which is which. */
Test(cli, root_takes_a_rank_or_a_gpu)
{
    struct tu_run r;
    RUN(&r, "-q", "--gpus", "4-7", "--root", "gpu6", "--collective", "broadcast", "--no-hybrid",
        "--plan-json", "-", "builtin:dgx1v");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"root\": \"gpu6\""), "gpu6 is rank 2 here: %.300s", r.out);
    cr_expect_not(strstr(r.out, "\"root\": \"gpu4\""));
    tu_run_free(&r);
    RUN(&r, "--gpus", "4-7", "--root", "gpu9", "builtin:dgx1v");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "blinkc: error: --root gpu9: not a GPU of the allocation (rank 0 is "
                            "gpu4, rank 1 is gpu5, rank 2 is gpu6, rank 3 is gpu7)"), "%s", r.err);
    tu_run_free(&r);
    RUN(&r, "--gpus", "4-7", "--root", "4", "builtin:dgx1v");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--root 4: the allocation has 4 GPUs (rank 0 is gpu4,"), "%s", r.err);
    tu_run_free(&r);
    RUN(&r, "-q", "--gpus", "4-7", "--root", "gpu6", "--collective", "broadcast", "--simulate",
        "-b", "1M", "-e", "1M", "builtin:dgx1v");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "# ranks: 0=gpu4 1=gpu5 2=gpu6 3=gpu7\n"), "%s", r.out);
    cr_expect(strstr(r.out, "broadcast     2 "), "the root column gives the rank: %s", r.out);
    tu_run_free(&r);
}

/* Where the input names no GPU model, the table and the plan file say which part was assumed. */
Test(cli, an_assumed_gpu_part_is_said_in_the_outputs)
{
    char *smi = tu_src_path("topologies/dgx1v.smi.txt");
    struct tu_run r;
    RUN(&r, "-q", "--no-tune", "--gpus", "0,1,2", smi);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "assumed: 3 GPUs are V100 (6 NVLinks at 25 GB/s each way)"), "%s",
              r.out);
    tu_run_free(&r);
    RUN(&r, "-q", "--gpus", "0,1,2", "--plan-json", "-", smi);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"part\": \"V100\", \"part_assumed\": true}"), "%.600s", r.out);
    tu_run_free(&r);
    RUN(&r, "-q", "--no-tune", "--gpu-model", "V100", "--gpus", "0,1,2", smi);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_null(strstr(r.out, "assumed:"), "%s", r.out);
    tu_run_free(&r);
    RUN(&r, "-q", "--gpu-model", "V100", "--gpus", "0,1,2", "--plan-json", "-", smi);
    cr_expect(strstr(r.out, "\"part\": \"V100\"}"), "%.600s", r.out);
    cr_expect_null(strstr(r.out, "part_assumed"));
    tu_run_free(&r);
    free(smi);
}
