/* SPDX-License-Identifier: GPL-3.0-or-later */
/* kernel_8_16bit.cu - the protocol kernel (kernel_cuda.cuh) for the 1- and 2-byte datatypes (int8, uint8, float16, bfloat16): one of three objects
 * that make -j compiles at once (runtime/local.mk). */
#include "kernel_cuda.cuh"

BK_KERNEL_OF(bk_kernel_8_16bit, BK_KERNEL_8_16BIT)
