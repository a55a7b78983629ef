/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_gpu_tools.c - the tools that measure the executor on a GPU, where no GPU is:
 * blink-trace, the summary of BLINK_TRACE's files, on a hand-written trace of one allreduce
 * over a chain of three ranks (2 -> 1 -> 0, one chunk), whose call latency, hops, waits and
 * moves were worked out by hand below, and on files it must refuse; and tools/gpu-check, which
 * without a GPU (or with --dry-run) must say what it would run and exit 0, and refuse bad usage
 * with 2.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "testutil.h"

static char *trace_bin(void)
{
    const char *build = getenv("BLINKC_BUILDDIR");
    return bk_asprintf("%s/bench/blink-trace", build ? build : ".");
}

static char dir[] = "/tmp/blink-trace-test-XXXXXX";

static void put(const char *name, const char *text)
{
    char *path = bk_asprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    free(path);
}

#define HEAD(rank) "# blink-trace 1\n# rank " #rank " prank " #rank " nranks 3 device " #rank \
                   " backend host clock monotonic records 8 dropped 0\n"                    \
                   "seq\tcoll\tblock\ttree\tkind\tchunk\tpeer\tt_ns\n"

/*
 * The call: latency = last exit 4600 - first entry 900 = 3.70 us.
 * Up hops: rank 1 posts at 2000, its child at 1500: 500; rank 0 at 2600, child 2000: 600.
 * Down hops: rank 1 at 3700, parent 3000: 700; rank 2 at 4500, parent 3700: 800.
 * Moves (start to post): 300 400 | 300 300 | 400 200 -> median 300, largest 400.
 * Waits (decide minus the block's previous post or entry): rank 2: 1100-1000 = 100,
 * 4000-1500 = 2500; rank 1: 1610-1050 = 560, 3300-2000 = 1300; rank 0: 2100-900 = 1200,
 * 2700-2600 = 100 -> 100 100 560 1200 1300 2500, median 880, largest 2500.
 * Skew (the ranks' first entries): 1050 - 900 = 150.
 * Entries (a rank's first decide minus its entry): 100, 560, 1200 -> median 560, largest 1200.
 * Exits (a rank's last exit minus its last post): 100, 300, 100 -> median 100, largest 300.
 */
static void write_chain(void)
{
    cr_assert(mkdtemp(dir));
    put("blink-trace.h.1.r2.tsv", HEAD(2)
        "7\tallreduce\t0\t0\tenter\t0\t-1\t1000\n"
        "7\tallreduce\t0\t0\tup-decide\t0\t1\t1100\n"
        "7\tallreduce\t0\t0\tup-start\t0\t1\t1200\n"
        "7\tallreduce\t0\t0\tup-post\t0\t1\t1500\n"
        "7\tallreduce\t0\t0\tdown-decide\t0\t1\t4000\n"
        "7\tallreduce\t0\t0\tdown-start\t0\t1\t4100\n"
        "7\tallreduce\t0\t0\tdown-post\t0\t1\t4500\n"
        "7\tallreduce\t0\t0\texit\t0\t-1\t4600\n");
    put("blink-trace.h.1.r1.tsv", HEAD(1)
        "7\tallreduce\t0\t0\tenter\t0\t-1\t1050\n"
        "7\tallreduce\t0\t0\tup-decide\t0\t0\t1610\n"
        "7\tallreduce\t0\t0\tup-start\t0\t0\t1700\n"
        "7\tallreduce\t0\t0\tup-post\t0\t0\t2000\n"
        "7\tallreduce\t0\t0\tdown-decide\t0\t0\t3300\n"
        "7\tallreduce\t0\t0\tdown-start\t0\t0\t3400\n"
        "7\tallreduce\t0\t0\tdown-post\t0\t0\t3700\n"
        "7\tallreduce\t0\t0\texit\t0\t-1\t4000\n");
    put("blink-trace.h.1.r0.tsv", HEAD(0)
        "7\tallreduce\t0\t0\tenter\t0\t-1\t900\n"
        "7\tallreduce\t0\t0\tup-decide\t0\t-1\t2100\n"
        "7\tallreduce\t0\t0\tup-start\t0\t-1\t2200\n"
        "7\tallreduce\t0\t0\tup-post\t0\t-1\t2600\n"
        "7\tallreduce\t0\t0\tdown-decide\t0\t-1\t2700\n"
        "7\tallreduce\t0\t0\tdown-start\t0\t-1\t2800\n"
        "7\tallreduce\t0\t0\tdown-post\t0\t-1\t3000\n"
        "7\tallreduce\t0\t0\texit\t0\t-1\t3100\n");
    put("notes.txt", "not a trace: the directory reader skips it\n");
}

static void clean(void)
{
    const char *names[] = {"blink-trace.h.1.r0.tsv", "blink-trace.h.1.r1.tsv",
                           "blink-trace.h.1.r2.tsv", "notes.txt", "bad.tsv"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *p = bk_asprintf("%s/%s", dir, names[i]);
        unlink(p);
        free(p);
    }
    rmdir(dir);
}

Test(trace, chain_by_hand, .init = write_chain, .fini = clean)
{
    char *bin = trace_bin();
    struct tu_run r;
    tu_run_argv(&r, (const char *const[]){bin, "-v", dir, NULL});
    cr_assert_eq(r.status, 0, "blink-trace failed: %s", r.err);
    cr_assert(strstr(r.out, "| 7 | allreduce | 3 | 3.70 |"), "per-call line: %s", r.out);
    cr_assert(strstr(r.out, "| allreduce | 1 | 3.70 (3.70) | 0.15 (0.15) | 0.56 (1.20) |"
                            " 0.55 (0.60) | 0.75 (0.80) | 0.88 (2.50) | 0.30 (0.40) |"
                            " 0.10 (0.30) |"),
              "summary row: %s", r.out);
    cr_assert(strstr(r.out, "3 files, 24 events"), "%s", r.out);
    tu_run_free(&r);
    free(bin);
}

Test(trace, refuses_what_is_not_a_trace, .init = write_chain, .fini = clean)
{
    char *bin = trace_bin(), *bad = bk_asprintf("%s/bad.tsv", dir);
    struct tu_run r;
    put("bad.tsv", HEAD(0) "7\tallreduce\t0\t0\tsideways\t0\t-1\t900\n");
    tu_run_argv(&r, (const char *const[]){bin, bad, NULL});
    cr_assert_eq(r.status, 1);
    char *want = bk_asprintf("blink-trace: %s:4: error: an event", bad);
    cr_assert(strstr(r.err, want), "%s", r.err);
    free(want);
    tu_run_free(&r);

    put("bad.tsv", "seq\tcoll\n");
    tu_run_argv(&r, (const char *const[]){bin, bad, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, ":1: error: not a BLINK_TRACE file"), "%s", r.err);
    tu_run_free(&r);

    tu_run_argv(&r, (const char *const[]){bin, NULL});
    cr_assert_eq(r.status, 2, "no argument is a usage error");
    tu_run_free(&r);
    free(bad);
    free(bin);
}

static char *gpu_check(void)
{
    const char *src = getenv("BLINKC_SRCDIR");
    return bk_asprintf("%s/tools/gpu-check", src ? src : "..");
}

Test(gpu_check, dry_run_names_every_part)
{
    char *bin = gpu_check();
    struct tu_run r;
    const char *rep = "/tmp/blink-gpu-check-dry-run";
    rmdir(rep);
    tu_run_argv(&r, (const char *const[]){bin, "--dry-run", "--build", "prebuilt", rep, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    static const char *const parts[] = {
        "/prebuilt as it is", "/prebuilt/bench/gpu-micro",
        "--collective reducescatter -b 8 -e 16M -f 8 -c 1", "--procs --collective allreduce",
        "--collective allgather -b 1K -e 128M -f 4 -n 20 -w 5 -c 0 --hbm-gbps RATE",
        "BLINK_TRACE=/tmp/blink-gpu-check-dry-run/trace-8",
        "/prebuilt/bench/blink-trace /tmp/blink-gpu-check-dry-run/trace-8",
        "/prebuilt/runtime/libblink-nccl.so python3", "--backend gloo",
        "--collective allgather -b 0 -e 0 -n 50 -w 5 -c 0 -G 10",
        "report:      /tmp/blink-gpu-check-dry-run/gpu-check.md"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        cr_expect(strstr(r.out, parts[i]), "no '%s' in:\n%s", parts[i], r.out);
    cr_expect_eq(access(rep, F_OK), -1, "a dry run must not make its report directory");
    tu_run_free(&r);
    free(bin);
}

Test(gpu_check, usage_errors_exit_2)
{
    char *bin = gpu_check();
    const char *const *bad[] = {(const char *const[]){bin, NULL},
                                (const char *const[]){bin, "--frobnicate", "x", NULL},
                                (const char *const[]){bin, "a", "b", NULL},
                                (const char *const[]){bin, "x", "--build", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tu_run r;
        tu_run_argv(&r, bad[i]);
        cr_expect_eq(r.status, 2, "case %zu: %s", i, r.err);
        tu_run_free(&r);
    }
    free(bin);
}
