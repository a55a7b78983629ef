/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_styles.c - the calling styles beyond one call at a time: back-to-back asynchronous
 * collectives per rank thread (sequence numbers keep them apart), several collectives in one
 * group, one group per thread holding two ranks each, virtual ranks (BLINK_DEVICE_MAP) and a
 * large count over many chunks with the plan's own chunk size; consecutive calls on
 * different streams, interleaved communicators, and the host operations a call issues.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_testutil.h"

#define N 4
#define CNT 501
static const int a[] = {-1, 0, 0, 1}, b[] = {1, 3, -1, 2};
static const int *const shapes[] = {a, b};

static void init(struct rt_plan *p, blinkComm_t *c, size_t chunk)
{
    rt_plan_build(p, N, 2, shapes, (const unsigned[]){3, 1}, chunk);
    cr_assert_eq(blinkrtCommInitAll(&p->plan, c, N, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
}

static void fini(struct rt_plan *p, blinkComm_t *c)
{
    for (int v = 0; v < N; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    rt_plan_free(p);
}

/* Rank v's chain of calls: x = allreduce(sum, x); y = broadcast(x from 1); z = allgather(y[0..]).
 * With x_v[i] = v + i: x = 6 + 4i; y = x; z = 4 copies of y[0..CNT). */
struct rank {
    blinkComm_t comm;
    int rank, group_of_two;
    int *x, *z;
    blinkStream_t s;
    blinkResult_t res;
};

static blinkResult_t chain_calls(struct rank *r)
{
    blinkResult_t e = blinkAllReduce(r->x, r->x, CNT, blinkInt32, blinkSum, r->comm, r->s);
    if (e == blinkSuccess)
        e = blinkBroadcast(r->x, r->x, CNT, blinkInt32, 1, r->comm, r->s);
    if (e == blinkSuccess)
        e = blinkAllGather(r->x, r->z, CNT, blinkInt32, r->comm, r->s);
    return e;
}

static void *rank_main(void *arg)
{
    struct rank *r = arg;
    if (r->group_of_two) { /* this thread drives ranks r and r+1 in one group */
        blinkGroupStart();
        chain_calls(r);
        chain_calls(r + 1);
        r->res = blinkGroupEnd();
    } else {
        r->res = chain_calls(r);
    }
    for (int k = 0; k <= r->group_of_two && r->res == blinkSuccess; k++)
        r->res = blinkHostStreamSynchronize(r[k].s);
    return NULL;
}

static void check_chain(struct rank *r)
{
    for (int v = 0; v < N; v++)
        for (int i = 0; i < N * CNT; i++)
            cr_assert_eq(r[v].z[i], 6 + 4 * (i % CNT), "rank %d z[%d] = %d", v, i, r[v].z[i]);
}

static void run_chain(blinkComm_t *c, int style)
{
    struct rank r[N];
    pthread_t th[N];
    for (int v = 0; v < N; v++) {
        r[v] = (struct rank){c[v], v, style == 2 && v % 2 == 0, malloc(CNT * sizeof(int)),
                             malloc(N * CNT * sizeof(int)), NULL, blinkSuccess};
        for (int i = 0; i < CNT; i++)
            r[v].x[i] = v + i;
        memset(r[v].z, 0xA5, N * CNT * sizeof(int));
        cr_assert_eq(blinkHostStreamCreate(&r[v].s), blinkSuccess);
    }
    if (style == 1) { /* one thread, one group, every rank, three collectives each */
        blinkGroupStart();
        for (int v = 0; v < N; v++)
            chain_calls(&r[v]);
        cr_assert_eq(blinkGroupEnd(), blinkSuccess, "%s", blinkGetLastError(NULL));
        for (int v = 0; v < N; v++)
            cr_assert_eq(blinkHostStreamSynchronize(r[v].s), blinkSuccess);
    } else {
        for (int v = 0; v < N; v += style == 2 ? 2 : 1)
            pthread_create(&th[v], NULL, rank_main, &r[v]);
        for (int v = 0; v < N; v += style == 2 ? 2 : 1) {
            pthread_join(th[v], NULL);
            cr_assert_eq(r[v].res, blinkSuccess, "%s", blinkGetLastError(NULL));
        }
    }
    check_chain(r);
    for (int v = 0; v < N; v++) {
        blinkHostStreamDestroy(r[v].s);
        free(r[v].x);
        free(r[v].z);
    }
}

Test(rt_styles, back_to_back_threads, .timeout = 30)
{
    struct rt_plan p;
    blinkComm_t c[N];
    unsetenv("BLINK_CHUNK_BYTES");
    init(&p, c, 64);
    for (int rep = 0; rep < 3; rep++)
        run_chain(c, 0);
    fini(&p, c);
}

Test(rt_styles, one_group_many_collectives, .timeout = 30)
{
    struct rt_plan p;
    blinkComm_t c[N];
    unsetenv("BLINK_CHUNK_BYTES");
    init(&p, c, 100); /* 100 bytes: 25 int32 per chunk */
    run_chain(c, 1);
    run_chain(c, 2); /* a group per thread, two ranks each */
    fini(&p, c);
}

/* Virtual ranks: every rank on "device" 0, and a large count over many 4 KiB chunks. */
Test(rt_styles, virtual_ranks_large, .timeout = 30)
{
    struct rt_plan p;
    blinkComm_t c[N];
    unsetenv("BLINK_CHUNK_BYTES");
    setenv("BLINK_DEVICE_MAP", "0,0,0,0", 1);
    init(&p, c, 4096);
    char why[512] = "";
    struct rt_case k = {BLINK_PLAN_ALLREDUCE, -1, blinkFloat32, blinkAvg, 100003, 0, RT_THREADS, 1};
    cr_expect_eq(rt_run_check(c, N, &k, why, sizeof why), 0, "%s", why);
    k = (struct rt_case){BLINK_PLAN_REDUCESCATTER, -1, blinkUint8, blinkProd, 30011, 1, RT_GROUP, 0};
    cr_expect_eq(rt_run_check(c, N, &k, why, sizeof why), 0, "%s", why);
    fini(&p, c);
    unsetenv("BLINK_DEVICE_MAP");
}

/* ------------------------------------------------------------------ ordering across streams */

#define BIG (1 << 20)

/* Rank v's two independent allreduces, back to back on two streams with no synchronisation in
 * between: the communicator orders its own calls (NCCL's rule), whatever the streams. */
struct two_streams {
    blinkComm_t comm;
    int32_t *a, *b;
    blinkStream_t s1, s2;
    blinkResult_t res;
    unsigned long long ops[3];
};

static void *two_streams_main(void *arg)
{
    struct two_streams *t = arg;
    struct blinkrt_stats st;
    t->res = blinkAllReduce(t->a, t->a, BIG, blinkInt32, blinkSum, t->comm, t->s1);
    blinkrtCommStats(t->comm, &st);
    t->ops[0] = st.last_call_ops;
    if (t->res == blinkSuccess)
        t->res = blinkAllReduce(t->b, t->b, 3, blinkInt32, blinkMax, t->comm, t->s2);
    blinkrtCommStats(t->comm, &st);
    t->ops[1] = st.last_call_ops;
    if (t->res == blinkSuccess)
        t->res = blinkAllReduce(t->b + 3, t->b + 3, BIG - 3, blinkInt32, blinkSum, t->comm, t->s1);
    blinkrtCommStats(t->comm, &st);
    t->ops[2] = st.last_call_ops;
    if (t->res == blinkSuccess)
        t->res = blinkHostStreamSynchronize(t->s2);
    if (t->res == blinkSuccess)
        t->res = blinkHostStreamSynchronize(t->s1);
    return NULL;
}

/* Three ranks, a million int32 per call (the case that corrupted results when scratch reuse was
 * ordered only by the caller's stream), and the host operations each call issued: the same for
 * 3 elements and for a million, since a call is one launch whatever its size. */
Test(rt_styles, consecutive_calls_on_different_streams, .timeout = 60)
{
    static const int star3[] = {-1, 0, 0}, chain3[] = {1, -1, 1};
    const int *three[] = {star3, chain3};
    struct rt_plan p;
    blinkComm_t c[3];
    struct two_streams t[3];
    pthread_t th[3];
    unsetenv("BLINK_CHUNK_BYTES");
    rt_plan_build(&p, 3, 2, three, (const unsigned[]){2, 1}, 4096);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 3, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    for (int v = 0; v < 3; v++) {
        t[v] = (struct two_streams){c[v], malloc(BIG * sizeof(int32_t)),
                                    malloc(BIG * sizeof(int32_t)), NULL, NULL, blinkSuccess,
                                    {0, 0, 0}};
        for (int i = 0; i < BIG; i++) {
            t[v].a[i] = v + i;
            t[v].b[i] = 3 * v - i;
        }
        blinkHostStreamCreate(&t[v].s1);
        blinkHostStreamCreate(&t[v].s2);
        pthread_create(&th[v], NULL, two_streams_main, &t[v]);
    }
    long wrong = 0;
    for (int v = 0; v < 3; v++) {
        pthread_join(th[v], NULL);
        cr_expect_eq(t[v].res, blinkSuccess, "rank %d: %s", v, blinkGetLastError(c[v]));
        for (int i = 0; i < BIG; i++) {
            wrong += t[v].a[i] != 3 * i + 3;
            wrong += t[v].b[i] != (i < 3 ? 6 - i : 9 - 3 * i);
        }
        cr_expect(t[v].ops[0] == t[v].ops[1] && t[v].ops[1] == t[v].ops[2] && t[v].ops[0] <= 5,
                  "rank %d: host operations per call %llu, %llu, %llu", v, t[v].ops[0],
                  t[v].ops[1], t[v].ops[2]);
        blinkHostStreamDestroy(t[v].s1);
        blinkHostStreamDestroy(t[v].s2);
        free(t[v].a);
        free(t[v].b);
    }
    cr_expect_eq(wrong, 0, "%ld wrong elements", wrong);
    for (int v = 0; v < 3; v++)
        blinkCommDestroy(c[v]);
    rt_plan_free(&p);
}

/* Two communicators over the same ranks, their calls interleaved on every rank: each keeps its
 * own call numbers and staging, so neither sees the other's chunks. */
struct two_comms {
    blinkComm_t c1, c2;
    int rank;
    int32_t *x, *y, *z;
    blinkStream_t s;
    blinkResult_t res;
};

static void *two_comms_main(void *arg)
{
    struct two_comms *t = arg;
    blinkResult_t r = blinkAllReduce(t->x, t->x, CNT, blinkInt32, blinkSum, t->c1, t->s);
    if (r == blinkSuccess)
        r = blinkAllGather(t->y, t->z, CNT, blinkInt32, t->c2, t->s);
    if (r == blinkSuccess)
        r = blinkBroadcast(t->x, t->x, CNT, blinkInt32, 2, t->c1, t->s);
    if (r == blinkSuccess)
        r = blinkReduceScatter(t->z, t->y, CNT, blinkInt32, blinkSum, t->c2, t->s);
    t->res = r == blinkSuccess ? blinkHostStreamSynchronize(t->s) : r;
    return NULL;
}

Test(rt_styles, interleaved_communicators, .timeout = 60)
{
    struct rt_plan p;
    blinkComm_t c1[N], c2[N];
    struct two_comms t[N];
    pthread_t th[N];
    unsetenv("BLINK_CHUNK_BYTES");
    init(&p, c1, 64);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c2, N, NULL), blinkSuccess);
    for (int v = 0; v < N; v++) {
        t[v] = (struct two_comms){c1[v], c2[v], v, malloc(CNT * sizeof(int32_t)),
                                  malloc(CNT * sizeof(int32_t)), malloc(N * CNT * sizeof(int32_t)),
                                  NULL, blinkSuccess};
        for (int i = 0; i < CNT; i++) {
            t[v].x[i] = v + i;
            t[v].y[i] = 10 * v + i;
        }
        blinkHostStreamCreate(&t[v].s);
    }
    for (int v = 0; v < N; v++)
        pthread_create(&th[v], NULL, two_comms_main, &t[v]);
    for (int v = 0; v < N; v++)
        pthread_join(th[v], NULL);
    for (int v = 0; v < N; v++) {
        cr_expect_eq(t[v].res, blinkSuccess, "rank %d: %s", v, blinkGetLastError(NULL));
        for (int i = 0; i < CNT; i++) {
            /* x: allreduce then broadcast: 6 + 4i. y: rank v's shard of the summed gather,
             * N copies of every rank's y: N * (10 * v + i). */
            cr_assert_eq(t[v].x[i], 6 + 4 * i, "rank %d x[%d]", v, i);
            cr_assert_eq(t[v].y[i], N * (10 * v + i), "rank %d y[%d] = %d", v, i, t[v].y[i]);
        }
        blinkHostStreamDestroy(t[v].s);
        free(t[v].x);
        free(t[v].y);
        free(t[v].z);
    }
    fini(&p, c1);
    for (int v = 0; v < N; v++)
        blinkCommDestroy(c2[v]);
}
