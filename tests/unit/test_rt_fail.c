/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_fail.c - an injected copy failure (BLINK_HOST_FAIL_COPY) in the host backend comes
 * back as an error on every rank, with a message, in both styles and with NULL or user streams,
 * and nothing hangs: the test's own timeout would catch it, and BLINK_HOST_TIMEOUT_MS is set
 * above it so that the failure must propagate rather than time out.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_testutil.h"

static const int bin[] = {-1, 0, 0, 1, 1, 2, 2, 3};
static const int *const shapes[] = {bin};

static void fail_case(int coll, int nth, enum rt_style style, int streams)
{
    struct rt_plan p;
    blinkComm_t c[8];
    char env[32];
    snprintf(env, sizeof env, "%d", nth);
    setenv("BLINK_HOST_FAIL_COPY", env, 1);
    setenv("BLINK_HOST_TIMEOUT_MS", "60000", 1);
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    rt_plan_build(&p, 8, 1, shapes, (const unsigned[]){1}, 64);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 8, NULL), blinkSuccess);
    blinkResult_t res[8];
    char msgs[8][512];
    struct rt_case k = {coll, 5, blinkFloat32, blinkSum, 1000, 0, style, streams};
    rt_run(c, 8, &k, res, msgs);
    for (int v = 0; v < 8; v++) {
        cr_expect(res[v] == blinkSystemError || res[v] == blinkRemoteError,
                  "coll %d copy %d rank %d: result %d", coll, nth, v, res[v]);
        cr_expect(strstr(msgs[v], "BLINK_HOST_FAIL_COPY") != NULL, "rank %d: '%s'", v, msgs[v]);
    }
    /* Later calls on the failed communicators fail too (sticky), and still do not hang. */
    rt_run(c, 8, &k, res, NULL);
    for (int v = 0; v < 8; v++)
        cr_expect_neq(res[v], blinkSuccess);
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    rt_plan_free(&p);
    unsetenv("BLINK_HOST_FAIL_COPY");
}

Test(rt_fail, allreduce_threads_null_streams, .timeout = 20)
{
    fail_case(BLINK_PLAN_ALLREDUCE, 1, RT_THREADS, 0);
    fail_case(BLINK_PLAN_ALLREDUCE, 37, RT_THREADS, 0);
}

Test(rt_fail, every_collective_user_streams, .timeout = 20)
{
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++)
        fail_case(coll, 5 + coll, RT_THREADS, 1);
}

Test(rt_fail, group_style, .timeout = 20)
{
    fail_case(BLINK_PLAN_REDUCESCATTER, 3, RT_GROUP, 0);
    fail_case(BLINK_PLAN_BROADCAST, 2, RT_GROUP, 1);
}

/* A fresh set of communicators works again once the injection is off. */
Test(rt_fail, recovers_after_destroy, .timeout = 20)
{
    struct rt_plan p;
    blinkComm_t c[8];
    fail_case(BLINK_PLAN_ALLGATHER, 4, RT_THREADS, 0);
    rt_plan_build(&p, 8, 1, shapes, (const unsigned[]){1}, 64);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 8, NULL), blinkSuccess);
    char why[512] = "";
    struct rt_case k = {BLINK_PLAN_ALLGATHER, -1, blinkInt64, blinkSum, 100, 0, RT_THREADS, 0};
    cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "%s", why);
    for (int v = 0; v < 8; v++)
        blinkCommDestroy(c[v]);
    rt_plan_free(&p);
}

/* The watchdog: a wait longer than BLINK_HOST_TIMEOUT_MS becomes an error naming the variable,
 * not a hang. One 64 MiB chunk down a chain: the leaf waits for two 64 MiB copies, far more
 * than 1 ms at any memory speed. */
Test(rt_fail, watchdog_turns_a_long_wait_into_an_error, .timeout = 60)
{
    static const int chain[] = {-1, 0, 1, 2};
    static const int *const one[] = {chain};
    const size_t count = 16u << 20; /* floats: 64 MiB */
    struct rt_plan p;
    blinkComm_t c[4];
    unsetenv("BLINK_HOST_FAIL_COPY");
    setenv("BLINK_HOST_TIMEOUT_MS", "1", 1);
    setenv("BLINK_CHUNK_BYTES", "67108864", 1);
    rt_plan_build(&p, 4, 1, one, (const unsigned[]){1}, 64u << 20);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess);
    blinkResult_t res[4];
    char msgs[4][512];
    struct rt_case k = {BLINK_PLAN_BROADCAST, 0, blinkFloat32, blinkSum, count, 0, RT_GROUP, 0};
    rt_run(c, 4, &k, res, msgs);
    int timed_out = 0;
    for (int v = 0; v < 4; v++) {
        cr_expect_neq(res[v], blinkSuccess, "rank %d finished within 1 ms waits", v);
        timed_out += strstr(msgs[v], "BLINK_HOST_TIMEOUT_MS") != NULL;
    }
    cr_expect(timed_out > 0, "no rank reports the watchdog: '%s'", msgs[3]);
    for (int v = 0; v < 4; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    rt_plan_free(&p);
    unsetenv("BLINK_HOST_TIMEOUT_MS");
    unsetenv("BLINK_CHUNK_BYTES");
}
