/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * blink_perf.c - blink-perf, the nccl-tests of blinkc: times one collective of a generated
 * source over a range of sizes, out of place and in place, and checks every element.
 *
 *   blink-perf -C allreduce -b 8 -e 128M -f 2 -c 1 -o sum -d float
 *
 * Its columns and footer are nccl-tests' (size, count, type, redop, root, time, algbw, busbw,
 * #wrong; "Out of bounds values", "Avg bus bandwidth"). It links one generated source and one
 * runtime backend; every rank is driven from this thread between blinkGroupStart and
 * blinkGroupEnd, as nccl-tests does with -t 1 -g N. Exit status: 0 when every element was
 * right, 1 when some were wrong or a call failed, 2 for a usage error.
 *
 * Checked values are small integers (and powers of two for prod), so every datatype holds every
 * partial result exactly and the reference below needs no tolerance except for avg of floats.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime; users build this file on its own */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blink.h"

#ifdef BLINK_BACKEND_CUDA
#define BACKEND_NAME "cuda"
#else
#define BACKEND_NAME "host"
#endif

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
    double factor;
    int check, iters, warmup, root, ndev;
    int devices[64], ndevices; /* -D: the job's devices (default 0..ndev-1) */
    blinkDataType_t type;
    blinkRedOp_t op;
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

/* ---------------------------------------------------------------- one size */

struct bufs {
    void *send[64], *recv[64];  /* device buffers per rank */
    blinkStream_t stream[64];
    blinkComm_t comm[64];
    int dev[64];                /* each rank's device, as its communicator reports it */
};

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

static blinkResult_t launch(const struct opts *o, struct bufs *b, size_t count, int in_place)
{
    blinkResult_t res = blinkGroupStart(), r2;
    size_t esz = type_sizes[o->type];
    for (int r = 0; res == blinkSuccess && r < o->ndev; r++) {
        void *recv = b->recv[r];
        const void *send = b->send[r];
        if (in_place) {
            recv = b->send[r];
            if (o->coll == C_ALLGATHER) /* NCCL: sendbuff = recvbuff + rank * sendcount */
                send = (char *)b->recv[r] + (size_t)r * count * esz, recv = b->recv[r];
            if (o->coll == C_REDUCESCATTER) /* recvbuff = sendbuff + rank * recvcount */
                recv = (char *)b->send[r] + (size_t)r * count * esz;
        }
        switch (o->coll) {
        case C_BROADCAST:
            res = blinkBroadcast(send, recv, count, o->type, o->root, b->comm[r], b->stream[r]);
            break;
        case C_REDUCE:
            res = blinkReduce(send, recv, count, o->type, o->op, o->root, b->comm[r],
                              b->stream[r]);
            break;
        case C_ALLREDUCE:
            res = blinkAllReduce(send, recv, count, o->type, o->op, b->comm[r], b->stream[r]);
            break;
        case C_ALLGATHER:
            res = blinkAllGather(send, recv, count, o->type, b->comm[r], b->stream[r]);
            break;
        default:
            res = blinkReduceScatter(send, recv, count, o->type, o->op, b->comm[r],
                                     b->stream[r]);
            break;
        }
    }
    r2 = blinkGroupEnd();
    res = res != blinkSuccess ? res : r2;
    for (int r = 0; res == blinkSuccess && r < o->ndev; r++)
        if (!stream_sync(b->stream[r]))
            res = blinkUnhandledCudaError;
    return res;
}

/* Fill send buffers with the check values and poison the receive buffers. */
static int prepare(const struct opts *o, struct bufs *b, size_t count, int in_place, void *host)
{
    size_t nsend, nrecv, esz = type_sizes[o->type];
    counts(o, count, &nsend, &nrecv);
    for (int r = 0; r < o->ndev; r++) {
        memset(host, 0xA5, nrecv * esz);
        if (!dev_put(b->dev[r], b->recv[r], host, nrecv * esz))
            return 0;
        for (size_t i = 0; i < nsend; i++)
            store(o->type, host, i, (double)value_of(o, r, i));
        if (in_place && o->coll == C_ALLGATHER) {
            if (!dev_put(b->dev[r], (char *)b->recv[r] + (size_t)r * count * esz, host,
                         nsend * esz))
                return 0;
        } else if (!dev_put(b->dev[r], b->send[r], host, nsend * esz)) {
            return 0;
        }
    }
    return 1;
}

/* Count wrong elements in every buffer that must hold a result. */
static long wrong_elements(const struct opts *o, struct bufs *b, size_t count, int in_place,
                           void *host)
{
    size_t nsend, nrecv, esz = type_sizes[o->type];
    counts(o, count, &nsend, &nrecv);
    long wrong = 0;
    for (int r = 0; r < o->ndev; r++) {
        if (o->coll == C_REDUCE && r != o->root)
            continue;
        const void *res = in_place && o->coll != C_ALLGATHER ? b->send[r] : b->recv[r];
        size_t n = o->coll == C_ALLGATHER ? nrecv : count, off = 0;
        if (in_place && o->coll == C_REDUCESCATTER)
            off = (size_t)r * count;
        if (!dev_get(b->dev[r], host, (const char *)res + off * esz, n * esz))
            return (long)n;
        for (size_t i = 0; i < n; i++) {
            double want;
            switch (o->coll) {
            case C_BROADCAST: want = (double)value_of(o, o->root, i); break;
            case C_ALLGATHER: want = (double)value_of(o, (int)(i / count), i % count); break;
            case C_REDUCESCATTER: want = reduced(o, (size_t)r * count + i); break;
            default: want = reduced(o, i); break;
            }
            double cast;
            store(o->type, &cast, 0, want);
            wrong += !same(o, load(o->type, host, i), load(o->type, &cast, 0));
        }
    }
    return wrong;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
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

/* Run one size both ways and print its row; returns the wrong elements, or -1 on failure. */
static long run_size(const struct opts *o, struct bufs *b, size_t bytes, void *host,
                     double *busbw_sum)
{
    size_t esz = type_sizes[o->type], n = (size_t)o->ndev;
    int per_rank = o->coll == C_ALLGATHER || o->coll == C_REDUCESCATTER;
    size_t count = bytes / esz / (per_rank ? n : 1);
    size_t shown = count * esz * (per_rank ? n : 1);
    int rooted = o->coll == C_BROADCAST || o->coll == C_REDUCE;
    printf("%12zu  %12zu  %8s  %6s  %6d", shown, count * (per_rank ? n : 1), type_names[o->type],
           o->coll == C_BROADCAST || o->coll == C_ALLGATHER ? "none" : op_names[o->op],
           rooted ? o->root : -1);
    long total_wrong = 0;
    for (int in_place = 0; in_place < 2; in_place++) {
        long wrong = 0;
        if (o->check) {
            if (!prepare(o, b, count, in_place, host) ||
                launch(o, b, count, in_place) != blinkSuccess)
                return -1;
            wrong = wrong_elements(o, b, count, in_place, host);
        }
        for (int i = 0; i < o->warmup; i++)
            if (launch(o, b, count, in_place) != blinkSuccess)
                return -1;
        double t0 = now_us();
        for (int i = 0; i < o->iters; i++)
            if (launch(o, b, count, in_place) != blinkSuccess)
                return -1;
        double us = (now_us() - t0) / (o->iters > 0 ? o->iters : 1);
        double algbw = us > 0 ? (double)shown / us / 1e3 : 0, busbw = algbw * bus_factor(o);
        *busbw_sum += busbw / 2;
        printf("  %8.2f  %6.2f  %6.2f  %6ld", us, algbw, busbw, wrong);
        total_wrong += wrong;
    }
    printf("\n");
    fflush(stdout);
    return total_wrong;
}

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

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

/* "0,2,3": the devices, which also set the rank count. */
static int parse_devices(const char *s, struct opts *o)
{
    o->ndevices = 0;
    for (const char *p = s; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1 << 20 || o->ndevices == 64 || (*end && *end != ','))
            return 0;
        o->devices[o->ndevices++] = (int)v;
        p = *end ? end + 1 : end;
    }
    o->ndev = o->ndevices;
    return o->ndevices > 0;
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
            "Time and check one collective of the linked blinkc plan (nccl-tests' columns).\n\n"
            "  -C, --collective NAME  broadcast, reduce, allreduce (default), allgather,\n"
            "                         reducescatter\n"
            "  -g, --ngpus N          ranks; must match the plan (default 8)\n"
            "  -D, --devices LIST     the job's devices, e.g. 0,2,3 (default 0..N-1); sets -g\n"
            "  -b, --minbytes SIZE    smallest size (default 32M; K, M, G suffixes)\n"
            "  -e, --maxbytes SIZE    largest size (default 32M)\n"
            "  -i, --stepbytes SIZE   add this between sizes (default: multiply by -f)\n"
            "  -f, --stepfactor N     multiply by this between sizes (default 2)\n"
            "  -o, --op OP            sum (default), prod, max, min, avg\n"
            "  -d, --datatype TYPE    int8, uint8, int32, uint32, int64, uint64, half,\n"
            "                         float (default), double, bfloat16\n"
            "  -r, --root N           root of broadcast and reduce (default 0)\n"
            "  -n, --iters N          timed iterations (default 20)\n"
            "  -w, --warmup_iters N   untimed iterations first (default 5)\n"
            "  -c, --check 0|1        check every element (default 1)\n"
            "  -h, --help             this text\n\n"
            "Backend: " BACKEND_NAME ". Exit status: 0 all right, 1 wrong elements or a failed\n"
            "call, 2 usage error.\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        {"collective", required_argument, NULL, 'C'}, {"ngpus", required_argument, NULL, 'g'},
        {"devices", required_argument, NULL, 'D'},
        {"minbytes", required_argument, NULL, 'b'},   {"maxbytes", required_argument, NULL, 'e'},
        {"stepbytes", required_argument, NULL, 'i'},  {"stepfactor", required_argument, NULL, 'f'},
        {"op", required_argument, NULL, 'o'},         {"datatype", required_argument, NULL, 'd'},
        {"root", required_argument, NULL, 'r'},       {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'}, {"check", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0}};
    int c, k, ok = 1;
    while (ok && (c = getopt_long(argc, argv, "C:g:D:b:e:i:f:o:d:r:n:w:c:h", longs, NULL)) != -1) {
        switch (c) {
        case 'C': ok = (k = lookup(optarg, coll_names, C_COUNT)) >= 0; o->coll = (enum coll)k; break;
        case 'g': ok = parse_int(optarg, 1, 64, &o->ndev); break;
        case 'D': ok = parse_devices(optarg, o); break;
        case 'b': ok = parse_size(optarg, &o->min_bytes); break;
        case 'e': ok = parse_size(optarg, &o->max_bytes); break;
        case 'i': ok = parse_size(optarg, &o->step_bytes) && o->step_bytes > 0; break;
        case 'f': ok = (o->factor = strtod(optarg, NULL)) > 1; o->step_bytes = 0; break;
        case 'o': ok = (k = lookup(optarg, op_names, blinkNumOps)) >= 0; o->op = (blinkRedOp_t)k; break;
        case 'd': ok = parse_type(optarg, &o->type); break;
        case 'r': ok = parse_int(optarg, 0, 63, &o->root); break;
        case 'n': ok = parse_int(optarg, 0, 1000000, &o->iters); break;
        case 'w': ok = parse_int(optarg, 0, 1000000, &o->warmup); break;
        case 'c': ok = parse_int(optarg, 0, 1, &o->check); break;
        case 'h': usage(stdout); exit(0);
        default: ok = 0; break;
        }
        if (!ok && c != '?')
            fprintf(stderr, "blink-perf: bad value for -%c: '%s'\n", c, optarg ? optarg : "");
    }
    if (ok && optind < argc) {
        fprintf(stderr, "blink-perf: unexpected argument '%s'\n", argv[optind]);
        ok = 0;
    }
    if (ok && (o->min_bytes > o->max_bytes || o->root >= o->ndev)) {
        fprintf(stderr, "blink-perf: need minbytes <= maxbytes and root < ranks\n");
        ok = 0;
    }
    if (!ok)
        fprintf(stderr, "Try 'blink-perf --help' for more information.\n");
    return ok;
}

int main(int argc, char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof o);
    o.coll = C_ALLREDUCE;
    o.min_bytes = o.max_bytes = 32u << 20;
    o.factor = 2;
    o.check = 1;
    o.iters = 20;
    o.warmup = 5;
    o.ndev = 8;
    o.type = blinkFloat32;
    o.op = blinkSum;
    if (!parse(argc, argv, &o))
        return 2;
    struct bufs b;
    memset(&b, 0, sizeof b);
    blinkResult_t res = blinkCommInitAll(b.comm, o.ndev, o.ndevices ? o.devices : NULL);
    if (res != blinkSuccess) {
        fprintf(stderr, "blink-perf: blinkCommInitAll: %s: %s\n", blinkGetErrorString(res),
                blinkGetLastError(NULL));
        return 1;
    }
    size_t esz = type_sizes[o.type], biggest = o.max_bytes + (size_t)o.ndev * esz;
    void *host = malloc(biggest);
    int ok = host != NULL;
    for (int r = 0; ok && r < o.ndev; r++)
        ok = blinkCommCuDevice(b.comm[r], &b.dev[r]) == blinkSuccess &&
             dev_alloc(b.dev[r], biggest, &b.send[r]) &&
             dev_alloc(b.dev[r], biggest, &b.recv[r]) && stream_new(b.dev[r], &b.stream[r]);
    if (!ok)
        fprintf(stderr, "blink-perf: cannot allocate buffers or streams\n");
    printf("# blink-perf: %s, %d ranks, %s backend, minBytes %zu maxBytes %zu step: %g%s "
           "warmup iters: %d iters: %d validation: %d\n#\n",
           coll_names[o.coll], o.ndev, BACKEND_NAME, o.min_bytes, o.max_bytes,
           o.step_bytes ? (double)o.step_bytes : o.factor, o.step_bytes ? "(bytes)" : "(factor)",
           o.warmup, o.iters, o.check);
    printf("#                                                        out-of-place                    "
           "   in-place\n");
    printf("#       size         count      type   redop    root     time   algbw   busbw  #wrong"
           "     time   algbw   busbw  #wrong\n");
    printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
           "     (us)  (GB/s)  (GB/s)\n");
    long wrong = 0;
    int rows = 0;
    double busbw_sum = 0;
    for (size_t bytes = o.min_bytes; ok && bytes <= o.max_bytes; rows++) {
        long w = run_size(&o, &b, bytes, host, &busbw_sum);
        if (w < 0) {
            printf("\n");
            fprintf(stderr, "blink-perf: %s\n", blinkGetLastError(NULL));
            ok = 0;
            break;
        }
        wrong += w;
        size_t next = o.step_bytes ? bytes + o.step_bytes : (size_t)((double)bytes * o.factor);
        if (next <= bytes)
            break; /* a zero size never grows by a factor */
        bytes = next;
    }
    printf("# Out of bounds values : %ld %s\n", wrong, wrong == 0 && ok ? "OK" : "FAILED");
    printf("# Avg bus bandwidth    : %g \n#\n", rows ? busbw_sum / rows : 0);
    for (int r = 0; r < o.ndev; r++) {
        if (b.stream[r])
            stream_free(b.stream[r]);
        if (b.send[r])
            dev_free(b.dev[r], b.send[r]);
        if (b.recv[r])
            dev_free(b.dev[r], b.recv[r]);
        if (b.comm[r])
            blinkCommDestroy(b.comm[r]);
    }
    free(host);
    return ok && wrong == 0 ? 0 : 1;
}
