/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_coll.c - every collective x datatype x op on hand-made plans, through the host
 * backend, against an independent reference (rt_testutil.c): a 4-rank chain, a 4-rank star, two
 * 4-rank trees weighted 3:1 (the second rooted at rank 2, so allreduce runs on a tree whose root
 * is not rank 0) and an 8-rank binary tree. Counts 0, 1, 2, 7, 13 and 211 (a prime, many
 * 16-byte chunks), in place and out of place, thread per rank and group style, NULL streams and
 * user streams; output buffers are poisoned with 0xA5 first. InitAll communicators share one
 * process, so these run the down pass direct (proto.h, Direct); direct_* proves it (no down
 * slot written) and staged_* runs the staging (BLINK_DIRECT=0), where the slots are written.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "rt_testutil.h"

static const size_t counts[] = {0, 1, 2, 7, 13, 211};
#define NCOUNTS (sizeof counts / sizeof counts[0])

/* Run the whole matrix on one plan; variants rotate so that every collective, type and op
 * meets both styles, both placements and both stream kinds across the counts. */
static void sweep(int n, int ntrees, const int *const *shapes, const unsigned *weights,
                  int max_count_index)
{
    struct rt_plan p;
    blinkComm_t comms[8];
    setenv("BLINK_CHUNK_BYTES", "16", 1);
    rt_plan_build(&p, n, ntrees, shapes, weights, 1 << 20);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, comms, n, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    unsigned variant = 0, runs = 0;
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++) {
        int has_op = coll != BLINK_PLAN_BROADCAST && coll != BLINK_PLAN_ALLGATHER;
        for (int dt = 0; dt < blinkNumTypes; dt++)
            for (int op = 0; op < (has_op ? blinkNumOps : 1); op++)
                for (int k = 0; k <= max_count_index; k++) {
                    struct rt_case c = {coll, (int)(variant % (unsigned)n), (blinkDataType_t)dt,
                                        (blinkRedOp_t)op, counts[k], (int)(variant & 1),
                                        (variant >> 1) & 1 ? RT_GROUP : RT_THREADS,
                                        (int)((variant >> 2) & 1)};
                    char why[512] = "";
                    variant++;
                    runs++;
                    cr_assert_eq(rt_run_check(comms, n, &c, why, sizeof why), 0,
                                 "coll %d dt %d op %d count %zu root %d inplace %d style %d "
                                 "streams %d: %s", coll, dt, op, c.count, c.root, c.inplace,
                                 c.style, c.streams, why);
                }
    }
    cr_expect_gt(runs, 100);
    for (int v = 0; v < n; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    rt_plan_free(&p);
}

Test(rt_coll, chain4, .timeout = 60)
{
    static const int chain[] = {-1, 0, 1, 2};
    const int *shapes[] = {chain};
    sweep(4, 1, shapes, (const unsigned[]){1}, NCOUNTS - 1);
}

Test(rt_coll, star4, .timeout = 60)
{
    static const int star[] = {-1, 0, 0, 0};
    const int *shapes[] = {star};
    sweep(4, 1, shapes, (const unsigned[]){7}, NCOUNTS - 1);
}

/* Tree A: 0-1, 0-2, 1-3 rooted at 0; tree B: the chain 2-3-1-0 rooted at 2; weights 3:1. */
Test(rt_coll, two_trees_3to1, .timeout = 60)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *shapes[] = {a, b};
    sweep(4, 2, shapes, (const unsigned[]){3, 1}, NCOUNTS - 1);
}

Test(rt_coll, binary8, .timeout = 60)
{
    static const int bin[] = {-1, 0, 0, 1, 1, 2, 2, 3};
    const int *shapes[] = {bin};
    sweep(8, 1, shapes, (const unsigned[]){1}, NCOUNTS - 1);
}

/* One rank: every collective is a local copy (or nothing in place). */
Test(rt_coll, single_rank, .timeout = 60)
{
    static const int one[] = {-1};
    const int *shapes[] = {one};
    sweep(1, 1, shapes, (const unsigned[]){1}, NCOUNTS - 1);
}

/* Broadcast, allgather and allreduce (counts 37 and 211, float32 and int8, in place and out,
 * every root) on the two 3:1 trees: direct, no rank's down slot changes; staged, some do. */
static void direct_sweep(int direct)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *shapes[] = {a, b};
    static const int colls[] = {BLINK_PLAN_BROADCAST, BLINK_PLAN_ALLGATHER, BLINK_PLAN_ALLREDUCE};
    struct rt_plan p;
    blinkComm_t comms[4];
    setenv("BLINK_CHUNK_BYTES", "16", 1);
    setenv("BLINK_ALGO", "trees", 1);
    setenv("BLINK_DIRECT", direct ? "1" : "0", 1);
    rt_plan_build(&p, 4, 2, shapes, (const unsigned[]){3, 1}, 1 << 20);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, comms, 4, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++)
        for (int v = 0; v < 16; v++) {
            struct rt_case c = {colls[i], v % 4, v & 4 ? blinkInt8 : blinkFloat32, blinkSum,
                                v & 8 ? 211 : 37, v & 1, v & 2 ? RT_GROUP : RT_THREADS, 0};
            char why[512] = "";
            long w = rt_down_slot_writes(comms, 4, &c, why, sizeof why);
            cr_assert_geq(w, 0, "coll %d case %d: %s", c.coll, v, why);
            if (direct)
                cr_expect_eq(w, 0, "coll %d case %d: %ld down-slot bytes written", c.coll, v, w);
            else
                cr_expect_gt(w, 0, "coll %d case %d: no down slot written", c.coll, v);
        }
    for (int v = 0; v < 4; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    rt_plan_free(&p);
}

Test(rt_coll, direct_no_down_slots, .timeout = 60) { direct_sweep(1); }
Test(rt_coll, staged_down_slots, .timeout = 60) { direct_sweep(0); }

/* The whole matrix through the staging, on the binary tree. */
Test(rt_coll, staged_binary8, .timeout = 60)
{
    static const int bin[] = {-1, 0, 0, 1, 1, 2, 2, 3};
    const int *shapes[] = {bin};
    setenv("BLINK_DIRECT", "0", 1);
    sweep(8, 1, shapes, (const unsigned[]){1}, NCOUNTS - 1);
}

/* BLINK_DIRECT takes 0 or 1 only, and says so. */
Test(rt_coll, direct_env)
{
    static const int chain[] = {-1, 0};
    const int *shapes[] = {chain};
    struct rt_plan p;
    blinkComm_t comms[2];
    rt_plan_build(&p, 2, 1, shapes, (const unsigned[]){1}, 1 << 20);
    setenv("BLINK_DIRECT", "on", 1);
    cr_expect_neq(blinkrtCommInitAll(&p.plan, comms, 2, NULL), blinkSuccess);
    cr_expect(strstr(blinkGetLastError(NULL), "BLINK_DIRECT"), "%s", blinkGetLastError(NULL));
    rt_plan_free(&p);
}
