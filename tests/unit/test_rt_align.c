/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_align.c - aligned tree ranges. The split both backends use (proto.h's bk_split_at)
 * against its contract, computed here from the weights alone: ranges contiguous over [0, count),
 * every interior boundary on a 256-byte unit, every boundary within half a unit (a unit where it
 * had to round down before count) of the exact weighted one; counts 0, tiny, around the units
 * and up to 2^27 floats and beyond 2^32, element sizes 1/2/4/8, the DGX-1V allreduce weights,
 * equal weights, one tree and weights near 2^40. Then every collective through the host backend
 * against rt_testutil's reference at counts around the units, with 256- and 512-byte chunks, in
 * place and out of place, with user buffers 16-byte aligned, one element off and (int8) 4 bytes
 * off, and out of place with send and recv off by different amounts.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto.h"
#include "rt_testutil.h"

/* DGX-1V allreduce's 12 trees: 29.2 / 16.7 / 12.5 / 8.3 / 8 x 4.2 %, in tenths. */
static const uint64_t dgx_w[] = {292, 167, 125, 83, 42, 42, 42, 42, 42, 42, 42, 42};
static const uint64_t equal_w[] = {1, 1, 1, 1, 1, 1, 1, 1};
static const uint64_t one_w[] = {5};
static const uint64_t huge_w[] = {(uint64_t)3 << 40, ((uint64_t)1 << 40) + 7, 1};

/* Check every tree's range of n elements of es bytes under weights w[nt]; 0 or 1 with why. */
static int check_split(size_t n, size_t es, const uint64_t *w, int nt, char *why, size_t len)
{
    uint64_t total = 0;
    for (int i = 0; i < nt; i++)
        total += w[i];
    size_t u = 256 / es, prev = 0;
    uint64_t pre = 0;
    for (int i = 0; i < nt; i++) {
        size_t lo = bk_split_at(n, es, pre, total);
        pre += w[i];
        size_t hi = bk_split_at(n, es, pre, total);
        if (lo != prev || hi < lo || hi > n) {
            snprintf(why, len, "tree %d: [%zu, %zu) after %zu of %zu", i, lo, hi, prev, n);
            return 1;
        }
        prev = hi;
        if (i == nt - 1)
            break;
        if (hi % u != 0 && hi != n) {
            snprintf(why, len, "boundary %zu after tree %d is not on a %zu-element unit", hi,
                     i, u);
            return 1;
        }
        /* The exact boundary n * pre / total, as a fraction: |hi - exact| * total. */
        unsigned __int128 exact = (unsigned __int128)n * pre, got = (unsigned __int128)hi * total;
        unsigned __int128 off = got > exact ? got - exact : exact - got;
        unsigned __int128 room = hi + u > n ? (unsigned __int128)(u + 1) * total
                                            : (unsigned __int128)(u / 2 + 1) * total;
        if (off > room) {
            snprintf(why, len, "boundary %zu after tree %d is %.1f elements off the weighted "
                     "one", hi, i, (double)off / (double)total);
            return 1;
        }
    }
    if (prev != n) {
        snprintf(why, len, "the last tree ends at %zu, not %zu", prev, n);
        return 1;
    }
    return 0;
}

static void sweep_split(const uint64_t *w, int nt)
{
    static const size_t es_all[] = {1, 2, 4, 8};
    static const size_t fixed[] = {0, 1, 2, 3, 7, 31, 1000, 4097, 65537, 1000003,
                                   (size_t)1 << 27, ((size_t)1 << 27) + 3, (size_t)3 << 30,
                                   ((size_t)1 << 33) + 12345};
    char why[256] = "";
    for (int e = 0; e < 4; e++) {
        size_t es = es_all[e], u = 256 / es;
        for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
            cr_assert_eq(check_split(fixed[k], es, w, nt, why, sizeof why), 0,
                         "count %zu es %zu trees %d: %s", fixed[k], es, nt, why);
        /* Around every unit up to 40 units, and around 2^27 floats' worth. */
        for (size_t m = 0; m <= 40; m++)
            for (size_t d = 0; d < 3; d++) {
                size_t n = m * u + d - (m ? 1 : 0);
                cr_assert_eq(check_split(n, es, w, nt, why, sizeof why), 0,
                             "count %zu es %zu trees %d: %s", n, es, nt, why);
                n = ((size_t)1 << 29) / es + m * u + d - 1;
                cr_assert_eq(check_split(n, es, w, nt, why, sizeof why), 0,
                             "count %zu es %zu trees %d: %s", n, es, nt, why);
            }
    }
}

Test(rt_align, split_dgx1v_weights) { sweep_split(dgx_w, 12); }
Test(rt_align, split_equal_weights) { sweep_split(equal_w, 8); }
Test(rt_align, split_one_tree) { sweep_split(one_w, 1); }
Test(rt_align, split_huge_weights) { sweep_split(huge_w, 3); }

/* The old element-granular cut put DGX-1V's tree 2 of 2^24 floats at 4 bytes past a 16-byte
 * unit (executor-review.md, 64 MiB); here every tree of 64 and 128 MiB starts on 256 bytes. */
Test(rt_align, split_large_floats_on_units)
{
    for (size_t n = (size_t)1 << 23; n <= (size_t)1 << 25; n <<= 1) {
        uint64_t pre = 0;
        for (int i = 0; i < 12; i++) {
            size_t lo = bk_split_at(n, 4, pre, 1003);
            cr_assert_eq(lo * 4 % 256, 0, "count %zu tree %d starts at %zu", n, i, lo);
            pre += dgx_w[i];
        }
    }
}

/* Small counts leave trees empty: still every element in exactly one tree. */
Test(rt_align, split_small_counts_empty_trees)
{
    uint64_t pre = 0;
    int empty = 0;
    for (int i = 0; i < 12; i++) {
        size_t lo = bk_split_at(100, 4, pre, 1003);
        pre += dgx_w[i];
        empty += bk_split_at(100, 4, pre, 1003) == lo;
    }
    /* 100 floats: trees 1 and 11 take [0, 64) and [64, 100). */
    cr_assert_eq(empty, 10, "100 floats over 12 trees: %d trees empty, not 10", empty);
    cr_assert_eq(bk_split_at(100, 4, 1003, 1003), 100);
    cr_assert_eq(bk_split_at(0, 4, 500, 1003), 0);
}

/* ------------------------------------------------------------------ through the host backend */

static const blinkDataType_t types[] = {blinkInt8, blinkFloat16, blinkFloat32, blinkFloat64};

static void run_aligned(int n, int ntrees, const int *const *shapes, const unsigned *weights,
                        const char *chunk)
{
    struct rt_plan p;
    blinkComm_t comms[8];
    setenv("BLINK_CHUNK_BYTES", chunk, 1);
    rt_plan_build(&p, n, ntrees, shapes, weights, 1 << 20);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, comms, n, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    unsigned variant = 0;
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++)
        for (int ti = 0; ti < 4; ti++) {
            blinkDataType_t dt = types[ti];
            size_t es = rt_size(dt), u = 256 / es;
            size_t counts[] = {1, u - 1, u, u + 1, 3 * u + 5, 40 * u + 3};
            /* Offsets: none, one element, 4 bytes (int8), send and recv apart. */
            size_t skews[][2] = {{0, 0}, {es, es}, {4, 4}, {es, 3 * es}};
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
                for (int sk = 0; sk < 4; sk++) {
                    if (sk == 2 && es != 1)
                        continue;
                    for (int inplace = 0; inplace < 2; inplace++) {
                        int has_op = coll != BLINK_PLAN_BROADCAST && coll != BLINK_PLAN_ALLGATHER;
                        blinkRedOp_t op = has_op ? (blinkRedOp_t)(variant % blinkNumOps)
                                                 : blinkSum;
                        struct rt_case c = {coll, (int)(variant % (unsigned)n), dt, op,
                                            counts[k], inplace,
                                            (variant >> 1) & 1 ? RT_GROUP : RT_THREADS,
                                            (int)((variant >> 2) & 1), skews[sk][0],
                                            skews[sk][1]};
                        char why[512] = "";
                        variant++;
                        cr_assert_eq(rt_run_check(comms, n, &c, why, sizeof why), 0,
                                     "coll %d dt %d op %d count %zu skew %zu/%zu inplace %d "
                                     "chunk %s: %s", coll, (int)dt, (int)op, c.count, c.skew,
                                     c.send_skew, inplace, chunk, why);
                    }
                }
        }
    for (int v = 0; v < n; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    rt_plan_free(&p);
    unsetenv("BLINK_CHUNK_BYTES");
}

/* 8 ranks, 12 trees weighted as DGX-1V's allreduce: a binary tree, chains and stars. */
Test(rt_align, dgx_weights_8_ranks, .timeout = 240)
{
    static const int bin[] = {-1, 0, 0, 1, 1, 2, 2, 3}, chain[] = {-1, 0, 1, 2, 3, 4, 5, 6},
                     rchain[] = {1, 2, 3, 4, 5, 6, 7, -1}, star[] = {-1, 0, 0, 0, 0, 0, 0, 0},
                     mid[] = {4, 0, 1, 2, -1, 4, 5, 6};
    const int *shapes[] = {bin, chain, rchain, star, mid, bin, chain, star, rchain, mid, bin,
                           chain};
    static const unsigned w[] = {292, 167, 125, 83, 42, 42, 42, 42, 42, 42, 42, 42};
    run_aligned(8, 12, shapes, w, "300"); /* 256-byte chunks: one unit each */
}

/* 4 ranks, 3 trees 5:3:1, 512-byte chunks (BLINK_CHUNK_BYTES=600 cut to whole units). */
Test(rt_align, three_trees_4_ranks, .timeout = 240)
{
    static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2}, s[] = {3, 3, 3, -1};
    const int *shapes[] = {a, b, s};
    run_aligned(4, 3, shapes, (const unsigned[]){5, 3, 1}, "600");
}
