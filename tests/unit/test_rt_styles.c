/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_styles.c - the calling styles beyond one call at a time: back-to-back asynchronous
 * collectives per rank thread (sequence numbers keep them apart), several collectives in one
 * group, one group per thread holding two ranks each, virtual ranks (BLINK_DEVICE_MAP) and a
 * large count over many chunks with the plan's own chunk size.
 */
#include <criterion/criterion.h>
#include <pthread.h>
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
