/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_perf.c - blink-perf, the nccl-tests driver, on the host backend with the DGX-1V library:
 * nccl-tests' columns and footer, every collective checked with no wrong element, in both of
 * its modes (ranks as threads of one process, the default, and -N, a process per rank), an
 * injected copy failure, a device set with no plan and a bad option giving their exit codes;
 * and -M, a rank per MPI process, under mpirun on a 2 x 4 cluster of DGX-1V servers
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
#define EVERY "-D", "0,2,3", "-b", "8", "-e", "32K", "-f", "8", "-d", "int32", "-o", "max", \
    "-r", "1", "-n", "2", "-w", "1"

Test(perf, every_collective_checks_out, .timeout = 120)
{
    static const char *const colls[] = {"broadcast", "reduce", "allreduce", "allgather",
                                        "reducescatter"};
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++) {
        expect_clean_table((const char *const[]){"-C", colls[i], EVERY, NULL}, 5,
                           "#  Ranks as threads: 3");
        expect_clean_table((const char *const[]){"-N", "-C", colls[i], EVERY, NULL}, 5,
                           "#  Ranks as processes: 3");
    }
}

/* 8 B to 1 MiB by 4x is 9 sizes. */
#define SWEEP "-D", "0,2,3", "-b", "8", "-e", "1M", "-f", "4", "-c", "1"

Test(perf, threads_are_the_default_mode, .timeout = 120)
{
    expect_clean_table((const char *const[]){"-C", "allreduce", SWEEP, NULL}, 9,
                       "#  Ranks as threads: 3");
}

Test(perf, ranks_as_processes_check_out, .timeout = 120)
{
    expect_clean_table((const char *const[]){"-N", "-C", "allreduce", SWEEP, NULL}, 9,
                       "#  Ranks as processes: 3");
    expect_clean_table((const char *const[]){"--procs", "-C", "broadcast", "-r", "1", SWEEP,
                                             NULL},
                       9, "#  Ranks as processes: 3");
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
    tu_run_argv(&r, (const char *const[]){bin, "-N", "-b", "1K", "-e", "1K", "-n", "1", "-w",
                                          "0", NULL});
    unsetenv("BLINK_HOST_FAIL_COPY");
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "BLINK_HOST_FAIL_COPY"), "%s", r.err);
    cr_expect(strstr(r.out, "FAILED"), "%s", r.out);
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){bin, "-o", "xor", NULL});
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "Try 'blink-perf --help'"));
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){bin, "-M", "-N", NULL}); /* with MPI or without */
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "Try 'blink-perf --help'"), "%s", r.err);
    tu_run_free(&r);
    /* A device set no plan was made for (GPU 9 is not in a DGX-1V): an init error, exit 1. */
    tu_run_argv(&r, (const char *const[]){bin, "-D", "0,9", "-n", "1", NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "blinkCommInitAll"), "%s", r.err);
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){bin, "-N", "-D", "0,9", "-n", "1", NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "blinkCommInitRank"), "%s", r.err);
    tu_run_free(&r);
    free(bin);
}

/* ------------------------------------------------------------------ -M under mpirun */

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
                             "BLINK_TIMEOUT_S=20", bin, "-M"};
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
    mpi_cluster_table(mpirun, bin, (const char *const[]){"-C", "allreduce", "-b", "8", "-e",
                      "64K", "-f", "2", "-n", "2", "-w", "1", NULL});
    mpi_cluster_table(mpirun, bin, (const char *const[]){"-C", "broadcast", "-r", "5", "-b",
                      "8", "-e", "64K", "-f", "2", "-n", "2", "-w", "1", NULL});
    mu_unlock(lock);
    free(bin);
}
