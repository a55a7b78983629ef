/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_doc_commands.c - every command README.md and the man pages show runs as written, and
 * every run they show prints what they show (tests/docs/doc_run.sh says how, and which commands
 * this machine cannot run and why). The runner is first shown to fail on a wrong document. The
 * fixture lists of README.md and blinkc(1) name every file in topologies/.
 * Under the sanitizers it is skipped: the plain build runs it, and an instrumented drop-in cannot
 * be preloaded into the uninstrumented programs the documents build.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/input.h"
#include "core/strbuf.h"
#include "testutil.h"

/* doc_run.sh DOCS... (paths under the source tree, or absolute); prints its report on failure. */
static void run_docs(struct tu_run *r, const char *const *docs)
{
    char *script = tu_src_path("tests/docs/doc_run.sh");
    const char *argv[16] = {"bash", script};
    int n = 2;
    char *paths[12] = {0};
    for (int i = 0; docs[i] && n < 15; i++)
        argv[n++] = paths[i] = docs[i][0] == '/' ? strdup(docs[i]) : tu_src_path(docs[i]);
    argv[n] = NULL;
    tu_run_argv(r, argv);
    for (int i = 0; paths[i]; i++)
        free(paths[i]);
    free(script);
}

static void skip_under_sanitizers(void)
{
    if (BK_SAN_CFLAGS[0])
        cr_skip_test("the plain build runs the documents' commands; an instrumented drop-in "
                     "cannot be preloaded into the programs they build");
}

Test(docs, the_runner_fails_on_a_wrong_document)
{
    skip_under_sanitizers();
    static const char md[] = "# doc\n\n```sh\ntrue\nfalse   # fails\n```\n\n"
                             "```\n$ echo one; echo two\ntwo\none\n```\n";
    char *path = tu_temp_file(".md", md, sizeof md - 1);
    struct tu_run r;
    run_docs(&r, (const char *const[]){path, NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "FAIL (exit 1)"), "%s", r.out);
    cr_expect(strstr(r.out, "which the run did not print"), "%s", r.out); /* order counts */
    cr_expect(strstr(r.out, "3 commands ran, 0 skipped, 2 failed"), "%s", r.out);
    tu_run_free(&r);
    unlink(path);
    free(path);
}

Test(docs, every_documented_command_runs)
{
    skip_under_sanitizers();
    struct tu_run r;
    /* README first: the man pages' NCCL program (./app) is the one it builds. */
    run_docs(&r, (const char *const[]){"README.md", "man/blinkc.1.in", "man/blink.3",
                                        "man/blink-nccl.7", "man/blinkc-topology.5", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, " 0 failed"), "%s", r.out);
    fprintf(stderr, "%s", r.out); /* the report, with what was skipped and why, in the log */
    tu_run_free(&r);
}

/* The text of a source file (caller frees). */
static char *source_text(const char *rel)
{
    char *path = tu_src_path(rel);
    struct diag d;
    diag_init(&d);
    struct input in;
    cr_assert_eq(input_read(path, &in, &d), BK_OK, "%s", path);
    char *text = strndup(in.data, in.len);
    input_free(&in);
    diag_free(&d);
    free(path);
    return text;
}

/* The README's fixture paragraph and blinkc(1) FILES name every file in topologies/. */
Test(docs, fixture_lists_name_every_fixture)
{
    char *readme = source_text("README.md"), *man = source_text("man/blinkc.1.in");
    char *dir_path = tu_src_path("topologies");
    DIR *dir = opendir(dir_path);
    cr_assert_not_null(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        n++;
        /* README: `dgx1v` for builtin:dgx1v, `dgx1v.smi.txt` for the other formats. */
        const char *dot = strstr(e->d_name, ".topo");
        int stem = dot && strcmp(dot, ".topo") == 0 ? (int)(dot - e->d_name)
                                                     : (int)strlen(e->d_name);
        char want[300];
        snprintf(want, sizeof want, "`%.*s`", stem, e->d_name);
        cr_expect(strstr(readme, want), "README.md's fixture list lacks %s", want);
        struct strbuf sb; /* blinkc(1) writes a dash as \- */
        sb_init(&sb);
        for (const char *c = e->d_name; *c; c++)
            *c == '-' ? sb_puts(&sb, "\\-") : sb_putc(&sb, *c);
        cr_expect(strstr(man, sb.data), "blinkc(1) FILES lacks %s", e->d_name);
        sb_free(&sb);
    }
    closedir(dir);
    cr_expect_geq(n, 15);
    free(dir_path), free(readme), free(man);
}
