/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tsan_main.c - `make check-tsan`: the kernel on the CPU (backend_shim.cc) under
 * ThreadSanitizer, without Criterion (whose runner cannot start under TSan: its inheritable
 * arena collides with TSan's address space). Every collective in float32, float16 and int8, sum
 * and avg, on a 3-rank chain (one block of 32 threads) and on two 4-rank trees played by one
 * block and by two, in Simple and in LL, and on the same trees cut into 3 + 2 channels with
 * allreduce's up and down passes on blocks of their own, in both, the down pass direct (into
 * the children's outputs) and, with BLINK_DIRECT=0, through the staging; then ranks that
 * disagree about a call. Exit status 0 when every result matches rt_testutil.c's reference;
 * TSan makes it non-zero when it reports a race.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_testutil.h"

static int failures;

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "FAIL %s: %s\n", what, why);
    failures++;
}

static void sweep(const char *name, int n, int ntrees, const int *const *shapes,
                  const unsigned *weights, const char *blocks, const char *threads,
                  size_t big_count)
{
    static const blinkDataType_t dts[] = {blinkFloat32, blinkFloat16, blinkInt8};
    static const blinkRedOp_t ops[] = {blinkSum, blinkAvg};
    const size_t counts[] = {7, big_count};
    struct rt_plan p;
    blinkComm_t comms[8];
    setenv("BLINK_CHUNK_BYTES", "16", 1);
    setenv("BK_SHIM_MAX_BLOCKS", blocks, 1);
    setenv("BK_SHIM_THREADS", threads, 1);
    rt_plan_build(&p, n, ntrees, shapes, weights, 1 << 20);
    if (blinkrtCommInitAll(&p.plan, comms, n, NULL) != blinkSuccess) {
        fail(name, blinkGetLastError(NULL));
        rt_plan_free(&p);
        return;
    }
    unsigned variant = 0;
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++)
        for (int d = 0; d < 3; d++)
            for (int o = 0; o < 2; o++)
                for (int k = 0; k < 2; k++) {
                    if (o && (coll == BLINK_PLAN_BROADCAST || coll == BLINK_PLAN_ALLGATHER))
                        continue;
                    struct rt_case c = {coll, (int)(variant % (unsigned)n), dts[d], ops[o],
                                        counts[k], (int)(variant & 1),
                                        (variant >> 1) & 1 ? RT_GROUP : RT_THREADS, 0};
                    rt_shift = (variant >> 2) % 3 == 1 ? rt_size(dts[d]) : 0;
                    variant++;
                    char why[512] = "", what[128];
                    snprintf(what, sizeof what, "%s coll %d dt %d op %d count %zu", name, coll,
                             (int)c.dt, (int)c.op, c.count);
                    if (rt_run_check(comms, n, &c, why, sizeof why))
                        fail(what, why);
                }
    rt_shift = 0;
    for (int v = 0; v < n; v++)
        blinkCommDestroy(comms[v]);
    rt_plan_free(&p);
    printf("%s: %u calls\n", name, variant);
}

/* Rank 2 calls with another count: every rank fails, rank 2 with the mismatch. */
static void mismatch(void)
{
    static const int chain[] = {-1, 0, 1};
    const int *shapes[] = {chain};
    struct rt_plan p;
    blinkComm_t comms[3];
    rt_plan_build(&p, 3, 1, shapes, (const unsigned[]){1}, 1 << 20);
    if (blinkrtCommInitAll(&p.plan, comms, 3, NULL) != blinkSuccess) {
        fail("mismatch", blinkGetLastError(NULL));
        rt_plan_free(&p);
        return;
    }
    float buf[3][2][16];
    memset(buf, 0, sizeof buf);
    blinkGroupStart();
    for (int v = 0; v < 3; v++)
        blinkAllReduce(buf[v][0], buf[v][1], v == 2 ? 9 : 8, blinkFloat32, blinkSum, comms[v],
                       NULL);
    blinkResult_t r = blinkGroupEnd();
    if (r == blinkSuccess || !strstr(blinkGetLastError(NULL), "mismatched collective calls"))
        fail("mismatch", blinkGetLastError(NULL));
    for (int v = 0; v < 3; v++)
        blinkCommDestroy(comms[v]);
    rt_plan_free(&p);
    printf("mismatch: failed as it must\n");
}

int main(void)
{
    static const int chain[] = {-1, 0, 1}, a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *one[] = {chain}, *two[] = {a, b};
    sweep("chain3", 3, 1, one, (const unsigned[]){1}, "4", "32", 37);
    sweep("two_trees_one_block", 4, 2, two, (const unsigned[]){3, 1}, "1", "16", 37);
    sweep("two_trees_two_blocks", 4, 2, two, (const unsigned[]){3, 1}, "2", "16", 37);
    /* Channels: 3 and 2 of the two trees (rates 3 and 2 at 1e-4 GB/s a channel), every item
     * its own block (allreduce 10, up and down apart); 300 elements reach several channels. */
    setenv("BLINK_CHANNEL_GBPS", "0.0001", 1);
    sweep("channels_split", 4, 2, two, (const unsigned[]){3, 2}, "10", "4", 300);
    setenv("BLINK_PROTO", "ll", 1); /* the lines, their flags and credits (proto.h, LL) */
    sweep("ll_channels_split", 4, 2, two, (const unsigned[]){3, 2}, "10", "4", 300);
    unsetenv("BLINK_CHANNEL_GBPS");
    sweep("ll_chain3", 3, 1, one, (const unsigned[]){1}, "4", "32", 37);
    sweep("ll_two_trees_one_block", 4, 2, two, (const unsigned[]){3, 1}, "1", "16", 37);
    unsetenv("BLINK_PROTO");
    /* The sweeps above go down direct (InitAll: one process, proto.h's Direct); these through
     * the down slots and their credits. */
    setenv("BLINK_DIRECT", "0", 1);
    sweep("staged_two_trees_two_blocks", 4, 2, two, (const unsigned[]){3, 1}, "2", "16", 37);
    setenv("BLINK_CHANNEL_GBPS", "0.0001", 1);
    sweep("staged_channels_split", 4, 2, two, (const unsigned[]){3, 2}, "10", "4", 300);
    unsetenv("BLINK_CHANNEL_GBPS");
    unsetenv("BLINK_DIRECT");
    mismatch();
    printf("%s\n", failures ? "FAILED" : "all passed");
    return failures != 0;
}
