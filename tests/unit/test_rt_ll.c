/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_ll.c - the LL protocol (proto.h, LL) through the host backend: every collective x
 * int8, uint8, float16, bfloat16, int32, int64, float32 and float64 x every op on 3, 5 and 8
 * ranks with BLINK_PROTO=ll, against rt_testutil's independent reference, with 64-byte chunks
 * and counts that make one chunk, several, more than BK_SLOTS per tree and odd tails (padded
 * packets); the packets of the last call found in the ranks' LL slots (LL ran; Simple leaves
 * them zero); float results bit-identical to BLINK_PROTO=simple on inputs whose rounding depends
 * on the order of the reduction; runs across the LL clean (2^21 + 1) and the 32-bit wrap, with
 * stale packets of the very call planted first; a rank with LL among ranks with Simple fails on
 * every rank; a rank that never calls fails the others within BLINK_TIMEOUT_S; BLINK_PROTO='x'
 * fails init naming the variable.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"
#include "rt_testutil.h"

static const int chain3[] = {-1, 0, 1};
static const int five_a[] = {-1, 0, 0, 1, 1}, five_b[] = {1, 2, -1, 4, 2};
static const int bin8[] = {-1, 0, 0, 1, 1, 2, 2, 3};

static void init(struct rt_plan *p, blinkComm_t *c, int n, int ntrees, const int *const *shapes,
                 const unsigned *w, const char *proto)
{
    setenv("BLINK_PROTO", proto, 1);
    setenv("BLINK_CHUNK_BYTES", "64", 1);
    setenv("BLINK_TIMEOUT_S", "60", 1);
    rt_plan_build(p, n, ntrees, shapes, w, 64);
    cr_assert_eq(blinkrtCommInitAll(&p->plan, c, n, NULL), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    unsetenv("BLINK_PROTO");
    unsetenv("BLINK_CHUNK_BYTES");
    unsetenv("BLINK_TIMEOUT_S");
}

static void done(struct rt_plan *p, blinkComm_t *c, int n)
{
    for (int v = 0; v < n; v++)
        cr_expect_eq(blinkCommDestroy(c[v]), blinkSuccess);
    rt_plan_free(p);
}

/* Packets in the ranks' LL slots that carry a flag of the last call (bk_ll_flag's call bits). */
static size_t last_call_packets(blinkComm_t *c, int n)
{
    size_t found = 0;
    for (int v = 0; v < n; v++) {
        int me = c[v]->prank;
        const uint64_t *w = (const uint64_t *)(c[v]->peer[me].seg + c[v]->layout.ll_off[me]);
        size_t words = (c[v]->layout.slots_off[me] - c[v]->layout.ll_off[me]) / 8;
        for (size_t i = 0; i < words; i++) {
            uint32_t flag = (uint32_t)(__atomic_load_n(&w[i], __ATOMIC_RELAXED) >> 32);
            found += flag != 0 && flag >> 10 == (c[v]->seq & 0x3fffffu);
        }
    }
    return found;
}

static const blinkDataType_t dts[] = {blinkInt8, blinkUint8, blinkFloat16, blinkBfloat16,
                                      blinkInt32, blinkInt64, blinkFloat32, blinkFloat64};
static const size_t counts[] = {1, 7, 61, 333, 1021};
#define NDTS (sizeof dts / sizeof dts[0])
#define NCOUNTS (sizeof counts / sizeof counts[0])

/* Every collective, type and op once, the count, root, placement and style rotating. */
static void sweep(int n, int ntrees, const int *const *shapes, const unsigned *w)
{
    struct rt_plan p;
    blinkComm_t c[8];
    init(&p, c, n, ntrees, shapes, w, "ll");
    unsigned variant = 0;
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++)
        for (size_t d = 0; d < NDTS; d++)
            for (int op = 0; op < (bk_has_op(coll) ? blinkNumOps : 1); op++) {
                struct rt_case k = {coll, (int)(variant % (unsigned)n), dts[d], (blinkRedOp_t)op,
                                    counts[variant % NCOUNTS], (int)((variant / 3) & 1),
                                    variant % 7 == 3 ? RT_GROUP : RT_THREADS, 0, 0, 0};
                char why[512] = "";
                variant++;
                cr_assert_eq(rt_run_check(c, n, &k, why, sizeof why), 0,
                             "coll %d dt %d op %d count %zu root %d inplace %d: %s", coll, k.dt,
                             op, k.count, k.root, k.inplace, why);
            }
    cr_expect_gt(variant, 100u);
    /* The last call (reducescatter, several chunks a tree) went through the LL slots. */
    cr_expect_gt(last_call_packets(c, n), 0u, "no packet of call %u in any LL slot", c[0]->seq);
    done(&p, c, n);
}

Test(rt_ll, chain3, .timeout = 60)
{
    const int *shapes[] = {chain3};
    sweep(3, 1, shapes, (const unsigned[]){1});
}

Test(rt_ll, two_trees5, .timeout = 60)
{
    const int *shapes[] = {five_a, five_b};
    sweep(5, 2, shapes, (const unsigned[]){2, 1});
}

Test(rt_ll, binary8, .timeout = 60)
{
    const int *shapes[] = {bin8};
    sweep(8, 1, shapes, (const unsigned[]){1});
}

/* Simple never writes the LL slots: the evidence above is LL's own. */
Test(rt_ll, simple_leaves_ll_slots_alone, .timeout = 30)
{
    struct rt_plan p;
    blinkComm_t c[8];
    const int *shapes[] = {bin8};
    init(&p, c, 8, 1, shapes, (const unsigned[]){1}, "simple");
    char why[512] = "";
    struct rt_case k = {BLINK_PLAN_ALLREDUCE, -1, blinkFloat32, blinkSum, 333, 0, RT_THREADS, 0,
                        0, 0};
    cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "%s", why);
    cr_expect_eq(last_call_packets(c, 8), 0u);
    done(&p, c, 8);
}

/* ------------------------------------------------------------------ bit-identical to Simple */

static uint32_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Inputs of many significant bits, so that sums and products round differently in another
 * order: float32/64 in (-4, 4), float16 and bfloat16 of random mantissas, exponents -4 .. 4. */
static void fill(void *buf, size_t count, blinkDataType_t dt, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < count; i++) {
        double x = ((double)rnd(&s) / 2147483648.0 - 0.5) * 8.0;
        switch (dt) {
        case blinkFloat32: ((float *)buf)[i] = (float)x; break;
        case blinkFloat64: ((double *)buf)[i] = x + (double)rnd(&s) * 1e-12; break;
        case blinkFloat16:
            ((uint16_t *)buf)[i] = (uint16_t)((rnd(&s) & 0x8000) | ((11 + rnd(&s) % 9) << 10) |
                                              (rnd(&s) & 0x3ff));
            break;
        default:
            ((uint16_t *)buf)[i] = (uint16_t)((rnd(&s) & 0x8000) | ((123 + rnd(&s) % 9) << 7) |
                                              (rnd(&s) & 0x7f));
            break;
        }
    }
}

/* One call on every rank of c (a group), out of place; the outputs into out[v]. */
static void run_group(blinkComm_t *c, int n, const struct rt_case *k, void **in, void **out)
{
    blinkGroupStart();
    for (int v = 0; v < n; v++)
        cr_assert_eq(rt_call(k, in[v], out[v], c[v], NULL), blinkSuccess);
    cr_assert_eq(blinkGroupEnd(), blinkSuccess, "%s", blinkGetLastError(c[0]));
}

static void same_bits(int n, int ntrees, const int *const *shapes, const unsigned *w)
{
    static const blinkDataType_t fdts[] = {blinkFloat16, blinkBfloat16, blinkFloat32,
                                           blinkFloat64};
    static const int colls[] = {BLINK_PLAN_REDUCE, BLINK_PLAN_ALLREDUCE,
                                BLINK_PLAN_REDUCESCATTER};
    struct rt_plan ps, pl;
    blinkComm_t cs[8], cl[8];
    init(&ps, cs, n, ntrees, shapes, w, "simple");
    init(&pl, cl, n, ntrees, shapes, w, "ll");
    const size_t count = 257;
    void *in[8], *os[8], *ol[8];
    for (int v = 0; v < n; v++) {
        in[v] = malloc(count * 8 * (size_t)n);
        os[v] = malloc(count * 8 * (size_t)n);
        ol[v] = malloc(count * 8 * (size_t)n);
    }
    int differ_from_input = 0;
    for (size_t d = 0; d < 4; d++)
        for (int op = 0; op < blinkNumOps; op++)
            for (int ci = 0; ci < 3; ci++) {
                struct rt_case k = {colls[ci], (int)(d + (size_t)op) % n, fdts[d],
                                    (blinkRedOp_t)op, count, 0, RT_GROUP, 0, 0, 0};
                size_t es = rt_size(k.dt), inb = count * es * (k.coll ==
                                                BLINK_PLAN_REDUCESCATTER ? (size_t)n : 1);
                for (int v = 0; v < n; v++) {
                    fill(in[v], inb / es, k.dt, 1000u * (uint64_t)v + d * 10 + (uint64_t)op);
                    memset(os[v], 0x5a, count * es);
                    memset(ol[v], 0xa5, count * es);
                }
                run_group(cs, n, &k, in, os);
                run_group(cl, n, &k, in, ol);
                for (int v = 0; v < n; v++) {
                    if (k.coll == BLINK_PLAN_REDUCE && v != k.root)
                        continue;
                    cr_assert_eq(memcmp(os[v], ol[v], count * es), 0, "dt %d op %d coll %d: "
                                 "rank %d's output differs between Simple and LL", k.dt, op,
                                 k.coll, v);
                    differ_from_input += memcmp(os[v], in[v], count * es) != 0;
                }
            }
    cr_expect_gt(differ_from_input, 0);
    cr_expect_gt(last_call_packets(cl, n), 0u);
    for (int v = 0; v < n; v++) {
        free(in[v]);
        free(os[v]);
        free(ol[v]);
    }
    done(&ps, cs, n);
    done(&pl, cl, n);
}

Test(rt_ll, floats_bit_identical_to_simple, .timeout = 60)
{
    const int *bin[] = {bin8}, *two[] = {five_a, five_b};
    same_bits(8, 1, bin, (const unsigned[]){1});
    same_bits(5, 2, two, (const unsigned[]){2, 1});
}

/* ------------------------------------------------------------------ cleans and wraps */

Test(rt_ll, flag_rule)
{
    cr_expect(bk_ll_cleans(1) && bk_ll_cleans(0x200001u) && bk_ll_cleans(0x80000001u));
    cr_expect(!bk_ll_cleans(0x200000u) && !bk_ll_cleans(0x200002u) && !bk_ll_cleans(2));
    for (uint32_t seq = 1; seq < 4; seq++)
        for (uint32_t ch = 0; ch < BK_LL_MAX_CHUNKS; ch += BK_SLOTS) {
            cr_assert_neq(bk_ll_flag(seq << 22, ch), 0u);
            cr_assert_neq(bk_ll_flag(seq, ch), bk_ll_flag(seq, ch + BK_SLOTS),
                          "a slot's next chunk must carry another flag");
        }
    /* 2^22 calls apart: the same flag, which the clean every 2^21 calls removes. */
    cr_expect_eq(bk_ll_flag(5, 0), bk_ll_flag(5 + (1u << 22), 0));
}

/* Every rank's LL slots full of packets of call seq, round 1, holding garbage. */
static void plant(blinkComm_t *c, int n, uint32_t seq)
{
    for (int v = 0; v < n; v++) {
        int me = c[v]->prank;
        uint64_t *w = (uint64_t *)(c[v]->peer[me].seg + c[v]->layout.ll_off[me]);
        size_t words = (c[v]->layout.slots_off[me] - c[v]->layout.ll_off[me]) / 8;
        for (size_t i = 0; i < words; i++)
            __atomic_store_n(&w[i], (uint64_t)bk_ll_flag(seq, 0) << 32 | 0x7fc0dead,
                             __ATOMIC_RELAXED);
    }
}

static struct rt_case mixed(int i)
{
    static const blinkDataType_t mdts[] = {blinkFloat32, blinkInt8, blinkFloat64, blinkFloat16,
                                           blinkInt32, blinkBfloat16};
    static const blinkRedOp_t ops[] = {blinkSum, blinkMax, blinkMin, blinkAvg};
    return (struct rt_case){i % BLINK_PLAN_COLLS, (i * 3) % 8, mdts[i % 6], ops[i % 4],
                            (size_t)(1 + (i * 397) % 1500), i % 2, i % 3 ? RT_THREADS : RT_GROUP,
                            0, 0, 0};
}

static const int chain8[] = {3, 6, 7, -1, 5, 2, 0, 1}; /* 3 0 6 1 7 2 5 4 */

static void init8(struct rt_plan *p, blinkComm_t *c, const char *start)
{
    static const int *const shapes[] = {bin8, chain8};
    setenv("BLINK_DEBUG_SEQ_START", start, 1);
    init(p, c, 8, 2, shapes, (const unsigned[]){2, 1}, "ll");
    unsetenv("BLINK_DEBUG_SEQ_START");
}

/* Calls 2^21 - 3 .. 2^21 + 4 and 2^32 - 4 .. 4, checked; LL ran across both. */
Test(rt_ll, mixed_runs_across_the_cleans, .timeout = 60)
{
    static const char *const starts[] = {"2097149", "4294967292"};
    static const uint32_t last[] = {0x200004u, 4};
    for (int s = 0; s < 2; s++) {
        struct rt_plan p;
        blinkComm_t c[8];
        init8(&p, c, starts[s]);
        char why[512];
        for (int i = 0; i < 8; i++) {
            struct rt_case k = mixed(i + s);
            why[0] = '\0';
            cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "start %s call %d (coll "
                         "%d): %s", starts[s], i, k.coll, why);
        }
        cr_expect_eq(c[0]->seq, last[s]);
        cr_expect_gt(last_call_packets(c, 8), 0u);
        done(&p, c, 8);
    }
}

/* Stale packets carrying the very flags of the call that cleans (as a call 2^22 earlier could
 * have left them): without the clean the receivers would take the garbage for data. */
Test(rt_ll, stale_packets_are_cleaned, .timeout = 60)
{
    static const char *const starts[] = {"2097152", "4294967295", "2147483648"};
    static const uint32_t cleaning[] = {0x200001u, 1, 0x80000001u};
    for (int s = 0; s < 3; s++) {
        struct rt_plan p;
        blinkComm_t c[8];
        char why[512] = "";
        init8(&p, c, starts[s]);
        struct rt_case k = mixed(2);
        cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "%s", why);
        plant(c, 8, cleaning[s]);
        k = (struct rt_case){BLINK_PLAN_ALLREDUCE, -1, blinkFloat32, blinkSum, 999, 0,
                             RT_THREADS, 0, 0, 0};
        cr_expect_eq(rt_run_check(c, 8, &k, why, sizeof why), 0, "call %u: %s", cleaning[s],
                     why);
        cr_expect_eq(c[0]->seq, cleaning[s]);
        done(&p, c, 8);
    }
}

/* ------------------------------------------------------------------ failures */

struct rank_call {
    blinkComm_t comm;
    struct rt_case k;
    float buf[1000];
    blinkResult_t res;
    char msg[512];
};

static void *rank_main(void *arg)
{
    struct rank_call *o = arg;
    o->res = rt_call(&o->k, o->buf, o->buf, o->comm, NULL);
    snprintf(o->msg, sizeof o->msg, "%s", blinkGetLastError(o->comm));
    return NULL;
}

/* Rank 2 of a 4-chain runs LL, the others Simple: the algo word differs, so every rank fails. */
Test(rt_ll, one_rank_ll_among_simple_fails_everywhere, .timeout = 60)
{
    static const int chain[] = {-1, 0, 1, 2};
    static const int *const one[] = {chain};
    static struct rank_call o[4];
    struct rt_plan p;
    blinkComm_t c[4];
    pthread_t th[4];
    init(&p, c, 4, 1, one, (const unsigned[]){1}, "simple");
    c[2]->env.proto_env = BLINK_PLAN_LL;
    for (int v = 0; v < 4; v++) {
        o[v] = (struct rank_call){c[v], {BLINK_PLAN_ALLREDUCE, -1, blinkInt32, blinkSum, 64, 1,
                                         RT_THREADS, 0, 0, 0}, {0}, blinkSuccess, ""};
        pthread_create(&th[v], NULL, rank_main, &o[v]);
    }
    for (int v = 0; v < 4; v++) {
        pthread_join(th[v], NULL);
        cr_expect(o[v].res == blinkInvalidUsage || o[v].res == blinkRemoteError,
                  "rank %d: result %d", v, o[v].res);
        cr_expect(strstr(o[v].msg, "mismatched collective calls") != NULL, "rank %d: '%s'", v,
                  o[v].msg);
    }
    const char *m = o[1].res == blinkInvalidUsage ? o[1].msg : o[3].msg;
    cr_expect(strstr(m, ", LL, chunk") != NULL, "the descriptions say which runs LL: '%s'", m);
    done(&p, c, 4);
}

/* Rank 3 never calls: the others' LL calls fail within BLINK_TIMEOUT_S, saying so. */
Test(rt_ll, timeout_when_a_rank_never_calls, .timeout = 60)
{
    static const int chain[] = {-1, 0, 1, 2};
    static const int *const one[] = {chain};
    static struct rank_call o[3];
    struct rt_plan p;
    blinkComm_t c[4];
    pthread_t th[3];
    init(&p, c, 4, 1, one, (const unsigned[]){1}, "ll");
    for (int v = 0; v < 4; v++)
        c[v]->env.timeout_s = 0.5;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int v = 0; v < 3; v++) {
        o[v] = (struct rank_call){c[v], {BLINK_PLAN_ALLREDUCE, -1, blinkFloat32, blinkSum, 1000,
                                         1, RT_THREADS, 0, 0, 0}, {0}, blinkSuccess, ""};
        pthread_create(&th[v], NULL, rank_main, &o[v]);
    }
    int named = 0;
    for (int v = 0; v < 3; v++) {
        pthread_join(th[v], NULL);
        cr_expect_neq(o[v].res, blinkSuccess, "rank %d finished without rank 3", v);
        named += strstr(o[v].msg, "BLINK_TIMEOUT_S") != NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    cr_expect_eq(named, 3, "every rank says why: '%s'", o[0].msg);
    cr_expect(s < 10, "the ranks gave up after %.1f s", s);
    done(&p, c, 4);
}

Test(rt_ll, bad_proto_names_the_variable)
{
    struct rt_plan p;
    blinkComm_t c[3];
    const int *shapes[] = {chain3};
    rt_plan_build(&p, 3, 1, shapes, (const unsigned[]){1}, 64);
    setenv("BLINK_PROTO", "x", 1);
    cr_expect_eq(blinkrtCommInitAll(&p.plan, c, 3, NULL), blinkInvalidArgument);
    cr_expect(strstr(blinkGetLastError(NULL), "BLINK_PROTO='x'") != NULL, "%s",
              blinkGetLastError(NULL));
    unsetenv("BLINK_PROTO");
    rt_plan_free(&p);
}
