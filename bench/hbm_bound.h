/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * hbm_bound.h - the most a collective can reach when every rank shares one GPU (the way the
 * executor is measured on a single card, docs/gpu-runs.md): every tree edge is then a copy
 * within one memory, so the call is bound by the bytes the protocol moves through that memory.
 */
#ifndef BENCH_HBM_BOUND_H
#define BENCH_HBM_BOUND_H

/* Bytes read and written in device memory per byte of nccl-tests' size S, by the protocol
 * kernel of runtime/cuda/kernel_cuda.cuh on n ranks; coll is enum blink_plan_coll. 0 where it
 * does not apply (n < 2, an unknown collective). */
double hbm_bytes_per_byte(int coll, int n, int in_place);

#endif
