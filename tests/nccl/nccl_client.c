/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_client.c - an MPI program written against NCCL's C API only (plus MPI and libc), in the
 * manner of nccl-tests' MPI mode, for checking a drop-in NCCL such as libblink-nccl-host.so
 * under LD_PRELOAD. Rank 0 makes the unique id, MPI broadcasts it, every rank joins with
 * ncclCommInitRank; then broadcast, reduce, allreduce, allgather and reduce-scatter run over
 * datatypes, operations, roots, counts and in or out of place, each checked on every rank
 * against a reference that the rank computes on its own from the same input formula. Inputs
 * are small integers chosen so that every result is exact in every type and reduction order.
 * Other modes: one NCCL call that must fail with a given code (-X), a split communicator
 * (--split), and buffers registered with ncclCommRegister (--register). It compiles against NVIDIA's nccl.h and against runtime/nccl/nccl.h alike, so it
 * may use no name that only one of them has; it never learns which library it runs on.
 * For the fault tests, NCCL_CLIENT_FAULT=absent keeps a rank from joining, =exit makes it
 * exit (status 3) right after joining, and =mute makes it call no MPI after joining until every
 * rank has returned from ncclCommInitRank, as a rank busy in a call that waits for the others
 * without MPI would (the real NCCL's own init, say): ranks say they have returned by creating
 * joined.RANK in the directory NCCL_CLIENT_MARKS.
 * Usage: nccl_client --help. Exit status: 0 all right, 1 wrong results or errors, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>   /* NAN and INFINITY only: no libm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

/* NVIDIA's header declares ncclGroupStart() and a few others without (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#ifdef NCCL_CLIENT_CUDA
#include <cuda_runtime.h>
#endif

#define GUARD 64               /* elements after every receive buffer that must stay untouched */
#define SENTINEL 0xa5          /* the byte of those, and of receive elements not yet written */
#define MAX_LIST 64
#define MAX_RANKS 4096
#define BIG_COUNT 1000003      /* in the default run, for float32 only: time and memory */
#define NULL_STREAM ((cudaStream_t)0)

enum coll { BCAST, REDUCE, ALLREDUCE, ALLGATHER, REDUCESCATTER, NCOLLS };
enum kind { K_INT, K_UINT, K_HALF, K_BF16, K_FLOAT, K_DOUBLE };
enum { OP_NONE = -1, OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_AVG, NOPS };

/* The name comes first in each table: parse_names reads it through the stride. */
static const struct { const char *name, *fn; } colls[NCOLLS] = {
    {"broadcast", "ncclBroadcast"}, {"reduce", "ncclReduce"}, {"allreduce", "ncclAllReduce"},
    {"allgather", "ncclAllGather"}, {"reducescatter", "ncclReduceScatter"},
};

/* bits: the width of an integer type; for a float type, its significand, so that every
 * integer up to 2^bits in magnitude is exact. */
struct dtype {
    const char *name;
    ncclDataType_t dt;
    enum kind kind;
    int size, bits;
};
#define NTYPES 10
static const struct dtype dtypes[NTYPES] = {
    {"int8", ncclInt8, K_INT, 1, 8},          {"uint8", ncclUint8, K_UINT, 1, 8},
    {"int32", ncclInt32, K_INT, 4, 32},       {"uint32", ncclUint32, K_UINT, 4, 32},
    {"int64", ncclInt64, K_INT, 8, 64},       {"uint64", ncclUint64, K_UINT, 8, 64},
    {"float16", ncclFloat16, K_HALF, 2, 11},  {"float32", ncclFloat32, K_FLOAT, 4, 24},
    {"float64", ncclFloat64, K_DOUBLE, 8, 53}, {"bfloat16", ncclBfloat16, K_BF16, 2, 8},
};

static const struct { const char *name; ncclRedOp_t op; } ops[NOPS] = {
    {"sum", ncclSum}, {"prod", ncclProd}, {"max", ncclMax}, {"min", ncclMin}, {"avg", ncclAvg},
};

static const size_t default_counts[] = {0, 1, 2, 3, 7, 31, 1021, 4096, 65537};
static const size_t quick_counts[] = {0, 1, 3, 31, 1021};
static const size_t split_counts[] = {0, 1, 31, 1021, 65537};
#define LEN(a) (sizeof a / sizeof a[0])

struct opts {
    unsigned colls, types, ops;        /* bit masks over the tables */
    int roots[MAX_LIST], nroots;       /* nroots 0: every root */
    size_t counts[MAX_LIST];
    int ncounts, big;                  /* big: BIG_COUNT for float32 too */
    unsigned places;                   /* bit 0 out of place, bit 1 in place */
    uint64_t seed;
    int quiet, split, expect, reg;     /* reg: --register */
    const char *xfail;                 /* -X WHAT, or NULL */
};

/* A communicator as the reference sees it: its size, this rank, and the MPI rank of each of
 * its ranks, whose inputs the formula gives. */
struct ctx {
    ncclComm_t comm;
    int rank, n;
    const int *world;
    uint64_t seed;
};

struct tcase {
    enum coll coll;
    const struct dtype *t;
    int op, root;                      /* OP_NONE and -1 where the collective has none */
    size_t count;
    int inplace;
    uint64_t id;                       /* the same on every rank: it seeds the inputs */
    const uint64_t *key;               /* per comm rank, from seed, id and its MPI rank */
    int64_t lo;                        /* the inputs' range (input_range) */
    uint64_t span;
};

struct bufs {
    char *a, *b;                       /* ncclMemAlloc: send, and receive (or in place) */
    size_t bytes;
    void *reg[2];                      /* --register: a's and b's ncclCommRegister handles */
    unsigned char *hsend, *hrecv;      /* host images */
};

union num {
    uint64_t u;                        /* integer types, sign-extended for signed ones */
    double f;                          /* float types */
};

static int world_rank;
static struct { long cases, wrong, errors; int broken; } st;

/* ------------------------------------------------------------------ moving data */

#ifdef NCCL_CLIENT_CUDA
static int cuda_check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    printf("rank %d: %s: %s\n", world_rank, what, cudaGetErrorString(e));
    fflush(stdout);
    st.errors++;
    st.broken = 1;
    return 1;
}
static int to_buf(void *dst, const void *src, size_t bytes)
{
    return cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}
static int from_buf(void *dst, const void *src, size_t bytes)
{
    return cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}
static int sync_stream(void)
{
    return cuda_check(cudaStreamSynchronize(NULL_STREAM), "cudaStreamSynchronize");
}
/* One GPU per rank of a node, as nccl-tests picks them. */
static void pick_device(void)
{
    MPI_Comm node;
    int local = 0, ndev = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    if (!cuda_check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount") && ndev > 0)
        cuda_check(cudaSetDevice(local % ndev), "cudaSetDevice");
}
#else
/* The host drop-in: device pointers are host pointers, and a call on the NULL stream returns
 * when it is done. */
static int to_buf(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return 0;
}
static int from_buf(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return 0;
}
static int sync_stream(void) { return 0; }
static void pick_device(void) {}
#endif

/* ------------------------------------------------------------------ element values */

static double scale2(double x, int e)
{
    for (; e > 0; e--)
        x *= 2;
    for (; e < 0; e++)
        x *= 0.5;
    return x;
}

/* Round to nearest even on normal numbers; what is stored is an exact small integer, so
 * subnormals flush to zero and overflow saturates to infinity. */
static uint16_t half_from(double d)
{
    float f = (float)d;
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    uint32_t sign = (b >> 16) & 0x8000, man = b & 0x7fffff;
    int e = (int)((b >> 23) & 0xff) - 127 + 15;
    if (e <= 0)
        return (uint16_t)sign;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

/* Read back in full (subnormals, infinities, NaN): a wrong result may be anything. */
static double half_to(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    double m = h & 0x3ff, v;
    if (e == 31)
        v = m != 0 ? (double)NAN : (double)INFINITY;
    else
        v = e == 0 ? scale2(m, -24) : scale2(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}

static uint16_t bf16_from(double d)
{
    float f = (float)d;
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    b += 0x7fff + ((b >> 16) & 1);
    return (uint16_t)(b >> 16);
}

static double bf16_to(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static int is_int(const struct dtype *t) { return t->kind == K_INT || t->kind == K_UINT; }

/* An integer type's value as the type holds it, widened (sign-extended if signed). */
static uint64_t canon(const struct dtype *t, uint64_t u)
{
    if (t->bits >= 64)
        return u;
    uint64_t mask = ((uint64_t)1 << t->bits) - 1;
    u &= mask;
    if (t->kind == K_INT && ((u >> (t->bits - 1)) & 1))
        u |= ~mask;
    return u;
}

static void store(const struct dtype *t, unsigned char *p, union num v)
{
    uint64_t u = v.u;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    if (t->kind == K_HALF) {
        u = half_from(v.f);
    } else if (t->kind == K_BF16) {
        u = bf16_from(v.f);
    } else if (t->kind == K_FLOAT) {
        float f = (float)v.f;
        memcpy(&u32, &f, 4);
        u = u32;
    }
    switch (t->size) {
    case 1: u8 = (uint8_t)u, memcpy(p, &u8, 1); break;
    case 2: u16 = (uint16_t)u, memcpy(p, &u16, 2); break;
    case 4: u32 = (uint32_t)u, memcpy(p, &u32, 4); break;
    default: memcpy(p, &u, 8); break;
    }
}

static union num load(const struct dtype *t, const unsigned char *p)
{
    union num v;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    switch (t->size) {
    case 1: memcpy(&u8, p, 1), v.u = u8; break;
    case 2: memcpy(&u16, p, 2), v.u = u16; break;
    case 4: memcpy(&u32, p, 4), v.u = u32; break;
    default: memcpy(&v.u, p, 8); break;
    }
    if (is_int(t))
        v.u = canon(t, v.u);
    else if (t->kind == K_HALF)
        v.f = half_to((uint16_t)v.u);
    else if (t->kind == K_BF16)
        v.f = bf16_to((uint16_t)v.u);
    else if (t->kind == K_FLOAT) {
        float f;
        u32 = (uint32_t)v.u;
        memcpy(&f, &u32, 4);
        v.f = f;
    }
    return v;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/*
 * The range of the inputs of case c on n ranks: lo + [0, span), span 0 meaning any bits.
 *  - sum, avg: integers within top/n of the type (so n of them never wrap); floats within 2^p/n
 *    (p the significand) so every partial sum is exact, and avg inputs positive, so its
 *    relative tolerance means something;
 *  - max, min, broadcast, allgather: the whole integer range (uint64's top bit included, which
 *    a signed comparison gets wrong); floats the integers within 2^p.
 * prod has its own rule (input).
 */
static void input_range(const struct dtype *t, int op, uint64_t n, int64_t *lo, uint64_t *span)
{
    int w = t->bits, sum = op == OP_SUM || op == OP_AVG;
    uint64_t r1;
    if (t->kind == K_UINT && sum) {
        r1 = (w == 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1) / n;
        *lo = 0;
        *span = r1 + 1;                /* n == 1 on uint64: 0, any bits */
    } else if (t->kind == K_INT && sum) {
        r1 = (((uint64_t)1 << (w - 1)) - 1) / n;
        *lo = -(int64_t)r1;
        *span = 2 * r1 + 1;
    } else if (is_int(t)) {
        *lo = 0;
        *span = 0;
    } else {
        uint64_t m = (uint64_t)1 << w;
        r1 = m / n > 0 ? m / n : 1;
        *lo = op == OP_AVG ? 1 : -(int64_t)(sum ? r1 : m);
        *span = op == OP_AVG ? r1 : 2 * (sum ? r1 : m) + 1;
    }
}

/*
 * The input of comm rank r at element idx of its send buffer, in c's range. prod: 1, -1
 * (signed and float types) and, on comm ranks 0-5 only, sometimes 2: at most six factors of 2,
 * |product| <= 64, exact even in int8 and bfloat16.
 */
static union num input(const struct tcase *c, int r, size_t idx)
{
    const struct dtype *t = c->t;
    uint64_t h = mix(c->key[r] + idx * 0x9e3779b97f4a7c15ull), x;
    union num v;
    if (c->op == OP_PROD) {
        x = r < 6 && (h >> 8) % 3 == 0 ? 2 : 1;
        if (t->kind != K_UINT && ((h >> 16) & 1))
            x = -x;
    } else if (c->span == 0) {
        x = h;
    } else {
        /* A multiply in place of a division where the span allows: this is the hot loop. */
        x = (uint64_t)c->lo + (c->span <= UINT32_MAX ? ((h >> 32) * c->span) >> 32
                                                     : h % c->span);
    }
    if (is_int(t))
        v.u = canon(t, x);
    else
        v.f = (double)(int64_t)x;
    return v;
}

/* Integers wrap as the type does (arithmetic modulo 2^64 and canon agree with any width). */
static union num combine(const struct dtype *t, int op, union num a, union num b)
{
    int sgn = t->kind == K_INT;
    if (is_int(t)) {
        int64_t sa = (int64_t)a.u, sb = (int64_t)b.u;
        switch (op) {
        case OP_PROD: a.u *= b.u; break;
        case OP_MAX: a.u = (sgn ? sa < sb : a.u < b.u) ? b.u : a.u; break;
        case OP_MIN: a.u = (sgn ? sb < sa : b.u < a.u) ? b.u : a.u; break;
        default: a.u += b.u; break;
        }
        return a;
    }
    switch (op) {
    case OP_PROD: a.f *= b.f; break;
    case OP_MAX: a.f = a.f < b.f ? b.f : a.f; break;
    case OP_MIN: a.f = b.f < a.f ? b.f : a.f; break;
    default: a.f += b.f; break;
    }
    return a;
}

/* What this rank's output element j must be. */
static union num expected(const struct ctx *cx, const struct tcase *c, size_t j)
{
    const struct dtype *t = c->t;
    if (c->coll == BCAST)
        return input(c, c->root, j);
    if (c->coll == ALLGATHER)
        return input(c, (int)(j / c->count), j % c->count);
    size_t idx = c->coll == REDUCESCATTER ? (size_t)cx->rank * c->count + j : j;
    union num acc = input(c, 0, idx);
    for (int r = 1; r < cx->n; r++)
        acc = combine(t, c->op, acc, input(c, r, idx));
    if (c->op == OP_AVG) {
        /* Integer avg: the sum, then C division (toward zero), in 64 bits. */
        if (t->kind == K_INT)
            acc.u = (uint64_t)((int64_t)acc.u / (int64_t)cx->n);
        else if (t->kind == K_UINT)
            acc.u /= (uint64_t)cx->n;
        else
            acc.f /= cx->n;
    }
    if (is_int(t))
        acc.u = canon(t, acc.u);
    return acc;
}

static int same(const struct dtype *t, int op, union num got, union num want)
{
    if (is_int(t))
        return got.u == want.u;
    if (op != OP_AVG)
        return got.f == want.f;
    /* NCCL divides the sum, or multiplies the inputs by 1/n first: one or more roundings. */
    double tol = t->kind == K_DOUBLE ? 1e-12 : t->kind == K_FLOAT ? 1e-6 : 1e-2;
    double d = got.f - want.f;
    return (d < 0 ? -d : d) <= tol * want.f;
}

static void show(const struct dtype *t, union num v, char *s, size_t len)
{
    if (t->kind == K_INT)
        snprintf(s, len, "%lld", (long long)(int64_t)v.u);
    else if (t->kind == K_UINT)
        snprintf(s, len, "%llu", (unsigned long long)v.u);
    else
        snprintf(s, len, t->kind == K_DOUBLE ? "%.17g" : "%.9g", v.f);
}

/* ------------------------------------------------------------------ one case */

static void nccl_failed(ncclComm_t comm, const char *what, ncclResult_t res)
{
    printf("rank %d: %s: %s: %s\n", world_rank, what, ncclGetErrorString(res),
           ncclGetLastError(comm));
    fflush(stdout);
    st.errors++;
    /* Argument and usage errors are found before anything runs; NCCL leaves the communicator
     * usable after them. Anything else may have aborted it. */
    if (res != ncclInvalidArgument && res != ncclInvalidUsage)
        st.broken = 1;
}

static void wrong(const struct ctx *cx, const struct tcase *c, size_t j, const char *where,
                  union num got, union num want)
{
    char g[32], w[32];
    show(c->t, got, g, sizeof g);
    show(c->t, want, w, sizeof w);
    printf("rank %d: wrong: %s %s %s root %d count %zu %s: index %zu%s: got %s, expected %s\n",
           world_rank, colls[c->coll].name, c->t->name, c->op >= 0 ? ops[c->op].name : "-",
           c->root, c->count, c->inplace ? "in-place" : "out-of-place", j, where, g, w);
    fflush(stdout);
    st.wrong++;
}

static ncclResult_t call(const struct ctx *cx, const struct tcase *c, const void *s, void *r)
{
    ncclDataType_t dt = c->t->dt;
    ncclRedOp_t op = c->op >= 0 ? ops[c->op].op : ncclSum;
    switch (c->coll) {
    case BCAST: return ncclBroadcast(s, r, c->count, dt, c->root, cx->comm, NULL_STREAM);
    case REDUCE: return ncclReduce(s, r, c->count, dt, op, c->root, cx->comm, NULL_STREAM);
    case ALLREDUCE: return ncclAllReduce(s, r, c->count, dt, op, cx->comm, NULL_STREAM);
    case ALLGATHER: return ncclAllGather(s, r, c->count, dt, cx->comm, NULL_STREAM);
    default: return ncclReduceScatter(s, r, c->count, dt, op, cx->comm, NULL_STREAM);
    }
}

/*
 * Buffer b holds the output and its guard; in place, NCCL's layouts: allgather's input is this
 * rank's slice of the output, reduce-scatter's output is this rank's slice of the input (the
 * guard then follows the whole input). Returns after the first wrong element, guard element or
 * changed input element: one line per wrong case.
 */
static void run_case(const struct ctx *cx, const struct bufs *b, const struct tcase *c0)
{
    static uint64_t key[MAX_RANKS];
    struct tcase cc = *c0;
    const struct tcase *c = &cc;
    const struct dtype *t = c->t;
    /* One hash per element: the reference computes n inputs for each output element. */
    for (int r = 0; r < cx->n; r++)
        key[r] = mix(mix(cx->seed ^ mix(c->id)) + mix((uint64_t)cx->world[r] + 1));
    cc.key = key;
    input_range(t, c->op, (uint64_t)cx->n, &cc.lo, &cc.span);
    size_t sz = (size_t)t->size, n = (size_t)cx->n, me = (size_t)cx->rank;
    size_t nsend = c->coll == REDUCESCATTER ? n * c->count : c->count;
    size_t nrecv = c->coll == ALLGATHER ? n * c->count : c->count;
    size_t area = c->inplace && c->coll == REDUCESCATTER ? nsend : nrecv, at = 0;
    char *send = b->a, *recv = b->b;
    for (size_t i = 0; i < nsend; i++)
        store(t, b->hsend + i * sz, input(c, cx->rank, i));
    memset(b->hrecv, SENTINEL, (area + GUARD) * sz);
    if (c->inplace) {
        send = b->b;
        if (c->coll == ALLGATHER) {
            memcpy(b->hrecv + me * c->count * sz, b->hsend, nsend * sz);
            send = b->b + me * c->count * sz;
        } else if (c->coll != BCAST || c->root == cx->rank) {
            memcpy(b->hrecv, b->hsend, nsend * sz);
        }
        if (c->coll == REDUCESCATTER) {
            at = me * c->count;
            recv = b->b + at * sz;
        }
    } else if (to_buf(b->a, b->hsend, nsend * sz)) {
        return;
    }
    if (to_buf(b->b, b->hrecv, (area + GUARD) * sz))
        return;
    st.cases++;
    ncclResult_t res = call(cx, c, send, recv);
    if (res != ncclSuccess) {
        nccl_failed(cx->comm, colls[c->coll].fn, res);
        return;
    }
    if (sync_stream() || from_buf(b->hrecv, b->b, (area + GUARD) * sz))
        return;
    if (c->coll != REDUCE || c->root == cx->rank)
        for (size_t j = 0; j < nrecv; j++) {
            union num got = load(t, b->hrecv + (at + j) * sz), want = expected(cx, c, j);
            if (!same(t, c->op, got, want)) {
                wrong(cx, c, j, "", got, want);
                return;
            }
        }
    unsigned char fill[8];
    memset(fill, SENTINEL, sizeof fill);
    for (size_t g = 0; g < GUARD; g++)
        if (memcmp(b->hrecv + (area + g) * sz, fill, sz) != 0) {
            wrong(cx, c, nrecv + g, " (guard)", load(t, b->hrecv + (area + g) * sz),
                  load(t, fill));
            return;
        }
    /* sendbuff is const: out of place, the input must be as it was. */
    if (!c->inplace && !from_buf(b->hrecv, b->a, nsend * sz))
        for (size_t i = 0; i < nsend; i++)
            if (memcmp(b->hrecv + i * sz, b->hsend + i * sz, sz) != 0) {
                wrong(cx, c, i, " (sendbuff)", load(t, b->hrecv + i * sz),
                      load(t, b->hsend + i * sz));
                return;
            }
}

/* ------------------------------------------------------------------ the sweep */

/* Whether no rank has seen an error: after one, a communicator may be aborted, so every rank
 * leaves the sweep together and none waits in a call for a rank that left. */
static int all_ok(void)
{
    int mine = st.errors == 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

static int type_counts(const struct opts *o, const struct dtype *t, size_t *out)
{
    int k = 0;
    for (; k < o->ncounts; k++)
        out[k] = o->counts[k];
    if (o->big && t->dt == ncclFloat32)
        out[k++] = BIG_COUNT;
    return k;
}

/* Roots x counts x places of one collective, type and op; 0 once the sweep must stop. */
static int run_group(const struct ctx *cx, const struct bufs *b, const struct opts *o,
                     struct tcase *c)
{
    int rooted = c->coll == BCAST || c->coll == REDUCE;
    int nroots = !rooted ? 1 : o->nroots ? o->nroots : cx->n;
    size_t counts[MAX_LIST + 1];
    int ncounts = type_counts(o, c->t, counts);
    for (int ri = 0; ri < nroots; ri++)
        for (int k = 0; k < ncounts; k++)
            for (int place = 0; place < 2; place++) {
                if (!(o->places & (1u << place)))
                    continue;
                c->root = !rooted ? -1 : o->nroots ? o->roots[ri] : ri;
                c->count = counts[k];
                c->inplace = place;
                run_case(cx, b, c);
                c->id++;
                if (!all_ok())
                    return 0;
            }
    return 1;
}

static void run_sweep(const struct ctx *cx, const struct bufs *b, const struct opts *o)
{
    struct tcase c = {0};
    for (int k = 0; k < NCOLLS; k++) {
        if (!(o->colls & (1u << k)))
            continue;
        int has_op = k != BCAST && k != ALLGATHER;
        for (int ti = 0; ti < NTYPES; ti++)
            for (int op = has_op ? 0 : OP_NONE; op < (has_op ? NOPS : 0); op++) {
                if (!(o->types & (1u << ti)) || (op >= 0 && !(o->ops & (1u << op))))
                    continue;
                c.coll = (enum coll)k;
                c.t = &dtypes[ti];
                c.op = op;
                if (!run_group(cx, b, o, &c))
                    return;
            }
    }
}

/* ------------------------------------------------------------------ teardown, split, -X */

/* Finalize and destroy, or abort where some rank saw its communicator broken: every rank
 * makes the same choice, so none finalizes against a peer that aborted. */
static void close_comm(ncclComm_t comm)
{
    int mine = st.broken, any = 0;
    ncclResult_t res;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!comm)
        return;
    if (any) {
        if ((res = ncclCommAbort(comm)) != ncclSuccess)
            nccl_failed(NULL, "ncclCommAbort", res);
        return;
    }
    if ((res = ncclCommFinalize(comm)) != ncclSuccess)
        nccl_failed(comm, "ncclCommFinalize", res);
    if ((res = ncclCommDestroy(comm)) != ncclSuccess)
        nccl_failed(NULL, "ncclCommDestroy", res);
}

/* The communicator's size and rank must be the ones MPI and the split say. */
static int check_comm(ncclComm_t comm, int n, int rank, const char *what)
{
    int cn = -1, cr = -1;
    ncclResult_t res;
    if ((res = ncclCommCount(comm, &cn)) != ncclSuccess)
        return nccl_failed(comm, "ncclCommCount", res), 0;
    if ((res = ncclCommUserRank(comm, &cr)) != ncclSuccess)
        return nccl_failed(comm, "ncclCommUserRank", res), 0;
    if (cn != n || cr != rank) {
        printf("rank %d: wrong: %s: ncclCommCount %d, ncclCommUserRank %d; expected %d, %d\n",
               world_rank, what, cn, cr, n, rank);
        st.wrong++;
    }
    return 1;
}

/* ncclCommSplit by parity, then allreduce sum float32 on the half, against its own reference. */
static void run_split(const struct ctx *cx, const struct bufs *b, const struct opts *o)
{
    int world[MAX_RANKS], half = 0;
    struct ctx sub = *cx;
    for (int r = cx->rank % 2; r < cx->n && half < (int)LEN(world); r += 2)
        world[half++] = r;
    sub.world = world;
    sub.n = half;
    sub.rank = cx->rank / 2;
    sub.comm = NULL;
    ncclResult_t res = ncclCommSplit(cx->comm, cx->rank % 2, cx->rank, &sub.comm, NULL);
    if (res != ncclSuccess) {
        nccl_failed(cx->comm, "ncclCommSplit", res);
        sub.comm = NULL;
    } else {
        check_comm(sub.comm, sub.n, sub.rank, "split");
    }
    struct tcase c = {ALLREDUCE, &dtypes[7], OP_SUM, -1, 0, 0, 0x5b1170000ull, NULL, 0, 0};
    for (size_t k = 0; k < LEN(split_counts) && all_ok(); k++)
        for (int place = 0; place < 2; place++)
            if ((o->places & (1u << place)) && all_ok()) {
                c.count = split_counts[k];
                c.inplace = place;
                run_case(&sub, b, &c);
                c.id++;
            }
    close_comm(sub.comm);
}

/* One call that must give --expect: each rank says what it got. */
static void run_xfail(const struct ctx *cx, const struct bufs *b, const struct opts *o)
{
    ncclResult_t res = ncclInvalidArgument, r2;
    const char *what = o->xfail;
    int n = cx->n, me = cx->rank;
    memset(b->hsend, 0, (size_t)(4 * n + 16) * sizeof(float));
    if (to_buf(b->a, b->hsend, (size_t)(4 * n + 16) * sizeof(float)))
        return;
    if (strcmp(what, "p2p") == 0) {
        res = ncclGroupStart();
        r2 = ncclSend(b->a, 16, ncclFloat32, (me + 1) % n, cx->comm, NULL_STREAM);
        res = res != ncclSuccess ? res : r2;
        r2 = ncclRecv(b->b, 16, ncclFloat32, (me + n - 1) % n, cx->comm, NULL_STREAM);
        res = res != ncclSuccess ? res : r2;
        r2 = ncclGroupEnd();   /* always: the group must be closed */
        res = res != ncclSuccess ? res : r2;
    } else if (strcmp(what, "alltoall") == 0) {
        res = ncclAlltoAll(b->a, b->b, 4, ncclFloat32, cx->comm, NULL_STREAM);
    } else if (strcmp(what, "premulsum") == 0) {
        float scalar = 0.5f;
        ncclRedOp_t op;
        res = ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate,
                                       cx->comm);
        if (res == ncclSuccess) {
            res = ncclAllReduce(b->a, b->b, 16, ncclFloat32, op, cx->comm, NULL_STREAM);
            r2 = ncclRedOpDestroy(op, cx->comm);
            res = res != ncclSuccess ? res : r2;
        }
    } else if (strcmp(what, "fp8") == 0) {
        res = ncclAllReduce(b->a, b->b, 16, ncclFloat8e4m3, ncclSum, cx->comm, NULL_STREAM);
    } else if (strcmp(what, "allreduce") == 0) {
        res = ncclAllReduce(b->a, b->b, 16, ncclFloat32, ncclSum, cx->comm, NULL_STREAM);
    }
    if (res == ncclSuccess)
        sync_stream();
    printf("rank %d: %s: result %d (%s): %s\n", world_rank, what, (int)res,
           ncclGetErrorString(res), ncclGetLastError(cx->comm));
    fflush(stdout);
    st.cases++;
    st.wrong += (int)res != o->expect;
    if (res != ncclSuccess && res != ncclInvalidArgument && res != ncclInvalidUsage)
        st.broken = 1;
}

/* ------------------------------------------------------------------ options */

static void usage(FILE *f)
{
    fputs("Usage: nccl_client [OPTION]...   (under mpirun, one process per rank)\n"
          "  -C, --colls LIST      broadcast,reduce,allreduce,allgather,reducescatter; all; none\n"
          "  -d, --datatypes LIST  int8,uint8,int32,uint32,int64,uint64,float16,float32,\n"
          "                        float64,bfloat16; or all\n"
          "  -o, --ops LIST        sum,prod,max,min,avg; or all\n"
          "  -r, --roots LIST      roots of broadcast and reduce; or all\n"
          "  -n, --counts LIST     element counts (default 0,1,2,3,7,31,1021,4096,65537, and\n"
          "                        1000003 for float32)\n"
          "  -Q, --quick           counts 0,1,3,31,1021\n"
          "  -p, --place WHICH     out, in or both\n"
          "  -s, --seed N          input seed\n"
          "  -q, --quiet           no version line\n"
          "      --split           then allreduce on ncclCommSplit(comm, rank % 2, rank)\n"
          "      --register        both buffers registered with ncclCommRegister\n"
          "  -X, --xfail WHAT      only one call: p2p, alltoall, premulsum, fp8, allreduce\n"
          "      --expect CODE     the ncclResult_t it must give (default 0)\n"
          "  -h, --help            this text\n", f);
}

/* The next comma-separated item of *s into item; 0 at the end, -1 if too long. */
static int next_item(const char **s, char *item, size_t len)
{
    if (!*s)
        return 0;
    const char *comma = strchr(*s, ',');
    size_t k = comma ? (size_t)(comma - *s) : strlen(*s);
    if (k >= len)
        return -1;
    memcpy(item, *s, k);
    item[k] = '\0';
    *s = comma ? comma + 1 : NULL;
    return 1;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (!*s || *s == '-' || *end || errno || x > max)
        return -1;
    *v = x;
    return 0;
}

/* A list of the names in table (each entry's first member, entries stride bytes apart). */
static int parse_names(const char *s, const void *table, size_t stride, int count,
                       unsigned *mask)
{
    char item[32];
    int got;
    *mask = strcmp(s, "all") == 0 ? (1u << count) - 1 : 0;
    if (*mask || strcmp(s, "none") == 0)
        return 0;
    while ((got = next_item(&s, item, sizeof item)) > 0) {
        int k = 0;
        while (k < count && strcmp(item, *(const char *const *)(const void *)
                                   ((const char *)table + (size_t)k * stride)) != 0)
            k++;
        if (k == count)
            return -1;
        *mask |= 1u << k;
    }
    return got;
}

/* A list of numbers up to max into out; their number, or -1. */
static int parse_numbers(const char *s, uint64_t max, uint64_t *out)
{
    char item[32];
    int k = 0, got;
    while ((got = next_item(&s, item, sizeof item)) > 0)
        if (k == MAX_LIST || parse_u64(item, max, &out[k++]) != 0)
            return -1;
    return got < 0 || k == 0 ? -1 : k;
}

/* -1 to go on; otherwise the exit status (0 for --help, 2 for a usage error). */
static int parse(int argc, char **argv, int nranks, struct opts *o)
{
    static const struct option longs[] = {
        {"colls", required_argument, NULL, 'C'}, {"datatypes", required_argument, NULL, 'd'},
        {"ops", required_argument, NULL, 'o'},   {"roots", required_argument, NULL, 'r'},
        {"counts", required_argument, NULL, 'n'}, {"quick", no_argument, NULL, 'Q'},
        {"place", required_argument, NULL, 'p'}, {"seed", required_argument, NULL, 's'},
        {"quiet", no_argument, NULL, 'q'},       {"split", no_argument, NULL, 'S'},
        {"xfail", required_argument, NULL, 'X'}, {"expect", required_argument, NULL, 'E'},
        {"register", no_argument, NULL, 'R'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t v[MAX_LIST];
    int opt, k, quick = 0;
    memset(o, 0, sizeof *o);
    o->colls = (1u << NCOLLS) - 1;
    o->types = (1u << NTYPES) - 1;
    o->ops = (1u << NOPS) - 1;
    o->places = 3;
    o->seed = 1;
    o->ncounts = -1;
    opterr = world_rank == 0;
    while ((opt = getopt_long(argc, argv, "C:d:o:r:n:Qp:s:qX:h", longs, NULL)) != -1) {
        const char *bad = NULL;
        switch (opt) {
        case 'C':
            bad = parse_names(optarg, colls, sizeof colls[0], NCOLLS, &o->colls) ? "-C" : NULL;
            break;
        case 'd':
            bad = parse_names(optarg, dtypes, sizeof dtypes[0], NTYPES, &o->types) ? "-d" : NULL;
            break;
        case 'o':
            bad = parse_names(optarg, ops, sizeof ops[0], NOPS, &o->ops) ? "-o" : NULL;
            break;
        case 'r':
            o->nroots = 0;
            if (strcmp(optarg, "all") != 0 &&
                (o->nroots = parse_numbers(optarg, (uint64_t)nranks - 1, v)) < 0)
                bad = "-r (roots must be below the rank count)";
            for (k = 0; k < o->nroots; k++)
                o->roots[k] = (int)v[k];
            break;
        case 'n':
            /* 2^32 elements at most: counts times ranks times 8 bytes must not overflow. */
            if ((o->ncounts = parse_numbers(optarg, (uint64_t)1 << 32, v)) < 0)
                bad = "-n";
            for (k = 0; k < o->ncounts; k++)
                o->counts[k] = (size_t)v[k];
            break;
        case 'Q': quick = 1; break;
        case 'p':
            o->places = strcmp(optarg, "out") == 0 ? 1 : strcmp(optarg, "in") == 0 ? 2
                      : strcmp(optarg, "both") == 0 ? 3 : 0;
            bad = o->places ? NULL : "-p";
            break;
        case 's': bad = parse_u64(optarg, UINT64_MAX, &o->seed) ? "-s" : NULL; break;
        case 'q': o->quiet = 1; break;
        case 'S': o->split = 1; break;
        case 'R': o->reg = 1; break;
        case 'X':
            o->xfail = optarg;
            bad = strcmp(optarg, "p2p") && strcmp(optarg, "alltoall") &&
                  strcmp(optarg, "premulsum") && strcmp(optarg, "fp8") &&
                  strcmp(optarg, "allreduce") ? "-X" : NULL;
            break;
        case 'E':
            v[0] = 0;
            bad = parse_u64(optarg, ncclNumResults - 1, &v[0]) ? "--expect" : NULL;
            o->expect = (int)v[0];
            break;
        case 'h':
            if (world_rank == 0)
                usage(stdout);
            return 0;
        default: bad = "";
        }
        if (bad) {
            if (world_rank == 0 && *bad)
                fprintf(stderr, "nccl_client: bad %s argument '%s'\n", bad, optarg);
            if (world_rank == 0)
                fputs("Try 'nccl_client --help'\n", stderr);
            return 2;
        }
    }
    if (optind < argc) {
        if (world_rank == 0)
            fprintf(stderr, "nccl_client: unexpected '%s'\nTry 'nccl_client --help'\n",
                    argv[optind]);
        return 2;
    }
    if (o->ncounts < 0) {
        const size_t *c = quick ? quick_counts : default_counts;
        o->ncounts = quick ? (int)LEN(quick_counts) : (int)LEN(default_counts);
        memcpy(o->counts, c, (size_t)o->ncounts * sizeof *c);
        o->big = !quick;
    }
    return -1;
}

/* The bytes each buffer needs for every case selected. */
static size_t need_bytes(const struct opts *o, int n)
{
    size_t most = (size_t)(4 * n + 16 + GUARD) * 8, counts[MAX_LIST + 1];
    size_t mult = o->colls & ((1u << ALLGATHER) | (1u << REDUCESCATTER)) ? (size_t)n : 1;
    for (int ti = 0; ti < NTYPES && !o->xfail; ti++)
        for (int k = 0, nc = type_counts(o, &dtypes[ti], counts); k < nc; k++)
            if (o->types & (1u << ti) && o->colls) {
                size_t b = (counts[k] * mult + GUARD) * (size_t)dtypes[ti].size;
                most = b > most ? b : most;
            }
    if (o->split && (split_counts[LEN(split_counts) - 1] + GUARD) * 4 > most)
        most = (split_counts[LEN(split_counts) - 1] + GUARD) * 4;
    return most;
}

/* ------------------------------------------------------------------ main */

static void alloc_bufs(struct bufs *b, size_t bytes)
{
    void *p = NULL, *q = NULL;
    ncclResult_t res;
    if ((res = ncclMemAlloc(&p, bytes)) != ncclSuccess)
        nccl_failed(NULL, "ncclMemAlloc", res);
    else if ((res = ncclMemAlloc(&q, bytes)) != ncclSuccess)
        nccl_failed(NULL, "ncclMemAlloc", res);
    b->a = p;
    b->b = q;
    b->bytes = bytes;
    b->hsend = malloc(bytes);
    b->hrecv = malloc(bytes);
    if (!b->hsend || !b->hrecv) {
        printf("rank %d: out of memory (%zu bytes)\n", world_rank, bytes);
        st.errors++;
    }
}

static void free_bufs(struct bufs *b)
{
    ncclResult_t res;
    if (b->a && (res = ncclMemFree(b->a)) != ncclSuccess)
        nccl_failed(NULL, "ncclMemFree", res);
    if (b->b && (res = ncclMemFree(b->b)) != ncclSuccess)
        nccl_failed(NULL, "ncclMemFree", res);
    free(b->hsend);
    free(b->hrecv);
}

/* --register: both buffers registered with comm (register 1) or deregistered (0). */
static void register_bufs(ncclComm_t comm, struct bufs *b, int reg)
{
    ncclResult_t res;
    for (int k = 0; k < 2; k++) {
        if (reg && (res = ncclCommRegister(comm, k ? b->b : b->a, b->bytes, &b->reg[k])) !=
                       ncclSuccess)
            nccl_failed(comm, "ncclCommRegister", res);
        else if (!reg && b->reg[k] && (res = ncclCommDeregister(comm, b->reg[k])) != ncclSuccess)
            nccl_failed(comm, "ncclCommDeregister", res);
    }
}

/* NCCL_CLIENT_MARKS/joined.RANK: this rank has returned from ncclCommInitRank. */
static void mark_joined(void)
{
    const char *dir = getenv("NCCL_CLIENT_MARKS");
    char path[4096];
    if (!dir || snprintf(path, sizeof path, "%s/joined.%d", dir, world_rank) >= (int)sizeof path)
        return;
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

/* NCCL_CLIENT_FAULT=mute: no MPI until every rank's mark is there, for at most MUTE_S. */
#define MUTE_S 30
static void wait_for_joined(int n)
{
    const char *dir = getenv("NCCL_CLIENT_MARKS");
    if (!dir) {
        printf("rank %d: NCCL_CLIENT_FAULT=mute needs NCCL_CLIENT_MARKS\n", world_rank);
        st.errors++;
        return;
    }
    int missing = n;
    for (int tries = 0; missing && tries < MUTE_S * 20; tries++) {
        missing = 0;
        for (int r = 0; r < n; r++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/joined.%d", dir, r);
            missing += access(path, F_OK) != 0;
        }
        struct timespec ts = {0, 50000000};
        if (missing)
            nanosleep(&ts, NULL);
    }
    if (missing) {
        printf("rank %d: NCCL_CLIENT_FAULT=mute: %d of %d ranks had not returned from "
               "ncclCommInitRank after %d s without MPI calls here\n", world_rank, missing, n,
               MUTE_S);
        st.errors++;
    }
}

int main(int argc, char **argv)
{
    struct opts o;
    int n, rc, version = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if ((rc = parse(argc, argv, n, &o)) >= 0) {
        MPI_Finalize();
        return rc;
    }
    if (world_rank == 0 && !o.quiet && ncclGetVersion(&version) == ncclSuccess)
        printf("# nccl-client: NCCL version %d.%d.%d (%d), ranks %d\n",
               version >= 10000 ? version / 10000 : version / 1000,
               version >= 10000 ? version / 100 % 100 : version / 100 % 10, version % 100,
               version, n);
    pick_device();
    /* The id and whether rank 0 got one, in one broadcast. */
    struct { int res; ncclUniqueId id; } msg;
    memset(&msg, 0, sizeof msg);
    if (world_rank == 0 && (msg.res = ncclGetUniqueId(&msg.id)) != ncclSuccess)
        nccl_failed(NULL, "ncclGetUniqueId", (ncclResult_t)msg.res);
    MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, MPI_COMM_WORLD);
    int *world = malloc((size_t)n * sizeof *world);
    for (int r = 0; world && r < n; r++)
        world[r] = r;
    if (!world || n > MAX_RANKS) {
        printf("rank %d: %d ranks: out of memory, or over %d\n", world_rank, n, MAX_RANKS);
        st.errors++;
    }
    struct ctx cx = {NULL, world_rank, n, world, o.seed};
    struct bufs b = {NULL, NULL, NULL, NULL};
    ncclResult_t res;
    /* Faults for the tests: a rank that never joins, or one that dies after joining. */
    const char *fault = getenv("NCCL_CLIENT_FAULT");
    int absent = fault && strcmp(fault, "absent") == 0;
    if (absent)
        printf("rank %d: NCCL_CLIENT_FAULT=absent: not joining\n", world_rank);
    else if (msg.res == ncclSuccess && (res = ncclCommInitRank(&cx.comm, n, msg.id, world_rank))) {
        nccl_failed(NULL, "ncclCommInitRank", res);
        cx.comm = NULL;
    }
    if (cx.comm)
        mark_joined();
    if (fault && strcmp(fault, "mute") == 0 && cx.comm)
        wait_for_joined(n);
    if (fault && strcmp(fault, "exit") == 0) {
        printf("rank %d: NCCL_CLIENT_FAULT=exit: exiting\n", world_rank);
        fflush(stdout);
        _Exit(3);
    }
    if (all_ok() && !absent && check_comm(cx.comm, n, world_rank, "ncclCommInitRank"))
        alloc_bufs(&b, need_bytes(&o, n));
    if (all_ok() && !absent && o.reg)
        register_bufs(cx.comm, &b, 1);
    if (all_ok() && !absent) {
        if (o.xfail) {
            run_xfail(&cx, &b, &o);
        } else {
            run_sweep(&cx, &b, &o);
            if (o.split && all_ok())
                run_split(&cx, &b, &o);
        }
    }
    if (cx.comm && o.reg)
        register_bufs(cx.comm, &b, 0);
    close_comm(cx.comm);
    free_bufs(&b);
    free(world);

    long mine[2] = {st.wrong, st.errors}, sum[2] = {0, 0}, cases = 0;
    MPI_Reduce(&st.cases, &cases, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("# nccl-client: ranks %d, cases %ld, wrong %ld, errors %ld\n", n, cases, sum[0],
               sum[1]);
    fflush(stdout);
    int bad = st.wrong || st.errors, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
