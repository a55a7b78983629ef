/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_shim.c - the CUDA backend's own kernel (runtime/cuda/kernel_cuda.cuh), compiled by g++
 * through tests/shim/cuda_shim.h and run by the shim backend (tests/shim/backend_shim.cc):
 * one OS thread per GPU thread, blocks of 8 to 32, every rank's launch at once, arguments built
 * by the CUDA backend's own code (kernel_args.h), results against rt_testutil.c's independent
 * reference. Covered: 3, 4 and 8 ranks (chains, stars, two and three trees of different weights,
 * and the committed DGX-1V plan), every collective, float32, int32, float16, bfloat16 and int8,
 * sum, max and avg (min and prod on some plans), counts of 1, 7, 37 and 211 (odd, not multiples
 * of 16 bytes, fewer elements than trees) in 16-byte chunks (so calls take many chunks and wrap
 * the four slots) and in 512-byte ones (every thread busy, the unrolled loops full), buffers one
 * element and one byte past malloc's alignment (the kernel's unaligned paths) and aligned, in
 * place and out, thread per rank and group style, NULL and user streams, one block playing
 * several trees and one block per tree, many calls in a row (the call counter); channels
 * (trees cut by rate and by BLINK_NCHANNELS, allreduce's up and down passes on blocks of their
 * own or shared, the DGX-1V plan's counts and per-set staging); the channel rule itself; and two
 * failures: ranks that disagree about a call both fail with "mismatched collective calls", and
 * a rank that never calls makes its neighbour time out naming it. LL (BLINK_PROTO=ll) runs on
 * four of those plans too, across the LL lines' clean and the wrap.
 *
 * What this proves: the kernel's control flow, chunk and range arithmetic, alignment paths,
 * reductions and both protocols (the up and down hand-overs, credits, the description check,
 * aborts and timeouts) on a real interleaving of threads. What it cannot: the GPU memory model
 * (the shim's flag words are C11 acquire/release atomics, not volatile accesses and fences across
 * PCIe or NVLink), warp scheduling, occupancy, or anything CUDA itself does.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"
#include "rt_testutil.h"
#include "sanitized.h"

static const blinkDataType_t dts[] = {blinkFloat32, blinkInt32, blinkFloat16, blinkBfloat16,
                                      blinkInt8};
static const blinkRedOp_t ops[] = {blinkSum, blinkMax, blinkAvg};
static const size_t counts[] = {1, 7, 37};
static const size_t big_counts[] = {1, 211};
static const size_t mid_counts[] = {7, 37};
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ASan and UBSan cost many times over on every one of a launch's threads: there, each
 * collective x type x op runs one of a sweep's counts, in turn (every count still runs on every
 * plan); the plain build runs them all. */
#define SAMPLED TU_SANITIZED

/* How a plan's ranks run: blocks per launch at most, threads per block, chunk bytes. */
struct shape {
    const char *max_blocks, *threads, *chunk;
};

static void init(struct rt_plan *p, blinkComm_t *comms, int n, int ntrees,
                 const int *const *shapes, const unsigned *weights, struct shape sh)
{
    setenv("BLINK_CHUNK_BYTES", sh.chunk, 1);
    setenv("BLINK_MIN_NCHANNELS", "1", 0); /* these plans' channels by rate alone */
    setenv("BK_SHIM_MAX_BLOCKS", sh.max_blocks, 1);
    setenv("BK_SHIM_THREADS", sh.threads, 1);
    rt_plan_build(p, n, ntrees, shapes, weights, 1 << 20);
    cr_assert_eq(blinkrtCommInitAll(&p->plan, comms, n, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
}

static void fini(struct rt_plan *p, blinkComm_t *comms, int n)
{
    for (int v = 0; v < n; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    rt_plan_free(p);
}

/* Every collective x dts x ops (or extra_op too) x counts on one plan; variants rotate the
 * root, placement, alignment, calling style and streams. */
static void sweep(int n, int ntrees, const int *const *shapes, const unsigned *weights,
                  struct shape sh, int extra_op, const size_t *cnts, size_t ncounts)
{
    struct rt_plan p;
    blinkComm_t comms[8];
    init(&p, comms, n, ntrees, shapes, weights, sh);
    unsigned variant = 0, runs = 0, combos = 0;
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++) {
        int has_op = coll != BLINK_PLAN_BROADCAST && coll != BLINK_PLAN_ALLGATHER;
        for (size_t d = 0; d < N(dts); d++)
            for (size_t o = 0; o < (has_op ? N(ops) + (extra_op >= 0) : 1); o++, combos++)
                for (size_t k = 0; k < ncounts; k++) {
                    if (SAMPLED && k != combos % ncounts)
                        continue;
                    blinkRedOp_t op = o < N(ops) ? ops[o] : (blinkRedOp_t)extra_op;
                    struct rt_case c = {coll, (int)(variant % (unsigned)n), dts[d], op,
                                        cnts[k], (int)(variant & 1),
                                        (variant >> 1) & 1 ? RT_GROUP : RT_THREADS,
                                        (int)((variant >> 2) & 1), 0, 0};
                    unsigned a = (variant >> 3) % 3;
                    rt_shift = a == 0 ? 0 : a == 1 ? rt_size(dts[d]) : 1;
                    char why[512] = "";
                    variant++;
                    runs++;
                    cr_assert_eq(rt_run_check(comms, n, &c, why, sizeof why), 0,
                                 "coll %d dt %d op %d count %zu root %d inplace %d style %d "
                                 "streams %d shift %zu: %s", coll, (int)c.dt, (int)op, c.count,
                                 c.root, c.inplace, c.style, c.streams, rt_shift, why);
                }
    }
    rt_shift = 0;
    cr_expect_geq(runs, 55 * (SAMPLED ? 1 : ncounts)); /* 2 x 5 + 3 x 5 x 3 per count at least */
    fini(&p, comms, n);
}

/* A chain, one block (one tree). */
Test(rt_shim, chain3, .timeout = 120)
{
    static const int chain[] = {-1, 0, 1};
    const int *shapes[] = {chain};
    sweep(3, 1, shapes, (const unsigned[]){1}, (struct shape){"4", "32", "16"}, -1, counts,
          N(counts));
}

/* Two trees weighted 3:1 (the second rooted at rank 2) played by one block: tpb 2. */
Test(rt_shim, two_trees_one_block, .timeout = 120)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *shapes[] = {a, b};
    sweep(4, 2, shapes, (const unsigned[]){3, 1}, (struct shape){"1", "16", "16"}, blinkMin,
          counts, N(counts));
}

/* The same trees, a block each. */
Test(rt_shim, two_trees_two_blocks, .timeout = 120)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *shapes[] = {a, b};
    sweep(4, 2, shapes, (const unsigned[]){3, 1}, (struct shape){"2", "16", "16"}, -1,
          mid_counts, N(mid_counts));
}

/* The same on call numbers that cross both cleans of the flag words (proto.h: call 2^31 + 1,
 * then the wrap past 2^32 - 1 to 1): block 0 zeroes them while block 1 waits for its entry. */
Test(rt_shim, across_the_cleans, .timeout = 120)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *shapes[] = {a, b};
    static const char *const starts[] = {"2147483630", "4294967280"};
    for (size_t i = 0; i < N(starts); i++) {
        setenv("BLINK_DEBUG_SEQ_START", starts[i], 1);
        sweep(4, 2, shapes, (const unsigned[]){3, 1}, (struct shape){"2", "16", "16"}, -1,
              mid_counts, N(mid_counts));
    }
    unsetenv("BLINK_DEBUG_SEQ_START");
}

/* LL (proto.h): the lines carry the data and their flags; 16-byte chunks are two lines, so calls
 * take many chunks and the flags' rounds and the credits turn; then one block playing two trees
 * (a pass that began waits inside itself for lines of a pass that began elsewhere); then calls
 * across the LL lines' clean at 2^21 + 1 and the wrap; then 8 ranks and 512-byte chunks (64
 * lines, more than the block's threads). */
Test(rt_shim, ll_chain3, .timeout = 120)
{
    static const int chain[] = {-1, 0, 1};
    const int *shapes[] = {chain};
    setenv("BLINK_PROTO", "ll", 1);
    sweep(3, 1, shapes, (const unsigned[]){1}, (struct shape){"4", "32", "16"}, blinkProd, counts,
          N(counts));
    unsetenv("BLINK_PROTO");
}

Test(rt_shim, ll_two_trees_one_block, .timeout = 120)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *shapes[] = {a, b};
    setenv("BLINK_PROTO", "ll", 1);
    sweep(4, 2, shapes, (const unsigned[]){3, 1}, (struct shape){"1", "16", "16"}, blinkMin,
          mid_counts, N(mid_counts));
    unsetenv("BLINK_PROTO");
}

Test(rt_shim, ll_across_the_cleans, .timeout = 120)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *shapes[] = {a, b};
    static const char *const starts[] = {"2097140", "4294967280"};
    setenv("BLINK_PROTO", "ll", 1);
    for (size_t i = 0; i < N(starts); i++) {
        setenv("BLINK_DEBUG_SEQ_START", starts[i], 1);
        sweep(4, 2, shapes, (const unsigned[]){3, 1}, (struct shape){"2", "16", "16"}, -1,
              mid_counts, N(mid_counts));
    }
    unsetenv("BLINK_DEBUG_SEQ_START");
    unsetenv("BLINK_PROTO");
}

Test(rt_shim, ll_three_trees8, .timeout = 120)
{
    static const int bin[] = {-1, 0, 0, 1, 1, 2, 2, 3};
    static const int star[] = {3, 3, 3, -1, 3, 3, 3, 3};
    static const int chain[] = {1, 2, 3, 4, 5, 6, 7, -1};
    const int *shapes[] = {bin, star, chain};
    setenv("BLINK_PROTO", "ll", 1);
    sweep(8, 3, shapes, (const unsigned[]){2, 1, 1}, (struct shape){"2", "8", "512"}, -1,
          big_counts, N(big_counts));
    unsetenv("BLINK_PROTO");
}

/* Eight ranks, three trees (a binary tree, a star, a chain) on two blocks: one block plays
 * two trees, the other one; prod too. */
Test(rt_shim, three_trees8, .timeout = 120)
{
    static const int bin[] = {-1, 0, 0, 1, 1, 2, 2, 3};
    static const int star[] = {3, 3, 3, -1, 3, 3, 3, 3};
    static const int chain[] = {1, 2, 3, 4, 5, 6, 7, -1};
    const int *shapes[] = {bin, star, chain};
    sweep(8, 3, shapes, (const unsigned[]){2, 1, 1}, (struct shape){"2", "8", "512"}, blinkProd,
          big_counts, N(big_counts));
}

/* cases[n] on comms[8], every other one with its buffers a byte past malloc's alignment. */
static void run_cases(blinkComm_t *comms, const struct rt_case *cases, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        char why[512] = "";
        rt_shift = i & 1;
        cr_assert_eq(rt_run_check(comms, 8, &cases[i], why, sizeof why), 0, "%s, case %zu: %s",
                     what, i, why);
    }
    rt_shift = 0;
}

/* The committed DGX-1V plan (generated/dgx1v.cu, 6 trees for each collective): one call of each
 * collective on three blocks of 8 threads, 64-byte chunks. */
blinkResult_t e2e_init_dgx1v(blinkComm_t *comms, int ndev, const int *devlist);

Test(rt_shim, dgx1v_plan, .timeout = 120)
{
    blinkComm_t comms[8];
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    setenv("BK_SHIM_MAX_BLOCKS", "3", 1);
    setenv("BK_SHIM_THREADS", "8", 1);
    cr_assert_eq(e2e_init_dgx1v(comms, 8, NULL), blinkSuccess, "%s", blinkGetLastError(NULL));
    const struct rt_case cases[] = {
        {BLINK_PLAN_ALLREDUCE, 0, blinkFloat32, blinkSum, 211, 0, RT_THREADS, 0, 0, 0},
        {BLINK_PLAN_BROADCAST, 3, blinkBfloat16, blinkSum, 37, 1, RT_GROUP, 0, 0, 0},
        {BLINK_PLAN_REDUCE, 5, blinkFloat16, blinkAvg, 37, 0, RT_THREADS, 1, 0, 0},
        {BLINK_PLAN_ALLGATHER, 0, blinkInt32, blinkSum, 7, 1, RT_THREADS, 0, 0, 0},
        {BLINK_PLAN_REDUCESCATTER, 0, blinkInt8, blinkMax, 37, 0, RT_GROUP, 0, 0, 0},
    };
    run_cases(comms, cases, N(cases), "dgx1v");
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
}

/* ------------------------------------------------------------------ channels */

/* The channel rule (roles.c's bk_channels), weights in 1e-4 GB/s, by hand: ceil(rate / per
 * channel) within 1 .. 16, or the forced count. */
Test(rt_shim, channel_rule)
{
    cr_expect_eq(bk_channels(250000, 20.0, 0), 2);  /* 25 GB/s / 20 = 1.25 */
    cr_expect_eq(bk_channels(200000, 20.0, 0), 1);  /* exactly one channel's worth */
    cr_expect_eq(bk_channels(200001, 20.0, 0), 2);
    cr_expect_eq(bk_channels(142857, 20.0, 0), 1);  /* DGX-1V allreduce tree 1 */
    cr_expect_eq(bk_channels(218750, 20.0, 0), 2);  /* its allgather ring chains */
    cr_expect_eq(bk_channels(250000, 12.5, 0), 2);  /* 25 / 12.5 = 2 exactly */
    cr_expect_eq(bk_channels(250000, 5.0, 0), 5);
    cr_expect_eq(bk_channels(250000, 1.0, 0), 16); /* 25, capped */
    cr_expect_eq(bk_channels(0, 20.0, 0), 1);       /* never none */
    cr_expect_eq(bk_channels(3, 0.0001, 0), 3);     /* 3e-4 GB/s / 1e-4 */
    cr_expect_eq(bk_channels(1, 20.0, 3), 3);       /* BLINK_NCHANNELS wins */
    cr_expect_eq(bk_channels(9999999, 20.0, 1), 1);
}

/* The fill (bk_channel_fill): the whole factor that keeps a set of few channels at min or
 * under; none at min or above, or where BLINK_NCHANNELS forces the count. */
Test(rt_shim, channel_fill_rule)
{
    cr_expect_eq(bk_channel_fill(3, 16, 0), 5);  /* 15 channels */
    cr_expect_eq(bk_channel_fill(2, 16, 0), 8);
    cr_expect_eq(bk_channel_fill(1, 16, 0), 16);
    cr_expect_eq(bk_channel_fill(7, 16, 0), 2);  /* 14 */
    cr_expect_eq(bk_channel_fill(9, 16, 0), 1);  /* 18 would pass 16 */
    cr_expect_eq(bk_channel_fill(16, 16, 0), 1);
    cr_expect_eq(bk_channel_fill(40, 16, 0), 1);
    cr_expect_eq(bk_channel_fill(3, 1, 0), 1);   /* BLINK_MIN_NCHANNELS=1: off */
    cr_expect_eq(bk_channel_fill(3, 64, 0), 21);
    cr_expect_eq(bk_channel_fill(3, 16, 2), 1);  /* forced */
    cr_expect_eq(bk_channel_fill(0, 16, 0), 1);
}

/* Values that do not parse fail the init, naming the variable. */
Test(rt_shim, channel_env)
{
    static const char *const bad[][2] = {
        {"BLINK_NCHANNELS", "0"},      {"BLINK_NCHANNELS", "17"},
        {"BLINK_NCHANNELS", "2x"},     {"BLINK_CHANNEL_GBPS", "0"},
        {"BLINK_CHANNEL_GBPS", "-3"},  {"BLINK_CHANNEL_GBPS", "fast"},
        {"BLINK_CHANNEL_GBPS", "inf"}, {"BLINK_DIRECT", "2"},
        {"BLINK_DIRECT", "yes"},       {"BLINK_MIN_NCHANNELS", "0"},
        {"BLINK_MIN_NCHANNELS", "65"}, {"BLINK_MIN_NCHANNELS", "many"},
    };
    struct bk_env e;
    for (size_t i = 0; i < N(bad); i++) {
        setenv(bad[i][0], bad[i][1], 1);
        cr_expect_eq(bk_read_env(&e, "test"), blinkInvalidArgument, "%s=%s", bad[i][0],
                     bad[i][1]);
        cr_expect(strstr(blinkGetLastError(NULL), bad[i][0]), "%s", blinkGetLastError(NULL));
        unsetenv(bad[i][0]);
    }
    setenv("BLINK_NCHANNELS", "16", 1);
    setenv("BLINK_CHANNEL_GBPS", "12.5", 1);
    setenv("BLINK_MIN_NCHANNELS", "64", 1);
    cr_assert_eq(bk_read_env(&e, "test"), blinkSuccess, "%s", blinkGetLastError(NULL));
    cr_expect_eq(e.nchannels, 16);
    cr_expect(e.channel_gbps == 12.5);
    cr_expect_eq(e.min_channels, 64);
    unsetenv("BLINK_NCHANNELS");
    unsetenv("BLINK_CHANNEL_GBPS");
    unsetenv("BLINK_MIN_NCHANNELS");
    cr_assert_eq(bk_read_env(&e, "test"), blinkSuccess);
    cr_expect_eq(e.nchannels, 0);
    cr_expect_eq(e.min_channels, 16);
    cr_expect(e.channel_gbps == BK_DEFAULT_CHANNEL_GBPS);
    cr_expect_eq(e.direct, 1);
}

/* Two trees of rates 3 and 2 (1e-4 GB/s) at 1e-4 GB/s a channel: 3 and 2 channels (5 tree
 * slots, weights scaled by lcm 6), every item its own block (allreduce: 10, up and down
 * apart); 16-byte chunks, so a channel of one 256-byte unit takes 16 chunks, four times its
 * slots, and 1031 elements (odd) reach every channel. */
Test(rt_shim, channels_by_rate, .timeout = 240)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    static const size_t cnts[] = {1031};
    const int *shapes[] = {a, b};
    setenv("BLINK_CHANNEL_GBPS", "0.0001", 1);
    sweep(4, 2, shapes, (const unsigned[]){3, 2}, (struct shape){"10", "4", "16"}, -1, cnts,
          N(cnts));
    unsetenv("BLINK_CHANNEL_GBPS");
}

/* BLINK_NCHANNELS=2 on three trees of 8 ranks (6 slots, allreduce 12 items) on 5 blocks: blocks
 * play several items, a slot's up and down pass in different blocks or in one. */
Test(rt_shim, channels_forced_few_blocks, .timeout = 240)
{
    static const int bin[] = {-1, 0, 0, 1, 1, 2, 2, 3};
    static const int star[] = {3, 3, 3, -1, 3, 3, 3, 3};
    static const int chain[] = {1, 2, 3, 4, 5, 6, 7, -1};
    static const size_t cnts[] = {1031};
    const int *shapes[] = {bin, star, chain};
    setenv("BLINK_NCHANNELS", "2", 1);
    sweep(8, 3, shapes, (const unsigned[]){2, 1, 1}, (struct shape){"5", "4", "64"}, -1, cnts,
          N(cnts));
    unsetenv("BLINK_NCHANNELS");
}

/* The set of schedule (coll, root) on comm c. */
static const struct bk_roleset *set_of(blinkComm_t c, int coll, int root, int ring)
{
    for (int i = 0; i < c->plan->nschedules; i++)
        if (c->plan->schedules[i].coll == coll && c->plan->schedules[i].root == root)
            return &c->sets[BK_SETS * i + ring];
    return NULL;
}

/* The committed DGX-1V plan at the default 20 GB/s a channel: allreduce's 12 trees (25.0,
 * 14.3, 10.7, 7.1 and 8 x 3.6 GB/s) make 13 channels, tree 0 two; broadcast's 6 trees of 25
 * GB/s 12. Tree 0's two channels halve its weights. Broadcast's two ring chains (21.875 and
 * 18.75 GB/s: 2 + 1 channels, under the default BLINK_MIN_NCHANNELS of 16) are filled five
 * times over: 10 and 5 channels. An allreduce of 2111 floats and a broadcast then run with every
 * allreduce item on a block of its own (26). */
Test(rt_shim, dgx1v_channels, .timeout = 120)
{
    blinkComm_t comms[8];
    struct blinkrt_stats one, st;
    unsetenv("BLINK_CHUNK_BYTES"); /* slot sizes at the plan's own chunks */
    setenv("BK_SHIM_MAX_BLOCKS", "128", 1);
    setenv("BK_SHIM_THREADS", "2", 1);
    setenv("BLINK_NCHANNELS", "1", 1); /* the layout before channels */
    cr_assert_eq(e2e_init_dgx1v(comms, 8, NULL), blinkSuccess, "%s", blinkGetLastError(NULL));
    unsetenv("BLINK_NCHANNELS");
    cr_assert_eq(blinkrtCommStats(comms[0], &one), blinkSuccess);
    cr_expect_eq(set_of(comms[0], BLINK_PLAN_ALLREDUCE, -1, 0)->ntrees, 12);
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    cr_assert_eq(e2e_init_dgx1v(comms, 8, NULL), blinkSuccess, "%s", blinkGetLastError(NULL));
    cr_assert_eq(blinkrtCommStats(comms[0], &st), blinkSuccess);
    printf("dgx1v rank 0: slot %zu bytes, staging %zu with one channel a tree; slot %zu, "
           "staging %zu with channels\n", one.slot_bytes, one.staging_bytes, st.slot_bytes,
           st.staging_bytes);
    for (int v = 0; v < 8; v++) {
        const struct bk_roleset *ar = set_of(comms[v], BLINK_PLAN_ALLREDUCE, -1, 0);
        cr_assert_eq(ar->ntrees, 13);
        cr_expect_eq(ar->plan_trees, 12);
        cr_expect_eq(ar->tree_of[0], 0);
        cr_expect_eq(ar->tree_of[1], 0);
        cr_expect_eq(ar->tree_of[2], 1);
        cr_expect_eq(ar->tree_of[12], 11);
        /* Tree 0's channels split its share in two (lcm 2: weights doubled). */
        cr_expect_eq(ar->roles[0].lo_w, 0);
        cr_expect_eq(ar->roles[0].hi_w, 250000);
        cr_expect_eq(ar->roles[1].lo_w, 250000);
        cr_expect_eq(ar->roles[1].hi_w, 500000);
        cr_expect_eq(ar->roles[2].lo_w, 500000);
        cr_expect_eq(ar->roles[12].hi_w, ar->roles[12].total_w);
        cr_expect_eq(ar->roles[0].parent, ar->roles[1].parent);
        cr_expect_eq(set_of(comms[v], BLINK_PLAN_ALLREDUCE, -1, 1)->ntrees, 16);
        for (int r = 0; r < 8; r++) {
            cr_expect_eq(set_of(comms[v], BLINK_PLAN_BROADCAST, r, 0)->ntrees, 12);
            const struct bk_roleset *br = set_of(comms[v], BLINK_PLAN_BROADCAST, r, 1);
            cr_assert_eq(br->ntrees, 15, "root %d", r);
            cr_expect_eq(br->plan_trees, 2);
            for (int s = 0; s < 15; s++)
                cr_expect_eq(br->tree_of[s], s < 10 ? 0 : 1, "root %d slot %d", r, s);
        }
        /* lcm(10, 5) = 10: chain 0's ten channels keep its weight each, chain 1's five take
         * twice its. */
        const struct bk_roleset *br = set_of(comms[v], BLINK_PLAN_BROADCAST, 0, 1);
        cr_expect_eq(br->roles[0].lo_w, 0);
        cr_expect_eq(br->roles[0].hi_w, 218750);
        cr_expect_eq(br->roles[9].hi_w, 2187500);
        cr_expect_eq(br->roles[10].lo_w, 2187500);
        cr_expect_eq(br->roles[10].hi_w, 2562500);
        cr_expect_eq(br->roles[14].hi_w, 4062500);
        cr_expect_eq(br->roles[14].total_w, 4062500);
        cr_expect_eq(set_of(comms[v], BLINK_PLAN_ALLGATHER, -1, 0)->ntrees, 27);
        cr_expect_eq(set_of(comms[v], BLINK_PLAN_ALLGATHER, -1, 1)->ntrees, 24);
    }
    /* Blocks: the most of any set's launch, allreduce's 16 ring chains up and down apart. */
    cr_expect_eq(st.threads, 32);
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    /* 2111 floats in 64-byte chunks: 33 units of 256 bytes over 13 channels, 4 chunks a unit
     * (more than the slots); allreduce on 26 blocks, broadcast on 12. */
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    cr_assert_eq(e2e_init_dgx1v(comms, 8, NULL), blinkSuccess, "%s", blinkGetLastError(NULL));
    const struct rt_case cases[] = {
        {BLINK_PLAN_ALLREDUCE, 0, blinkFloat32, blinkSum, 2111, 0, RT_THREADS, 0, 0, 0},
        {BLINK_PLAN_BROADCAST, 3, blinkFloat32, blinkSum, 2111, 1, RT_GROUP, 0, 0, 0},
    };
    for (size_t i = 0; i < N(cases); i++) {
        char why[512] = "";
        cr_assert_eq(rt_run_check(comms, 8, &cases[i], why, sizeof why), 0, "case %zu: %s", i,
                     why);
    }
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    /* The same allreduce in LL: the roots hand their output to their down blocks by the word. */
    setenv("BLINK_PROTO", "ll", 1);
    cr_assert_eq(e2e_init_dgx1v(comms, 8, NULL), blinkSuccess, "%s", blinkGetLastError(NULL));
    unsetenv("BLINK_PROTO");
    char why[512] = "";
    cr_assert_eq(rt_run_check(comms, 8, &cases[0], why, sizeof why), 0, "LL: %s", why);
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
}

static int count_lines(const char *path, const char *kind)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, kind) != NULL;
    if (f)
        fclose(f);
    return f ? n : -1;
}

/* A trace file's header: the records it holds and the events it dropped; 0 when unreadable. */
static int trace_counts(const char *path, unsigned long long *kept, unsigned long long *dropped)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int ok = 0;
    while (f && !ok && fgets(line, sizeof line, f)) {
        const char *r = strstr(line, " records ");
        ok = r && sscanf(r, " records %llu dropped %llu", kept, dropped) == 2;
    }
    if (f)
        fclose(f);
    return ok;
}

/* One traced allreduce of 37 floats on the chain, BLINK_TRACE_RECORDS=records (NULL: the
 * default); each rank's file checked: its header counts the event lines, and kept + dropped
 * into offered[v]. */
static void traced_call(const char *records, unsigned long long *offered)
{
    static const int chain[] = {-1, 0, 1};
    const int *shapes[] = {chain};
    struct rt_plan p;
    blinkComm_t comms[3];
    char dir[] = "/tmp/blink-shim-trace.XXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("BLINK_TRACE", dir, 1);
    if (records)
        setenv("BLINK_TRACE_RECORDS", records, 1);
    init(&p, comms, 3, 1, shapes, (const unsigned[]){1}, (struct shape){"4", "32", "16"});
    unsetenv("BLINK_TRACE");
    unsetenv("BLINK_TRACE_RECORDS");
    struct rt_case c = {BLINK_PLAN_ALLREDUCE, 0, blinkFloat32, blinkSum, 37, 0, RT_THREADS, 0,
                        0, 0};
    char why[512] = "";
    cr_assert_eq(rt_run_check(comms, 3, &c, why, sizeof why), 0, "%s", why);
    fini(&p, comms, 3);
    for (int v = 0; v < 3; v++) {
        char path[256], host[64] = "";
        unsigned long long kept = 0, dropped = 0;
        gethostname(host, sizeof host);
        snprintf(path, sizeof path, "%s/blink-trace.%s.%d.r%d.tsv", dir, host, (int)getpid(), v);
        cr_assert(trace_counts(path, &kept, &dropped), "%s", path);
        cr_expect_eq((int)kept, count_lines(path, "\tallreduce\t"), "%s", path);
        if (!records) {
            cr_expect_eq(count_lines(path, "\tenter\t"), 2, "%s", path);
            cr_expect_eq(count_lines(path, "\texit\t"), 2, "%s", path);
            cr_expect_eq(count_lines(path, "\tup-post\t"), 10, "%s", path);
            cr_expect_eq(count_lines(path, "\tdown-post\t"), 10, "%s", path);
            cr_expect_eq(dropped, 0);
        } else {
            cr_expect_leq(kept, strtoull(records, NULL, 10), "%s", path);
            cr_expect_gt(dropped, 0, "%s", path);
        }
        offered[v] = kept + dropped;
        unlink(path);
    }
    rmdir(dir);
}

/* BLINK_TRACE: the kernel's events. An allreduce of 37 floats in 4-float chunks on a 3-rank
 * chain: every rank's two blocks (the tree's up pass and its down pass, kitems_for) enter and
 * exit once each, and the 10 chunks move up once and down once. With room for 20 records, a
 * rank keeps at most 20 and counts the rest as dropped: as many events in all. */
Test(rt_shim, trace, .timeout = 60)
{
    unsigned long long all[3], few[3];
    traced_call(NULL, all);
    traced_call("20", few);
    for (int v = 0; v < 3; v++)
        cr_expect_eq(few[v], all[v], "rank %d: %llu events with room for 20, %llu with room", v,
                     few[v], all[v]);
}

/* ------------------------------------------------------------------ failures */

struct job {
    blinkComm_t comm;
    int coll;
    size_t count;
    float *send, *recv;
    blinkResult_t res;
    char msg[512];
};

static void *job_main(void *arg)
{
    struct job *j = arg;
    j->res = j->coll == BLINK_PLAN_REDUCE
                 ? blinkReduce(j->send, j->recv, j->count, blinkFloat32, blinkSum, 2, j->comm,
                               NULL)
                 : blinkAllReduce(j->send, j->recv, j->count, blinkFloat32, blinkSum, j->comm,
                                  NULL);
    snprintf(j->msg, sizeof j->msg, "%s", j->res ? blinkGetLastError(j->comm) : "");
    return NULL;
}

/* Ranks whose count is non-zero call coll at once; each thread's result in jobs[]. */
static void run_jobs(blinkComm_t *comms, int n, int coll, const size_t *count, struct job *jobs)
{
    pthread_t th[8];
    for (int v = 0; v < n; v++) {
        jobs[v] = (struct job){comms[v], coll, count[v], calloc(64, sizeof(float)),
                               calloc(64, sizeof(float)), blinkSuccess, ""};
        if (count[v])
            pthread_create(&th[v], NULL, job_main, &jobs[v]);
    }
    for (int v = 0; v < n; v++) {
        if (count[v])
            pthread_join(th[v], NULL);
        free(jobs[v].send);
        free(jobs[v].recv);
    }
}

/* Rank 2 calls with another count: ranks 1 and 2 compare descriptions and both fail (the one
 * that finds it, and the other by its abort, with the reason); rank 0 too. */
Test(rt_shim, mismatched_counts, .timeout = 60)
{
    static const int chain[] = {-1, 0, 1};
    const int *shapes[] = {chain};
    struct rt_plan p;
    blinkComm_t comms[3];
    struct job jobs[3];
    init(&p, comms, 3, 1, shapes, (const unsigned[]){1}, (struct shape){"4", "32", "16"});
    run_jobs(comms, 3, BLINK_PLAN_ALLREDUCE, (const size_t[]){8, 8, 9}, jobs);
    for (int v = 0; v < 3; v++)
        cr_expect_neq(jobs[v].res, blinkSuccess, "rank %d succeeded", v);
    for (int v = 1; v < 3; v++)
        cr_expect(strstr(jobs[v].msg, "mismatched collective calls"), "rank %d: %s", v,
                  jobs[v].msg);
    cr_expect(strstr(jobs[1].msg, "count 9") || strstr(jobs[2].msg, "count 9"), "%s | %s",
              jobs[1].msg, jobs[2].msg);
    fini(&p, comms, 3);
}

/* A reduce to rank 2, which never calls: rank 0 (a leaf with two chunks) finishes, rank 1 waits
 * for its parent and times out naming it. */
Test(rt_shim, missing_rank_times_out, .timeout = 60)
{
    static const int chain[] = {-1, 0, 1};
    const int *shapes[] = {chain};
    struct rt_plan p;
    blinkComm_t comms[3];
    struct job jobs[3];
    /* 1.5 s and one block of 8 threads: rank 0's threads must have entered before rank 1 gives
     * up, also on two cores shared with other tests (0.3 s and 4 x 32 threads a rank were not
     * enough there: rank 1 named rank 0). */
    setenv("BLINK_TIMEOUT_S", "1.5", 1);
    init(&p, comms, 3, 1, shapes, (const unsigned[]){1}, (struct shape){"1", "8", "16"});
    unsetenv("BLINK_TIMEOUT_S");
    run_jobs(comms, 3, BLINK_PLAN_REDUCE, (const size_t[]){8, 8, 0}, jobs);
    cr_expect_eq(jobs[1].res, blinkSystemError, "%s", jobs[1].msg);
    cr_expect(strstr(jobs[1].msg, "no progress for 1.5 s in reduce"), "%s", jobs[1].msg);
    cr_expect(strstr(jobs[1].msg, "waiting for rank 2 (device 2)"), "%s", jobs[1].msg);
    /* The failure is sticky: the next call fails at once with the reason. */
    run_jobs(comms, 3, BLINK_PLAN_ALLREDUCE, (const size_t[]){0, 8, 0}, jobs);
    cr_expect_neq(jobs[1].res, blinkSuccess);
    cr_expect(strstr(jobs[1].msg, "waiting for rank 2"), "%s", jobs[1].msg);
    fini(&p, comms, 3);
}

/* ------------------------------------------------------------------ direct */

/* Broadcast, allgather and allreduce (odd counts, in place and out, every root) on two 4-rank
 * trees, one block each: with the default the kernel goes down straight into the children's
 * outputs and no down slot of any rank changes; with BLINK_DIRECT=0 the same calls go through
 * the down slots (so the count can fail), and both match the reference. */
static void direct_sweep(int direct)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *shapes[] = {a, b};
    static const int colls[] = {BLINK_PLAN_BROADCAST, BLINK_PLAN_ALLGATHER, BLINK_PLAN_ALLREDUCE};
    setenv("BLINK_DIRECT", direct ? "1" : "0", 1);
    setenv("BLINK_ALGO", "trees", 1);
    struct rt_plan p;
    blinkComm_t comms[4];
    init(&p, comms, 4, 2, shapes, (const unsigned[]){3, 1}, (struct shape){"2", "16", "16"});
    for (size_t i = 0; i < N(colls); i++)
        for (int v = 0; v < 8; v++) {
            struct rt_case c = {colls[i], v % 4, v & 4 ? blinkInt8 : blinkFloat32, blinkSum,
                                v & 2 ? 211 : 37, v & 1, RT_THREADS, 0, 0, 0};
            char why[512] = "";
            long w = rt_down_slot_writes(comms, 4, &c, why, sizeof why);
            cr_assert_geq(w, 0, "coll %d case %d: %s", c.coll, v, why);
            if (direct)
                cr_expect_eq(w, 0, "coll %d case %d: %ld down-slot bytes written", c.coll, v, w);
            else
                cr_expect_gt(w, 0, "coll %d case %d: no down slot written", c.coll, v);
        }
    fini(&p, comms, 4);
    unsetenv("BLINK_DIRECT");
    unsetenv("BLINK_ALGO");
}

Test(rt_shim, direct_no_down_slots, .timeout = 120) { direct_sweep(1); }
Test(rt_shim, staged_down_slots, .timeout = 120) { direct_sweep(0); }

/* The whole sweep of two trees on two blocks with the staging (BLINK_DIRECT=0). */
Test(rt_shim, staged_two_trees_two_blocks, .timeout = 120)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
    const int *shapes[] = {a, b};
    setenv("BLINK_DIRECT", "0", 1);
    sweep(4, 2, shapes, (const unsigned[]){3, 1}, (struct shape){"2", "16", "16"}, -1, counts,
          N(counts));
    unsetenv("BLINK_DIRECT");
}

/* ------------------------------------------------------------------ host-staged edges */

blinkResult_t e2e_init_rtx4090x8(blinkComm_t *comms, int ndev, const int *devlist);

/* Every collective on comms[8] (64-byte chunks, so many chunks cross every edge). */
static void every_collective(blinkComm_t *comms, const char *what)
{
    const struct rt_case cases[] = {
        {BLINK_PLAN_ALLREDUCE, 0, blinkFloat32, blinkSum, 2111, 0, RT_THREADS, 0, 0, 0},
        {BLINK_PLAN_BROADCAST, 3, blinkBfloat16, blinkSum, 377, 1, RT_GROUP, 0, 0, 0},
        {BLINK_PLAN_REDUCE, 5, blinkFloat16, blinkAvg, 377, 0, RT_THREADS, 1, 0, 0},
        {BLINK_PLAN_ALLGATHER, 0, blinkInt32, blinkSum, 97, 1, RT_THREADS, 0, 0, 0},
        {BLINK_PLAN_REDUCESCATTER, 0, blinkInt8, blinkMax, 97, 0, RT_GROUP, 0, 0, 0},
    };
    run_cases(comms, cases, N(cases), what);
}

/* The kernel's hybrid (BLINK_HOST_STAGED=1): the DGX-1V plan's PCIe trees keep their flags and
 * slots in each rank's second segment (the shim's stand-in for pinned host memory), writer and
 * reader alike, or the calls would wait for flags that never come; the trees keep theirs in the
 * segment. After an allreduce the host segments hold flags, and only from the hybrid set. */
Test(rt_shim, host_staged_hybrid, .timeout = 240)
{
    blinkComm_t comms[8];
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    setenv("BK_SHIM_MAX_BLOCKS", "8", 1);
    setenv("BK_SHIM_THREADS", "8", 1);
    setenv("BLINK_HOST_STAGED", "1", 1);
    setenv("BLINK_ALGO", "hybrid", 1);
    cr_assert_eq(e2e_init_dgx1v(comms, 8, NULL), blinkSuccess, "%s", blinkGetLastError(NULL));
    const struct bk_roleset *hy = set_of(comms[0], BLINK_PLAN_ALLREDUCE, -1, BK_SET_HYBRID);
    cr_assert_gt(hy->ntrees, 0);
    cr_assert_lt(hy->staged_from, hy->plan_trees, "the hybrid has PCIe trees");
    every_collective(comms, "hybrid");
    long words = 0;
    for (int v = 0; v < 8; v++) {
        blinkComm_t m = comms[v];
        size_t room = (m->layout.seg_bytes[m->prank] + 4095) / 4096 * 4096;
        const uint64_t *h = (const uint64_t *)(m->peer[m->prank].seg + room);
        for (size_t o = m->layout.flags_off[m->prank]; o < m->layout.ll_off[m->prank]; o += 8)
            words += h[o / 8] != 0;
    }
    cr_expect_gt(words, 0, "no flag reached the host segments");
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    unsetenv("BLINK_ALGO");
    unsetenv("BLINK_HOST_STAGED");
}

/* GPUs without peer access (the 8 x RTX 4090 plan): with BLINK_HOST_STAGED=1 every edge is
 * host-staged, the whole segment in host memory; without it the kernel's backend cannot run
 * the plan, and the shim, like the CUDA backend, still runs it as direct edges here. */
Test(rt_shim, host_staged_no_peer_access, .timeout = 240)
{
    blinkComm_t comms[8];
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    setenv("BK_SHIM_MAX_BLOCKS", "8", 1);
    setenv("BK_SHIM_THREADS", "8", 1);
    setenv("BLINK_HOST_STAGED", "1", 1);
    cr_assert_eq(e2e_init_rtx4090x8(comms, 8, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    cr_assert_eq(set_of(comms[0], BLINK_PLAN_ALLREDUCE, -1, BK_SET_TREES)->staged_from, 0);
    every_collective(comms, "no peer access");
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    unsetenv("BLINK_HOST_STAGED");
}
