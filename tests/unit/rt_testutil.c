/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * rt_testutil.c - plans from tree shapes, and one collective run and checked against a
 * reference computed here from the generator (never from the runtime's buffers or code).
 */
#include "rt_testutil.h"
#include "proto.h"
#include "rt.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISON 0xA5

size_t rt_shift;

/* ------------------------------------------------------------------ plans */

/* shape re-rooted at r, breadth first (neighbours in rank order): parent[] and order[]. */
static void reroot(const int *shape, int n, int r, int *parent, int *order)
{
    int head = 0, tail = 0;
    for (int v = 0; v < n; v++)
        parent[v] = -2;
    parent[r] = -1;
    order[tail++] = r;
    while (head < tail) {
        int u = order[head++];
        for (int v = 0; v < n; v++)
            if (parent[v] == -2 && (shape[v] == u || shape[u] == v)) {
                parent[v] = u;
                order[tail++] = v;
            }
    }
}

static int root_of(const int *shape, int n)
{
    for (int v = 0; v < n; v++)
        if (shape[v] < 0)
            return v;
    return 0;
}

void rt_plan_build(struct rt_plan *p, int n, int ntrees, const int *const *shapes,
                   const unsigned *weights, size_t chunk_bytes)
{
    int nsched = 2 * n + 3, total = 4 * n * ntrees + ntrees, at = 0, si = 0;
    memset(p, 0, sizeof *p);
    p->scheds = calloc((size_t)nsched, sizeof *p->scheds);
    p->trees = calloc((size_t)total, sizeof *p->trees);
    p->ints = calloc((size_t)total * 2 * (size_t)n, sizeof *p->ints);
    p->devices = calloc((size_t)n, sizeof *p->devices);
    for (int v = 0; v < n; v++)
        p->devices[v] = v;
    /* coll, root, and whether shards need one tree set per root. */
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++) {
        int rooted = coll == BLINK_PLAN_BROADCAST || coll == BLINK_PLAN_REDUCE;
        int sharded = coll == BLINK_PLAN_ALLGATHER || coll == BLINK_PLAN_REDUCESCATTER;
        for (int r = 0; r < (rooted ? n : 1); r++) {
            struct blink_plan_schedule *s = &p->scheds[si++];
            s->coll = coll;
            s->root = rooted ? r : -1;
            s->trees = &p->trees[at];
            for (int g = 0; g < (sharded ? n : 1); g++)
                for (int t = 0; t < ntrees; t++) {
                    struct blink_plan_tree *tr = &p->trees[at];
                    int *parent = p->ints + (size_t)at * 2 * (size_t)n, *order = parent + n;
                    int root = rooted ? r : sharded ? g : root_of(shapes[t], n);
                    reroot(shapes[t], n, root, parent, order);
                    tr->root = root;
                    tr->weight = weights[t];
                    tr->parent = parent;
                    tr->order = order;
                    at++;
                    s->ntrees++;
                }
        }
    }
    p->plan.abi = BLINK_PLAN_ABI;
    p->plan.topology = "test";
    p->plan.fingerprint = "0123456789abcdef";
    p->plan.nranks = n;
    p->plan.devices = p->devices;
    p->plan.chunk_bytes = chunk_bytes;
    p->plan.nschedules = si;
    p->plan.schedules = p->scheds;
}

void rt_plan_free(struct rt_plan *p)
{
    free(p->scheds);
    free(p->trees);
    free(p->ints);
    free(p->devices);
}

/* ------------------------------------------------------------------ values */

size_t rt_size(blinkDataType_t dt)
{
    static const size_t sz[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return (unsigned)dt < 10 ? sz[dt] : 0;
}

static int is_float(blinkDataType_t dt) { return dt >= blinkFloat16; }
static int is_signed(blinkDataType_t dt)
{
    return dt == blinkInt8 || dt == blinkInt32 || dt == blinkInt64;
}

/* The input of rank r at element i: small integers (prod: factors of magnitude <= 2), plus an
 * exact binary fraction for float32 and float64. */
static double gen(const struct rt_case *c, int r, size_t i)
{
    double k;
    if (c->op == blinkProd)
        k = (double)(1 + (i * 5 + (size_t)r * 3) % 2) * (((i + (size_t)r) % 3 == 0) ? -1 : 1);
    else
        k = (double)((i * 7 + (size_t)r * 13 + 5) % 17) - 8;
    if (!is_signed(c->dt) && !is_float(c->dt))
        k = fabs(k);
    if (c->dt == blinkFloat32 || c->dt == blinkFloat64)
        k += (double)((i * 31 + (size_t)r * 17) % 64) / 128.0;
    return k;
}

/* Element stores and loads (own half/bfloat16 coding: exact values only). */
static void put(void *buf, size_t i, blinkDataType_t dt, double x, uint64_t bits)
{
    char *p = (char *)buf + i * rt_size(dt);
    switch (dt) {
    case blinkFloat32: { float f = (float)x; memcpy(p, &f, 4); return; }
    case blinkFloat64: memcpy(p, &x, 8); return;
    case blinkBfloat16: {
        float f = (float)x;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint16_t h = (uint16_t)(u >> 16);
        memcpy(p, &h, 2);
        return;
    }
    case blinkFloat16: {
        uint16_t h = 0;
        if (x != 0) {
            int e;
            double m = frexp(fabs(x), &e); /* |x| = m 2^e, m in [0.5, 1) */
            h = (uint16_t)(((e - 1 + 15) << 10) | (uint16_t)((m * 2 - 1) * 1024));
            if (x < 0)
                h |= 0x8000;
        }
        memcpy(p, &h, 2);
        return;
    }
    default:
        memcpy(p, &bits, rt_size(dt)); /* little-endian: the low bytes */
        return;
    }
}

static double get_float(const void *buf, size_t i, blinkDataType_t dt)
{
    const char *p = (const char *)buf + i * rt_size(dt);
    uint16_t h;
    switch (dt) {
    case blinkFloat32: { float f; memcpy(&f, p, 4); return f; }
    case blinkFloat64: { double d; memcpy(&d, p, 8); return d; }
    case blinkBfloat16: {
        memcpy(&h, p, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default: {
        memcpy(&h, p, 2);
        int e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
        return h & 0x8000 ? -v : v;
    }
    }
}

/* Integers as raw bits in the low bytes of a uint64, wrapped to the type's width. */
static uint64_t mask(blinkDataType_t dt)
{
    return rt_size(dt) == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * rt_size(dt))) - 1;
}

static int64_t sext(uint64_t b, blinkDataType_t dt)
{
    int w = 8 * (int)rt_size(dt);
    if (w == 64)
        return (int64_t)b;
    return (b >> (w - 1)) & 1 ? (int64_t)(b | ~mask(dt)) : (int64_t)b;
}

/* The reference for element i over ranks: as bits (integers) or a double (floats). */
static void reference(const struct rt_case *c, int n, const int *ranks, int nr, size_t i,
                      uint64_t *bits, double *x)
{
    uint64_t b = 0;
    double d = 0;
    for (int j = 0; j < nr; j++) {
        double v = gen(c, ranks[j], i);
        uint64_t vb = (uint64_t)(int64_t)v & mask(c->dt);
        if (j == 0) {
            b = vb;
            d = v;
            continue;
        }
        switch (c->op) {
        case blinkProd: b = (b * vb) & mask(c->dt); d *= v; break;
        case blinkMax:
        case blinkMin: {
            int gt = is_signed(c->dt) ? sext(vb, c->dt) > sext(b, c->dt) : vb > b;
            if (gt == (c->op == blinkMax))
                b = vb;
            d = c->op == blinkMax ? fmax(d, v) : fmin(d, v);
            break;
        }
        default: b = (b + vb) & mask(c->dt); d += v; break;
        }
    }
    if (c->op == blinkAvg && nr > 1) {
        d /= n;
        b = is_signed(c->dt) ? (uint64_t)(sext(b, c->dt) / n) & mask(c->dt) : b / (uint64_t)n;
    }
    *bits = b;
    *x = d;
}

/* ------------------------------------------------------------------ running */

blinkResult_t rt_call(const struct rt_case *c, const void *send, void *recv, blinkComm_t comm,
                      blinkStream_t stream)
{
    switch (c->coll) {
    case BLINK_PLAN_BROADCAST: return blinkBroadcast(send, recv, c->count, c->dt, c->root, comm, stream);
    case BLINK_PLAN_REDUCE: return blinkReduce(send, recv, c->count, c->dt, c->op, c->root, comm, stream);
    case BLINK_PLAN_ALLREDUCE: return blinkAllReduce(send, recv, c->count, c->dt, c->op, comm, stream);
    case BLINK_PLAN_ALLGATHER: return blinkAllGather(send, recv, c->count, c->dt, comm, stream);
    default: return blinkReduceScatter(send, recv, c->count, c->dt, c->op, comm, stream);
    }
}

struct job {
    const struct rt_case *c;
    const void *send;
    void *recv;
    blinkComm_t comm;
    blinkStream_t stream;
    blinkResult_t res;
    char msg[512];
};

static void finish(struct job *j, blinkResult_t r)
{
    if (r == blinkSuccess && j->stream)
        r = blinkHostStreamSynchronize(j->stream);
    j->res = r;
    snprintf(j->msg, sizeof j->msg, "%s", r == blinkSuccess ? "" : blinkGetLastError(j->comm));
}

static void *job_main(void *arg)
{
    struct job *j = arg;
    finish(j, rt_call(j->c, j->send, j->recv, j->comm, j->stream));
    return NULL;
}

static void run_jobs(struct job *jobs, int n, const struct rt_case *c)
{
    if (c->style == RT_THREADS) {
        pthread_t *th = calloc((size_t)n, sizeof *th);
        for (int v = 0; v < n; v++)
            pthread_create(&th[v], NULL, job_main, &jobs[v]);
        for (int v = 0; v < n; v++)
            pthread_join(th[v], NULL);
        free(th);
        return;
    }
    blinkGroupStart();
    blinkResult_t r = blinkSuccess;
    for (int v = 0; v < n && r == blinkSuccess; v++)
        r = rt_call(c, jobs[v].send, jobs[v].recv, jobs[v].comm, jobs[v].stream);
    blinkResult_t g = blinkGroupEnd();
    for (int v = 0; v < n; v++)
        finish(&jobs[v], r != blinkSuccess ? r : g);
}

/* One rank's buffers: big is its whole output area; send and recv point into it or not.
 * big_mem and send_mem are what malloc gave (big and send start rt_shift + the skews past). */
struct rank_bufs {
    char *big, *send, *recv;
    char *big_mem, *send_mem;  /* what malloc gave (NULL: none); big and send lie past them */
    size_t sendn, recvn;       /* elements of the input and of the output area */
};

static void setup_rank(struct rank_bufs *b, int v, int n, const struct rt_case *c)
{
    size_t es = rt_size(c->dt), cnt = c->count, N = (size_t)n;
    b->sendn = c->coll == BLINK_PLAN_REDUCESCATTER ? cnt * N : cnt;
    b->recvn = c->coll == BLINK_PLAN_ALLGATHER ? cnt * N : cnt;
    size_t bign = b->sendn > b->recvn ? b->sendn : b->recvn;
    /* rt_shift moves every buffer of a run; a case's skews move its own on top. */
    size_t sh = rt_shift + c->skew, ssh = rt_shift + c->send_skew;
    b->send_mem = NULL;
    b->big_mem = malloc(bign * es + sh + 1);
    memset(b->big_mem, POISON, bign * es + sh + 1);
    b->big = b->big_mem + sh;
    /* In place: NCCL's offsets (allgather's input and reducescatter's output inside). */
    size_t off = (size_t)v * cnt * es;
    if (!c->inplace) {
        b->send_mem = malloc(bign * es + ssh + 1);
        memset(b->send_mem, POISON, bign * es + ssh + 1);
        b->send = b->send_mem + ssh;
        b->recv = b->big;
    } else if (c->coll == BLINK_PLAN_ALLGATHER) {
        b->recv = b->big;
        b->send = b->big + off;
    } else if (c->coll == BLINK_PLAN_REDUCESCATTER) {
        b->send = b->big;
        b->recv = b->big + off;
    } else {
        b->send = b->recv = b->big;
    }
    for (size_t i = 0; i < b->sendn; i++) {
        double x = gen(c, v, i);
        put(b->send, i, c->dt, x, (uint64_t)(int64_t)x);
    }
}

static void teardown_rank(struct rank_bufs *b)
{
    free(b->send_mem);
    free(b->big_mem);
}

/* Buffers of one run: b[n], one set per rank. */
static struct rank_bufs *setup(int n, const struct rt_case *c)
{
    struct rank_bufs *b = calloc((size_t)n, sizeof *b);
    for (int v = 0; v < n; v++)
        setup_rank(&b[v], v, n, c);
    return b;
}

static void teardown(struct rank_bufs *b, int n, const struct rt_case *c)
{
    for (int v = 0; v < n; v++)
        teardown_rank(&b[v]);
    free(b);
}

/* Relative tolerance. Half types hold the small integer inputs and their sums exactly; only
 * avg's division by a rank count that is not a power of two rounds, by half an ulp. */
static double tol(const struct rt_case *c)
{
    if (c->dt == blinkFloat32)
        return 1e-5;
    if (c->dt == blinkFloat64)
        return 1e-12;
    if (c->op != blinkAvg)
        return 0;
    return c->dt == blinkBfloat16 ? 0x1p-8 : 0x1p-11;
}

/* Element i of rank v's output against the reference over ranks[nr] at input index src. */
static int check_elem(const struct rt_case *c, int n, const void *out, size_t i,
                      const int *ranks, int nr, size_t src, char *why, size_t len, int v)
{
    uint64_t bits;
    double x;
    reference(c, n, ranks, nr, src, &bits, &x);
    if (is_float(c->dt)) {
        double got = get_float(out, i, c->dt);
        if (!(fabs(got - x) <= tol(c) * fmax(1, fabs(x)))) {
            snprintf(why, len, "rank %d element %zu: got %.9g, expected %.9g", v, i, got, x);
            return 1;
        }
        return 0;
    }
    uint64_t got = 0;
    memcpy(&got, (const char *)out + i * rt_size(c->dt), rt_size(c->dt));
    if (got != bits) {
        snprintf(why, len, "rank %d element %zu: got %#llx, expected %#llx", v, i,
                 (unsigned long long)got, (unsigned long long)bits);
        return 1;
    }
    return 0;
}

/* Rank v's output of n ranks against the reference. */
static int check_rank(const struct rank_bufs *b, int v, int n, const struct rt_case *c,
                      char *why, size_t len)
{
    int all[64], one[1];
    for (int u = 0; u < n; u++)
        all[u] = u;
    size_t es = rt_size(c->dt);
    const char *out = b->recv;
    for (size_t i = 0; i < (size_t)(b->big - b->big_mem); i++)
        if ((unsigned char)b->big_mem[i] != POISON) {
            snprintf(why, len, "rank %d: byte %zu before the output area written", v, i);
            return 1;
        }
    size_t bign = b->sendn > b->recvn ? b->sendn : b->recvn;
    if ((unsigned char)b->big[bign * es] != POISON) {
        snprintf(why, len, "rank %d: the byte after the output area written", v);
        return 1;
    }
    if (c->coll == BLINK_PLAN_REDUCE && v != c->root) {
        /* Untouched: still poison (out of place) or still the input (in place). */
        for (size_t i = 0; i < c->count; i++) {
            one[0] = v;
            if (c->inplace ? check_elem(c, n, out, i, one, 1, i, why, len, v)
                           : (unsigned char)out[i * es] != POISON) {
                if (!c->inplace)
                    snprintf(why, len, "rank %d element %zu: not root, but written", v, i);
                return 1;
            }
        }
        return 0;
    }
    for (size_t i = 0; i < b->recvn; i++) {
        int bad;
        switch (c->coll) {
        case BLINK_PLAN_BROADCAST:
            one[0] = c->root;
            bad = check_elem(c, n, out, i, one, 1, i, why, len, v);
            break;
        case BLINK_PLAN_ALLGATHER:
            one[0] = (int)(i / c->count);
            bad = check_elem(c, n, out, i, one, 1, i % c->count, why, len, v);
            break;
        case BLINK_PLAN_REDUCESCATTER:
            bad = check_elem(c, n, out, i, all, n, (size_t)v * c->count + i, why, len, v);
            break;
        default:
            bad = check_elem(c, n, out, i, all, n, i, why, len, v);
            break;
        }
        if (bad)
            return 1;
    }
    return 0;
}

static int check(const struct rank_bufs *b, int n, const struct rt_case *c, char *why,
                 size_t len)
{
    for (int v = 0; v < n; v++)
        if (check_rank(&b[v], v, n, c, why, len))
            return 1;
    return 0;
}

static void run_bufs(blinkComm_t *comms, int n, const struct rt_case *c,
                     const struct rank_bufs *b, struct job *jobs)
{
    for (int v = 0; v < n; v++) {
        jobs[v] = (struct job){c, b[v].send, b[v].recv, comms[v], NULL, blinkSuccess, ""};
        if (c->streams)
            blinkHostStreamCreate(&jobs[v].stream);
    }
    run_jobs(jobs, n, c);
    for (int v = 0; v < n; v++)
        if (jobs[v].stream)
            blinkHostStreamDestroy(jobs[v].stream);
}

int rt_run_check(blinkComm_t *comms, int n, const struct rt_case *c, char *why, size_t len)
{
    struct rank_bufs *b = setup(n, c);
    struct job *jobs = calloc((size_t)n, sizeof *jobs);
    run_bufs(comms, n, c, b, jobs);
    int bad = 0;
    for (int v = 0; v < n && !bad; v++)
        if (jobs[v].res != blinkSuccess) {
            snprintf(why, len, "rank %d: result %d: %s", v, jobs[v].res, jobs[v].msg);
            bad = 1;
        }
    if (!bad)
        bad = check(b, n, c, why, len);
    teardown(b, n, c);
    free(jobs);
    return bad;
}

int rt_rank_run_check(blinkComm_t comm, int rank, int n, const struct rt_case *c, char *why,
                      size_t len)
{
    struct rank_bufs b;
    setup_rank(&b, rank, n, c);
    struct job j = {c, b.send, b.recv, comm, NULL, blinkSuccess, ""};
    if (c->streams)
        blinkHostStreamCreate(&j.stream);
    /* One rank of a group is a group of one call; otherwise this thread is the rank's. */
    if (c->style == RT_GROUP)
        run_jobs(&j, 1, c);
    else
        job_main(&j);
    if (j.stream)
        blinkHostStreamDestroy(j.stream);
    int bad = 0;
    if (j.res != blinkSuccess) {
        snprintf(why, len, "rank %d: result %d: %s", rank, j.res, j.msg);
        bad = 1;
    }
    if (!bad)
        bad = check_rank(&b, rank, n, c, why, len);
    teardown_rank(&b);
    return bad;
}

void rt_run(blinkComm_t *comms, int n, const struct rt_case *c, blinkResult_t *res,
            char (*msgs)[512])
{
    struct rank_bufs *b = setup(n, c);
    struct job *jobs = calloc((size_t)n, sizeof *jobs);
    run_bufs(comms, n, c, b, jobs);
    for (int v = 0; v < n; v++) {
        res[v] = jobs[v].res;
        if (msgs)
            snprintf(msgs[v], sizeof msgs[v], "%s", jobs[v].msg);
    }
    teardown(b, n, c);
    free(jobs);
}

/* ------------------------------------------------------------------ the down slots */

#define SLOT_POISON 0x5A

long rt_down_slot_writes(blinkComm_t *comms, int n, const struct rt_case *c, char *why,
                         size_t len)
{
    for (int v = 0; v < n; v++) {
        const struct bk_layout *L = &comms[v]->layout;
        int q = comms[v]->prank;
        memset(comms[v]->peer[q].seg + L->slots_off[q], SLOT_POISON,
               L->seg_bytes[q] - L->slots_off[q]);
    }
    if (rt_run_check(comms, n, c, why, len) != 0)
        return -1;
    long changed = 0;
    for (int v = 0; v < n; v++) {
        blinkComm_t m = comms[v];
        int root = bk_is_rooted(c->coll) ? m->plan_of[c->root] : -1;
        const struct blink_plan_schedule *sch = bk_schedule(m->plan, c->coll, root);
        const struct bk_roleset *set = &m->sets[BK_SETS * (sch - m->plan->schedules)];
        for (int ti = 0; ti < set->ntrees; ti++)
            for (int k = 0; k < BK_SLOTS; k++) {
                const unsigned char *s =
                    m->peer[m->prank].seg + bk_off_down_slot(&set->lay, m->prank, ti, k);
                for (size_t i = 0; i < set->lay.slot_bytes; i++)
                    changed += s[i] != SLOT_POISON;
            }
    }
    return changed;
}
