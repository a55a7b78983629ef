/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_trace.c - BLINK_TRACE on the host backend: four ranks on a chain (0 <- 1 <- 2 <- 3)
 * run five allreduces of 4096 floats in 1 KiB chunks, so each rank moves 16 chunks up and 16
 * down per call; each rank's file must hold exactly those posts (80 and 80, counted from the
 * call's parameters, not from the runtime), and blink-trace must find five allreduces over four
 * ranks. A directory that cannot be written is an init error that names the variable.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_testutil.h"

#define N 4
#define CALLS 5
#define COUNT 4096
#define CHUNK 1024

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot read %s", path);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

Test(rt_trace, host_backend_writes_every_post, .timeout = 120)
{
    static const int chain[] = {-1, 0, 1, 2};
    const int *shapes[] = {chain};
    char dir[] = "/tmp/blink-rt-trace-XXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("BLINK_TRACE", dir, 1);
    struct rt_plan p;
    blinkComm_t comms[N];
    rt_plan_build(&p, N, 1, shapes, (const unsigned[]){1}, CHUNK);
    blinkResult_t r = blinkrtCommInitAll(&p.plan, comms, N, NULL);
    unsetenv("BLINK_TRACE");
    cr_assert_eq(r, blinkSuccess, "%s", blinkGetLastError(NULL));
    for (int i = 0; i < CALLS; i++) {
        struct rt_case c = {BLINK_PLAN_ALLREDUCE, 0, blinkFloat32, blinkSum, COUNT, 0, RT_GROUP, 1};
        char why[512] = "";
        cr_expect_eq(rt_run_check(comms, N, &c, why, sizeof why), 0, "%s", why);
    }
    for (int v = 0; v < N; v++)
        blinkCommDestroy(comms[v]);
    rt_plan_free(&p);

    /* One file per rank, each with every chunk's up and down post of every call. */
    DIR *d = opendir(dir);
    cr_assert(d);
    int files = 0;
    const int chunks = COUNT * 4 / CHUNK * CALLS;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "blink-trace.", 12))
            continue;
        char *path = NULL;
        cr_assert(asprintf(&path, "%s/%s", dir, e->d_name) > 0);
        files++;
        cr_expect_eq(count_lines(path, "backend host clock monotonic"), 1, "%s", path);
        cr_expect_eq(count_lines(path, "\tup-post\t"), chunks, "%s", path);
        cr_expect_eq(count_lines(path, "\tdown-post\t"), chunks, "%s", path);
        cr_expect_eq(count_lines(path, "\tenter\t"), CALLS, "%s: one block per call", path);
        cr_expect_eq(count_lines(path, "\texit\t"), CALLS, "%s", path);
        free(path);
    }
    closedir(d);
    cr_expect_eq(files, N);

    /* blink-trace reads them: five allreduces, each over all four ranks. */
    const char *build = getenv("BLINKC_BUILDDIR");
    char *bin = NULL, *log = NULL;
    cr_assert(asprintf(&bin, "%s/bench/blink-trace", build ? build : ".") > 0);
    cr_assert(asprintf(&log, "%s/summary.txt", dir) > 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        FILE *o = freopen(log, "w", stdout);
        if (o)
            execl(bin, bin, "-v", dir, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "blink-trace failed: %d", st);
    cr_expect_eq(count_lines(log, "| allreduce | 4 |"), CALLS, "per-call lines in %s", log);
    cr_expect_eq(count_lines(log, "| allreduce | 5 |"), 1, "summary row in %s", log);
    free(bin);
    free(log);

    /* Clean up. */
    d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, e->d_name) > 0)
            unlink(path);
        free(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

Test(rt_trace, unwritable_directory_is_an_init_error, .timeout = 60)
{
    static const int star[] = {-1, 0, 0, 0};
    const int *shapes[] = {star};
    struct rt_plan p;
    blinkComm_t comms[N];
    rt_plan_build(&p, N, 1, shapes, (const unsigned[]){1}, CHUNK);
    setenv("BLINK_TRACE", "/nonexistent/blink-trace-dir", 1);
    blinkResult_t r = blinkrtCommInitAll(&p.plan, comms, N, NULL);
    unsetenv("BLINK_TRACE");
    rt_plan_free(&p);
    cr_assert_eq(r, blinkInvalidArgument);
    cr_expect(strstr(blinkGetLastError(NULL), "BLINK_TRACE='/nonexistent/blink-trace-dir' is "
                                              "not a directory"),
              "%s", blinkGetLastError(NULL));
}
