/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_ranges.c - what a call runs (blink_plan.h's per-size ranges): the range that covers
 * the message size (nccl-tests' S, so allgather and reduce-scatter count the whole buffer)
 * picks the trees or the rings and the chunk; BLINK_ALGO and BLINK_CHUNK_BYTES override it;
 * corrupt ranges and ring trees are refused at init; the host runtime, which has no NCCL, runs
 * the ring trees and gets the right answers.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "rt_testutil.h"

/* Two shapes over 4 ranks: a chain (the "trees") and a star (standing in for the rings). */
static const int chain[] = {-1, 0, 1, 2};
static const int star[] = {-1, 0, 0, 0};

struct two {
    struct rt_plan trees, rings;
    struct blink_plan_range ranges[3];
};

/* Every schedule of `trees` gets the same schedule of `rings` as its ring trees and the
 * ranges: up to 4 KiB rings with 64-byte chunks, then trees with 128, from 1 MiB trees with
 * 256. */
static void build(struct two *p)
{
    rt_plan_build(&p->trees, 4, 1, (const int *const[]){chain}, (const unsigned[]){1}, 64);
    rt_plan_build(&p->rings, 4, 1, (const int *const[]){star}, (const unsigned[]){1}, 64);
    p->ranges[0] = (struct blink_plan_range){0, BLINK_PLAN_RINGS, 64};
    p->ranges[1] = (struct blink_plan_range){4096, BLINK_PLAN_TREES, 128};
    p->ranges[2] = (struct blink_plan_range){1 << 20, BLINK_PLAN_TREES, 256};
    for (int i = 0; i < p->trees.plan.nschedules; i++) {
        p->trees.scheds[i].ring_trees = p->rings.scheds[i].trees;
        p->trees.scheds[i].nring_trees = p->rings.scheds[i].ntrees;
        p->trees.scheds[i].ranges = p->ranges;
        p->trees.scheds[i].nranges = 3;
    }
}

static void destroy(struct two *p, blinkComm_t *c)
{
    for (int v = 0; c && v < 4; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    rt_plan_free(&p->trees);
    rt_plan_free(&p->rings);
}

static void expect_choice(blinkComm_t comm, int coll, int root, size_t count, int algo,
                          size_t chunk)
{
    int a = -1;
    size_t ch = 0;
    cr_assert_eq(blinkrtCommChoice(comm, coll, root, count, blinkInt32, &a, &ch), blinkSuccess,
                 "%s", blinkGetLastError(NULL));
    cr_expect_eq(a, algo, "coll %d count %zu: algo %d, expected %d", coll, count, a, algo);
    cr_expect_eq(ch, chunk, "coll %d count %zu: chunk %zu, expected %zu", coll, count, ch, chunk);
}

Test(rt_ranges, size_picks_the_range)
{
    unsetenv("BLINK_ALGO");
    unsetenv("BLINK_CHUNK_BYTES");
    struct two p;
    blinkComm_t c[4];
    build(&p);
    cr_assert_eq(blinkrtCommInitAll(&p.trees.plan, c, 4, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    /* int32: 1023 elements are 4092 bytes, 1024 are 4096. */
    expect_choice(c[0], BLINK_PLAN_ALLREDUCE, -1, 1023, BLINK_PLAN_RINGS, 64);
    expect_choice(c[0], BLINK_PLAN_ALLREDUCE, -1, 1024, BLINK_PLAN_TREES, 128);
    expect_choice(c[1], BLINK_PLAN_BROADCAST, 2, 1 << 18, BLINK_PLAN_TREES, 256);
    expect_choice(c[1], BLINK_PLAN_BROADCAST, 2, 0, BLINK_PLAN_RINGS, 64);
    /* Sharded collectives count the whole buffer: 256 x 4 ranks x 4 bytes = 4 KiB. */
    expect_choice(c[2], BLINK_PLAN_ALLGATHER, -1, 255, BLINK_PLAN_RINGS, 64);
    expect_choice(c[2], BLINK_PLAN_REDUCESCATTER, -1, 256, BLINK_PLAN_TREES, 128);
    int a;
    cr_expect_eq(blinkrtCommChoice(c[0], BLINK_PLAN_BROADCAST, 9, 1, blinkInt32, &a, NULL),
                 blinkInvalidUsage);
    cr_expect_eq(blinkrtCommChoice(c[0], BLINK_PLAN_ALLREDUCE, -1, 1, (blinkDataType_t)77, &a,
                                   NULL), blinkInvalidArgument);
    cr_expect_eq(blinkrtCommChoice(NULL, BLINK_PLAN_ALLREDUCE, -1, 1, blinkInt32, &a, NULL),
                 blinkInvalidArgument);
    destroy(&p, c);
}

Test(rt_ranges, environment_overrides)
{
    struct two p;
    blinkComm_t c[4];
    build(&p);
    setenv("BLINK_ALGO", "trees", 1);
    setenv("BLINK_CHUNK_BYTES", "4096", 1);
    cr_assert_eq(blinkrtCommInitAll(&p.trees.plan, c, 4, NULL), blinkSuccess);
    expect_choice(c[0], BLINK_PLAN_ALLREDUCE, -1, 1, BLINK_PLAN_TREES, 4096);
    destroy(&p, c);
    build(&p);
    setenv("BLINK_ALGO", "rings", 1);
    unsetenv("BLINK_CHUNK_BYTES");
    cr_assert_eq(blinkrtCommInitAll(&p.trees.plan, c, 4, NULL), blinkSuccess);
    expect_choice(c[0], BLINK_PLAN_ALLREDUCE, -1, 1 << 20, BLINK_PLAN_RINGS, 256);
    destroy(&p, c);
    build(&p);
    setenv("BLINK_ALGO", "spanning", 1);
    cr_expect_eq(blinkrtCommInitAll(&p.trees.plan, c, 4, NULL), blinkInvalidArgument);
    cr_expect(strstr(blinkGetLastError(NULL), "BLINK_ALGO") != NULL, "%s",
              blinkGetLastError(NULL));
    unsetenv("BLINK_ALGO");
    destroy(&p, NULL);
}

Test(rt_ranges, corrupt_ranges_and_ring_trees)
{
    struct two p;
    blinkComm_t c[4];
    unsetenv("BLINK_ALGO");
    build(&p);
    struct {
        struct blink_plan_range r;
        int at;
        const char *why;
    } bad[] = {
        {{16, BLINK_PLAN_RINGS, 64}, 0, "first must start at 0"},
        {{4096, BLINK_PLAN_TREES, 128}, 2, "each must start after the last"},
        {{4096, 7, 128}, 1, "algorithm 7"},
        {{4096, BLINK_PLAN_TREES, 0}, 1, "chunk 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct blink_plan_range keep = p.ranges[bad[i].at];
        p.ranges[bad[i].at] = bad[i].r;
        cr_expect_eq(blinkrtCommInitAll(&p.trees.plan, c, 4, NULL), blinkInvalidUsage, "case %zu",
                     i);
        cr_expect(strstr(blinkGetLastError(NULL), bad[i].why) != NULL, "case %zu: %s", i,
                  blinkGetLastError(NULL));
        p.ranges[bad[i].at] = keep;
    }
    /* A ring tree of a broadcast rooted elsewhere than the broadcast's root. */
    struct blink_plan_schedule *s = &p.trees.scheds[0];
    s->ring_trees = p.rings.scheds[1].trees;
    cr_expect_eq(blinkrtCommInitAll(&p.trees.plan, c, 4, NULL), blinkInvalidUsage);
    cr_expect(strstr(blinkGetLastError(NULL), "ring tree 0 is rooted at 1") != NULL, "%s",
              blinkGetLastError(NULL));
    s->ring_trees = p.rings.scheds[0].trees;
    cr_assert_eq(blinkrtCommInitAll(&p.trees.plan, c, 4, NULL), blinkSuccess);
    destroy(&p, c);
}

/* Without NCCL the host runtime runs the ring trees for ring sizes, and every collective still
 * checks out on both sides of the 4 KiB boundary. */
Test(rt_ranges, rings_run_on_the_host, .timeout = 60)
{
    unsetenv("BLINK_ALGO");
    unsetenv("BLINK_CHUNK_BYTES");
    struct two p;
    blinkComm_t c[4];
    build(&p);
    cr_assert_eq(blinkrtCommInitAll(&p.trees.plan, c, 4, NULL), blinkSuccess);
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++)
        for (size_t count = 100; count <= 2000; count += 1900) {
            struct rt_case k = {coll, coll < 2 ? 1 : -1, blinkInt32, blinkSum, count, 0,
                                RT_GROUP, 0};
            char why[512] = "";
            cr_expect_eq(rt_run_check(c, 4, &k, why, sizeof why), 0, "coll %d count %zu: %s",
                         coll, count, why);
        }
    destroy(&p, c);
}
