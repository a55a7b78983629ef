/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_wrap.c - the 32-bit call numbers wrap safely (proto.h, Calls and Wrap): the numbering
 * rule (never 0; which calls clean), the description hash (descriptions one field apart never
 * share one), a run of mixed collectives and roots across the wrap (BLINK_DEBUG_SEQ_START)
 * checked against rt_testutil's reference, and flag words that an earlier epoch left holding the
 * very call's number (planted here), which the clean must remove before the call runs.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "rt_testutil.h"

Test(rt_wrap, numbering_rule)
{
    uint32_t s = 0xfffffff0u;
    int wraps = 0, cleans = 0;
    for (int i = 0; i < 64; i++) {
        uint32_t n = bk_seq_next(s);
        cr_assert_neq(n, 0u, "after %u", s);
        if (n < s) {
            wraps++;
            cr_expect_eq(n, 1u, "the call after %u", s);
        } else {
            cr_expect_eq(n, s + 1);
        }
        cleans += bk_seq_cleans(n);
        s = n;
    }
    cr_expect_eq(wraps, 1);
    cr_expect_eq(cleans, 1, "only the wrap's call cleans near the wrap");
    cr_expect_eq(bk_seq_next(0), 1u);
    cr_expect(bk_seq_cleans(1) && bk_seq_cleans(0x80000001u));
    cr_expect(!bk_seq_cleans(0x80000000u) && !bk_seq_cleans(0x80000002u) && !bk_seq_cleans(2) &&
              !bk_seq_cleans(0xffffffffu));
    /* An entered word is never 0 (a fresh header) and gives back its call. */
    cr_expect_neq(bk_entry(1, 0), 0u);
    cr_expect_eq(bk_entry_seq(bk_entry(0xfffffffau, 0xdeadbeefu)), 0xfffffffau);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Descriptions one field apart (values below 2^32) never hash alike; seq is not hashed. */
Test(rt_wrap, hash_separates_one_field)
{
    enum { N = 4096 };
    static uint32_t h[N];
    const uint64_t base[BK_DESC_WORDS] = {7, BLINK_PLAN_ALLREDUCE, (uint64_t)-1, blinkFloat32,
                                          blinkSum, 1000, 0, 65536};
    uint64_t d[BK_DESC_WORDS];
    for (int f = 1; f < BK_DESC_WORDS; f++) {
        for (uint32_t v = 0; v < N; v++) {
            memcpy(d, base, sizeof d);
            d[f] = f == 2 ? (uint64_t)v - 1 : (f == 5 || f == 7 ? (uint64_t)v * 977 : v);
            h[v] = bk_desc_hash(d);
        }
        qsort(h, N, sizeof h[0], cmp_u32);
        for (int i = 1; i < N; i++)
            cr_assert_neq(h[i], h[i - 1], "field %d: two values share hash %08x", f, h[i]);
    }
    memcpy(d, base, sizeof d);
    d[0] = 123456;
    cr_expect_eq(bk_desc_hash(d), bk_desc_hash(base));
}

static const int bin[] = {-1, 0, 0, 1, 1, 2, 2, 3};
static const int chain[] = {3, 6, 7, -1, 5, 2, 0, 1}; /* 3 0 6 1 7 2 5 4 */

static void init8(struct rt_plan *p, blinkComm_t *c, const char *start)
{
    static const int *const shapes[] = {bin, chain};
    setenv("BLINK_DEBUG_SEQ_START", start, 1);
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    setenv("BLINK_TIMEOUT_S", "60", 1);
    rt_plan_build(p, 8, 2, shapes, (const unsigned[]){2, 1}, 64);
    cr_assert_eq(blinkrtCommInitAll(&p->plan, c, 8, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    unsetenv("BLINK_DEBUG_SEQ_START");
}

static void done8(struct rt_plan *p, blinkComm_t *c)
{
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    rt_plan_free(p);
    unsetenv("BLINK_CHUNK_BYTES");
    unsetenv("BLINK_TIMEOUT_S");
}

/* The i-th call of a mixed run: every collective, roots all over, several types and sizes. */
static struct rt_case mixed(int i)
{
    static const blinkDataType_t dts[] = {blinkFloat32, blinkInt32, blinkInt64, blinkFloat64};
    static const blinkRedOp_t ops[] = {blinkSum, blinkMax, blinkMin};
    return (struct rt_case){i % BLINK_PLAN_COLLS, (i * 3) % 8, dts[i % 4], ops[i % 3],
                            (size_t)(1 + (i * 397) % 1500), i % 2, i % 3 ? RT_THREADS : RT_GROUP,
                            i % 4 == 1};
}

/* 24 calls from 0xfffffffa: six before the wrap, the wrap's call 1, then 2 .. 18. */
Test(rt_wrap, mixed_run_across_the_wrap, .timeout = 120)
{
    struct rt_plan p;
    blinkComm_t c[8];
    init8(&p, c, "4294967290");
    cr_expect_eq(c[0]->seq, 0xfffffff9u, "the call before the first");
    char why[512];
    for (int i = 0; i < 24; i++) {
        struct rt_case k = mixed(i);
        why[0] = '\0';
        cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "call %d (coll %d root %d): %s",
                     i, k.coll, k.root, why);
    }
    for (int v = 0; v < 8; v++) {
        const struct bk_seg_header *h = (const void *)c[v]->peer[c[v]->prank].seg;
        cr_expect_eq(c[v]->seq, 18u, "rank %d numbered its last call %u", v, c[v]->seq);
        cr_expect_eq(bk_entry_seq(h->entered), 18u);
    }
    done8(&p, c);
}

/* Every flag word of every rank set to tag(seq, all chunks), as an epoch 2^32 calls ago could
 * have left a word that no call rewrote since: without the clean the call would take the data
 * and credits for granted. */
static void plant(blinkComm_t *c, uint32_t seq)
{
    for (int v = 0; v < 8; v++) {
        int me = c[v]->prank;
        uint64_t *f = (uint64_t *)(c[v]->peer[me].seg + c[v]->layout.flags_off[me]);
        size_t n = (c[v]->layout.slots_off[me] - c[v]->layout.flags_off[me]) / 8;
        for (size_t i = 0; i < n; i++)
            __atomic_store_n(&f[i], bk_tag(seq, 0xffffffffu), __ATOMIC_RELAXED);
    }
}

Test(rt_wrap, stale_words_are_cleaned, .timeout = 120)
{
    struct rt_plan p;
    blinkComm_t c[8];
    char why[512] = "";
    /* At the wrap: call 0xffffffff, then the planted words of call 1. */
    init8(&p, c, "4294967295");
    struct rt_case k = mixed(5);
    cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "%s", why);
    plant(c, 1);
    k = mixed(2); /* an allreduce of int64 over both trees, 40 chunks or more each */
    k.count = 1000;
    cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "%s", why);
    cr_expect_eq(c[0]->seq, 1u, "the call after the wrap ran");
    done8(&p, c);
    /* Half an epoch on: the planted words of call 2^31 + 1, the first call. */
    init8(&p, c, "2147483649");
    plant(c, 0x80000001u);
    k = mixed(2);
    k.count = 1000;
    cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "%s", why);
    cr_expect_eq(c[0]->seq, 0x80000001u);
    done8(&p, c);
}

/* BLINK_DEBUG_SEQ_START: 0 reads as 1; a value that is no call number fails init, naming it. */
Test(rt_wrap, seq_start_values)
{
    struct rt_plan p;
    blinkComm_t c[8];
    init8(&p, c, "0");
    cr_expect_eq(c[0]->seq, 0u, "the first call is 1");
    done8(&p, c);
    static const int *const shapes[] = {bin};
    rt_plan_build(&p, 8, 1, shapes, (const unsigned[]){1}, 64);
    setenv("BLINK_DEBUG_SEQ_START", "4294967296", 1);
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 8, NULL), blinkInvalidArgument);
    cr_expect(strstr(blinkGetLastError(NULL), "BLINK_DEBUG_SEQ_START") != NULL, "%s",
              blinkGetLastError(NULL));
    setenv("BLINK_CHECK_CALLS", "yes", 1);
    unsetenv("BLINK_DEBUG_SEQ_START");
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 8, NULL), blinkInvalidArgument);
    cr_expect(strstr(blinkGetLastError(NULL), "BLINK_CHECK_CALLS") != NULL, "%s",
              blinkGetLastError(NULL));
    unsetenv("BLINK_CHECK_CALLS");
    rt_plan_free(&p);
}
