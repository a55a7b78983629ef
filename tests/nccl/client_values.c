/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * client_values.c - nccl_client's data: moving it to and from the buffers (CUDA or host), the inputs
 * every rank derives from the seed, and the reference each checks its output against.
 */
#include "client.h"

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
int to_buf(void *dst, const void *src, size_t bytes)
{
    return cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}
int from_buf(void *dst, const void *src, size_t bytes)
{
    return cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}
int sync_stream(void)
{
    return cuda_check(cudaStreamSynchronize(NULL_STREAM), "cudaStreamSynchronize");
}
/* One GPU per rank of a node, as nccl-tests picks them. */
void pick_device(void)
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
int to_buf(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return 0;
}
int from_buf(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return 0;
}
int sync_stream(void) { return 0; }
void pick_device(void) {}
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

void store(const struct dtype *t, unsigned char *p, union num v)
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

union num load(const struct dtype *t, const unsigned char *p)
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

uint64_t mix(uint64_t x)
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
void input_range(const struct dtype *t, int op, uint64_t n, int64_t *lo, uint64_t *span)
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
union num input(const struct tcase *c, int r, size_t idx)
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
union num expected(const struct ctx *cx, const struct tcase *c, size_t j)
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

int same(const struct dtype *t, int op, union num got, union num want)
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

void show(const struct dtype *t, union num v, char *s, size_t len)
{
    if (t->kind == K_INT)
        snprintf(s, len, "%lld", (long long)(int64_t)v.u);
    else if (t->kind == K_UINT)
        snprintf(s, len, "%llu", (unsigned long long)v.u);
    else
        snprintf(s, len, t->kind == K_DOUBLE ? "%.17g" : "%.9g", v.f);
}
