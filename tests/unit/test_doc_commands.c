/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_doc_commands.c - every command README.md and the man pages show runs as written, and
 * every run they show prints what they show (tests/docs/doc_run.sh says how, and which commands
 * this machine cannot run and why). The runner is first shown to fail on a wrong document.
 * Under the sanitizers it is skipped: the plain build runs it, and an instrumented drop-in cannot
 * be preloaded into the uninstrumented programs the documents build.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
