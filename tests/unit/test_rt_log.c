/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_log.c - BLINK_DEBUG as NCCL_DEBUG (log.h): real inits and allreduces of 4 ranks on
 * the host backend with standard error captured, for each level in several spellings (info,
 * Info, TRACE, WARN, VERSION, an unknown word, unset), BLINK_DEBUG_SUBSYS (^COLL, INIT,
 * env,Coll) and BLINK_DEBUG_FILE. Every line must read "HOST:PID:TID [DEV] blink LEVEL ...":
 * this host (to its first '.'), this pid, the calling thread's kernel id, the rank's device.
 * Criterion runs each test in a process of its own, so each sees the once-per-process lines
 * (the version, the variables set) at its first init.
 */
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt_testutil.h"

#define N 4

/* Run `calls` allreduces of 7 floats on 4 ranks (a star), one thread issuing every rank's call
 * in a group, with BLINK_DEBUG=level and BLINK_DEBUG_SUBSYS=subsys (NULL: unset); what the
 * runtime wrote to standard error. */
static char *logged(const char *level, const char *subsys, int calls)
{
    static const int star[] = {-1, 0, 0, 0};
    const int *shapes[] = {star};
    struct rt_plan p;
    blinkComm_t comms[N];
    level ? setenv("BLINK_DEBUG", level, 1) : unsetenv("BLINK_DEBUG");
    subsys ? setenv("BLINK_DEBUG_SUBSYS", subsys, 1) : unsetenv("BLINK_DEBUG_SUBSYS");
    char path[] = "/tmp/blink-log-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    cr_assert(fd >= 0 && saved >= 0, "mkstemp or dup");
    fflush(stderr);
    dup2(fd, 2);
    rt_plan_build(&p, N, 1, shapes, (const unsigned[]){1}, 1 << 20);
    blinkResult_t r = blinkrtCommInitAll(&p.plan, comms, N, NULL);
    for (int i = 0; r == blinkSuccess && i < calls; i++) {
        struct rt_case c = {BLINK_PLAN_ALLREDUCE, 0, blinkFloat32, blinkSum, 7, 0, RT_GROUP, 1};
        char why[512] = "";
        cr_expect_eq(rt_run_check(comms, N, &c, why, sizeof why), 0, "%s", why);
    }
    for (int v = 0; r == blinkSuccess && v < N; v++)
        blinkCommDestroy(comms[v]);
    rt_plan_free(&p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_assert_eq(r, blinkSuccess, "%s", blinkGetLastError(NULL));
    FILE *f = fdopen(fd, "r");
    char *out = calloc(1, 1 << 20);
    fseek(f, 0, SEEK_SET);
    size_t got = fread(out, 1, (1 << 20) - 1, f);
    out[got] = '\0';
    fclose(f);
    unlink(path);
    return out;
}

/* One parsed line: its prefix and what follows "blink LEVEL ". */
struct line {
    char host[256], level[16];
    int pid, tid, dev;
    const char *text;
};

/* Lines of out of the given level (NULL: any) containing has (NULL: any); every line of out
 * must have the prefix, with this host and pid. */
static int count(const char *out, const char *level, const char *has, struct line *first)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    host[strcspn(host, ".")] = '\0';
    int n = 0;
    for (const char *at = out; *at;) {
        const char *end = strchr(at, '\n');
        cr_assert(end, "unterminated line: %s", at);
        char text[4096];
        struct line l;
        int off = 0;
        snprintf(text, sizeof text, "%.*s", (int)(end - at), at);
        cr_assert_eq(sscanf(text, "%255[^:]:%d:%d [%d] blink %15s %n", l.host, &l.pid, &l.tid,
                            &l.dev, l.level, &off), 5, "no prefix: '%s'", text);
        cr_assert(off > 0, "nothing after the level: '%s'", text);
        cr_expect_str_eq(l.host, host, "%s", text);
        cr_expect_eq(l.pid, (int)getpid(), "%s", text);
        cr_expect_gt(l.tid, 0, "%s", text);
        cr_expect(l.dev >= 0 && l.dev < N, "%s", text);
        l.text = at + off;
        if ((!level || !strcmp(l.level, level)) && (!has || strstr(text + off, has))) {
            if (!n++ && first)
                *first = l;
        }
        at = end + 1;
    }
    return n;
}

Test(rt_log, unset_or_unknown_prints_nothing, .timeout = 60)
{
    char *out = logged(NULL, NULL, 2);
    cr_expect_str_empty(out, "BLINK_DEBUG unset printed: %s", out);
    free(out);
    out = logged("verbose", "ALL", 2); /* as NCCL_DEBUG=verbose: silence, and no error */
    cr_expect_str_empty(out, "BLINK_DEBUG=verbose printed: %s", out);
    free(out);
}

Test(rt_log, info_in_any_case, .timeout = 60)
{
    static const char *const spellings[] = {"info", "Info", "INFO"};
    for (size_t s = 0; s < sizeof spellings / sizeof spellings[0]; s++) {
        char *out = logged(spellings[s], NULL, 2);
        struct line l;
        /* Each rank says its plan at init, on its own device. */
        for (int r = 0; r < N; r++) {
            char what[32];
            snprintf(what, sizeof what, "rank %d/%d: plan rank ", r, N);
            cr_expect_eq(count(out, "INFO", what, &l), 1, "%s: %s", spellings[s], out);
            cr_expect_eq(l.dev, r, "%s: rank %d's line names device %d", spellings[s], r, l.dev);
        }
        cr_expect_eq(count(out, "INFO", "allreduce from 0 B: blinkc's plan", NULL), 1, "%s",
                     out);
        cr_expect_eq(count(out, "TRACE", NULL, NULL), 0, "%s: TRACE at INFO: %s", spellings[s],
                     out);
        if (s == 0) /* the first init of the process: the version and the variables set */
            cr_expect_eq(count(out, "INFO", "blink version ", NULL), 1, "%s", out);
        cr_expect_eq(count(out, "INFO", "BLINK_DEBUG set by environment to ", NULL), s == 0,
                     "%s", out);
        free(out);
    }
}

Test(rt_log, trace_includes_info_and_says_each_call, .timeout = 60)
{
    char *out = logged("TRACE", NULL, 3);
    struct line l;
    cr_expect_eq(count(out, "INFO", ": plan rank ", &l), N, "%s", out);
    /* blinkCommInitAll inits each rank on a thread of its own: its TID is not the pid. */
    cr_expect_neq(l.tid, (int)getpid(), "an init thread's line has the pid for TID: %s", out);
    cr_expect_eq(count(out, "INFO", "allreduce from 0 B", NULL), 1, "%s", out);
    /* Three calls on each rank, issued by this thread in a group. */
    cr_expect_eq(count(out, "TRACE", "blinkAllReduce: rank ", NULL), 3 * N, "%s", out);
    for (int r = 0; r < N; r++) {
        char what[96];
        snprintf(what, sizeof what, "blinkAllReduce: rank %d count 7 datatype float32 op sum "
                 "root -1 ", r);
        cr_expect_eq(count(out, "TRACE", what, &l), 3, "%s", out);
        cr_expect_eq(l.dev, r, "rank %d's call names device %d", r, l.dev);
        cr_expect_eq(l.tid, (int)syscall(SYS_gettid), "the TID is not the caller's: %s", out);
        cr_expect(strstr(l.text, "blinkc's plan, call 1, 1 tree, "), "%s", l.text);
    }
    free(out);
}

/* WARN says what goes wrong and nothing else; the version comes bare, as NCCL's. */
Test(rt_log, warn_and_version, .timeout = 60)
{
    setenv("BLINK_ALGO", "rings", 1); /* no ring set and no NCCL: the runtime warns */
    char *out = logged("WARN", "INIT", 1);
    unsetenv("BLINK_ALGO");
    const char *nl = strchr(out, '\n');
    cr_assert(nl && !strncmp(out, "blink version 0.1.0 (host backend)\n", (size_t)(nl - out + 1)),
              "no bare version line first: %s", out);
    /* WARN lines are every subsystem's, as NCCL's: INIT alone does not hide them. */
    cr_expect_eq(count(nl + 1, "WARN", "allreduce from 0 B: NCCL's rings were planned", NULL),
                 1, "%s", out);
    cr_expect_eq(count(nl + 1, "INFO", NULL, NULL), 0, "%s", out);
    free(out);
    out = logged("version", NULL, 2);
    cr_expect_str_empty(out, "a second version line, or more at VERSION: %s", out);
    free(out);
}

Test(rt_log, version_alone, .timeout = 60)
{
    char *out = logged("VERSION", NULL, 2);
    cr_expect_str_eq(out, "blink version 0.1.0 (host backend)\n");
    free(out);
}

Test(rt_log, subsystems_filter, .timeout = 60)
{
    char *out = logged("TRACE", "^COLL", 2);
    cr_expect_eq(count(out, "INFO", ": plan rank ", NULL), N, "%s", out);
    cr_expect_gt(count(out, "INFO", " set by environment to ", NULL), 0, "%s", out);
    cr_expect_eq(count(out, "TRACE", NULL, NULL), 0, "^COLL printed calls: %s", out);
    cr_expect_eq(count(out, NULL, "allreduce from", NULL), 0, "%s", out);
    free(out);
    out = logged("info", "INIT", 2);
    cr_expect_eq(count(out, NULL, NULL, NULL), N, "INIT printed more than the ranks: %s", out);
    cr_expect_eq(count(out, "INFO", ": plan rank ", NULL), N, "%s", out);
    free(out);
    out = logged("Trace", "env,Coll", 1);
    cr_expect_eq(count(out, NULL, ": plan rank ", NULL), 0, "INIT lines: %s", out);
    cr_expect_eq(count(out, "TRACE", "blinkAllReduce", NULL), N, "%s", out);
    cr_expect_eq(count(out, "INFO", "allreduce from 0 B", NULL), 1, "%s", out);
    free(out);
}

Test(rt_log, debug_file, .timeout = 60)
{
    char dir[] = "/tmp/blink-logdir-XXXXXX", pattern[96], path[512], host[256] = "";
    cr_assert(mkdtemp(dir));
    snprintf(pattern, sizeof pattern, "%s/log.%%h.%%p", dir);
    gethostname(host, sizeof host - 1);
    host[strcspn(host, ".")] = '\0';
    snprintf(path, sizeof path, "%s/log.%s.%d", dir, host, (int)getpid());
    setenv("BLINK_DEBUG_FILE", pattern, 1);
    char *out = logged("INFO", NULL, 1);
    cr_expect_str_empty(out, "lines on stderr with BLINK_DEBUG_FILE: %s", out);
    free(out);
    FILE *f = fopen(path, "r");
    cr_assert(f, "no %s", path);
    char *file = calloc(1, 1 << 16);
    file[fread(file, 1, (1 << 16) - 1, f)] = '\0';
    fclose(f);
    cr_expect_eq(count(file, "INFO", ": plan rank ", NULL), N, "%s", file);
    free(file);
    unlink(path);
    rmdir(dir);
}
