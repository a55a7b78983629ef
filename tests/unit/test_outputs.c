/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_outputs.c - a run's outputs are all or nothing (outfile.h): a path that cannot be
 * written fails before any work and leaves the others as they were, a failure after the work
 * started leaves no file and no temporary behind, so does a SIGTERM in the middle of planning,
 * standard output takes one format, and progress shows as a status line on a terminal and as
 * plain lines, only once a job has run a while, anywhere else.
 */
#define _XOPEN_SOURCE 700 /* posix_openpt, grantpt, unlockpt, ptsname */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/progress.h"
#include "core/strbuf.h"
#include "testutil.h"

extern char **environ;

/* A fresh directory holding good.cu = "precious\n"; returns the directory (caller frees). */
static char *dir_with_precious(char **good)
{
    char tmpl[] = "/tmp/blinkc-outputs-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    *good = bk_asprintf("%s/good.cu", tmpl);
    FILE *f = fopen(*good, "w");
    cr_assert_not_null(f);
    fputs("precious\n", f);
    fclose(f);
    return strdup(tmpl);
}

/* The names in dir other than . and .., comma-separated (caller frees). */
static char *listing(const char *dir)
{
    struct strbuf sb;
    sb_init(&sb);
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp);
    struct dirent *e;
    while ((e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            sb_printf(&sb, "%s%s", sb.len ? "," : "", e->d_name);
    closedir(dp);
    return sb.data ? sb_take(&sb) : strdup("");
}

static void expect_untouched(const char *dir, const char *good)
{
    size_t n = 0;
    char *text = tu_slurp(good, &n);
    cr_expect(text && strcmp(text, "precious\n") == 0, "%s was changed", good);
    char *names = listing(dir);
    cr_expect_str_eq(names, "good.cu", "left behind in %s", dir);
    free(text), free(names);
}

static void remove_dir(const char *dir)
{
    char *cmd = bk_asprintf("rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
    free(cmd);
}

Test(outputs, an_unwritable_path_fails_first_and_touches_no_other_output)
{
    char *good, *dir = dir_with_precious(&good);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"--gpus", "0,1", "-o", good, "--plan-json",
                                            "/nonexistent/dir/p.json", "builtin:dgx1v", NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "blinkc: /nonexistent/dir/p.json: error: cannot create output"), "%s",
              r.err);
    tu_run_free(&r);
    expect_untouched(dir, good);
    /* --all-allocations plans for a CPU minute: it must fail before that, not after. */
    tu_run_blinkc(&r, (const char *const[]){"-q", "--all-allocations", "-o",
                                            "/nonexistent/dir/all.cu", "builtin:dgx1v", NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "cannot create output"), "%s", r.err);
    tu_run_free(&r);
    remove_dir(dir);
    free(good), free(dir);
}

Test(outputs, a_failure_after_the_work_started_leaves_nothing_behind)
{
    char *good, *dir = dir_with_precious(&good);
    char *plan = bk_asprintf("%s/p.json", dir), *dot = bk_asprintf("%s/t.dot", dir);
    struct tu_run r;
    /* Reserved, then refused: the allocation has two GPUs, so there is no rank 5. */
    tu_run_blinkc(&r, (const char *const[]){"--gpus", "0,1", "--root", "5", "-o", good,
                                            "--plan-json", plan, "--dot", dot, "builtin:dgx1v",
                                            NULL});
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "--root 5"), "%s", r.err);
    tu_run_free(&r);
    expect_untouched(dir, good);
    remove_dir(dir);
    free(good), free(dir), free(plan), free(dot);
}

Test(outputs, a_run_that_succeeds_writes_every_output)
{
    char *good, *dir = dir_with_precious(&good);
    char *plan = bk_asprintf("%s/p.json", dir);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--gpus", "0,1", "-o", good, "--plan-json",
                                            plan, "builtin:dgx1v", NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    char *names = listing(dir), *code = tu_slurp(good, NULL);
    cr_expect(strcmp(names, "good.cu,p.json") == 0 || strcmp(names, "p.json,good.cu") == 0,
              "%s", names);
    cr_expect(code && strstr(code, "blinkCommInitAll"), "good.cu holds no generated code");
    remove_dir(dir);
    free(good), free(dir), free(plan), free(names), free(code);
}

/* A streaming buffer (sb_stream) writes what gathers, in order, and keeps less than its
 * threshold; a write that fails (a full disk) is kept with its errno. */
Test(outputs, a_streaming_buffer_writes_as_it_grows)
{
    char path[] = "/tmp/blinkc-stream-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    struct strbuf sb;
    sb_init(&sb);
    sb_stream(&sb, fd);
    size_t total = 0;
    char piece[1000];
    for (int i = 0; total < 3 * SB_STREAM_BYTES + 100; i++) {
        int n = snprintf(piece, sizeof piece, "%d,", i);
        sb_putn(&sb, piece, (size_t)n);
        total += (size_t)n;
        cr_assert_lt(sb.len, SB_STREAM_BYTES);
    }
    cr_assert(!sb.failed);
    cr_assert_eq(write(fd, sb.data, sb.len), (ssize_t)sb.len);
    close(fd);
    size_t len = 0;
    char *got = tu_slurp(path, &len);
    unlink(path);
    cr_assert_eq(len, total);
    size_t at = 0;
    for (int i = 0; at < total; i++) {
        int n = snprintf(piece, sizeof piece, "%d,", i);
        cr_assert(memcmp(got + at, piece, (size_t)n) == 0, "at byte %zu", at);
        at += (size_t)n;
    }
    free(got);
    sb_free(&sb);

    int full = open("/dev/full", O_WRONLY);
    if (full >= 0) {
        sb_init(&sb);
        sb_stream(&sb, full);
        for (size_t k = 0; k <= SB_STREAM_BYTES / sizeof piece; k++)
            sb_putn(&sb, piece, sizeof piece);
        cr_expect(sb.failed && sb.err == ENOSPC, "failed %d err %d", sb.failed, sb.err);
        close(full);
        sb_free(&sb);
    }
}

/* A plan file of megabytes, streamed into its temporary, is the text standard output gets. */
Test(outputs, a_streamed_plan_file_equals_the_printed_one)
{
    char *good, *dir = dir_with_precious(&good);
    char *plan = bk_asprintf("%s/p.json", dir);
    static const char *const job[] = {"--no-tune", "--servers", "8", "--collective",
                                      "broadcast", "builtin:dgx1v"};
    struct tu_run r, s;
    tu_run_blinkc(&r, (const char *const[]){job[0], job[1], job[2], job[3], job[4], job[5],
                                            "--plan-json", plan, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_run_blinkc(&s, (const char *const[]){job[0], job[1], job[2], job[3], job[4], job[5],
                                            "--plan-json", "-", NULL});
    cr_assert_eq(s.status, 0, "%s", s.err);
    size_t len = 0;
    char *text = tu_slurp(plan, &len);
    cr_assert_gt(len, 2 * SB_STREAM_BYTES);
    cr_expect(len == strlen(s.out) && memcmp(text, s.out, len) == 0);
    free(text);
    tu_run_free(&r);
    tu_run_free(&s);
    unlink(plan);
    remove_dir(dir);
    free(good), free(dir), free(plan);
}

Test(outputs, sigterm_while_planning_leaves_no_temporary, .timeout = 120)
{
    char *good, *dir = dir_with_precious(&good);
    const char *bin = getenv("BLINKC_BIN");
    cr_assert_not_null(bin, "BLINKC_BIN is not set");
    char *const argv[] = {(char *)bin, "-q", "--all-allocations", "-o", good, "builtin:dgx1v",
                          NULL};
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, bin, NULL, NULL, argv, environ), 0);
    /* Wait until the temporary beside good.cu exists: the run is then planning. */
    int seen = 0;
    for (int i = 0; i < 2000 && !seen; i++) {
        char *names = listing(dir);
        seen = strchr(names, ',') != NULL;
        free(names);
        if (!seen)
            nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    cr_expect(seen, "no temporary file appeared beside good.cu within 10 s");
    kill(pid, SIGTERM);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
              "blinkc should die of the SIGTERM (status %d)", status);
    expect_untouched(dir, good);
    remove_dir(dir);
    free(good), free(dir);
}

Test(outputs, standard_output_takes_one_format)
{
    static const char *const cases[][8] = {
        {"-o", "-", "--plan-json", "-", NULL},
        {"--dot", "-", "--plan-json", "-", NULL},
        {"--simulate", "--plan-json", "-", NULL},
        {"--explain", "-o", "-", NULL},
        {"--print-topology", "--dot", "-", NULL},
        {"-o", "x.cu", "--plan-json", "x.cu", NULL},
    };
    static const char *const want[] = {
        "-o and --plan-json both write to standard output",
        "--plan-json and --dot both write to standard output",
        "--simulate prints to standard output, so --plan-json needs a file",
        "--explain prints to standard output, so -o needs a file",
        "--print-topology prints to standard output, so --dot needs a file",
        "-o and --plan-json both write to x.cu",
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++) {
        struct tu_run r;
        tu_run_blinkc(&r, cases[i]);
        cr_expect_eq(r.status, 2, "case %zu: exit %d", i, r.status);
        cr_expect(strstr(r.err, want[i]), "case %zu: %s", i, r.err);
        cr_expect_str_empty(r.out, "case %zu printed to stdout", i);
        tu_run_free(&r);
    }
}

/* blinkc ARGS with standard error on a new terminal; what it wrote there (caller frees). */
static char *on_a_terminal(const char *const *args)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    cr_assert_geq(master, 0);
    cr_assert_eq(grantpt(master), 0);
    cr_assert_eq(unlockpt(master), 0);
    const char *slave = ptsname(master);
    cr_assert_not_null(slave);
    const char *bin = getenv("BLINKC_BIN");
    cr_assert_not_null(bin);
    char *argv[16] = {(char *)bin};
    int n = 1;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, slave, O_RDWR | O_NOCTTY, 0);
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, bin, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    struct strbuf sb;
    sb_init(&sb);
    int status = 0;
    char buf[4096];
    for (;;) { /* until the child has exited and the terminal is drained (EIO) */
        ssize_t got = read(master, buf, sizeof buf);
        if (got > 0) {
            sb_printf(&sb, "%.*s", (int)got, buf);
            continue;
        }
        if (waitpid(pid, &status, WNOHANG) == pid)
            break;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    while (read(master, buf, sizeof buf) > 0) /* anything left */
        ;
    close(master);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    return sb.data ? sb_take(&sb) : strdup("");
}

/* Progress goes to a terminal only, rewritten in place, and never with -q or into a pipe. */
Test(outputs, progress_shows_on_a_terminal_only, .timeout = 120)
{
    char *out = tu_temp_file(".cu", "", 0);
    char *seen = on_a_terminal((const char *const[]){"--gpus", "0-4", "-o", out, "builtin:dgx1v",
                                                     NULL});
    cr_expect(strstr(seen, "\rblinkc: planning "), "no planning progress: %s", seen);
    cr_expect(strstr(seen, "\rblinkc: simulating sizes for "), "no tuning progress: %s", seen);
    cr_expect(strstr(seen, "\033[K"), "the status line is not erased: %s", seen);
    free(seen);
    seen = on_a_terminal((const char *const[]){"-q", "--gpus", "0-4", "-o", out, "builtin:dgx1v",
                                               NULL});
    cr_expect_str_empty(seen, "-q: %s", seen);
    free(seen);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"--gpus", "0-4", "-o", out, "builtin:dgx1v", NULL});
    cr_expect_eq(r.status, 0);
    cr_expect_null(strchr(r.err, '\r'), "progress into a pipe: %s", r.err);
    tu_run_free(&r);
    unlink(out);
    free(out);
}

/* Off a terminal (a CI log), a long job prints a plain line every few seconds: none before the
 * first period, then one per period, with no carriage return or escape. The period is cut to
 * 50 ms here; blinkc's own is PROGRESS_LINE_SECONDS. */
Test(outputs, progress_prints_plain_lines_off_a_terminal)
{
    char *path = tu_temp_file(".log", "", 0);
    cr_assert_not_null(freopen(path, "w", stderr));
    progress_set_interval(0.05);
    progress_enable(PROGRESS_LINES);
    progress_say("planning %s from rank %d of %d", "broadcast", 0, 8);
    cr_expect_not(progress_enabled(), "a line before the first period");
    for (int i = 0; progress_elapsed() < 0.32; i++) {
        progress_say("simulating sizes for %s (plan %d of %d)", "reduce", i, 100);
        progress_clear(); /* as a diagnostic would: nothing to erase off a terminal */
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    cr_expect(progress_enabled(), "no line after the first period");
    progress_enable(PROGRESS_OFF);
    progress_say("simulating sizes for %s (plan %d of %d)", "reduce", 1, 100);
    fflush(stderr);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        cr_expect(strncmp(line, "blinkc: simulating sizes for reduce (plan ", 42) == 0,
                  "line %d: %s", n, line);
        cr_expect(strchr(line, '\n') && !strchr(line, '\r') && !strchr(line, '\033'),
                  "line %d is not plain: %s", n, line);
    }
    fclose(f);
    cr_expect(n >= 3 && n <= 6, "%d lines in 0.32 s at one per 0.05 s", n);
    unlink(path);
    free(path);
}
