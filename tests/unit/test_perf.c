/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_perf.c - blink-perf, the nccl-tests driver, on the host backend with the DGX-1V library:
 * nccl-tests' columns and footer, every collective (in both spellings) checked with no wrong
 * element, in both of its modes (ranks as threads of one process, the default, and --procs, a
 * process per rank), an injected copy failure, a device set with no plan and bad or retired
 * options giving their exit codes; nccl-tests' flags with their meanings (the calls each
 * issues counted in BLINK_DEBUG=TRACE's lines), the ignored ones noted, device lists and
 * ranges in any order, the ranks of the largest plan by default and the tuned plan's per-size
 * choice; and --mpi, a rank per MPI process, under mpirun on a 2 x 4 cluster of DGX-1V servers
 * (bench/blink-perf-cluster, built where MPI is; skipped elsewhere).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "mpirun_util.h"
#include "testutil.h"

static char *perf_path(void)
{
    const char *build = getenv("BLINKC_BUILDDIR");
    return bk_asprintf("%s/bench/blink-perf", build ? build : ".");
}

/* Rows of the table: lines that do not start with '#'. */
static int data_rows(const char *out)
{
    int rows = 0;
    for (const char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
        rows += *p != '#' && *p != '\n';
    return rows;
}

/* The sum of the #wrong columns (out of place, in place) over the rows; -1 if a row is short. */
static long wrong_in_rows(const char *out)
{
    long wrong = 0;
    for (const char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
        long w1, w2;
        if (*p == '#' || *p == '\n')
            continue;
        if (sscanf(p, "%*s %*s %*s %*s %*s %*s %*s %*s %ld %*s %*s %*s %ld", &w1, &w2) != 2)
            return -1;
        wrong += w1 + w2;
    }
    return wrong;
}

/* A clean table: exit 0, nccl-tests' columns and footer, `rows` rows with no wrong element,
 * and the header naming the mode. */
static void expect_clean_output(const struct tu_run *r, int rows, const char *mode)
{
    cr_assert_eq(r->status, 0, "%s%s", r->out, r->err);
    cr_expect(strstr(r->out, "#wrong") && strstr(r->out, "algbw") && strstr(r->out, "busbw"));
    cr_expect(strstr(r->out, "out-of-place") && strstr(r->out, "in-place"));
    cr_expect(strstr(r->out, mode), "no '%s' in %s", mode, r->out);
    cr_expect(strstr(r->out, "#  Per rank (rank 0): "), "%s", r->out);
    cr_expect(strstr(r->out, "# Out of bounds values : 0 OK"), "%s", r->out);
    cr_expect(strstr(r->out, "# Avg bus bandwidth"), "%s", r->out);
    cr_expect_eq(data_rows(r->out), rows, "%s", r->out);
    cr_expect_eq(wrong_in_rows(r->out), 0, "%s", r->out);
}

/* Run blink-perf with args (after the binary) and check a clean table. */
static void expect_clean_table(const char *const *args, int rows, const char *mode)
{
    const char *argv[32];
    char *bin = perf_path();
    size_t n = 0;
    argv[n++] = bin;
    for (; *args; args++) {
        cr_assert_lt(n, 31, "too many arguments");
        argv[n++] = *args;
    }
    argv[n] = NULL;
    struct tu_run r;
    tu_run_argv(&r, argv);
    expect_clean_output(&r, rows, mode);
    tu_run_free(&r);
    free(bin);
}

/* 3 ranks on GPUs 0, 2, 3: 8 B to 32 KiB by 8x is 5 sizes. */
#define EVERY "--devices", "0,2,3", "-b", "8", "-e", "32K", "-f", "8", "-d", "int32", "-o", \
    "max", "-r", "1", "-n", "2", "-w", "1"

/* Each collective in both spellings, the header naming it as blink-perf does. */
Test(perf, every_collective_checks_out, .timeout = 120)
{
    static const char *const colls[][3] = {
        {"broadcast", "broadcast", "broadcast"}, {"reduce", "reduce", "reduce"},
        {"allreduce", "all_reduce", "allreduce"}, {"allgather", "all_gather", "allgather"},
        {"reducescatter", "reduce_scatter", "reducescatter"}};
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++) {
        char *head = bk_asprintf("# blink-perf: %s, 3 ranks", colls[i][2]);
        expect_clean_table((const char *const[]){"--collective", colls[i][0], EVERY, NULL}, 5,
                           head);
        expect_clean_table((const char *const[]){"--collective", colls[i][1], EVERY, NULL}, 5,
                           "#  Ranks as threads: 3");
        expect_clean_table((const char *const[]){"--procs", "--collective", colls[i][1], EVERY,
                                                 NULL}, 5, "#  Ranks as processes: 3");
        free(head);
    }
}

/* 8 B to 1 MiB by 4x is 9 sizes. */
#define SWEEP "--devices", "0,2,3", "-b", "8", "-e", "1M", "-f", "4", "-c", "1"

Test(perf, threads_are_the_default_mode, .timeout = 120)
{
    expect_clean_table((const char *const[]){"--collective", "allreduce", SWEEP, NULL}, 9,
                       "#  Ranks as threads: 3");
}

Test(perf, ranks_as_processes_check_out, .timeout = 120)
{
    expect_clean_table((const char *const[]){"--procs", "--collective", "allreduce", SWEEP,
                                             NULL}, 9, "#  Ranks as processes: 3");
    expect_clean_table((const char *const[]){"--procs", "--collective", "broadcast", "-r", "1",
                                             SWEEP, NULL},
                       9, "#  Ranks as processes: 3");
}

/* blink-perf's own flags of before, where they do not clash with nccl-tests': -C NAME and
 * -D LIST. */
Test(perf, old_spellings_still_work, .timeout = 120)
{
    expect_clean_table((const char *const[]){"-C", "allgather", "-D", "0,2,3", "-b", "1K", "-e",
                                             "1K", "-n", "1", NULL}, 1,
                       "# blink-perf: allgather, 3 ranks");
    expect_clean_table((const char *const[]){"-C", "reduce", "-D", "4-7", "-b", "1K", "-e",
                                             "1K", "-n", "1", NULL}, 1,
                       "# blink-perf: reduce, 4 ranks");
}

Test(perf, failures_and_usage_have_their_exit_codes, .timeout = 60)
{
    char *bin = perf_path();
    struct tu_run r;
    setenv("BLINK_HOST_FAIL_COPY", "3", 1);
    tu_run_argv(&r, (const char *const[]){bin, "-b", "1K", "-e", "1K", "-n", "1", "-w", "0",
                                          NULL});
    unsetenv("BLINK_HOST_FAIL_COPY");
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "BLINK_HOST_FAIL_COPY"), "%s", r.err);
    cr_expect(strstr(r.out, "FAILED"));
    tu_run_free(&r);
    /* The same failure in a rank process: every process ends, exit 1. */
    setenv("BLINK_HOST_FAIL_COPY", "3", 1);
    tu_run_argv(&r, (const char *const[]){bin, "--procs", "-b", "1K", "-e", "1K", "-n", "1",
                                          "-w", "0", NULL});
    unsetenv("BLINK_HOST_FAIL_COPY");
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "BLINK_HOST_FAIL_COPY"), "%s", r.err);
    cr_expect(strstr(r.out, "FAILED"), "%s", r.out);
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){bin, "-o", "xor", NULL});
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "Try 'blink-perf --help'"));
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){bin, "--mpi", "--procs", NULL}); /* MPI or not */
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "Try 'blink-perf --help'"), "%s", r.err);
    tu_run_free(&r);
    /* -N and -M were blink-perf's processes and MPI; nccl-tests' now, they say where those
     * went. */
    tu_run_argv(&r, (const char *const[]){bin, "-N", "-C", "allreduce", NULL});
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--procs"), "%s", r.err);
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){bin, "-M", "-C", "allreduce", NULL});
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--mpi"), "%s", r.err);
    tu_run_free(&r);
    /* A device set no plan was made for (GPU 9 is not in a DGX-1V): an init error, exit 1. */
    tu_run_argv(&r, (const char *const[]){bin, "--devices", "0,9", "-n", "1", NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "blinkCommInitAll"), "%s", r.err);
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){bin, "--procs", "--devices", "0,9", "-n", "1", NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "blinkCommInitRank"), "%s", r.err);
    tu_run_free(&r);
    free(bin);
}

/* ------------------------------------------------------------------ nccl-tests' flags */

/* Run blink-perf with args (after the binary), env (NULL or "NAME=VALUE") set meanwhile. */
static void perf_run(struct tu_run *r, const char *env, const char *const *args)
{
    const char *argv[48];
    char *bin = perf_path(), *name = NULL;
    size_t n = 0;
    argv[n++] = bin;
    for (; *args; args++) {
        cr_assert_lt(n, 47, "too many arguments");
        argv[n++] = *args;
    }
    argv[n] = NULL;
    if (env) {
        name = bk_asprintf("%.*s", (int)(strchr(env, '=') - env), env);
        setenv(name, strchr(env, '=') + 1, 1);
    }
    tu_run_argv(r, argv);
    if (name)
        unsetenv(name);
    free(name);
    free(bin);
}

/* How many times `what` occurs in s. */
static int occurrences(const char *s, const char *what)
{
    int n = 0;
    for (const char *at = s; (at = strstr(at, what)) != NULL; at += strlen(what))
        n++;
    return n;
}

/* The calls rank 0 issued, as BLINK_DEBUG=TRACE says each. */
static int rank0_calls(const struct tu_run *r)
{
    return occurrences(r->err, "blink TRACE blinkAllReduce: rank 0 ");
}

#define ONE_SIZE "--devices", "0,2,3", "-b", "1K", "-e", "1K"

/* -c, -w, -n and -m are the calls they say: per half-row (out of place, in place) -c checked
 * calls, -w warm-up calls and -n iterations of -m calls each. */
Test(perf, nccl_tests_counts_are_the_calls, .timeout = 120)
{
    struct tu_run r;
    perf_run(&r, "BLINK_DEBUG=TRACE", (const char *const[]){ONE_SIZE, "-n", "3", "-w", "1",
                                                             NULL});
    expect_clean_output(&r, 1, "warmup iters: 1 iters: 3 agg iters: 1 validation: 1");
    cr_expect_eq(rank0_calls(&r), 2 * (1 + 1 + 3), "%s", r.err);
    tu_run_free(&r);
    perf_run(&r, "BLINK_DEBUG=trace", (const char *const[]){ONE_SIZE, "-n", "2", "-w", "0",
                                                             "-c", "0", "-m", "4", NULL});
    expect_clean_output(&r, 1, "warmup iters: 0 iters: 2 agg iters: 4 validation: 0");
    cr_expect_eq(rank0_calls(&r), 2 * (0 + 0 + 2 * 4), "-c 0 still checks: %s", r.err);
    tu_run_free(&r);
    perf_run(&r, "BLINK_DEBUG=TRACE", (const char *const[]){ONE_SIZE, "-n", "1", "-w", "0",
                                                             "-c", "2", NULL});
    expect_clean_output(&r, 1, "validation: 2");
    cr_expect_eq(rank0_calls(&r), 2 * (2 + 0 + 1), "%s", r.err);
    tu_run_free(&r);
}

/* Sizes (-b, -e, -i, -f, nccl-tests' default step of 1 MiB), -N cycles, the combinations of
 * -d all, -o all and -r all, -t x -g ranks, -z, -C, -a and -T. */
Test(perf, nccl_tests_flags_have_their_meanings, .timeout = 120)
{
    struct tu_run r;
    perf_run(&r, NULL, (const char *const[]){"--devices", "0,2,3", "-b", "1K", "-e", "4K", "-i",
                                             "1K", "-n", "1", NULL});
    expect_clean_output(&r, 4, "step: 1024(bytes)");
    tu_run_free(&r);
    perf_run(&r, NULL, (const char *const[]){"--devices", "0,2,3", "-b", "1M", "-e", "3M", "-n",
                                             "1", "-w", "0", NULL});
    expect_clean_output(&r, 3, "step: 1048576(bytes)"); /* 1, 2 and 3 MiB */
    tu_run_free(&r);
    perf_run(&r, NULL, (const char *const[]){"--devices", "0,2,3", "-b", "1K", "-e", "4K", "-f",
                                             "2", "-N", "2", "-n", "1", NULL});
    expect_clean_output(&r, 2 * 3, "step: 2(factor)");
    tu_run_free(&r);
    perf_run(&r, NULL, (const char *const[]){ONE_SIZE, "-d", "all", "-o", "all", "-n", "1",
                                             "-w", "0", NULL});
    expect_clean_output(&r, 10 * 5, "#  Ranks as threads: 3");
    cr_expect(strstr(r.out, "bfloat16     avg"), "%s", r.out);
    tu_run_free(&r);
    perf_run(&r, NULL, (const char *const[]){ONE_SIZE, "--collective", "broadcast", "-r", "all",
                                             "-o", "all", "-n", "1", NULL});
    expect_clean_output(&r, 3, "# blink-perf: broadcast");
    cr_expect(strstr(r.out, "float    none       2"), "no root 2: %s", r.out);
    tu_run_free(&r);
    /* nccl-tests' ranks are threads x GPUs per thread; blink-perf drives them from one. */
    perf_run(&r, NULL, (const char *const[]){"-t", "2", "-g", "2", "-b", "1K", "-e", "1K", "-n",
                                             "1", NULL});
    expect_clean_output(&r, 1, "#  Ranks as threads: 4");
    cr_expect(strstr(r.err, "note: -t 2"), "%s", r.err);
    tu_run_free(&r);
    perf_run(&r, NULL, (const char *const[]){ONE_SIZE, "-z", "1", "-C", "1", "-n", "1", NULL});
    expect_clean_output(&r, 1, "# Blocking Enabled");
    cr_expect(strstr(r.out, "  cputime   algbw"), "%s", r.out);
    tu_run_free(&r);
    for (int a = 0; a < 4; a++) {
        char av[2] = {(char)('0' + a), 0};
        perf_run(&r, NULL, (const char *const[]){"--procs", ONE_SIZE, "-a", av, "-n", "1",
                                                 NULL});
        expect_clean_output(&r, 1, "#  Ranks as processes: 3");
        tu_run_free(&r);
    }
    /* -T is the runtime's timeout, which INFO shows at init. */
    perf_run(&r, "BLINK_DEBUG=INFO", (const char *const[]){ONE_SIZE, "-T", "42", "-n", "1",
                                                            NULL});
    expect_clean_output(&r, 1, "#  Ranks as threads: 3");
    cr_expect_eq(occurrences(r.err, "; timeout 42 s"), 3, "%s", r.err);
    tu_run_free(&r);
    static const char *const bad[][2] = {{"-a", "4"}, {"-z", "2"}, {"-o", "mulsum"},
                                         {"-d", "fp8"}, {"-m", "0"}, {"-f", "0.5"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        perf_run(&r, NULL, (const char *const[]){bad[i][0], bad[i][1], NULL});
        cr_expect_eq(r.status, 2, "%s %s: %d", bad[i][0], bad[i][1], r.status);
        tu_run_free(&r);
    }
}

/* The flags that cannot apply run, each with a note. */
Test(perf, nccl_tests_flags_that_cannot_apply_are_noted, .timeout = 60)
{
    static const char *const flags[][2] = {{"-G", "10"}, {"-p", "1"}, {"-y", "1"}, {"-x", "1"},
                                           {"-D", "1"}, {"-V", "16"}, {"-M", "1"}, {"-S", "1"},
                                           {"-J", "out.json"}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        struct tu_run r;
        char *note = bk_asprintf("blink-perf: note: %s %s ignored: ", flags[i][0], flags[i][1]);
        perf_run(&r, NULL, (const char *const[]){ONE_SIZE, flags[i][0], flags[i][1], "-n", "1",
                                                 NULL});
        expect_clean_output(&r, 1, "#  Ranks as threads: 3");
        cr_expect(strstr(r.err, note), "%s: %s", note, r.err);
        tu_run_free(&r);
        free(note);
    }
}

/* -R registers the buffers (nccl-tests' local registration): with a process per rank, the
 * parents write their children's outputs (each mapping said at INFO), and every row is right.
 * -R takes 0, 1 or 2. */
Test(perf, registered_buffers, .timeout = 120)
{
    struct tu_run r;
    perf_run(&r, "BLINK_DEBUG=INFO", (const char *const[]){"--procs", "-R", "1", "--devices",
                                                           "0-3", "-b", "64K", "-e", "1M", "-f",
                                                           "4", "-n", "2", NULL});
    expect_clean_output(&r, 3, "#  Ranks as processes: 4");
    cr_expect(strstr(r.out, "#  Buffers registered (-R 1), from blinkMemAlloc"), "%s", r.out);
    cr_expect(strstr(r.err, "registered output directly"), "%s", r.err);
    tu_run_free(&r);
    perf_run(&r, "BLINK_DEBUG=INFO", (const char *const[]){"--procs", "--devices", "0-3", "-b",
                                                           "64K", "-e", "64K", "-n", "1", NULL});
    expect_clean_output(&r, 1, "#  Ranks as processes: 4");
    cr_expect(!strstr(r.err, "registered output"), "%s", r.err);
    tu_run_free(&r);
    perf_run(&r, NULL, (const char *const[]){"-R", "3", NULL});
    cr_expect_eq(r.status, 2, "%s", r.err);
    tu_run_free(&r);
}

/* Device lists and ranges in any order; each rank's line at INFO names its device. */
Test(perf, devices_in_any_order, .timeout = 120)
{
    static const char *const lists[][2] = {{"5,1,4", "3"}, {"4-7", "4"}, {"7-4", "4"},
                                           {"0-2,5", "4"}, {"3,0,2", "3"}};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        struct tu_run r;
        char *mode = bk_asprintf("#  Ranks as threads: %s", lists[i][1]);
        perf_run(&r, NULL, (const char *const[]){"--devices", lists[i][0], "-b", "1K", "-e",
                                                 "1K", "-n", "1", NULL});
        expect_clean_output(&r, 1, mode);
        tu_run_free(&r);
        free(mode);
    }
    struct tu_run r;
    perf_run(&r, "BLINK_DEBUG=INFO", (const char *const[]){"--procs", "--devices", "5,1,4",
                                                            "-b", "1K", "-e", "1K", "-n", "1",
                                                            NULL});
    expect_clean_output(&r, 1, "#  Ranks as processes: 3");
    cr_expect(strstr(r.err, "] blink INFO rank 0/3: ") && strstr(r.err, "device 5 (physical 5"),
              "%s", r.err);
    cr_expect(strstr(r.err, " [1] blink INFO rank 1/3: "), "%s", r.err);
    tu_run_free(&r);
    static const char *const bad[] = {"0,0", "0,2,", "-1", "3-", "a"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        perf_run(&r, NULL, (const char *const[]){"--devices", bad[i], NULL});
        cr_expect_eq(r.status, 2, "--devices %s: %d", bad[i], r.status);
        tu_run_free(&r);
    }
}

/* No devices and no -t or -g: the largest plan linked, all 8 GPUs of the DGX-1V, tuned (the
 * build links generated/dgx1v.cu first): its per-size choice, in ranges, hands broadcast to
 * the rings there (the trees trail them on the full box, at the same rate with a step per
 * chunk) but from 1 to 2 MiB, where the trees run the LL protocol. Run as broadcast_perf (a
 * link), the name is the collective. */
Test(perf, ranks_from_the_linked_tuned_plan, .timeout = 120)
{
    struct tu_run r;
    perf_run(&r, NULL, (const char *const[]){"--collective", "broadcast", "-b", "64K", "-e",
                                             "64K", "-n", "1", NULL});
    expect_clean_output(&r, 1, "# blink-perf: broadcast, 8 ranks");
    const char *plan = strstr(r.out, "#  Plan: 'dgx1v'");
    cr_assert(plan, "%s", r.out);
    cr_expect(strstr(plan, "8 ranks; per-size choice: rings from 0 B ("), "%s", plan);
    cr_expect(strstr(plan, "trees LL from 1 MiB ("), "%s", plan);
    cr_expect(strstr(plan, "rings from 1 GiB ("), "not every range read: %s", plan);
    tu_run_free(&r);
    /* A device set only the untuned library has. */
    perf_run(&r, NULL, (const char *const[]){ONE_SIZE, "-n", "1", NULL});
    expect_clean_output(&r, 1, "no per-size choice (untuned)");
    tu_run_free(&r);
    char dir[] = "/tmp/blink-perf-XXXXXX";
    cr_assert(mkdtemp(dir));
    char *bin = perf_path(), *link = bk_asprintf("%s/all_gather_perf", dir);
    cr_assert_eq(symlink(bin, link), 0, "symlink %s", link);
    tu_run_argv(&r, (const char *const[]){link, ONE_SIZE, "-n", "1", NULL});
    expect_clean_output(&r, 1, "# blink-perf: allgather, 3 ranks");
    tu_run_free(&r);
    unlink(link);
    rmdir(dir);
    free(link);
    free(bin);
}

/* ------------------------------------------------------------------ --mpi under mpirun */

/* The build defines it where Open MPI is; else it is looked up on PATH. */
#ifndef MPIRUN
#define MPIRUN "mpirun"
#endif

/* 8 B to 64 KiB by 2x is 14 sizes. */
#define CLUSTER_ROWS 14

/* 8 MPI processes, one app context each: ranks 0-3 GPUs 0-3 of server s0, ranks 4-7 GPUs 0-3
 * of s1, as the 2 x 4 plan orders them; every edge between the servers goes over MPI. */
static void mpi_cluster_table(const char *mpirun, const char *bin, const char *const *args)
{
    static char env[8][2][32];
    const char *argv[256];
    int a = 0;
    static const char *const common[] = {"--oversubscribe", "--bind-to", "none", "--mca", "btl",
                                         "self,vader"};
    argv[a++] = mpirun;
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
        argv[a++] = common[i];
    for (int r = 0; r < 8; r++) {
        snprintf(env[r][0], sizeof env[r][0], "BLINK_SERVER=s%d", r / 4);
        snprintf(env[r][1], sizeof env[r][1], "BLINK_DEVICE=%d", r % 4);
        /* A rank that waits in vain gives up and says so well within the test's limit. */
        const char *ctx[] = {"-np", "1", "-x", env[r][0], "-x", env[r][1], "-x",
                             "BLINK_TIMEOUT_S=20", bin, "--mpi"};
        if (r)
            argv[a++] = ":";
        for (size_t i = 0; i < sizeof ctx / sizeof ctx[0]; i++)
            argv[a++] = ctx[i];
        for (size_t i = 0; args[i]; i++)
            argv[a++] = args[i];
        cr_assert_lt(a, 240, "too many arguments");
    }
    argv[a] = NULL;
    struct tu_run r;
    tu_run_argv(&r, argv);
    expect_clean_output(&r, CLUSTER_ROWS, "#  Ranks as MPI processes: 8 (one per rank, 2 servers)");
    tu_run_free(&r);
}

Test(perf, mpi_ranks_across_two_servers, .timeout = 120)
{
    char mpirun[4096];
    const char *build = getenv("BLINKC_BUILDDIR");
    char *bin = bk_asprintf("%s/bench/blink-perf-cluster", build ? build : ".");
    if (access(bin, X_OK) != 0) {
        free(bin);
        cr_skip_test("bench/blink-perf-cluster not built: it needs MPI (Debian: libopenmpi-dev "
                     "openmpi-bin)");
    }
    if (!mu_find_mpirun(MPIRUN, mpirun, sizeof mpirun)) {
        free(bin);
        cr_skip_test("%s not found (Debian: openmpi-bin)", MPIRUN);
    }
    /* The ranks inherit mpirun's environment: nothing of the caller's may steer them. */
    static const char *const unset[] = {"BLINK_ALGO", "BLINK_CHUNK_BYTES", "BLINK_STAGING_BYTES",
                                        "BLINK_DEVICE_MAP", "BLINK_SERVER", "BLINK_DEVICE",
                                        "BLINK_HOST_FAIL_COPY", "LD_PRELOAD"};
    for (size_t i = 0; i < sizeof unset / sizeof unset[0]; i++)
        unsetenv(unset[i]);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    /* In a sanitizer build: Open MPI's own allocations at exit are not blink-perf's leaks. */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    int lock = mu_lock();
    mpi_cluster_table(mpirun, bin, (const char *const[]){"--collective", "all_reduce", "-b",
                      "8", "-e", "64K", "-f", "2", "-n", "2", "-w", "1", NULL});
    mpi_cluster_table(mpirun, bin, (const char *const[]){"-C", "broadcast", "-r", "5", "-b",
                      "8", "-e", "64K", "-f", "2", "-n", "2", "-w", "1", NULL});
    mu_unlock(lock);
    free(bin);
}

/* --hbm-gbps: the one-GPU bound the executor review derives by hand (8 ranks: allreduce moves
 * 51 bytes per byte, so 4250 GB/s of copies bound it at 83 GB/s; broadcast 30, or 28 in place;
 * reduce 23; on 3 ranks allreduce 7 * 3 - 5 = 16), and a %bound pair on every row. */
Test(perf, hbm_bound_columns, .timeout = 120)
{
    static const struct {
        const char *coll, *devices, *want;
    } cases[] = {
        {"allreduce", "0-7", "moves 51 (in place 51) bytes per byte through device memory, so "
                             "algbw <= 83.33 (83.33) GB/s"},
        {"broadcast", "0-7", "moves 30 (in place 28) bytes per byte"},
        {"reduce", "0-7", "moves 23 (in place 23) bytes per byte"},
        {"allreduce", "0,2,3", "moves 16 (in place 16) bytes per byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *bin = perf_path();
        struct tu_run r;
        tu_run_argv(&r, (const char *const[]){bin, "--collective", cases[i].coll, "--devices",
                                              cases[i].devices, "-b", "1K", "-e", "4K", "-f",
                                              "4", "-n", "2", "-w", "1", "--hbm-gbps", "4250",
                                              NULL});
        cr_expect_eq(r.status, 0, "%s", r.err);
        cr_expect(strstr(r.out, cases[i].want), "no '%s' in %s", cases[i].want, r.out);
        cr_expect_eq(data_rows(r.out), 2, "%s", r.out);
        const char *row = strstr(r.out, "\n        1024");
        cr_expect(row && strstr(row, "%bound "), "%s", r.out);
        tu_run_free(&r);
        free(bin);
    }
}
