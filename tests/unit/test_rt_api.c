/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_api.c - the runtime's API outside the data path: version and error strings, init's
 * checks (device count and list against the plan, BLINK_DEVICE_MAP, BLINK_CHUNK_BYTES, corrupt
 * plans), communicator queries, and calls that must fail on every rank instead of hanging
 * (mismatched collectives, a bad argument on one rank, a collective the plan lacks).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_testutil.h"

static const int chain[] = {-1, 0, 1, 2};
static const int *const shapes[] = {chain};

static void build(struct rt_plan *p) { rt_plan_build(p, 4, 1, shapes, (const unsigned[]){1}, 64); }

Test(rt_api, version_and_strings)
{
    int v = 0;
    cr_assert_eq(blinkGetVersion(&v), blinkSuccess);
    cr_expect_eq(v, BLINK_MAJOR * 10000 + BLINK_MINOR * 100 + BLINK_PATCH);
    cr_expect_eq(blinkGetVersion(NULL), blinkInvalidArgument);
    cr_expect_str_eq(blinkGetErrorString(blinkSuccess), "no error");
    cr_expect_str_eq(blinkGetErrorString(blinkInvalidUsage), "invalid usage");
    cr_expect_str_eq(blinkGetErrorString((blinkResult_t)99), "unknown result code");
    cr_expect(strstr(blinkGetLastError(NULL), "version") != NULL, "%s", blinkGetLastError(NULL));
}

/* blinkMemAlloc, blinkCommRegister and their frees: arguments checked, a pointer or handle not
 * theirs refused with a message, and a registered output of ranks that are threads changes
 * nothing (they go down direct already). */
Test(rt_api, memory_and_registration)
{
    void *p = NULL, *q = NULL, *h = NULL;
    cr_expect_eq(blinkMemAlloc(NULL, 16), blinkInvalidArgument);
    cr_assert_eq(blinkMemAlloc(&p, 0), blinkSuccess);
    cr_assert_eq(blinkMemAlloc(&q, 1 << 20), blinkSuccess);
    cr_assert(p && q && p != q);
    memset(q, 7, 1 << 20);
    int local = 0;
    cr_expect_eq(blinkMemFree(&local), blinkInvalidArgument);
    cr_expect(strstr(blinkGetLastError(NULL), "not from blinkMemAlloc"), "%s",
              blinkGetLastError(NULL));
    cr_expect_eq(blinkMemFree(NULL), blinkSuccess);

    struct rt_plan pl;
    blinkComm_t c[4];
    build(&pl);
    cr_assert_eq(blinkrtCommInitAll(&pl.plan, c, 4, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    cr_expect_eq(blinkCommRegister(NULL, q, 16, &h), blinkInvalidArgument);
    cr_expect_eq(blinkCommRegister(c[0], q, 16, NULL), blinkInvalidArgument);
    cr_expect_eq(blinkCommRegister(c[0], NULL, 16, &h), blinkInvalidArgument);
    for (int r = 0; r < 4; r++)
        cr_assert_eq(blinkCommRegister(c[r], q, 1 << 20, &h), blinkSuccess);
    struct rt_case bc = {BLINK_PLAN_BROADCAST, 1, blinkInt32, blinkSum, 77, 0, RT_THREADS, 0};
    char why[512] = "";
    cr_expect_eq(rt_run_check(c, 4, &bc, why, sizeof why), 0, "%s", why);
    cr_expect_eq(blinkCommDeregister(c[3], h), blinkSuccess);
    cr_expect_eq(blinkCommDeregister(c[3], h), blinkInvalidArgument);
    cr_expect(strstr(blinkGetLastError(c[3]), "no registration"), "%s", blinkGetLastError(c[3]));
    for (int r = 0; r < 4; r++)
        cr_expect_eq(blinkCommDestroy(c[r]), blinkSuccess); /* frees the others' registrations */
    rt_plan_free(&pl);
    cr_expect_eq(blinkMemFree(p), blinkSuccess);
    cr_expect_eq(blinkMemFree(q), blinkSuccess);
}

Test(rt_api, init_checks_devices)
{
    struct rt_plan p;
    blinkComm_t c[4];
    build(&p);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 3, NULL), blinkInvalidUsage);
    const char *m = blinkGetLastError(NULL);
    cr_expect(strstr(m, "'test'") && strstr(m, "0123456789abcdef") && strstr(m, "0,1,2,3"), "%s", m);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, (const int[]){0, 1, 2, 5}), blinkInvalidUsage);
    m = blinkGetLastError(NULL);
    cr_expect(strstr(m, "0,1,2,5") && strstr(m, "0123456789abcdef"), "%s", m);
    /* The same devices in another order: the ranks are relabelled onto the plan's. */
    static const int shuffled[4] = {3, 1, 0, 2};
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, shuffled), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    for (int v = 0; v < 4; v++) {
        int dev = -1;
        struct blinkrt_stats st;
        cr_expect_eq(blinkCommCuDevice(c[v], &dev), blinkSuccess);
        cr_expect_eq(blinkrtCommStats(c[v], &st), blinkSuccess);
        cr_expect(dev == shuffled[v] && st.plan_rank == dev, "rank %d: device %d, plan rank %d",
                  v, dev, st.plan_rank);
    }
    struct rt_case bc = {BLINK_PLAN_BROADCAST, 0, blinkInt32, blinkSum, 77, 0, RT_THREADS, 0};
    char bwhy[512] = "";
    cr_expect_eq(rt_run_check(c, 4, &bc, bwhy, sizeof bwhy), 0, "%s", bwhy);
    bc.coll = BLINK_PLAN_ALLGATHER;
    cr_expect_eq(rt_run_check(c, 4, &bc, bwhy, sizeof bwhy), 0, "%s", bwhy);
    for (int v = 0; v < 4; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    cr_expect_eq(blinkrtCommInitAll(&p.plan, NULL, 4, NULL), blinkInvalidArgument);
    /* Virtual ranks: every rank on device 0; devlist is then not checked. */
    setenv("BLINK_DEVICE_MAP", "0,0,0,0", 1);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, (const int[]){5, 6, 7, 8}), blinkSuccess,
                 "%s", blinkGetLastError(NULL));
    for (int v = 0; v < 4; v++) {
        int dev = -1, rank = -1, n = 0;
        cr_expect_eq(blinkCommCuDevice(c[v], &dev), blinkSuccess);
        cr_expect_eq(blinkCommUserRank(c[v], &rank), blinkSuccess);
        cr_expect_eq(blinkCommCount(c[v], &n), blinkSuccess);
        cr_expect(dev == 0 && rank == v && n == 4);
    }
    char why[512] = "";
    struct rt_case k = {BLINK_PLAN_ALLREDUCE, -1, blinkInt32, blinkSum, 100, 0, RT_THREADS, 0};
    cr_expect_eq(rt_run_check(c, 4, &k, why, sizeof why), 0, "%s", why);
    for (int v = 0; v < 4; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    setenv("BLINK_DEVICE_MAP", "0,0,0", 1);
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidArgument);
    cr_expect(strstr(blinkGetLastError(NULL), "BLINK_DEVICE_MAP") != NULL);
    unsetenv("BLINK_DEVICE_MAP");
    setenv("BLINK_CHUNK_BYTES", "0", 1);
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidArgument);
    unsetenv("BLINK_CHUNK_BYTES");
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, (const int[]){0, 1, 2, 3}), blinkSuccess);
    for (int v = 0; v < 4; v++)
        blinkCommDestroy(c[v]);
    cr_expect_eq(blinkCommDestroy(NULL), blinkInvalidArgument);
    rt_plan_free(&p);
}

/* Corrupt plans are refused with a message naming the problem. */
Test(rt_api, corrupt_plans)
{
    struct rt_plan p;
    blinkComm_t c[4];
    build(&p);
    p.plan.abi = 99;
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidUsage);
    cr_expect(strstr(blinkGetLastError(NULL), "ABI") != NULL);
    p.plan.abi = BLINK_PLAN_ABI;
    struct blink_plan_tree *t = (struct blink_plan_tree *)&p.scheds[0].trees[0];
    int *order = (int *)t->order, o1 = order[1];
    order[1] = order[2];  /* not a permutation */
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidUsage);
    cr_expect(strstr(blinkGetLastError(NULL), "permutation") != NULL, "%s", blinkGetLastError(NULL));
    order[1] = o1;
    unsigned w = t->weight;
    t->weight = 0;
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidUsage);
    cr_expect(strstr(blinkGetLastError(NULL), "weights") != NULL);
    t->weight = w;
    int r = t->root;
    t->root = 3; /* a broadcast tree not rooted at the broadcast's root */
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidUsage);
    t->root = r;
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess);
    for (int v = 0; v < 4; v++)
        blinkCommDestroy(c[v]);
    rt_plan_free(&p);
}

static int schedule_of(const struct rt_plan *p, int coll, int root)
{
    for (int i = 0; i < p->plan.nschedules; i++)
        if (p->scheds[i].coll == coll && p->scheds[i].root == root)
            return i;
    cr_assert_fail("no schedule %d from %d", coll, root);
    return -1;
}

static void expect_runs(blinkComm_t *c, int coll, int root)
{
    char why[256] = "";
    struct rt_case k = {coll, root, blinkFloat32, blinkSum, 1021, 0, RT_THREADS, 0, 0, 0};
    cr_expect_eq(rt_run_check(c, 4, &k, why, sizeof why), 0, "coll %d root %d: %s", coll, root,
                 why);
}

/* A broadcast written as another root's relabelled (blink_plan_schedule.relabel), and an
 * allgather whose trees from rank 2 are rank 0's relabelled (root_relabel), run as if listed;
 * a map that is no permutation, a source that is not earlier, or a map that misses the root
 * is refused at init with the schedule named. */
Test(rt_api, relabelled_schedules)
{
    struct rt_plan p;
    blinkComm_t c[4];
    build(&p);
    int b0 = schedule_of(&p, BLINK_PLAN_BROADCAST, 0), b1 = schedule_of(&p, BLINK_PLAN_BROADCAST, 1);
    cr_assert_lt(b0, b1);
    struct blink_plan_schedule *s = &p.scheds[b1];
    const struct blink_plan_tree *own = s->trees;
    int swap01[4] = {1, 0, 2, 3}, twice[4] = {1, 1, 2, 3}, rot[4] = {2, 0, 1, 3};
    s->ntrees = 0;
    s->trees = NULL;
    s->relabel = swap01;
    s->relabel_of = b0;
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    expect_runs(c, BLINK_PLAN_BROADCAST, 1);
    for (int v = 0; v < 4; v++)
        blinkCommDestroy(c[v]);
    s->relabel = twice;
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidUsage);
    cr_expect(strstr(blinkGetLastError(NULL), "not a permutation"), "%s", blinkGetLastError(NULL));
    s->relabel = rot; /* takes root 0 onto 2, not 1 */
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidUsage);
    s->relabel = swap01;
    s->relabel_of = b1 + 1;
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidUsage);
    cr_expect(strstr(blinkGetLastError(NULL), "not an earlier one"), "%s",
              blinkGetLastError(NULL));
    s->relabel = NULL;
    s->relabel_of = 0;
    s->trees = own;
    s->ntrees = 1;

    int ag = schedule_of(&p, BLINK_PLAN_ALLGATHER, -1);
    struct blink_plan_schedule *a = &p.scheds[ag];
    struct blink_plan_tree kept[8];
    const struct blink_plan_tree *all = a->trees;
    int nall = a->ntrees, nkept = 0, swap02[4] = {2, 1, 0, 3};
    for (int j = 0; j < nall; j++)
        if (all[j].root != 2)
            kept[nkept++] = all[j];
    const int *maps[4] = {NULL, NULL, swap02, NULL}, *bad[4] = {NULL, NULL, twice, NULL};
    a->trees = kept;
    a->ntrees = nkept;
    a->root_relabel = maps;
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    expect_runs(c, BLINK_PLAN_ALLGATHER, -1);
    for (int v = 0; v < 4; v++)
        blinkCommDestroy(c[v]);
    a->root_relabel = bad;
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkInvalidUsage);
    cr_expect(strstr(blinkGetLastError(NULL), "rank 2's trees"), "%s", blinkGetLastError(NULL));
    a->root_relabel = NULL;
    a->trees = all;
    a->ntrees = nall;
    rt_plan_free(&p);
}

/* Different collectives, counts, types, ops or roots across ranks, or a bad argument on one
 * rank: every rank's call fails with the reason (thread per rank would otherwise wait
 * forever), in both styles, and the communicators stay aborted: later calls fail at once. */
struct mm { struct rt_case k; void *buf; blinkComm_t comm; blinkResult_t res; char msg[512]; };

static void *mm_main(void *arg)
{
    struct mm *m = arg;
    m->res = rt_call(&m->k, m->buf, m->buf, m->comm, NULL);
    snprintf(m->msg, sizeof m->msg, "%s", blinkGetLastError(m->comm));
    return NULL;
}

static void expect_all_fail(int which, enum rt_style style)
{
    static int buf[4][64];
    const char *why = which == 4 ? "datatype 42" : "mismatched";
    struct rt_plan p;
    blinkComm_t c[4];
    struct mm m[4];
    pthread_t th[4];
    build(&p);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess);
    for (int v = 0; v < 4; v++) {
        struct rt_case k = {BLINK_PLAN_ALLREDUCE, -1, blinkInt32, blinkSum, 16, 0, style, 0};
        if (v == 2) {
            if (which == 0) k.coll = BLINK_PLAN_BROADCAST, k.root = 0;
            if (which == 1) k.count = 15;
            if (which == 2) k.dt = blinkFloat32;
            if (which == 3) k.op = blinkMax;
            if (which == 4) k.dt = (blinkDataType_t)42;
        }
        m[v] = (struct mm){k, buf[v], c[v], blinkSuccess, ""};
    }
    if (style == RT_GROUP) {
        blinkGroupStart();
        for (int v = 0; v < 4; v++)
            cr_assert_eq(mm_main(&m[v]), NULL);
        cr_expect_neq(blinkGroupEnd(), blinkSuccess, "case %d", which);
        cr_expect(strstr(blinkGetLastError(NULL), why), "case %d: %s", which,
                  blinkGetLastError(NULL));
    } else {
        for (int v = 0; v < 4; v++)
            pthread_create(&th[v], NULL, mm_main, &m[v]);
        for (int v = 0; v < 4; v++) {
            pthread_join(th[v], NULL);
            cr_expect_neq(m[v].res, blinkSuccess, "case %d rank %d", which, v);
            cr_expect(strstr(m[v].msg, why), "case %d rank %d: %s", which, v, m[v].msg);
        }
    }
    blinkResult_t res[4];
    struct rt_case ok = {BLINK_PLAN_REDUCE, 3, blinkFloat64, blinkMin, 33, 1, RT_THREADS, 1};
    rt_run(c, 4, &ok, res, NULL);
    for (int v = 0; v < 4; v++)
        cr_expect_neq(res[v], blinkSuccess, "case %d rank %d: aborted, yet the call ran", which, v);
    for (int v = 0; v < 4; v++)
        blinkCommDestroy(c[v]);
    rt_plan_free(&p);
}

Test(rt_api, mismatch_fails_everywhere, .timeout = 30)
{
    for (int which = 0; which < 5; which++) {
        expect_all_fail(which, RT_GROUP);
        expect_all_fail(which, RT_THREADS);
    }
    /* Fresh communicators work. */
    struct rt_plan p;
    blinkComm_t c[4];
    build(&p);
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess);
    char why[512] = "";
    struct rt_case ok = {BLINK_PLAN_REDUCE, 3, blinkFloat64, blinkMin, 33, 1, RT_THREADS, 1};
    cr_expect_eq(rt_run_check(c, 4, &ok, why, sizeof why), 0, "%s", why);
    cr_expect_eq(blinkGroupEnd(), blinkInvalidUsage);
    for (int v = 0; v < 4; v++)
        blinkCommDestroy(c[v]);
    rt_plan_free(&p);
}

/* A plan without the collective asked for: every rank gets the error. */
Test(rt_api, missing_schedule, .timeout = 20)
{
    struct rt_plan p;
    blinkComm_t c[4];
    build(&p);
    p.plan.nschedules = 4; /* broadcast from roots 0..3 only */
    cr_assert_eq(blinkrtCommInitAll(&p.plan, c, 4, NULL), blinkSuccess);
    blinkResult_t res[4];
    char msgs[4][512];
    struct rt_case k = {BLINK_PLAN_ALLREDUCE, -1, blinkInt32, blinkSum, 8, 0, RT_THREADS, 0};
    rt_run(c, 4, &k, res, msgs);
    for (int v = 0; v < 4; v++) {
        cr_expect_eq(res[v], blinkInvalidUsage);
        cr_expect(strstr(msgs[v], "no allreduce schedule") != NULL, "%s", msgs[v]);
    }
    for (int v = 0; v < 4; v++)
        blinkCommDestroy(c[v]);
    rt_plan_free(&p);
}
