/* SPDX-License-Identifier: GPL-3.0-or-later */
/* kernel_32bit.cu - the protocol kernel (kernel_cuda.cuh) for the 4-byte datatypes (int32, uint32, float32): one of three objects
 * that make -j compiles at once (runtime/local.mk). */
#include "kernel_cuda.cuh"

BK_KERNEL_OF(bk_kernel_32bit, BK_KERNEL_32BIT)
