/* SPDX-License-Identifier: GPL-3.0-or-later */
/* kernel_64bit.cu - the protocol kernel (kernel_cuda.cuh) for the 8-byte datatypes (int64, uint64, float64): one of three objects
 * that make -j compiles at once (runtime/local.mk). */
#include "kernel_cuda.cuh"

BK_KERNEL_OF(bk_kernel_64bit, BK_KERNEL_64BIT)
