/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_reduce.c - the host reduction kernels (reduce_host.c) directly: float16 and bfloat16
 * conversions (every half round-trips; ties round to even; overflow, subnormals, nan), wrapping
 * integer sum and prod, signed max and min, truncating integer division for avg (also at 128
 * and 256 ranks), and max and min of floats that drop a NaN whatever the order.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "reduce_host.h"

Test(rt_reduce, half_roundtrip_every_value)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = bk_half_to_float((uint16_t)h);
        if (isnan(f))
            cr_expect(isnan(bk_half_to_float(bk_float_to_half(f))), "%#x", h);
        else
            cr_expect_eq(bk_float_to_half(f), h, "%#x -> %g -> %#x", h, f, bk_float_to_half(f));
    }
    /* Values independent of the code: 1.0, -2.0, 65504 (max), 2^-24 (smallest subnormal). */
    cr_expect_eq(bk_half_to_float(0x3c00), 1.0f);
    cr_expect_eq(bk_half_to_float(0xc000), -2.0f);
    cr_expect_eq(bk_half_to_float(0x7bff), 65504.0f);
    cr_expect_eq(bk_half_to_float(0x0001), ldexpf(1, -24));
}

Test(rt_reduce, half_rounding)
{
    cr_expect_eq(bk_float_to_half(1.0f + ldexpf(1, -11)), 0x3c00);       /* tie: to even (down) */
    cr_expect_eq(bk_float_to_half(1.0f + 3 * ldexpf(1, -11)), 0x3c02);   /* tie: to even (up) */
    cr_expect_eq(bk_float_to_half(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3c01);
    cr_expect_eq(bk_float_to_half(65520.0f), 0x7c00);                    /* rounds to inf */
    cr_expect_eq(bk_float_to_half(65519.0f), 0x7bff);
    cr_expect_eq(bk_float_to_half(ldexpf(1, -25)), 0x0000);              /* tie: to even zero */
    cr_expect_eq(bk_float_to_half(ldexpf(3, -26)), 0x0001);
    cr_expect_eq(bk_float_to_half(-INFINITY), 0xfc00);
    cr_expect(isnan(bk_half_to_float(bk_float_to_half(NAN))));
}

Test(rt_reduce, bfloat16)
{
    cr_expect_eq(bk_float_to_bf16(1.0f), 0x3f80);
    cr_expect_eq(bk_bf16_to_float(0x3f80), 1.0f);
    cr_expect_eq(bk_float_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80);        /* tie: to even */
    cr_expect_eq(bk_float_to_bf16(1.0f + 3 * ldexpf(1, -8)), 0x3f82);
    cr_expect(isnan(bk_bf16_to_float(bk_float_to_bf16(NAN))));
    uint16_t a[3] = {0x3f80, 0x4000, 0xc040}, b[3] = {0x4000, 0x4000, 0x3f80}, d[3]; /* 1,2,-3 */
    cr_assert_eq(bk_host_reduce(d, a, b, 3, blinkBfloat16, blinkSum), 0);
    cr_expect(d[0] == 0x4040 && d[1] == 0x4080 && d[2] == 0xc000);        /* 3, 4, -2 */
}

Test(rt_reduce, integers_wrap)
{
    int8_t a8[3] = {127, -128, -3}, b8[3] = {1, -1, 5}, d8[3];
    cr_assert_eq(bk_host_reduce(d8, a8, b8, 3, blinkInt8, blinkSum), 0);
    cr_expect(d8[0] == -128 && d8[1] == 127 && d8[2] == 2);
    cr_assert_eq(bk_host_reduce(d8, a8, b8, 3, blinkInt8, blinkProd), 0);
    cr_expect(d8[0] == 127 && d8[1] == -128 && d8[2] == -15);
    uint8_t u[2] = {200, 3}, v[2] = {2, 250}, du[2];
    cr_assert_eq(bk_host_reduce(du, u, v, 2, blinkUint8, blinkProd), 0);
    cr_expect(du[0] == 144 && du[1] == 238);
    int64_t a64[2] = {INT64_MAX, INT64_MIN}, b64[2] = {1, -1}, d64[2];
    cr_assert_eq(bk_host_reduce(d64, a64, b64, 2, blinkInt64, blinkSum), 0);
    cr_expect(d64[0] == INT64_MIN && d64[1] == INT64_MAX);
    int32_t a32[2] = {-5, 7}, b32[2] = {3, -9}, d32[2];
    cr_assert_eq(bk_host_reduce(d32, a32, b32, 2, blinkInt32, blinkMax), 0);
    cr_expect(d32[0] == 3 && d32[1] == 7);
    cr_assert_eq(bk_host_reduce(d32, a32, b32, 2, blinkInt32, blinkMin), 0);
    cr_expect(d32[0] == -5 && d32[1] == -9);
    uint32_t ua[1] = {5}, ub[1] = {UINT32_MAX}, ud[1];
    cr_assert_eq(bk_host_reduce(ud, ua, ub, 1, blinkUint32, blinkMax), 0);
    cr_expect_eq(ud[0], UINT32_MAX);
    cr_expect_eq(bk_host_reduce(ud, ua, ub, 1, blinkUint32, blinkAvg), -1);
    cr_expect_eq(bk_host_reduce(ud, ua, ub, 1, (blinkDataType_t)11, blinkSum), -1);
}

Test(rt_reduce, divide_for_avg)
{
    int32_t i[3] = {-7, 7, 8};
    cr_assert_eq(bk_host_divide(i, 3, blinkInt32, 2), 0);
    cr_expect(i[0] == -3 && i[1] == 3 && i[2] == 4);
    uint64_t u[1] = {UINT64_MAX};
    cr_assert_eq(bk_host_divide(u, 1, blinkUint64, 2), 0);
    cr_expect_eq(u[0], UINT64_MAX / 2);
    double d[1] = {1.0};
    cr_assert_eq(bk_host_divide(d, 1, blinkFloat64, 3), 0);
    cr_expect_eq(d[0], 1.0 / 3);
    uint16_t h[1] = {0x4200}; /* 3.0 */
    cr_assert_eq(bk_host_divide(h, 1, blinkFloat16, 4), 0);
    cr_expect_eq(h[0], 0x3a00); /* 0.75 */
    cr_expect_eq(bk_host_divide(h, 1, blinkFloat16, 0), -1);
}

/* avg of 8-bit integers at 128 and 256 ranks: the wrapped sum divided as an integer by the rank
 * count, truncating toward zero, as NCCL's FuncSumPostDiv does; a division in the element type
 * would flip the sign at 128 ranks ((int8_t)128 is -128) and divide by zero at 256. */
Test(rt_reduce, avg_small_integers_at_many_ranks)
{
    int8_t i8[4] = {-128, 127, -1, 100};
    cr_assert_eq(bk_host_divide(i8, 4, blinkInt8, 128), 0);
    cr_expect(i8[0] == -1 && i8[1] == 0 && i8[2] == 0 && i8[3] == 0, "%d %d %d %d", i8[0], i8[1],
              i8[2], i8[3]);
    int8_t j8[2] = {-128, 127};
    cr_assert_eq(bk_host_divide(j8, 2, blinkInt8, 256), 0);
    cr_expect(j8[0] == 0 && j8[1] == 0);
    uint8_t u8[2] = {255, 128};
    cr_assert_eq(bk_host_divide(u8, 2, blinkUint8, 128), 0);
    cr_expect(u8[0] == 1 && u8[1] == 1);
    cr_assert_eq(bk_host_divide(u8, 2, blinkUint8, 256), 0);
    cr_expect(u8[0] == 0 && u8[1] == 0);
}

/* max and min of floats drop a NaN, as C's fmax does (and NCCL's), whichever operand holds it,
 * so the result cannot depend on the order in which a tree combines its children. */
Test(rt_reduce, nan_does_not_depend_on_order)
{
    float x[2] = {NAN, 2.0f}, y[2] = {1.0f, NAN}, d1[2], d2[2];
    for (int op = blinkMax; op <= blinkMin; op++) {
        cr_assert_eq(bk_host_reduce(d1, x, y, 2, blinkFloat32, (blinkRedOp_t)op), 0);
        cr_assert_eq(bk_host_reduce(d2, y, x, 2, blinkFloat32, (blinkRedOp_t)op), 0);
        cr_expect(d1[0] == 1.0f && d2[0] == 1.0f && d1[1] == 2.0f && d2[1] == 2.0f,
                  "op %d: %g %g / %g %g", op, d1[0], d1[1], d2[0], d2[1]);
    }
    double dx[1] = {NAN}, dy[1] = {-3.0}, dd[1];
    cr_assert_eq(bk_host_reduce(dd, dx, dy, 1, blinkFloat64, blinkMin), 0);
    cr_expect_eq(dd[0], -3.0);
    uint16_t hx[1] = {0x7e00 /* nan */}, hy[1] = {0x3c00 /* 1 */}, hd[1];
    cr_assert_eq(bk_host_reduce(hd, hx, hy, 1, blinkFloat16, blinkMax), 0);
    cr_expect_eq(hd[0], 0x3c00);
    uint16_t bx[1] = {0x7fc0 /* nan */}, by[1] = {0x3f80 /* 1 */};
    cr_assert_eq(bk_host_reduce(hd, by, bx, 1, blinkBfloat16, blinkMax), 0);
    cr_expect_eq(hd[0], 0x3f80);
    cr_assert_eq(bk_host_reduce(dd, dx, dx, 1, blinkFloat64, blinkMax), 0);
    cr_expect(isnan(dd[0]), "all NaN stays NaN");
}
