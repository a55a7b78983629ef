/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * perf_ranks.c - blink-perf's per-rank work, the same in every mode (perf.h): the backend's memory and
 * streams, the checked values and their reference, one rank's calls, filling and checking its
 * buffers, and timing a half-row (issued calls, or CUDA graphs replayed).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fork; users build these files on their own */
#define _DEFAULT_SOURCE         /* MAP_ANONYMOUS */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef BLINK_PERF_MPI
#include <mpi.h>
#endif


#include "perf.h"

/* ---------------------------------------------------------------- the backend's memory */

#ifdef BLINK_BACKEND_CUDA
static int dev_alloc(int dev, size_t bytes, void **p)
{
    return cudaSetDevice(dev) == cudaSuccess && cudaMalloc(p, bytes ? bytes : 1) == cudaSuccess;
}
static void dev_free(int dev, void *p)
{
    cudaSetDevice(dev);
    cudaFree(p);
}
static int dev_put(int dev, void *dst, const void *src, size_t bytes)
{
    return cudaSetDevice(dev) == cudaSuccess &&
           cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) == cudaSuccess;
}
static int dev_get(int dev, void *dst, const void *src, size_t bytes)
{
    return cudaSetDevice(dev) == cudaSuccess &&
           cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
}
static int stream_new(int dev, blinkStream_t *s)
{
    return cudaSetDevice(dev) == cudaSuccess && cudaStreamCreate(s) == cudaSuccess;
}
static int stream_sync(blinkStream_t s) { return cudaStreamSynchronize(s) == cudaSuccess; }
static void stream_free(blinkStream_t s) { cudaStreamDestroy(s); }
/* A rank process runs on the device it plays (blinkCommInitRank takes the current one). */
int dev_select(int dev) { return cudaSetDevice(dev) == cudaSuccess; }
/* -G: a stream's captured work, made ready to replay. */
typedef cudaGraphExec_t replay_t;
static int capture_begin(int dev, blinkStream_t s)
{
    return cudaSetDevice(dev) == cudaSuccess &&
           cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess;
}
/* The capture ended (every begun one must end, even when a call in it failed); *g made when
 * keep. */
static int capture_end(int dev, blinkStream_t s, int keep, replay_t *g)
{
    cudaGraph_t graph = NULL;
    int ok = cudaSetDevice(dev) == cudaSuccess &&
             cudaStreamEndCapture(s, &graph) == cudaSuccess && graph;
    ok = ok && keep && cudaGraphInstantiate(g, graph, 0) == cudaSuccess;
    if (graph)
        cudaGraphDestroy(graph);
    return ok;
}
static int replay(int dev, replay_t g, blinkStream_t s)
{
    return cudaSetDevice(dev) == cudaSuccess && cudaGraphLaunch(g, s) == cudaSuccess;
}
static void replay_free(replay_t g) { cudaGraphExecDestroy(g); }
#else
static int dev_alloc(int dev, size_t bytes, void **p)
{
    (void)dev;
    *p = malloc(bytes ? bytes : 1);
    return *p != NULL;
}
static void dev_free(int dev, void *p)
{
    (void)dev;
    free(p);
}
static int dev_put(int dev, void *dst, const void *src, size_t bytes)
{
    (void)dev;
    memcpy(dst, src, bytes);
    return 1;
}
static int dev_get(int dev, void *dst, const void *src, size_t bytes)
{
    (void)dev;
    memcpy(dst, src, bytes);
    return 1;
}
static int stream_new(int dev, blinkStream_t *s)
{
    (void)dev;
    return blinkHostStreamCreate(s) == blinkSuccess;
}
static int stream_sync(blinkStream_t s) { return blinkHostStreamSynchronize(s) == blinkSuccess; }
static void stream_free(blinkStream_t s) { blinkHostStreamDestroy(s); }
/* -G: the host backend's streams capture nothing (the option parser notes -G and ignores it). */
typedef int replay_t;
static int capture_begin(int dev, blinkStream_t s) { (void)dev, (void)s; return 0; }
static int capture_end(int dev, blinkStream_t s, int keep, replay_t *g)
{
    (void)dev, (void)s, (void)keep, (void)g;
    return 0;
}
static int replay(int dev, replay_t g, blinkStream_t s) { (void)dev, (void)g, (void)s; return 0; }
static void replay_free(replay_t g) { (void)g; }
int dev_select(int dev)
{
    (void)dev; /* BLINK_DEVICE alone says which device the rank plays */
    return 1;
}
#endif

/* ---------------------------------------------------------------- values */

static uint16_t float_to_half(float f)
{
    /* Exact for the small integers used here (|v| < 2048). */
    if (f == 0)
        return 0;
    uint16_t sign = f < 0 ? 0x8000 : 0;
    double a = fabs((double)f);
    int e;
    double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    uint16_t exp = (uint16_t)(e - 1 + 15);
    uint16_t man = (uint16_t)((m * 2 - 1) * 1024 + 0.5);
    return (uint16_t)(sign | (uint16_t)(exp << 10) | man);
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16); /* exact for the small integers used here */
}

static double bf16_to_double(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The value rank r contributes at element i: small, and 1 or 2 for prod so products stay
 * powers of two that every type holds. */
static long value_of(const struct opts *o, int r, size_t i)
{
    if (o->op == blinkProd)
        return 1 + (long)((r + i) % 2);
    long v = (long)(((size_t)r * 7 + i * 13) % 17) - 8;
    int unsigned_type = o->type == blinkUint8 || o->type == blinkUint32 || o->type == blinkUint64;
    return unsigned_type ? v + 8 : v;
}

static void store(blinkDataType_t t, void *buf, size_t i, double v)
{
    char *p = (char *)buf + i * type_sizes[t];
    switch (t) {
    case blinkInt8: { int8_t x = (int8_t)(int64_t)v; memcpy(p, &x, 1); break; }
    case blinkUint8: { uint8_t x = (uint8_t)(int64_t)v; memcpy(p, &x, 1); break; }
    case blinkInt32: { int32_t x = (int32_t)(int64_t)v; memcpy(p, &x, 4); break; }
    case blinkUint32: { uint32_t x = (uint32_t)(int64_t)v; memcpy(p, &x, 4); break; }
    case blinkInt64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case blinkUint64: { uint64_t x = (uint64_t)(int64_t)v; memcpy(p, &x, 8); break; }
    case blinkFloat16: { uint16_t x = float_to_half((float)v); memcpy(p, &x, 2); break; }
    case blinkBfloat16: { uint16_t x = float_to_bf16((float)v); memcpy(p, &x, 2); break; }
    case blinkFloat32: { float x = (float)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

static double load(blinkDataType_t t, const void *buf, size_t i)
{
    const char *p = (const char *)buf + i * type_sizes[t];
    int8_t i8; uint8_t u8; int32_t i32; uint32_t u32; int64_t i64; uint64_t u64; uint16_t h;
    float f; double d;
    switch (t) {
    case blinkInt8: memcpy(&i8, p, 1); return i8;
    case blinkUint8: memcpy(&u8, p, 1); return u8;
    case blinkInt32: memcpy(&i32, p, 4); return i32;
    case blinkUint32: memcpy(&u32, p, 4); return u32;
    case blinkInt64: memcpy(&i64, p, 8); return (double)i64;
    case blinkUint64: memcpy(&u64, p, 8); return (double)u64;
    case blinkFloat16: memcpy(&h, p, 2); return half_to_double(h);
    case blinkBfloat16: memcpy(&h, p, 2); return bf16_to_double(h);
    case blinkFloat32: memcpy(&f, p, 4); return f;
    default: memcpy(&d, p, 8); return d;
    }
}

static int is_float(blinkDataType_t t)
{
    return t == blinkFloat16 || t == blinkBfloat16 || t == blinkFloat32 || t == blinkFloat64;
}

/* The reduction of element i over all ranks, as the datatype holds it. */
static double reduced(const struct opts *o, size_t i)
{
    double acc = (double)value_of(o, 0, i);
    for (int r = 1; r < o->ndev; r++) {
        double v = (double)value_of(o, r, i);
        switch (o->op) {
        case blinkProd: acc *= v; break;
        case blinkMax: acc = fmax(acc, v); break;
        case blinkMin: acc = fmin(acc, v); break;
        default: acc += v; break;
        }
    }
    if (o->op == blinkAvg)
        acc = is_float(o->type) ? acc / o->ndev : trunc(acc / o->ndev);
    /* Round-trip through the type: integer wrap-around and float rounding alike. */
    double one;
    store(o->type, &one, 0, acc);
    return load(o->type, &one, 0);
}

static int same(const struct opts *o, double got, double want)
{
    if (!is_float(o->type) || o->op != blinkAvg)
        return got == want;
    double tol = o->type == blinkFloat64 ? 1e-12 : o->type == blinkFloat32 ? 1e-6 : 1e-2;
    return fabs(got - want) <= tol * fmax(1, fabs(want));
}


/* ---------------------------------------------------------------- the ranks */




/* A step done: a call, or BEAT_ELEMS elements filled or checked. */
static void tick(const struct rank *k)
{
    if (k->beat)
        __atomic_add_fetch(k->beat, 1, __ATOMIC_RELAXED);
}

/* Elements per rank: sent and received. */
static void counts(const struct opts *o, size_t count, size_t *nsend, size_t *nrecv)
{
    size_t n = (size_t)o->ndev;
    *nsend = *nrecv = count;
    if (o->coll == C_ALLGATHER)
        *nrecv = count * n;
    if (o->coll == C_REDUCESCATTER)
        *nsend = count * n;
}

/* Enqueue rank k's call; in place, its buffers alias as NCCL specifies. */
static blinkResult_t issue(const struct opts *o, const struct rank *k, size_t count,
                           int in_place)
{
    size_t esz = type_sizes[o->type];
    void *recv = k->recv;
    const void *send = k->send;
    if (in_place) {
        recv = k->send;
        if (o->coll == C_ALLGATHER) /* NCCL: sendbuff = recvbuff + rank * sendcount */
            send = (char *)k->recv + (size_t)k->rank * count * esz, recv = k->recv;
        if (o->coll == C_REDUCESCATTER) /* recvbuff = sendbuff + rank * recvcount */
            recv = (char *)k->send + (size_t)k->rank * count * esz;
    }
    switch (o->coll) {
    case C_BROADCAST:
        return blinkBroadcast(send, recv, count, o->type, o->root, k->comm, k->stream);
    case C_REDUCE:
        return blinkReduce(send, recv, count, o->type, o->op, o->root, k->comm, k->stream);
    case C_ALLREDUCE:
        return blinkAllReduce(send, recv, count, o->type, o->op, k->comm, k->stream);
    case C_ALLGATHER:
        return blinkAllGather(send, recv, count, o->type, k->comm, k->stream);
    default:
        return blinkReduceScatter(send, recv, count, o->type, o->op, k->comm, k->stream);
    }
}

/* `calls` calls on every local rank, in one group (-m aggregates the timed ones so). */
static blinkResult_t issue_group(const struct opts *o, const struct local *l, size_t count,
                                 int in_place, int calls)
{
    blinkResult_t res = blinkGroupStart(), r2;
    for (int c = 0; res == blinkSuccess && c < calls; c++)
        for (int i = 0; res == blinkSuccess && i < l->n; i++)
            res = issue(o, &l->rank[i], count, in_place);
    r2 = blinkGroupEnd();
    return res != blinkSuccess ? res : r2;
}

/* Wait for everything issued on the local ranks' streams. */
static blinkResult_t sync_all(const struct local *l)
{
    blinkResult_t res = blinkSuccess;
    for (int i = 0; res == blinkSuccess && i < l->n; i++) {
        if (!stream_sync(l->rank[i].stream))
            res = blinkUnhandledCudaError;
        tick(&l->rank[i]);
    }
    return res;
}

/* One call on every local rank, in a group, and wait for all of them. */
static blinkResult_t launch(const struct opts *o, const struct local *l, size_t count,
                            int in_place)
{
    blinkResult_t res = issue_group(o, l, count, in_place, 1);
    return res != blinkSuccess ? res : sync_all(l);
}

/* Fill rank k's send buffer with its check values and poison its receive buffer. */
static int prepare(const struct opts *o, const struct rank *k, size_t count, int in_place,
                   void *host)
{
    size_t nsend, nrecv, esz = type_sizes[o->type];
    counts(o, count, &nsend, &nrecv);
    memset(host, 0xA5, nrecv * esz);
    if (!dev_put(k->dev, k->recv, host, nrecv * esz))
        return 0;
    for (size_t i = 0; i < nsend; i++) {
        store(o->type, host, i, (double)value_of(o, k->rank, i));
        if (i % BEAT_ELEMS == BEAT_ELEMS - 1)
            tick(k);
    }
    void *dst = k->send;
    if (in_place && o->coll == C_ALLGATHER)
        dst = (char *)k->recv + (size_t)k->rank * count * esz;
    return dev_put(k->dev, dst, host, nsend * esz);
}

/* Count the wrong elements of rank k's result (none to check off the root of reduce). */
static long wrong_elements(const struct opts *o, const struct rank *k, size_t count,
                           int in_place, void *host)
{
    size_t nsend, nrecv, esz = type_sizes[o->type];
    counts(o, count, &nsend, &nrecv);
    if (o->coll == C_REDUCE && k->rank != o->root)
        return 0;
    const void *res = in_place && o->coll != C_ALLGATHER ? k->send : k->recv;
    size_t n = o->coll == C_ALLGATHER ? nrecv : count, off = 0;
    if (in_place && o->coll == C_REDUCESCATTER)
        off = (size_t)k->rank * count;
    if (!dev_get(k->dev, host, (const char *)res + off * esz, n * esz))
        return (long)n;
    long wrong = 0;
    for (size_t i = 0; i < n; i++) {
        double want;
        switch (o->coll) {
        case C_BROADCAST: want = (double)value_of(o, o->root, i); break;
        case C_ALLGATHER: want = (double)value_of(o, (int)(i / count), i % count); break;
        case C_REDUCESCATTER: want = reduced(o, (size_t)k->rank * count + i); break;
        default: want = reduced(o, i); break;
        }
        double cast;
        store(o->type, &cast, 0, want);
        wrong += !same(o, load(o->type, host, i), load(o->type, &cast, 0));
        if (i % BEAT_ELEMS == BEAT_ELEMS - 1)
            tick(k);
    }
    return wrong;
}

double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}


/* -G: the -n timed iterations captured on every local rank's stream (one graph each), replayed
 * once untimed, then -G times timed; the mean time of a call, as measure's. 0 on a failure. */
static int measure_replays(const struct opts *o, const struct local *l, size_t count,
                           int in_place, double *us)
{
    replay_t g[MAX_RANKS];
    int begun = 0, made = 0, ok = 1;
    while (ok && begun < l->n)
        if ((ok = capture_begin(l->rank[begun].dev, l->rank[begun].stream)))
            begun++;
    for (int i = 0; ok && i < o->iters; i++)
        ok = issue_group(o, l, count, in_place, o->agg) == blinkSuccess;
    for (int i = 0; i < begun; i++) /* every begun capture ends, also after a failure */
        if (capture_end(l->rank[i].dev, l->rank[i].stream, ok && made == i, &g[made]))
            made++;
    ok = ok && made == l->n;
    double t0 = 0, issued = 0;
    for (int n = -1; ok && n < o->graphs; n++) { /* n = -1: the untimed replay */
        if (n == 0)
            t0 = now_us();
        for (int i = 0; ok && i < l->n; i++)
            ok = replay(l->rank[i].dev, g[i], l->rank[i].stream);
        if (ok && (n < 0 || o->blocking))
            ok = sync_all(l) == blinkSuccess;
    }
    issued = now_us();
    ok = ok && (o->blocking || sync_all(l) == blinkSuccess);
    double calls = (double)o->iters * o->agg * o->graphs;
    *us = ((o->cputime ? issued : now_us()) - t0) / (calls > 0 ? calls : 1);
    for (int i = 0; i < made; i++)
        replay_free(g[i]);
    return ok;
}

/* Half a row on the local ranks: check (-c times), warm up, then time -n iterations of -m
 * calls each, waiting for each (-z 1) or for the last (-z 0, nccl-tests' default), or (-G)
 * replay them; the time is a call's, to its end or (-C 1) to its issue. 0 when a call failed. */
int measure(const struct opts *o, const struct local *l, size_t count, int in_place,
                   struct half *h)
{
    h->wrong = 0;
    for (int c = 0; c < o->check; c++) {
        for (int i = 0; i < l->n; i++)
            if (!prepare(o, &l->rank[i], count, in_place, l->host))
                return 0;
        if (launch(o, l, count, in_place) != blinkSuccess)
            return 0;
        for (int i = 0; i < l->n; i++)
            h->wrong += wrong_elements(o, &l->rank[i], count, in_place, l->host);
    }
    for (int i = 0; i < o->warmup; i++)
        if (launch(o, l, count, in_place) != blinkSuccess)
            return 0;
    if (o->graphs > 0)
        return measure_replays(o, l, count, in_place, &h->us);
    double t0 = now_us();
    for (int i = 0; i < o->iters; i++)
        if (issue_group(o, l, count, in_place, o->agg) != blinkSuccess ||
            (o->blocking && sync_all(l) != blinkSuccess))
            return 0;
    double issued = now_us();
    if (!o->blocking && sync_all(l) != blinkSuccess)
        return 0;
    double calls = (double)o->iters * o->agg;
    h->us = ((o->cputime ? issued : now_us()) - t0) / (calls > 0 ? calls : 1);
    return 1;
}

/* A rank's buffer: with -R, memory other processes can map (blinkMemAlloc: on CUDA on the
 * rank's device, with its IPC handle). */
static int buf_alloc(const struct opts *o, int dev, size_t bytes, void **p)
{
    if (!o->reg)
        return dev_alloc(dev, bytes, p);
#ifdef BLINK_BACKEND_CUDA
    if (cudaSetDevice(dev) != cudaSuccess)
        return 0;
#endif
    return blinkMemAlloc(p, bytes) == blinkSuccess;
}
static void buf_free(const struct opts *o, int dev, void *p)
{
    if (!o->reg) {
        dev_free(dev, p);
        return;
    }
#ifdef BLINK_BACKEND_CUDA
    cudaSetDevice(dev);
#endif
    blinkMemFree(p);
}

/* Each local rank's device, buffers and stream, and the host copy; 0 when one is missing. */
int local_open(const struct opts *o, struct local *l)
{
    size_t biggest = o->max_bytes + (size_t)o->ndev * 8; /* -d all: the widest type */
    int ok = (l->host = malloc(biggest)) != NULL;
    for (int i = 0; ok && i < l->n; i++) {
        struct rank *k = &l->rank[i];
        ok = blinkCommCuDevice(k->comm, &k->dev) == blinkSuccess &&
             buf_alloc(o, k->dev, biggest, &k->send) && buf_alloc(o, k->dev, biggest, &k->recv) &&
             stream_new(k->dev, &k->stream);
        for (int b = 0; ok && o->reg && b < 2; b++)
            ok = blinkCommRegister(k->comm, b ? k->recv : k->send, biggest, &k->reg[b]) ==
                 blinkSuccess;
    }
    return ok;
}

void local_close(const struct opts *o, struct local *l)
{
    for (int i = 0; i < l->n; i++) {
        struct rank *k = &l->rank[i];
        if (k->stream)
            stream_free(k->stream);
        for (int b = 0; b < 2; b++)
            if (k->reg[b])
                blinkCommDeregister(k->comm, k->reg[b]);
        if (k->send)
            buf_free(o, k->dev, k->send);
        if (k->recv)
            buf_free(o, k->dev, k->recv);
        if (k->comm)
            blinkCommDestroy(k->comm);
    }
    free(l->host);
}
