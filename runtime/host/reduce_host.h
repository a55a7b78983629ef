/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * reduce_host.h - element-wise reductions on the CPU (the host backend's kernels), and the
 * float16/bfloat16 conversions they use (round to nearest, ties to even).
 */
#ifndef BK_REDUCE_HOST_H
#define BK_REDUCE_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "blink.h"

/* dst[i] = a[i] op b[i]; dst may alias a or b. Returns -1 for an invalid type or op (or avg). */
int bk_host_reduce(void *dst, const void *a, const void *b, size_t n, blinkDataType_t dt,
                   blinkRedOp_t op);
/* buf[i] /= d (integers truncate toward zero). Returns -1 for an invalid type or d <= 0. */
int bk_host_divide(void *buf, size_t n, blinkDataType_t dt, int d);

float bk_half_to_float(uint16_t h);
uint16_t bk_float_to_half(float f);
float bk_bf16_to_float(uint16_t h);
uint16_t bk_float_to_bf16(float f);

#endif
