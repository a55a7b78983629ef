/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * blink_perf.c - blink-perf, the nccl-tests of blinkc: times one collective of a generated
 * source over a range of sizes, out of place and in place, and checks every element.
 *
 *   blink-perf -b 8 -e 128M -f 2                      (all_reduce_perf's flags and defaults)
 *   blink-perf --collective all_gather --devices 0,2,3 --procs -b 8 -e 1M -f 4
 *   mpirun -np 8 ... blink-perf --mpi --collective allreduce -b 8 -e 16M -f 4
 *
 * It takes nccl-tests' flags with their meanings (usage() has the table; those that cannot
 * apply to the runtime are accepted with a note on stderr), the collective in either spelling
 * (allreduce, all_reduce; also from argv[0], as all_reduce_perf), devices as lists and ranges
 * in any order, and by default the ranks and devices of the largest plan it links. Its columns
 * and footer are nccl-tests' (size, count, type, redop, root, time, algbw, busbw, #wrong; "Out
 * of bounds values", "Avg bus bandwidth"). It links one generated source and one runtime
 * backend (the in-tree build also a tuned plan it puts first: BLINK_PERF_TUNED below), and
 * runs the ranks one of three ways:
 *  - threads (default): blinkCommInitAll's way, and every rank driven from this thread between
 *    blinkGroupStart and blinkGroupEnd, as nccl-tests does with -t 1 -g N;
 *  - processes (--procs), as a job launcher runs them: blinkGetUniqueId here, then one child
 *    per rank plays its device (BLINK_DEVICE; on CUDA also the current device), joins with
 *    blinkCommInitRank, allocates only its own buffers and times its own calls. Children send
 *    their times and wrong counts up a pipe; this process prints the ranks' time (-a) and every
 *    rank's wrong elements. A child that dies, or no rank progressing for BLINK_TIMEOUT_S plus
 *    a margin, makes it kill the others: a run never hangs;
 *  - MPI (--mpi, only where the build defines BLINK_PERF_MPI): this process is one rank of an
 *    mpirun job, as a cluster plan runs across servers. MPI rank 0 makes the unique id and
 *    broadcasts it, every rank joins with blinkCommInitRank (its server: BLINK_SERVER, else
 *    the host name; its device: BLINK_DEVICE, or its entry of --devices), and after each
 *    half-row MPI_Reduce brings the ranks' time (-a) and the sum of wrong elements to rank 0,
 *    which prints. Every rank exits with the job's worst status (MPI_Allreduce) and calls
 *    MPI_Finalize.
 * All ways run the same per-rank code (fill, call, check), so they check the same values.
 * Exit status: 0 when every element was right, 1 when some were wrong or a call or a rank
 * failed, 2 for a usage error.
 *
 * Checked values are small integers (and powers of two for prod), so every datatype holds every
 * partial result exactly and the reference below needs no tolerance except for avg of floats.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fork; users build this file on its own */
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

#include "blink.h"
#include "blink_plan.h" /* blinkrtCommStats */
#include "hbm_bound.h"

#ifdef BLINK_BACKEND_CUDA
#define BACKEND_NAME "cuda"
#else
#define BACKEND_NAME "host"
#endif

#define MAX_RANKS 64

enum coll { C_BROADCAST, C_REDUCE, C_ALLREDUCE, C_ALLGATHER, C_REDUCESCATTER, C_COUNT };
static const char *const coll_names[C_COUNT] = {"broadcast", "reduce", "allreduce", "allgather",
                                                "reducescatter"};
static const char *const type_names[blinkNumTypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16"};
static const size_t type_sizes[blinkNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
static const char *const op_names[blinkNumOps] = {"sum", "prod", "max", "min", "avg"};

struct opts {
    enum coll coll;
    size_t min_bytes, max_bytes, step_bytes;
    double factor;             /* -f: above 1, multiply; 1 (default): add -i */
    int check;                 /* -c: checked calls per half-row (0: none) */
    int iters, warmup, root, ndev;
    int devices[MAX_RANKS], ndevices; /* --devices: the job's devices (0: 0..ndev-1) */
    blinkDataType_t type;
    blinkRedOp_t op;
    int type_all, op_all, root_all; /* -d all, -o all, -r all: a sweep for each */
    int nthreads, ngpus;       /* -t, -g: a process's ranks are t x g (nccl-tests) */
    int count_given;           /* -t or -g was given */
    int agg;                   /* -m: calls per timed iteration, in one group */
    long cycles;               /* -N: sweeps of every size (0: until killed) */
    int blocking;              /* -z 1: wait for each timed call; 0: for the last */
    int cputime;               /* -C 1: time the issuing of the calls, not their end */
    int graphs;                /* -G N (CUDA): the timed calls captured in a CUDA graph per
                                * rank, replayed N times; 0: issued one by one */
    int average;               /* -a: the ranks' time: 0 rank 0's, 1 mean, 2 min, 3 max */
    int procs;                 /* --procs: a process per rank instead of one thread for all */
    int reg;                   /* -R 1 or 2: buffers registered (blinkCommRegister), from
                                * blinkMemAlloc on the host backend */
    int mpi;                   /* --mpi: this process is one rank of an MPI job */
    int servers;               /* --mpi: the job's distinct servers, for the header */
    const struct blink_plan_library *lib; /* the plans init chooses from */
    double hbm_gbps;           /* --hbm-gbps: one GPU's copy rate, for the bound columns */
};

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
static int dev_select(int dev) { return cudaSetDevice(dev) == cudaSuccess; }
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
static int dev_select(int dev)
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

#define BEAT_ELEMS ((size_t)1 << 20) /* fill and check tell the parent they live this often */

/* One rank this process drives. */
struct rank {
    int rank, dev;              /* dev: the rank's device, as its communicator reports it */
    blinkComm_t comm;
    blinkStream_t stream;
    void *send, *recv;          /* device buffers */
    void *reg[2];               /* -R: send's and recv's registrations */
    unsigned long *beat;        /* processes: steps done, which the parent watches; else NULL */
};

/* The ranks this process drives: every rank (threads) or its own (processes). */
struct local {
    int n;
    struct rank rank[MAX_RANKS];
    void *host;                 /* host copy of a buffer, for filling and checking */
};

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

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* One half-row (out of place or in place): the mean time of a call, and the wrong elements. */
struct half {
    double us;
    long wrong;
};

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
static int measure(const struct opts *o, const struct local *l, size_t count, int in_place,
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

/* A rank's buffer: on the host backend with -R, memory other processes can map. */
static int buf_alloc(const struct opts *o, int dev, size_t bytes, void **p)
{
#ifndef BLINK_BACKEND_CUDA
    if (o->reg)
        return blinkMemAlloc(p, bytes) == blinkSuccess;
#endif
    (void)o;
    return dev_alloc(dev, bytes, p);
}
static void buf_free(const struct opts *o, int dev, void *p)
{
#ifndef BLINK_BACKEND_CUDA
    if (o->reg) {
        blinkMemFree(p);
        return;
    }
#endif
    (void)o;
    dev_free(dev, p);
}

/* Each local rank's device, buffers and stream, and the host copy; 0 when one is missing. */
static int local_open(const struct opts *o, struct local *l)
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

static void local_close(const struct opts *o, struct local *l)
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

/* ---------------------------------------------------------------- the table */

/* Where a half-row of combination c comes from: measured here (threads) or gathered from the
 * ranks (processes, MPI). 0 when a call or a rank failed. */
typedef int (*half_fn)(void *ctx, const struct opts *c, size_t count, int in_place,
                       struct half *h);
/* One row of the run: combination c at `bytes` (every mode sweeps the same rows). */
typedef int (*row_fn)(void *ctx, const struct opts *c, size_t bytes);

struct tally {
    long wrong;
    int rows;
    double busbw_sum;
};

/* The next size of the sweep into *bytes; 0 after the last. */
static int next_size(const struct opts *o, size_t *bytes)
{
    size_t next = o->factor > 1 ? (size_t)((double)*bytes * o->factor) : *bytes + o->step_bytes;
    if (next <= *bytes || next > o->max_bytes)
        return 0; /* a zero size never grows by a factor */
    *bytes = next;
    return 1;
}

/* A row's count per call and its size as shown (whole gathered or scattered buffer). */
static void row_size(const struct opts *o, size_t bytes, size_t *count, size_t *shown)
{
    size_t esz = type_sizes[o->type], n = (size_t)o->ndev;
    int per_rank = o->coll == C_ALLGATHER || o->coll == C_REDUCESCATTER;
    *count = bytes / esz / (per_rank ? n : 1);
    *shown = *count * esz * (per_rank ? n : 1);
}

static int is_rooted(const struct opts *o) { return o->coll == C_BROADCAST || o->coll == C_REDUCE; }
static int has_op(const struct opts *o) { return o->coll != C_BROADCAST && o->coll != C_ALLGATHER; }

/* The run's (datatype, op, root) combinations: the one given, or, where -d, -o or -r said
 * all, every type, every op (of a collective that has one) and every root (of a rooted one),
 * in nccl-tests' order (types, then ops, then roots). Combination k into *c. */
static int combos(const struct opts *o)
{
    return (o->type_all ? blinkNumTypes : 1) * (o->op_all && has_op(o) ? blinkNumOps : 1) *
           (o->root_all && is_rooted(o) ? o->ndev : 1);
}
static void combo(const struct opts *o, int k, struct opts *c)
{
    int nroots = o->root_all && is_rooted(o) ? o->ndev : 1;
    int nops = o->op_all && has_op(o) ? blinkNumOps : 1;
    *c = *o;
    if (nroots > 1)
        c->root = k % nroots;
    if (nops > 1)
        c->op = (blinkRedOp_t)(k / nroots % nops);
    if (o->type_all)
        c->type = (blinkDataType_t)(k / nroots / nops);
}

/* Every row of the run, in one order for every mode: -N cycles (0: until killed) of every
 * combination of every size. 0 when a row failed. */
static int sweep(const struct opts *o, row_fn row, void *ctx)
{
    for (long cycle = 0; o->cycles == 0 || cycle < o->cycles; cycle++)
        for (int k = 0; k < combos(o); k++) {
            struct opts c;
            size_t bytes = o->min_bytes;
            combo(o, k, &c);
            do {
                if (!row(ctx, &c, bytes))
                    return 0;
            } while (next_size(o, &bytes));
        }
    return 1;
}

/* -a, as nccl-tests reports a time across ranks: folding rank r's time t into acc (of n
 * ranks, in rank order) gives rank 0's (0), the mean (1), the least (2) or the most (3). */
static double ranks_time(int average, double acc, double t, int r, int n)
{
    switch (average) {
    case 0: return r == 0 ? t : acc;
    case 2: return r == 0 ? t : fmin(acc, t);
    case 3: return r == 0 ? t : fmax(acc, t);
    default: return acc + t / n;
    }
}

static double bus_factor(const struct opts *o)
{
    double n = o->ndev;
    switch (o->coll) {
    case C_ALLREDUCE: return 2 * (n - 1) / n;
    case C_ALLGATHER:
    case C_REDUCESCATTER: return (n - 1) / n;
    default: return 1;
    }
}

/* "from 128 KiB" */
static const char *size_text(size_t b, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (u < 3 && b >= 1024 && b % 1024 == 0)
        b /= 1024, u++;
    snprintf(buf, len, "%zu %s", b, unit[u]);
    return buf;
}

/* The plan init will choose for the run's devices (on one server; a cluster library's only
 * plan), or NULL where the header cannot tell. */
static const struct blink_plan *run_plan(const struct opts *o)
{
    const struct blink_plan_library *lib = o->lib;
    if (!lib || lib->nplans < 1)
        return NULL;
    if (lib->nplans == 1 || o->mpi)
        return lib->nplans == 1 ? lib->plans[0] : NULL;
    for (int k = 0; k < lib->nplans; k++) {
        const struct blink_plan *p = lib->plans[k];
        int same = p->nranks == o->ndev && p->devices && p->nservers <= 1;
        for (int r = 0; same && r < o->ndev; r++) {
            int dev = o->ndevices ? o->devices[r] : r, found = 0;
            for (int q = 0; q < p->nranks && !found; q++)
                found = p->devices[q] == dev;
            same = found;
        }
        if (same)
            return p;
    }
    return NULL;
}

/* The plan's per-size choice for the collective (its first root), as the runtime reads it. */
static const int plan_coll[C_COUNT] = {BLINK_PLAN_BROADCAST, BLINK_PLAN_REDUCE,
                                       BLINK_PLAN_ALLREDUCE, BLINK_PLAN_ALLGATHER,
                                       BLINK_PLAN_REDUCESCATTER};

static void print_plan(const struct opts *o, const struct blinkrt_stats *st)
{
    /* The plan init chose; a library by classes holds none with the run's own devices. */
    const struct blink_plan *p = o->lib && st->plan_index >= 0 && st->plan_index < o->lib->nplans
                                 ? o->lib->plans[st->plan_index] : run_plan(o);
    if (!p)
        return;
    const struct blink_plan_schedule *sch = NULL;
    for (int i = 0; i < p->nschedules && !sch; i++)
        if (p->schedules[i].coll == plan_coll[o->coll])
            sch = &p->schedules[i];
    printf("#  Plan: '%s' (fingerprint %s), %d ranks; %s", p->topology ? p->topology : "?",
           p->fingerprint ? p->fingerprint : "?", p->nranks, sch ? "" : "no schedule\n");
    if (sch && sch->nranges < 1 && sch->root_relabel)
        printf("no per-size choice (untuned): the trees at every size\n");
    else if (sch && sch->nranges < 1)
        printf("no per-size choice (untuned): %d tree%s at every size\n", sch->ntrees,
               sch->ntrees == 1 ? "" : "s");
    for (int i = 0; sch && i < sch->nranges; i++) {
        char from[32], chunk[32];
        const struct blink_plan_range *rg = &sch->ranges[i];
        printf("%s%s from %s (%s chunks)%s", i ? ", " : "per-size choice: ",
               rg->algo == BLINK_PLAN_RINGS ? "rings"
               : rg->proto == BLINK_PLAN_LL ? "trees LL"
                                             : "trees",
               size_text(rg->min_bytes, from, sizeof from),
               size_text(rg->chunk_bytes, chunk, sizeof chunk), i + 1 < sch->nranges ? "" : "\n");
    }
}

/* The header: the run, how the ranks run and what one holds (rank 0's), the plan, the
 * columns. */
static void print_header(const struct opts *o, const struct blinkrt_stats *st)
{
    char step[48];
    if (o->factor > 1)
        snprintf(step, sizeof step, "%g(factor)", o->factor);
    else
        snprintf(step, sizeof step, "%zu(bytes)", o->step_bytes);
    printf("# blink-perf: %s, %d ranks, %s backend, minBytes %zu maxBytes %zu step: %s "
           "warmup iters: %d iters: %d agg iters: %d validation: %d\n",
           coll_names[o->coll], o->ndev, BACKEND_NAME, o->min_bytes, o->max_bytes, step,
           o->warmup, o->iters, o->agg, o->check);
    if (o->blocking)
        printf("# Blocking Enabled: wait for completion after each collective\n");
    printf("#\n");
    if (o->mpi)
        printf("#  Ranks as MPI processes: %d (one per rank, %d server%s)\n", o->ndev,
               o->servers, o->servers == 1 ? "" : "s");
    else
        printf("#  Ranks as %s: %d (%s)\n", o->procs ? "processes" : "threads", o->ndev,
               o->procs ? "one process per rank" : "one thread drives all, grouped");
    if (o->reg)
        printf("#  Buffers registered (-R %d)%s\n", o->reg,
               strcmp(BACKEND_NAME, "host") == 0 ? ", from blinkMemAlloc" : "");
    if (o->graphs > 0)
        printf("#  CUDA graphs: each rank's %d timed iterations captured in one graph, replayed "
               "%d times\n", o->iters, o->graphs);
    printf("#  Per rank (rank 0): streams %d, threads %d, staging bytes %zu\n", st->streams,
           st->threads, st->staging_bytes);
    print_plan(o, st);
    if (o->hbm_gbps > 0)
        printf("#  One-GPU bound (--hbm-gbps %g): each call moves %g (in place %g) bytes per byte "
               "through device memory, so algbw <= %.2f (%.2f) GB/s; %%bound is algbw over it\n",
               o->hbm_gbps, hbm_bytes_per_byte(plan_coll[o->coll], o->ndev, 0),
               hbm_bytes_per_byte(plan_coll[o->coll], o->ndev, 1),
               o->hbm_gbps / hbm_bytes_per_byte(plan_coll[o->coll], o->ndev, 0),
               o->hbm_gbps / hbm_bytes_per_byte(plan_coll[o->coll], o->ndev, 1));
    const char *t = o->cputime ? "cputime" : "time";
    printf("#\n#                                                        out-of-place            "
           "           in-place\n");
    printf("#       size         count      type   redop    root  %7s   algbw   busbw  #wrong"
           "  %7s   algbw   busbw  #wrong\n", t, t);
    printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
           "     (us)  (GB/s)  (GB/s)\n");
}

struct print_ctx {
    half_fn half;
    void *ctx;
    struct tally *t;
};

/* A row as nccl-tests prints it, each half from half(); 0 when one failed (the row ends). */
static int print_row(void *ctx, const struct opts *c, size_t bytes)
{
    const struct print_ctx *p = ctx;
    size_t count, shown, n = (size_t)c->ndev;
    double bound[2] = {0, 0};
    row_size(c, bytes, &count, &shown);
    printf("%12zu  %12zu  %8s  %6s  %6d", shown,
           c->coll == C_ALLGATHER || c->coll == C_REDUCESCATTER ? count * n : count,
           type_names[c->type], has_op(c) ? op_names[c->op] : "none", is_rooted(c) ? c->root : -1);
    for (int in_place = 0; in_place < 2; in_place++) {
        struct half h;
        if (!p->half(p->ctx, c, count, in_place, &h)) {
            printf("\n");
            fflush(stdout);
            return 0;
        }
        double algbw = h.us > 0 ? (double)shown / h.us / 1e3 : 0;
        double busbw = algbw * bus_factor(c);
        p->t->busbw_sum += busbw / 2;
        p->t->wrong += h.wrong;
        printf("  %8.2f  %6.2f  %6.2f  %6ld", h.us, algbw, busbw, h.wrong);
        double f = hbm_bytes_per_byte(plan_coll[c->coll], c->ndev, in_place);
        if (c->hbm_gbps > 0 && f > 0)
            bound[in_place] = 100 * algbw / (c->hbm_gbps / f);
    }
    if (c->hbm_gbps > 0)
        printf("  %%bound %5.1f %5.1f", bound[0], bound[1]);
    printf("\n");
    fflush(stdout);
    p->t->rows++;
    return 1;
}

/* Every row of the run; 0 when one failed. */
static int print_rows(const struct opts *o, half_fn half, void *ctx, struct tally *t)
{
    struct print_ctx p = {half, ctx, t};
    return sweep(o, print_row, &p);
}

static void print_footer(const struct tally *t, int ok)
{
    printf("# Out of bounds values : %ld %s\n", t->wrong, t->wrong == 0 && ok ? "OK" : "FAILED");
    printf("# Avg bus bandwidth    : %g \n#\n", t->rows ? t->busbw_sum / t->rows : 0);
}

/* ---------------------------------------------------------------- ranks as threads */

struct threads_ctx {
    const struct opts *o;
    const struct local *l;
};

static int threads_half(void *ctx, const struct opts *o, size_t count, int in_place,
                        struct half *h)
{
    const struct threads_ctx *c = ctx;
    return measure(o, c->l, count, in_place, h);
}

/* Every rank in this process, each call issued for all of them from this thread. */
static int run_threads(const struct opts *o)
{
    blinkComm_t comms[MAX_RANKS];
    blinkResult_t res = blinkrtCommInitAllFrom(o->lib, comms, o->ndev,
                                               o->ndevices ? o->devices : NULL);
    if (res != blinkSuccess) {
        fprintf(stderr, "blink-perf: blinkCommInitAll: %s: %s\n", blinkGetErrorString(res),
                blinkGetLastError(NULL));
        return 1;
    }
    struct local l;
    memset(&l, 0, sizeof l);
    l.n = o->ndev;
    for (int r = 0; r < l.n; r++) {
        l.rank[r].rank = r;
        l.rank[r].comm = comms[r];
    }
    struct blinkrt_stats st;
    int ok = local_open(o, &l) && blinkrtCommStats(comms[0], &st) == blinkSuccess;
    struct tally t = {0, 0, 0};
    if (!ok) {
        fprintf(stderr, "blink-perf: cannot allocate buffers or streams\n");
    } else {
        print_header(o, &st);
        struct threads_ctx c = {o, &l};
        if (!(ok = print_rows(o, threads_half, &c, &t)))
            fprintf(stderr, "blink-perf: %s\n", blinkGetLastError(NULL));
        print_footer(&t, ok);
    }
    local_close(o, &l);
    return ok && t.wrong == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------- ranks as processes */

/* No rank progressing for BLINK_TIMEOUT_S (when every rank's own wait gives up) and this
 * much more means a rank hangs where the runtime cannot see it. */
#define DEFAULT_TIMEOUT_S 600.0 /* the runtime's, blink(3) */
#define MARGIN_S 10.0
#define POLL_MS 100

/* The children, as the parent sees them. */
struct kids {
    int n;
    pid_t pid[MAX_RANKS];
    int fd[MAX_RANKS];          /* read end of each child's pipe */
    int status[MAX_RANKS];      /* wait status, once reaped */
    int reaped[MAX_RANKS];
    int killed;                 /* the parent killed them: a crash or a stall */
    unsigned long *beat;        /* [MAX_RANKS], shared: each rank's steps done */
    unsigned long seen;         /* the sum of beat when it last moved */
    double moved_s, deadline_s;
};

static int write_all(int fd, const void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t w = write(fd, (const char *)buf + done, len - done);
        if (w < 0 && errno != EINTR)
            return 0;
        done += w > 0 ? (size_t)w : 0;
    }
    return 1;
}

struct child_ctx {
    const struct local *l;
    int fd;
};

/* A row for this rank alone: each half's time and wrong count up the pipe. */
static int child_row(void *ctx, const struct opts *c, size_t bytes)
{
    const struct child_ctx *k = ctx;
    size_t count, shown;
    row_size(c, bytes, &count, &shown);
    for (int in_place = 0; in_place < 2; in_place++) {
        struct half h;
        if (!measure(c, k->l, count, in_place, &h) || !write_all(k->fd, &h, sizeof h))
            return 0;
    }
    return 1;
}

/* Every row for this rank alone. */
static int child_rows(const struct opts *o, const struct local *l, int fd)
{
    struct child_ctx k = {l, fd};
    return sweep(o, child_row, &k);
}

/* The physical device rank r runs on: its entry of BLINK_DEVICE_MAP (as blinkCommInitAll reads
 * it, so that ranks of every mode can share one GPU), else the device it plays. */
static int run_device(int r, int dev)
{
    const char *p = getenv("BLINK_DEVICE_MAP");
    for (int i = 0; p && *p; i++) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1 << 20)
            break;
        if (i == r)
            return (int)v;
        p = *end == ',' ? end + 1 : NULL;
    }
    return dev;
}

/* Child r: play its device, join the others, send its stats, then every row. Exit status. */
static int child(const struct opts *o, blinkUniqueId id, int r, int fd, unsigned long *beat)
{
    int dev = o->ndevices ? o->devices[r] : r;
    char env[16];
    snprintf(env, sizeof env, "%d", dev);
    struct local l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.rank[0].rank = r;
    l.rank[0].beat = beat;
    blinkResult_t res = setenv("BLINK_DEVICE", env, 1) == 0 && dev_select(run_device(r, dev))
                        ? blinkrtCommInitRankFrom(o->lib, &l.rank[0].comm, o->ndev, id, r)
                        : blinkSystemError;
    if (res != blinkSuccess) {
        fprintf(stderr, "blink-perf: rank %d: blinkCommInitRank: %s: %s\n", r,
                blinkGetErrorString(res), blinkGetLastError(NULL));
        return 1;
    }
    struct blinkrt_stats st;
    int ok = local_open(o, &l) && blinkrtCommStats(l.rank[0].comm, &st) == blinkSuccess;
    if (!ok)
        fprintf(stderr, "blink-perf: rank %d: cannot allocate buffers or a stream\n", r);
    else if (!(ok = write_all(fd, &st, sizeof st) && child_rows(o, &l, fd)))
        fprintf(stderr, "blink-perf: rank %d: %s\n", r, blinkGetLastError(NULL));
    local_close(o, &l);
    return ok ? 0 : 1;
}

/* SIGKILL every child still running and reap it. */
static void kids_kill(struct kids *k)
{
    for (int r = 0; r < k->n; r++)
        if (!k->reaped[r])
            kill(k->pid[r], SIGKILL);
    for (int r = 0; r < k->n; r++)
        if (!k->reaped[r] && waitpid(k->pid[r], &k->status[r], 0) == k->pid[r])
            k->reaped[r] = 1;
    k->killed = 1;
}

/* Reap the children that ended; a crash, or no step anywhere past the deadline, kills the
 * rest. 0 once they are killed. */
static int kids_watch(struct kids *k)
{
    for (int r = 0; r < k->n; r++) {
        if (k->reaped[r] || waitpid(k->pid[r], &k->status[r], WNOHANG) != k->pid[r])
            continue;
        k->reaped[r] = 1;
        if (WIFSIGNALED(k->status[r])) {
            int sig = WTERMSIG(k->status[r]);
            fprintf(stderr, "blink-perf: rank %d (pid %d) died of signal %d (%s); killing the "
                    "other ranks\n", r, (int)k->pid[r], sig, strsignal(sig));
            kids_kill(k);
            return 0;
        }
    }
    unsigned long sum = 0;
    for (int r = 0; r < k->n; r++)
        sum += __atomic_load_n(&k->beat[r], __ATOMIC_RELAXED);
    double now = now_us() * 1e-6;
    if (sum != k->seen) {
        k->seen = sum;
        k->moved_s = now;
    } else if (now - k->moved_s > k->deadline_s) {
        fprintf(stderr, "blink-perf: no rank progressed for %g s (BLINK_TIMEOUT_S + %g s); "
                "killing the ranks\n", k->deadline_s, MARGIN_S);
        kids_kill(k);
        return 0;
    }
    return 1;
}

/* Read len bytes from child r, watching all of them meanwhile; 0 on its end or a kill. */
static int kid_read(struct kids *k, int r, void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        struct pollfd p = {k->fd[r], POLLIN, 0};
        int ready = poll(&p, 1, POLL_MS);
        if (ready < 0 && errno != EINTR)
            return 0;
        if (ready <= 0) {
            if (!kids_watch(k))
                return 0;
            continue;
        }
        ssize_t got = read(k->fd[r], (char *)buf + done, len - done);
        if (got == 0 || (got < 0 && errno != EINTR))
            return 0;
        done += got > 0 ? (size_t)got : 0;
    }
    return 1;
}

/* Wait for every child to exit (still killing on a crash or a stall); 1 when all exited 0. */
static int kids_end(struct kids *k)
{
    for (int left = 1; left;) {
        if (!kids_watch(k))
            break;
        left = 0;
        for (int r = 0; r < k->n; r++)
            left |= !k->reaped[r];
        if (left)
            nanosleep(&(struct timespec){0, POLL_MS * 1000000L}, NULL);
    }
    int ok = !k->killed;
    for (int r = 0; r < k->n; r++) {
        ok = ok && WIFEXITED(k->status[r]) && WEXITSTATUS(k->status[r]) == 0;
        close(k->fd[r]);
    }
    munmap(k->beat, sizeof *k->beat * MAX_RANKS);
    return ok;
}

/* How long no rank may progress: BLINK_TIMEOUT_S (as the runtime reads it) plus the margin. */
static double deadline_s(void)
{
    const char *env = getenv("BLINK_TIMEOUT_S");
    double t = env ? strtod(env, NULL) : 0;
    return (t > 0 && t <= 1e9 ? t : DEFAULT_TIMEOUT_S) + MARGIN_S;
}

/* Fork child r with a pipe to it; 0 when that fails. */
static int kid_spawn(const struct opts *o, blinkUniqueId id, struct kids *k, int r)
{
    int p[2];
    if (pipe(p) != 0)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        for (int q = 0; q < r; q++)
            close(k->fd[q]);
        close(p[0]);
        exit(child(o, id, r, p[1], &k->beat[r]));
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return 0;
    }
    k->pid[r] = pid;
    k->fd[r] = p[0];
    k->n = r + 1;
    return 1;
}

/* A child per rank, all with one id; 0 (and none left running) when one cannot start. */
static int kids_start(const struct opts *o, struct kids *k)
{
    memset(k, 0, sizeof *k);
    blinkUniqueId id;
    blinkResult_t res = blinkGetUniqueId(&id);
    if (res != blinkSuccess) {
        fprintf(stderr, "blink-perf: blinkGetUniqueId: %s: %s\n", blinkGetErrorString(res),
                blinkGetLastError(NULL));
        return 0;
    }
    k->beat = mmap(NULL, sizeof *k->beat * MAX_RANKS, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (k->beat == MAP_FAILED) {
        fprintf(stderr, "blink-perf: mmap: %s\n", strerror(errno));
        return 0;
    }
    k->deadline_s = deadline_s();
    k->moved_s = now_us() * 1e-6;
    fflush(stdout); /* the children must not print what is buffered here */
    fflush(stderr);
    for (int r = 0; r < o->ndev; r++)
        if (!kid_spawn(o, id, k, r)) {
            fprintf(stderr, "blink-perf: cannot start rank %d: %s\n", r, strerror(errno));
            kids_kill(k);
            kids_end(k);
            return 0;
        }
    return 1;
}

/* Half a row: every rank's, the slowest time and all wrong elements. */
static int procs_half(void *ctx, const struct opts *o, size_t count, int in_place,
                      struct half *h)
{
    struct kids *k = ctx;
    (void)count, (void)in_place; /* the children sweep the same rows in the same order */
    h->us = 0;
    h->wrong = 0;
    for (int r = 0; r < k->n; r++) {
        struct half one;
        if (!kid_read(k, r, &one, sizeof one))
            return 0;
        h->us = ranks_time(o->average, h->us, one.us, r, k->n);
        h->wrong += one.wrong;
    }
    return 1;
}

/* A process per rank; this one only prints what they send. */
static int run_procs(const struct opts *o)
{
    struct kids k;
    if (!kids_start(o, &k))
        return 1;
    struct blinkrt_stats st, other; /* every rank's says it joined; rank 0's is shown */
    int ok = kid_read(&k, 0, &st, sizeof st);
    for (int r = 1; ok && r < k.n; r++)
        ok = kid_read(&k, r, &other, sizeof other);
    int joined = ok;
    struct tally t = {0, 0, 0};
    if (joined) {
        print_header(o, &st);
        ok = print_rows(o, procs_half, &k, &t);
    }
    ok = kids_end(&k) && ok;
    if (joined)
        print_footer(&t, ok);
    return ok && t.wrong == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------- ranks as MPI processes */

#ifdef BLINK_PERF_MPI
struct mpi_ctx {
    const struct opts *o;
    const struct local *l;
    int me;                     /* this process's MPI rank, the communicator's rank too */
};

/* Half a row on this rank, then the job's: the slowest time and all wrong elements (on rank
 * 0). Every rank makes the same MPI calls whatever happened, and all learn whether a rank
 * failed: 0 then, on every rank. */
static int mpi_half(void *ctx, const struct opts *o, size_t count, int in_place,
                    struct half *h)
{
    const struct mpi_ctx *c = ctx;
    struct half mine = {0, 0};
    int bad = !measure(o, c->l, count, in_place, &mine), any = bad, size = 1;
    if (bad)
        fprintf(stderr, "blink-perf: rank %d: %s\n", c->me, blinkGetLastError(NULL));
    *h = mine;
    /* -a: rank 0's own time, or the job's sum (mean), least or most. */
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op = o->average == 2 ? MPI_MIN : o->average == 3 ? MPI_MAX : MPI_SUM;
    MPI_Reduce(&mine.us, &h->us, 1, MPI_DOUBLE, op, 0, MPI_COMM_WORLD);
    if (o->average == 0)
        h->us = mine.us;
    else if (o->average == 1)
        h->us /= size;
    MPI_Reduce(&mine.wrong, &h->wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return !any;
}

/* The sweep on a rank other than 0: the same halves in the same order, nothing printed. */
static int mpi_row(void *ctx, const struct opts *c, size_t bytes)
{
    size_t count, shown;
    row_size(c, bytes, &count, &shown);
    for (int in_place = 0; in_place < 2; in_place++) {
        struct half h;
        if (!mpi_half(ctx, c, count, in_place, &h))
            return 0;
    }
    return 1;
}

static int mpi_sweep(const struct opts *o, struct mpi_ctx *c)
{
    return sweep(o, mpi_row, c);
}

#define SERVER_CHARS 64

/* The job's distinct servers, as the ranks name them (BLINK_SERVER, else the host name); on
 * rank 0 only. */
static int mpi_servers(int me, int size)
{
    static char all[MAX_RANKS][SERVER_CHARS];
    char mine[SERVER_CHARS] = "";
    const char *env = getenv("BLINK_SERVER");
    if (env && *env)
        snprintf(mine, sizeof mine, "%s", env);
    else if (gethostname(mine, sizeof mine - 1) != 0)
        mine[0] = '\0';
    MPI_Gather(mine, SERVER_CHARS, MPI_CHAR, all, SERVER_CHARS, MPI_CHAR, 0, MPI_COMM_WORLD);
    int n = 0;
    for (int r = 0; me == 0 && r < size; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = strncmp(all[q], all[r], SERVER_CHARS) == 0;
        n += !seen;
    }
    return n;
}

/* This rank: join the others, then every row. Its exit status (the job's is the worst). */
static int mpi_rank(struct opts *o, int me, int size)
{
    o->servers = mpi_servers(me, size);
    struct {
        blinkUniqueId id;
        int ok;
    } made;
    memset(&made, 0, sizeof made);
    if (me == 0) {
        blinkResult_t res = blinkGetUniqueId(&made.id);
        made.ok = res == blinkSuccess;
        if (!made.ok)
            fprintf(stderr, "blink-perf: rank 0: blinkGetUniqueId: %s: %s\n",
                    blinkGetErrorString(res), blinkGetLastError(NULL));
    }
    MPI_Bcast(&made, (int)sizeof made, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!made.ok)
        return 1;
    struct local l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.rank[0].rank = me;
    /* -D names each rank's device; else BLINK_DEVICE (as mpirun -x sets it) says it. */
    char env[16];
    const char *dev_env = getenv("BLINK_DEVICE");
    int dev = o->ndevices ? o->devices[me] : dev_env ? atoi(dev_env) : 0;
    snprintf(env, sizeof env, "%d", dev);
    int placed = 1;
    if (o->ndevices)
        placed = setenv("BLINK_DEVICE", env, 1) == 0 && dev_select(run_device(me, dev));
    else if (dev_env)
        placed = dev_select(run_device(me, dev));
    blinkResult_t res = placed ? blinkrtCommInitRankFrom(o->lib, &l.rank[0].comm, size,
                                                         made.id, me)
                               : blinkSystemError;
    struct blinkrt_stats st;
    int ok = res == blinkSuccess, bad, any;
    if (!ok)
        fprintf(stderr, "blink-perf: rank %d: blinkCommInitRank: %s: %s\n", me,
                blinkGetErrorString(res), blinkGetLastError(NULL));
    else if (!(ok = local_open(o, &l) && blinkrtCommStats(l.rank[0].comm, &st) == blinkSuccess))
        fprintf(stderr, "blink-perf: rank %d: cannot allocate buffers or a stream\n", me);
    bad = !ok;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    struct tally t = {0, 0, 0};
    if (!any) {
        struct mpi_ctx c = {o, &l, me};
        if (me == 0) {
            print_header(o, &st);
            ok = print_rows(o, mpi_half, &c, &t);
            print_footer(&t, ok);
        } else {
            ok = mpi_sweep(o, &c);
        }
    }
    local_close(o, &l);
    return ok && !any && t.wrong == 0 ? 0 : 1;
}

/* One rank of an MPI job; every rank returns the job's worst status, after MPI_Finalize. */
static int run_mpi(struct opts *o)
{
    int provided = MPI_THREAD_SINGLE, me = 0, size = 0, status = 0, worst;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "blink-perf: MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* The same on every rank: only rank 0 says it. */
    int per_process = o->nthreads * o->ngpus;
    if (size > MAX_RANKS || per_process != 1 || (o->ndevices && o->ndevices != size)) {
        if (me == 0 && size > MAX_RANKS)
            fprintf(stderr, "blink-perf: the MPI job has %d ranks, blink-perf runs %d at "
                    "most\n", size, MAX_RANKS);
        else if (me == 0 && per_process != 1)
            fprintf(stderr, "blink-perf: --mpi runs one rank per process, and -t %d -g %d "
                    "asks for %d (nccl-tests' -t and -g count a process's ranks)\n",
                    o->nthreads, o->ngpus, per_process);
        else if (me == 0)
            fprintf(stderr, "blink-perf: the MPI job has %d ranks, --devices lists %d\n", size,
                    o->ndevices);
        status = 2;
    } else if ((o->ndev = size), is_rooted(o) && !o->root_all && o->root >= size) {
        if (me == 0)
            fprintf(stderr, "blink-perf: root %d, but the MPI job has %d ranks\n", o->root,
                    size);
        status = 2;
    }
    if (status == 2 && me == 0)
        fprintf(stderr, "Try 'blink-perf --help' for more information.\n");
    if (status == 0)
        status = mpi_rank(o, me, size);
    worst = status;
    MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
}
#endif

/* ---------------------------------------------------------------- command line */

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    double mult = 1;
    switch (*end) {
    case 'K': case 'k': mult = 1024.0; end++; break;
    case 'M': case 'm': mult = 1024.0 * 1024; end++; break;
    case 'G': case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (end == s || *end != '\0' || !(v >= 0) || v * mult > 1e15)
        return 0;
    *out = (size_t)(v * mult);
    return 1;
}

/* "0,2,3", "4-7", "5,1,4", "0-2,5": the job's devices in rank order, each once (a range may
 * run down: "7-4"). */
static int parse_devices(const char *s, struct opts *o)
{
    o->ndevices = 0;
    for (const char *p = s; *p;) {
        char *end;
        if (*p < '0' || *p > '9')
            return 0;
        long lo = strtol(p, &end, 10), hi = lo;
        if (*end == '-') {
            const char *q = end + 1;
            if (*q < '0' || *q > '9')
                return 0;
            hi = strtol(q, &end, 10);
        }
        if (lo > 1 << 20 || hi > 1 << 20 || (*end && *end != ',') || (*end == ',' && !end[1]))
            return 0;
        for (long v = lo;; v += lo <= hi ? 1 : -1) {
            for (int i = 0; i < o->ndevices; i++)
                if (o->devices[i] == v)
                    return 0; /* a device twice */
            if (o->ndevices == MAX_RANKS)
                return 0;
            o->devices[o->ndevices++] = (int)v;
            if (v == hi)
                break;
        }
        p = *end ? end + 1 : end;
    }
    return o->ndevices > 0;
}

/* A collective in nccl-tests' spelling or ours, any case, with or without nccl-tests'
 * "_perf" (all_reduce_perf). */
static int parse_coll(const char *s, enum coll *out)
{
    static const struct { const char *name; enum coll c; } names[] = {
        {"broadcast", C_BROADCAST}, {"reduce", C_REDUCE}, {"allreduce", C_ALLREDUCE},
        {"all_reduce", C_ALLREDUCE}, {"allgather", C_ALLGATHER}, {"all_gather", C_ALLGATHER},
        {"reducescatter", C_REDUCESCATTER}, {"reduce_scatter", C_REDUCESCATTER}};
    size_t n = strlen(s);
    if (n > 5 && !strcasecmp(s + n - 5, "_perf"))
        n -= 5;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && !strncasecmp(s, names[i].name, n)) {
            *out = names[i].c;
            return 1;
        }
    return 0;
}

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static int parse_type(const char *s, blinkDataType_t *out)
{
    static const struct { const char *name; blinkDataType_t t; } alias[] = {
        {"char", blinkInt8}, {"int", blinkInt32}, {"float16", blinkFloat16},
        {"float32", blinkFloat32}, {"float64", blinkFloat64}, {"bf16", blinkBfloat16}};
    int k = lookup(s, type_names, blinkNumTypes);
    if (k >= 0) {
        *out = (blinkDataType_t)k;
        return 1;
    }
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (strcmp(s, alias[i].name) == 0) {
            *out = alias[i].t;
            return 1;
        }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: blink-perf [OPTIONS]\n"
"Time and check one collective of the linked blinkc plans, as nccl-tests does (its flags,\n"
"columns and footer).\n\n"
"nccl-tests' flags, with their meanings:\n"
"  -t, --nthreads N          threads per process: a process runs t x g ranks (default 1),\n"
"                            all driven from one thread in a group\n"
"  -g, --ngpus N             GPUs per thread (default 1). Without -t, -g or --devices: the\n"
"                            ranks and devices of the largest linked plan\n"
"  -b, --minbytes SIZE       smallest size (default 32M; K, M, G suffixes)\n"
"  -e, --maxbytes SIZE       largest size (default 32M)\n"
"  -i, --stepbytes SIZE      add this between sizes (default 1M)\n"
"  -f, --stepfactor F        multiply by this between sizes instead (default 1: off)\n"
"  -n, --iters N             timed iterations (default 20)\n"
"  -w, --warmup_iters N      untimed calls first (default 5)\n"
"  -m, --agg_iters N         calls per timed iteration, in one group (default 1)\n"
"  -N, --run_cycles N        sweep every size N times (default 1; 0: until killed)\n"
"  -c, --check N             checked calls per size and placement (default 1; 0: none)\n"
"  -o, --op OP               sum (default), prod, max, min, avg, or all (a sweep each)\n"
"  -d, --datatype TYPE       int8, uint8, int32, uint32, int64, uint64, half, float\n"
"                            (default), double, bfloat16, or all\n"
"  -r, --root N              root of broadcast and reduce (default 0), or all\n"
"  -z, --blocking 0|1        1: wait for each timed call; 0 (default): for the last\n"
"  -C, --report_cputime 0|1  1: time the issuing of the calls (column 'cputime')\n"
"  -a, --average 0-3         the ranks' time (--procs, --mpi): 0 rank 0's, 1 the mean\n"
"                            (default), 2 the least, 3 the most\n"
"  -T, --timeout S           BLINK_TIMEOUT_S=S: a rank that waits longer fails its call\n"
"  -R, --local_register N    1 or 2: register each rank's send and receive buffers\n"
"                            (blinkCommRegister; on the host backend from blinkMemAlloc,\n"
"                            so that with --procs parents write their children's outputs);\n"
"                            0 (default): none\n"
"  -G, --cudagraph N         the -n timed iterations captured in a CUDA graph per rank,\n"
"                            replayed N times (after one untimed replay); 0 (default):\n"
"                            issued one by one. CUDA backend only (ignored with a note\n"
"                            on the host backend)\n"
"  accepted and ignored with a note, for the runtime has nothing like them:\n"
"  -p, --parallel_init       (every rank's init runs on a thread of its own anyway)\n"
"  -y, --stream_null         (each rank runs on a stream of its own)\n"

"  -x, --cta_policy, -D N (--device_implementation), -V, --device_cta_count,\n"
"  -M, --memory_report, -S, --report_timestamps, -J, --output_file (NCCL 2.27+)\n\n"
"blink-perf's own:\n"
"      --collective NAME     broadcast, reduce, allreduce (default), allgather,\n"
"                            reducescatter; or all_reduce, all_gather, reduce_scatter;\n"
"                            run as all_gather_perf (a link), the name says it.\n"
"                            -C NAME still works\n"
"      --devices LIST        the job's devices in rank order, e.g. 0,2,3 or 4-7 or\n"
"                            5,1,4; sets the ranks. -D LIST (a list or a range) still\n"
"                            works\n"
"      --procs               a process per rank (blinkCommInitRank, BLINK_DEVICE set to\n"
"                            its device); default: one thread drives every rank in a\n"
"                            group (blinkCommInitAll). A rank that dies, or none\n"
"                            progressing for BLINK_TIMEOUT_S + %g s, gets the others\n"
"                            killed. Was -N, which is nccl-tests' now\n"
"      --mpi                 this process is one rank of an MPI job, one process per\n"
"                            rank (mpirun -np N blink-perf --mpi ...), as a cluster plan\n"
"                            runs across servers: MPI rank 0 makes the unique id,\n"
"                            every rank joins with blinkCommInitRank. A rank's server:\n"
"                            BLINK_SERVER, else its host name; its device: its entry of\n"
"                            --devices, else BLINK_DEVICE. Ranks: the job's size; rank 0\n"
"                            prints the table; every rank exits with the job's status.\n"
"                            Was -M, which is nccl-tests' now%s\n"
"      --hbm-gbps R          all ranks on one GPU that copies R GB/s (read + write):\n"
"                            print the bound that puts on the protocol's bytes and\n"
"                            each row's algbw as %%bound of it (tools/gpu-check)\n"
"  -h, --help                this text\n\n"
"BLINK_DEVICE_MAP=0,0,0,0 runs every rank of every mode on GPU 0 (CUDA): a rank\n"
"runs on its entry there and plays its device of --devices.\n"
"Backend: " BACKEND_NAME ". Exit status: 0 all right, 1 wrong elements or a failed\n"
"call or rank, 2 usage error.\n", MARGIN_S,
#ifdef BLINK_PERF_MPI
            ""
#else
            ".\n                            Not in this build: it was built without MPI"
#endif
    );
}

/* An nccl-tests flag that cannot apply here: accepted, and said so. */
static void note(int c, const char *arg, const char *why)
{
    fprintf(stderr, "blink-perf: note: -%c %s ignored: %s\n", c, arg ? arg : "", why);
}

/* The value of an integer flag: the whole argument, in [lo, hi]. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

enum { OPT_COLLECTIVE = 256, OPT_DEVICES, OPT_PROCS, OPT_MPI, OPT_HBM };

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        {"nthreads", required_argument, NULL, 't'},    {"ngpus", required_argument, NULL, 'g'},
        {"minbytes", required_argument, NULL, 'b'},    {"maxbytes", required_argument, NULL, 'e'},
        {"stepbytes", required_argument, NULL, 'i'},   {"stepfactor", required_argument, NULL, 'f'},
        {"iters", required_argument, NULL, 'n'},       {"agg_iters", required_argument, NULL, 'm'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"run_cycles", required_argument, NULL, 'N'},
        {"parallel_init", required_argument, NULL, 'p'},
        {"check", required_argument, NULL, 'c'},       {"op", required_argument, NULL, 'o'},
        {"datatype", required_argument, NULL, 'd'},    {"root", required_argument, NULL, 'r'},
        {"blocking", required_argument, NULL, 'z'},
        {"stream_null", required_argument, NULL, 'y'},
        {"timeout", required_argument, NULL, 'T'},     {"cudagraph", required_argument, NULL, 'G'},
        {"report_cputime", required_argument, NULL, 'C'},
        {"average", required_argument, NULL, 'a'},
        {"local_register", required_argument, NULL, 'R'},
        {"cta_policy", required_argument, NULL, 'x'},
        {"device_implementation", required_argument, NULL, 'D'},
        {"device_cta_count", required_argument, NULL, 'V'},
        {"memory_report", required_argument, NULL, 'M'}, {"memory", required_argument, NULL, 'M'},
        {"report_timestamps", required_argument, NULL, 'S'},
        {"output_file", required_argument, NULL, 'J'},
        {"collective", required_argument, NULL, OPT_COLLECTIVE},
        {"devices", required_argument, NULL, OPT_DEVICES},
        {"procs", no_argument, NULL, OPT_PROCS},       {"mpi", no_argument, NULL, OPT_MPI},
        {"hbm-gbps", required_argument, NULL, OPT_HBM},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    static const char shorts[] = "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:";
    int c, k, ok = 1, n;
    long v;
    char *end, *hbm_end;
    while (ok && (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const char *why = NULL; /* a usage error's own words, else "bad value" */
        switch (c) {
        case 't':
        case 'g':
            ok = parse_long(optarg, 1, MAX_RANKS, &v);
            *(c == 't' ? &o->nthreads : &o->ngpus) = (int)v;
            o->count_given = 1;
            break;
        case 'b': ok = parse_size(optarg, &o->min_bytes); break;
        case 'e': ok = parse_size(optarg, &o->max_bytes); break;
        case 'i': ok = parse_size(optarg, &o->step_bytes) && o->step_bytes > 0; break;
        case 'f':
            o->factor = strtod(optarg, &end);
            ok = end != optarg && !*end && o->factor >= 1;
            break;
        case 'n': ok = parse_long(optarg, 0, 1000000, &v); o->iters = (int)v; break;
        case 'w': ok = parse_long(optarg, 0, 1000000, &v); o->warmup = (int)v; break;
        case 'm': ok = parse_long(optarg, 1, 1000000, &v); o->agg = (int)v; break;
        case 'c': ok = parse_long(optarg, 0, 1000000, &v); o->check = (int)v; break;
        case 'a': ok = parse_long(optarg, 0, 3, &v); o->average = (int)v; break;
        case 'z': ok = parse_long(optarg, 0, 1, &v); o->blocking = (int)v; break;
        case 'T':
            ok = parse_long(optarg, 0, 1000000000, &v);
            if (ok && v > 0) /* 0: nccl-tests' "no timeout", the runtime's default here */
                ok = setenv("BLINK_TIMEOUT_S", optarg, 1) == 0;
            break;
        case 'N':
            ok = parse_long(optarg, 0, LONG_MAX, &v);
            o->cycles = v;
            if (!ok && optarg[0] == '-')
                why = "-N is nccl-tests' --run_cycles N now; a process per rank is --procs";
            break;
        case 'M':
            ok = optarg[0] != '-';
            if (ok)
                note(c, optarg, "the runtime reports its memory at BLINK_DEBUG=INFO (staging)");
            else
                why = "-M is nccl-tests' --memory_report 0|1 now; MPI ranks are --mpi";
            break;
        case 'o':
            o->op_all = !strcmp(optarg, "all");
            ok = o->op_all || (k = lookup(optarg, op_names, blinkNumOps)) >= 0;
            if (ok && !o->op_all)
                o->op = (blinkRedOp_t)k;
            if (!strcmp(optarg, "mulsum"))
                why = "-o mulsum: the runtime has no PreMulSum op (NCCL's, handed to NCCL by "
                      "libblink-nccl)";
            break;
        case 'd':
            o->type_all = !strcmp(optarg, "all");
            ok = o->type_all || parse_type(optarg, &o->type);
            break;
        case 'r':
            o->root_all = !strcmp(optarg, "all");
            ok = o->root_all || parse_long(optarg, 0, MAX_RANKS - 1, &v);
            if (ok && !o->root_all)
                o->root = (int)v;
            break;
        case 'C': /* nccl-tests' 0|1; a name is the collective, as blink-perf had it */
            if (parse_long(optarg, 0, 1, &v))
                o->cputime = (int)v;
            else
                ok = parse_coll(optarg, &o->coll);
            break;
        case 'D': /* a single number is nccl-tests'; a list or a range, the devices */
            n = (int)strspn(optarg, "0123456789");
            if (n > 0 && !optarg[n])
                note(c, optarg, "NCCL's device implementations (2.28) are NCCL's own");
            else
                ok = parse_devices(optarg, o);
            break;
        case 'p': note(c, optarg, "every rank's init runs on a thread of its own anyway"); break;
        case 'y': note(c, optarg, "each rank runs its calls on a stream of its own"); break;
        case 'G':
#ifdef BLINK_BACKEND_CUDA
            ok = parse_long(optarg, 0, 1000000, &v);
            o->graphs = (int)v;
#else
            note(c, optarg, "the host backend's streams capture no CUDA graphs");
#endif
            break;
        case 'R':
            ok = parse_long(optarg, 0, 2, &v);
            o->reg = (int)v;
            break;
        case 'x': case 'V': case 'S': case 'J':
            note(c, optarg, "an NCCL 2.27+ feature the runtime does not have"); break;
        case OPT_COLLECTIVE: ok = parse_coll(optarg, &o->coll); break;
        case OPT_DEVICES: ok = parse_devices(optarg, o); break;
        case OPT_PROCS: o->procs = 1; break;
        case OPT_HBM:
            o->hbm_gbps = strtod(optarg, &hbm_end);
            ok = hbm_end != optarg && !*hbm_end && o->hbm_gbps > 0 && o->hbm_gbps < 1e7;
            break;
        case OPT_MPI:
#ifdef BLINK_PERF_MPI
            o->mpi = 1;
#else
            why = "--mpi: this blink-perf was built without MPI";
            ok = 0;
#endif
            break;
        case 'h': usage(stdout); exit(0);
        default: ok = 0; break;
        }
        if ((!ok || why) && c != '?') {
            if (why)
                fprintf(stderr, "blink-perf: %s\n", why);
            else
                fprintf(stderr, "blink-perf: bad value for %s%s: '%s'\n",
                        c < 256 ? "-" : "--", c < 256 ? (char[2]){(char)c, 0} :
                        c == OPT_COLLECTIVE ? "collective" : c == OPT_HBM ? "hbm-gbps"
                        : "devices", optarg ? optarg : "");
            ok = 0;
        }
    }
    if (ok && optind < argc) {
        fprintf(stderr, "blink-perf: unexpected argument '%s'\n", argv[optind]);
        ok = 0;
    }
    if (ok && o->mpi && o->procs) {
        fprintf(stderr, "blink-perf: --mpi and --procs exclude each other\n");
        ok = 0;
    }
    if (ok && o->min_bytes > o->max_bytes) {
        fprintf(stderr, "blink-perf: need minbytes <= maxbytes\n");
        ok = 0;
    }
    return ok;
}

#ifdef BLINK_PERF_TUNED
/* The in-tree build (templates/local.mk) links a tuned source besides the one it is built
 * with, its blinkPlanLibrary renamed to this. Weak: the other builds of this file link one
 * source and need nothing. */
const struct blink_plan_library *BLINK_PERF_TUNED(void) __attribute__((weak));
#endif

/* The plans init chooses from: the linked source's, after the tuned ones where the build links
 * those too (init takes the first plan for the ranks' devices, so theirs win). */
static const struct blink_plan_library *perf_library(void)
{
    static struct blink_plan_library merged;
    const struct blink_plan_library *lib = blinkPlanLibrary(), *tuned = NULL;
#ifdef BLINK_PERF_TUNED
    if (BLINK_PERF_TUNED)
        tuned = BLINK_PERF_TUNED();
#endif
    if (!tuned || !lib || tuned->abi != lib->abi || tuned->nplans < 1 || lib->nplans < 1)
        return lib;
    const struct blink_plan **plans = malloc(sizeof *plans * (size_t)(tuned->nplans + lib->nplans));
    if (!plans)
        return lib;
    memcpy(plans, tuned->plans, sizeof *plans * (size_t)tuned->nplans);
    memcpy(plans + tuned->nplans, lib->plans, sizeof *plans * (size_t)lib->nplans);
    merged.abi = lib->abi;
    merged.nplans = tuned->nplans + lib->nplans;
    merged.plans = plans;
    return &merged;
}

/* The ranks and their devices: --devices, else t x g (devices 0..n-1, as nccl-tests), else
 * those of the largest plan linked (a cluster plan's ranks play its devices in order). --mpi
 * takes the job's size once MPI runs. 0 on a usage error. */
static int choose_ranks(struct opts *o)
{
    int asked = o->nthreads * o->ngpus;
    if (o->mpi)
        return 1;
    if (o->ndevices && o->count_given && asked != o->ndevices) {
        fprintf(stderr, "blink-perf: -t %d -g %d make %d ranks, but --devices lists %d\n",
                o->nthreads, o->ngpus, asked, o->ndevices);
        return 0;
    }
    if (o->ndevices)
        o->ndev = o->ndevices;
    else if (o->count_given)
        o->ndev = asked;
    else {
        const struct blink_plan *big = NULL;
        for (int k = 0; o->lib && k < o->lib->nplans; k++)
            if (o->lib->plans[k] && (!big || o->lib->plans[k]->nranks > big->nranks))
                big = o->lib->plans[k];
        o->ndev = big ? big->nranks : 1;
        int own = big && big->devices && big->nservers <= 1; /* a cluster's: in order */
        for (int r = 0; own && r < o->ndev && r < MAX_RANKS; r++)
            o->devices[o->ndevices++] = big->devices[r];
    }
    if (o->ndev > MAX_RANKS) {
        fprintf(stderr, "blink-perf: %d ranks; blink-perf runs %d at most\n", o->ndev, MAX_RANKS);
        return 0;
    }
    if (!o->root_all && is_rooted(o) && o->root >= o->ndev) {
        fprintf(stderr, "blink-perf: root %d, but there are %d ranks\n", o->root, o->ndev);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof o);
    o.coll = C_ALLREDUCE;
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    if (strlen(base) > 5 && !strcmp(base + strlen(base) - 5, "_perf"))
        parse_coll(base, &o.coll); /* run as all_gather_perf: nccl-tests' binary names */
    o.min_bytes = o.max_bytes = 32u << 20;
    o.step_bytes = 1u << 20;
    o.factor = 1;
    o.check = 1;
    o.iters = 20;
    o.warmup = 5;
    o.nthreads = o.ngpus = 1;
    o.agg = 1;
    o.cycles = 1;
    o.average = 1;
    o.type = blinkFloat32;
    o.op = blinkSum;
    if (!parse(argc, argv, &o) || ((o.lib = perf_library()), !choose_ranks(&o))) {
        fprintf(stderr, "Try 'blink-perf --help' for more information.\n");
        return 2;
    }
    if (o.nthreads > 1 && !o.mpi)
        fprintf(stderr, "blink-perf: note: -t %d: one thread drives all %d ranks in a group\n",
                o.nthreads, o.ndev);
#ifdef BLINK_PERF_MPI
    if (o.mpi)
        return run_mpi(&o);
#endif
    return o.procs ? run_procs(&o) : run_threads(&o);
}
