/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_fail.c - an injected failure of a chunk write (BLINK_HOST_FAIL_COPY) in the host
 * backend comes back as an error on every rank, with a message, in both styles and with NULL or
 * user streams, and nothing hangs: the test's own timeout would catch it, and BLINK_TIMEOUT_S
 * is set above it so that the failure must propagate rather than time out. A rank that never
 * calls makes the others fail within BLINK_TIMEOUT_S, and says which call that rank is in.
 * Ranks whose calls differ in one field only (root, op, count, chunk: one hash apart, proto.h)
 * all fail, with the ranks' hashes and with BLINK_CHECK_CALLS=1's whole descriptions.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"
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
    /* Staged, where every sender waits for its receivers' credits: a direct sender may finish
     * its part before a child fails (blink(3), BLINK_DIRECT). */
    setenv("BLINK_DIRECT", "0", 1);
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
    unsetenv("BLINK_DIRECT");
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

static void *bcast_main(void *arg)
{
    struct absent *a = arg;
    a->res = blinkBroadcast(a->buf, a->buf, 1000, blinkFloat32, 0, a->comm, NULL);
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

/* The timeout message says where the peer waited for is: a broadcast's root (the first to give
 * up) waits for rank 1, which never called. */
Test(rt_fail, timeout_names_the_peers_call, .timeout = 60)
{
    static const int chain[] = {-1, 0, 1, 2};
    static const int *const one[] = {chain};
    static float bufs[4][1000];
    struct rt_plan p;
    blinkComm_t c[4];
    struct absent a[3];
    pthread_t th[3];
    unsetenv("BLINK_HOST_FAIL_COPY");
    setenv("BLINK_TIMEOUT_S", "5", 1);
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    rt_plan_build(&p, 4, 1, one, (const unsigned[]){1}, 64);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess);
    c[0]->env.timeout_s = 0.3;
    for (int i = 0, v = 0; v < 4; v++)
        if (v != 1) {
            a[i] = (struct absent){c[v], bufs[v], blinkSuccess, ""};
            pthread_create(&th[i], NULL, bcast_main, &a[i]);
            i++;
        }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        cr_expect_neq(a[i].res, blinkSuccess);
    }
    cr_expect(strstr(a[0].msg, "waiting for rank 1 (device 1), which has entered no call yet"),
              "'%s'", a[0].msg);
    for (int v = 0; v < 4; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    rt_plan_free(&p);
    unsetenv("BLINK_TIMEOUT_S");
}

/* One field apart: rank 2 of 4 (a chain, so ranks 1 and 3 meet it and 0 does not) calls with
 * another root, op, count or chunk; every rank's call fails as mismatched, and the
 * communicators stay aborted. Reduce and allreduce, for every rank's call waits on all the
 * others there (a broadcast's root may finish before the mismatch is seen: its next call fails). */
struct one_off {
    blinkComm_t comm;
    struct rt_case k;
    int buf[64];
    blinkResult_t res;
    char msg[512];
};

static void *one_off_main(void *arg)
{
    struct one_off *o = arg;
    o->res = rt_call(&o->k, o->buf, o->buf, o->comm, NULL);
    snprintf(o->msg, sizeof o->msg, "%s", blinkGetLastError(o->comm));
    return NULL;
}

static void one_field_apart(int field, int check_calls)
{
    static const int chain[] = {-1, 0, 1, 2};
    static const int *const one[] = {chain};
    static struct one_off o[4];
    struct rt_plan p;
    blinkComm_t c[4];
    pthread_t th[4];
    unsetenv("BLINK_HOST_FAIL_COPY");
    setenv("BLINK_TIMEOUT_S", "60", 1);
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    if (check_calls)
        setenv("BLINK_CHECK_CALLS", "1", 1);
    rt_plan_build(&p, 4, 1, one, (const unsigned[]){1}, 64);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    cr_expect_eq(c[0]->env.check_calls, check_calls);
    for (int v = 0; v < 4; v++) {
        struct rt_case k = {field == 0 ? BLINK_PLAN_REDUCE : BLINK_PLAN_ALLREDUCE,
                            field == 0 ? 0 : -1, blinkInt32, blinkSum, 64, 1, RT_THREADS, 0};
        if (v == 2) {
            if (field == 0) k.root = 1;
            if (field == 1) k.op = blinkMax;
            if (field == 2) k.count = 63;
            if (field == 3) c[v]->env.chunk_env = 32; /* below the 64-byte slots */
        }
        o[v] = (struct one_off){c[v], k, {0}, blinkSuccess, ""};
        pthread_create(&th[v], NULL, one_off_main, &o[v]);
    }
    for (int v = 0; v < 4; v++) {
        pthread_join(th[v], NULL);
        cr_expect_eq(o[v].res == blinkInvalidUsage || o[v].res == blinkRemoteError, 1,
                     "field %d rank %d: result %d", field, v, o[v].res);
        cr_expect(strstr(o[v].msg, "mismatched collective calls") != NULL,
                  "field %d rank %d: '%s'", field, v, o[v].msg);
    }
    /* The ranks that met rank 2 name both descriptions. */
    const char *m = o[1].res == blinkInvalidUsage ? o[1].msg : o[3].msg;
    cr_expect(strstr(m, "; rank ") != NULL, "field %d: '%s'", field, m);
    blinkResult_t res[4];
    struct rt_case ok = {BLINK_PLAN_REDUCE, 3, blinkFloat64, blinkMin, 33, 1, RT_THREADS, 1};
    rt_run(c, 4, &ok, res, NULL);
    for (int v = 0; v < 4; v++)
        cr_expect_neq(res[v], blinkSuccess, "field %d rank %d: aborted, yet the call ran", field,
                      v);
    for (int v = 0; v < 4; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    rt_plan_free(&p);
    unsetenv("BLINK_CHECK_CALLS");
}

Test(rt_fail, one_field_apart_fails_everywhere, .timeout = 60)
{
    for (int field = 0; field < 4; field++)
        one_field_apart(field, 0);
}

Test(rt_fail, one_field_apart_with_check_calls, .timeout = 60)
{
    for (int field = 0; field < 4; field++)
        one_field_apart(field, 1);
    /* And calls that agree still run, checked against the reference. */
    struct rt_plan p;
    blinkComm_t c[8];
    setenv("BLINK_CHECK_CALLS", "1", 1);
    rt_plan_build(&p, 8, 1, shapes, (const unsigned[]){1}, 64);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 8, NULL), blinkSuccess);
    char why[512] = "";
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++) {
        struct rt_case k = {coll, coll % 2 ? 5 : 2, blinkFloat32, blinkSum, 777, 0, RT_THREADS, 0};
        cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "coll %d: %s", coll, why);
    }
    for (int v = 0; v < 8; v++)
        blinkCommDestroy(c[v]);
    rt_plan_free(&p);
    unsetenv("BLINK_CHECK_CALLS");
}
