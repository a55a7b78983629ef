/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_fail.c - an injected failure of a chunk write (BLINK_HOST_FAIL_COPY) in the host
 * backend comes back as an error on every rank, with a message, in both styles and with NULL or
 * user streams, and nothing hangs: the test's own timeout would catch it, and BLINK_TIMEOUT_S
 * is set above it so that the failure must propagate rather than time out. A rank that never
 * calls makes the others fail within BLINK_TIMEOUT_S.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    setenv("BLINK_TIMEOUT_S", "60", 1);
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

/* A rank that never calls: the others' calls fail within BLINK_TIMEOUT_S with a message
 * naming the variable, instead of hanging (allreduce, so every rank depends on the absent
 * one), and the absent rank's own later call fails at once: the communicator was aborted. */
struct absent { blinkComm_t comm; float *buf; blinkResult_t res; char msg[512]; };

static void *absent_main(void *arg)
{
    struct absent *a = arg;
    a->res = blinkAllReduce(a->buf, a->buf, 1000, blinkFloat32, blinkSum, a->comm, NULL);
    snprintf(a->msg, sizeof a->msg, "%s", blinkGetLastError(a->comm));
    return NULL;
}

Test(rt_fail, timeout_when_a_rank_never_calls, .timeout = 60)
{
    static const int chain[] = {-1, 0, 1, 2};
    static const int *const one[] = {chain};
    static float bufs[4][1000];
    struct rt_plan p;
    blinkComm_t c[4];
    struct absent a[3];
    pthread_t th[3];
    unsetenv("BLINK_HOST_FAIL_COPY");
    setenv("BLINK_TIMEOUT_S", "0.5", 1);
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    rt_plan_build(&p, 4, 1, one, (const unsigned[]){1}, 64);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int v = 0; v < 3; v++) {
        a[v] = (struct absent){c[v], bufs[v], blinkSuccess, ""};
        pthread_create(&th[v], NULL, absent_main, &a[v]);
    }
    int named = 0;
    for (int v = 0; v < 3; v++) {
        pthread_join(th[v], NULL);
        cr_expect_neq(a[v].res, blinkSuccess, "rank %d finished without rank 3", v);
        named += strstr(a[v].msg, "BLINK_TIMEOUT_S") != NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    cr_expect_eq(named, 3, "every rank says why: '%s'", a[0].msg);
    cr_expect(s < 10, "the ranks gave up after %.1f s", s);
    cr_expect_neq(blinkAllReduce(bufs[3], bufs[3], 1000, blinkFloat32, blinkSum, c[3], NULL),
                  blinkSuccess);
    for (int v = 0; v < 4; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    rt_plan_free(&p);
    unsetenv("BLINK_TIMEOUT_S");
    unsetenv("BLINK_CHUNK_BYTES");
}
