/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * reduce_host.c - element-wise sum, prod, max and min for every datatype on the CPU, plus the
 * division that turns a sum into an average. Integer sum and prod wrap (computed as unsigned,
 * so there is no undefined behaviour); float16 and bfloat16 go through float and are rounded
 * back to nearest, ties to even. Max and min of floats are C's fmax and fmin, as NCCL's are: a
 * NaN loses to a number, so the result does not depend on the order a tree combines values in.
 */
#include <string.h>

#include "reduce_host.h"

float bk_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);        /* inf, nan */
    } else if (exp != 0) {
        u = sign | ((exp + 112) << 23) | (man << 13); /* normal: rebias 15 -> 127 */
    } else if (man == 0) {
        u = sign;                                     /* zero */
    } else {                                          /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t bk_float_to_half(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t exp = (u >> 23) & 0xff, man = u & 0x7fffff;
    if (exp == 0xff)                                  /* inf, nan (keep it a nan) */
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00);             /* overflow */
    if (e <= 0) {                                     /* subnormal or zero */
        if (e < -10)
            return sign;
        man |= 0x800000;
        int shift = 14 - e;                           /* 14..24 */
        uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
        half++;                                        /* may carry into the exponent: right */
    return (uint16_t)(sign | half);
}

float bk_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t bk_float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffff))
        return (uint16_t)((u >> 16) | 0x40);          /* quiet nan */
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* Integers: T the type, U its unsigned twin (wrapping sum and prod). */
#define INT_LOOP(T, U)                                                                        \
    do {                                                                                      \
        T *d = dst;                                                                           \
        const T *x = a, *y = b;                                                               \
        for (size_t i = 0; i < n; i++) {                                                      \
            T p = x[i], q = y[i];                                                             \
            switch (op) {                                                                     \
            case blinkSum: d[i] = (T)(U)((U)p + (U)q); break;                                 \
            case blinkProd: d[i] = (T)(U)((U)p * (U)q); break;                                \
            case blinkMax: d[i] = p > q ? p : q; break;                                       \
            default: d[i] = p < q ? p : q; break;                                             \
            }                                                                                 \
        }                                                                                     \
    } while (0)

/* fmax and fmin without libm: the number wins over a NaN. */
#define FMAX(p, q) ((q) != (q) ? (p) : (p) != (p) ? (q) : (p) > (q) ? (p) : (q))
#define FMIN(p, q) ((q) != (q) ? (p) : (p) != (p) ? (q) : (p) < (q) ? (p) : (q))

#define FLT_LOOP(T)                                                                           \
    do {                                                                                      \
        T *d = dst;                                                                           \
        const T *x = a, *y = b;                                                               \
        for (size_t i = 0; i < n; i++) {                                                      \
            T p = x[i], q = y[i];                                                             \
            d[i] = op == blinkSum ? p + q : op == blinkProd ? p * q :                         \
                   op == blinkMax ? FMAX(p, q) : FMIN(p, q);                                  \
        }                                                                                     \
    } while (0)

/* 16-bit floats: through float, one rounding per element. */
#define F16_LOOP(TO_F, FROM_F)                                                                \
    do {                                                                                      \
        uint16_t *d = dst;                                                                    \
        const uint16_t *x = a, *y = b;                                                        \
        for (size_t i = 0; i < n; i++) {                                                      \
            float p = TO_F(x[i]), q = TO_F(y[i]);                                             \
            d[i] = FROM_F(op == blinkSum ? p + q : op == blinkProd ? p * q :                  \
                          op == blinkMax ? FMAX(p, q) : FMIN(p, q));                          \
        }                                                                                     \
    } while (0)

int bk_host_reduce(void *dst, const void *a, const void *b, size_t n, blinkDataType_t dt,
                   blinkRedOp_t op)
{
    if ((unsigned)op > blinkMin)
        return -1;
    /* uint8/uint16 promote to int: use unsigned int as the wrapping type for narrow types. */
    switch (dt) {
    case blinkInt8: INT_LOOP(int8_t, unsigned); break;
    case blinkUint8: INT_LOOP(uint8_t, unsigned); break;
    case blinkInt32: INT_LOOP(int32_t, uint32_t); break;
    case blinkUint32: INT_LOOP(uint32_t, uint32_t); break;
    case blinkInt64: INT_LOOP(int64_t, uint64_t); break;
    case blinkUint64: INT_LOOP(uint64_t, uint64_t); break;
    case blinkFloat16: F16_LOOP(bk_half_to_float, bk_float_to_half); break;
    case blinkBfloat16: F16_LOOP(bk_bf16_to_float, bk_float_to_bf16); break;
    case blinkFloat32: FLT_LOOP(float); break;
    case blinkFloat64: FLT_LOOP(double); break;
    default: return -1;
    }
    return 0;
}

#define DIV_LOOP(T, expr)                                                                     \
    do {                                                                                      \
        T *p = buf;                                                                           \
        for (size_t i = 0; i < n; i++)                                                        \
            p[i] = expr;                                                                      \
    } while (0)

int bk_host_divide(void *buf, size_t n, blinkDataType_t dt, int d)
{
    if (d <= 0)
        return -1;
    switch (dt) {
    case blinkInt8: DIV_LOOP(int8_t, (int8_t)(p[i] / d)); break;
    case blinkUint8: DIV_LOOP(uint8_t, (uint8_t)(p[i] / (unsigned)d)); break;
    case blinkInt32: DIV_LOOP(int32_t, (int32_t)(p[i] / d)); break;
    case blinkUint32: DIV_LOOP(uint32_t, p[i] / (uint32_t)d); break;
    case blinkInt64: DIV_LOOP(int64_t, p[i] / d); break;
    case blinkUint64: DIV_LOOP(uint64_t, p[i] / (uint64_t)d); break;
    case blinkFloat16: DIV_LOOP(uint16_t, bk_float_to_half(bk_half_to_float(p[i]) / (float)d)); break;
    case blinkBfloat16: DIV_LOOP(uint16_t, bk_float_to_bf16(bk_bf16_to_float(p[i]) / (float)d)); break;
    case blinkFloat32: DIV_LOOP(float, p[i] / (float)d); break;
    case blinkFloat64: DIV_LOOP(double, p[i] / (double)d); break;
    default: return -1;
    }
    return 0;
}
