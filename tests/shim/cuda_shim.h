/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cuda_shim.h - what runtime/cuda/kernel_cuda.cuh needs of CUDA, in host C++ (g++, C++17), so
 * that the protocol kernel's own source runs on the CPU: one OS thread per GPU thread, with
 * threadIdx/blockIdx/blockDim/gridDim thread-local, __syncthreads a pthread barrier of the
 * block's threads, the block's shared memory one allocation per block, the fences C11 seq_cst
 * fences, the atomics GCC's __atomic builtins, %globaltimer CLOCK_MONOTONIC, __nanosleep a real
 * sleep (so spinning blocks leave the two cores to the blocks that can move), and float16 and
 * bfloat16 reduce_host.c's own conversions (round to nearest, ties to even).
 *
 * The kernel's flag words (its ld32/ld64/st32/st64) become acquire loads and release stores
 * here: C11 gives a fence and a relaxed access the same ordering, but ThreadSanitizer does not
 * model fences, so with relaxed words it would report every hand-over as a race
 * (-DBK_SHIM_RELAXED_FLAGS builds that variant, to look). So the shim checks the protocol's
 * ordering through the words, not that the kernel's fences are where a GPU needs them: the GPU
 * memory model (weak ordering across devices, L1 lines, PCIe) is not what a CPU runs.
 *
 * shim_launch_start/shim_launch_join run one launch (grid x block threads) of an entry point.
 */
#ifndef BK_CUDA_SHIM_H
#define BK_CUDA_SHIM_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "reduce_host.h"
}

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__

/* ------------------------------------------------------------------ indices and blocks */

struct shim_dim3 {
    unsigned int x, y, z;
};

/* One block's barrier and shared memory. */
struct shim_block {
    pthread_barrier_t bar;
    alignas(16) unsigned char stat[1024]; /* the kernel's static __shared__ state */
    unsigned char *dyn;                   /* its dynamic shared memory */
};

inline thread_local shim_dim3 threadIdx, blockIdx, blockDim, gridDim;
inline thread_local shim_block *shim_blk;

inline void __syncthreads() { pthread_barrier_wait(&shim_blk->bar); }

template <typename S> inline S *shim_block_static()
{
    static_assert(sizeof(S) <= sizeof(((shim_block *)0)->stat), "shim_block.stat too small");
    return (S *)shim_blk->stat;
}
inline void *shim_block_dynamic() { return shim_blk->dyn; }

/* ------------------------------------------------------------------ memory order */

#ifdef BK_SHIM_RELAXED_FLAGS
#define SHIM_LOAD_ORDER __ATOMIC_RELAXED
#define SHIM_STORE_ORDER __ATOMIC_RELAXED
#else
#define SHIM_LOAD_ORDER __ATOMIC_ACQUIRE
#define SHIM_STORE_ORDER __ATOMIC_RELEASE
#endif

template <typename W> inline W shim_ld(const void *p)
{
    return __atomic_load_n((const W *)p, SHIM_LOAD_ORDER);
}
template <typename W> inline void shim_st(void *p, W v)
{
    __atomic_store_n((W *)p, v, SHIM_STORE_ORDER);
}

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

inline unsigned int atomicCAS(unsigned int *a, unsigned int cmp, unsigned int val)
{
    __atomic_compare_exchange_n(a, &cmp, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp; /* the old value, as CUDA's */
}
inline unsigned int atomicCAS_system(unsigned int *a, unsigned int cmp, unsigned int val)
{
    return atomicCAS(a, cmp, val);
}
inline unsigned int atomicAdd(unsigned int *a, unsigned int v)
{
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);
}
inline unsigned long long atomicAdd(unsigned long long *a, unsigned long long v)
{
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);
}

inline uint64_t shim_globaltimer()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The kernel's idle path: give the CPU away for real (a GPU warp's 100 ns are nothing to a
 * core shared by hundreds of threads), longer the longer it idles. */
inline void __nanosleep(unsigned int ns)
{
    struct timespec ts = {0, (long)ns * 500};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ types */

struct alignas(16) uint4 {
    unsigned int x, y, z, w;
};

/* ld.volatile.v4: data another rank wrote, ordered by the flag load before it. */
inline uint4 shim_ldv16(const void *p)
{
    const volatile unsigned int *q = (const volatile unsigned int *)p;
    uint4 v = {q[0], q[1], q[2], q[3]};
    return v;
}

/* The 16-bit floats: their bits. The numeric conversions from and to integers are CUDA's too
 * (the kernel's integer-only branches name them; they never run for these types). */
struct __half {
    unsigned short x;
    __half() = default;
    explicit __half(long long v) : x(bk_float_to_half((float)v)) {}
    template <typename I> explicit operator I() const { return (I)bk_half_to_float(x); }
};
struct __nv_bfloat16 {
    unsigned short x;
    __nv_bfloat16() = default;
    explicit __nv_bfloat16(long long v) : x(bk_float_to_bf16((float)v)) {}
    template <typename I> explicit operator I() const { return (I)bk_bf16_to_float(x); }
};

inline __half __ushort_as_half(unsigned short r)
{
    __half h;
    h.x = r;
    return h;
}
inline unsigned short __half_as_ushort(__half h) { return h.x; }
inline float __half2float(__half h) { return bk_half_to_float(h.x); }
inline __half __float2half_rn(float f) { return __ushort_as_half(bk_float_to_half(f)); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short r)
{
    __nv_bfloat16 h;
    h.x = r;
    return h;
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
inline float __bfloat162float(__nv_bfloat16 h) { return bk_bf16_to_float(h.x); }
inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
    return __ushort_as_bfloat16(bk_float_to_bf16(f));
}

inline float __uint_as_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
inline uint32_t __float_as_uint(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
inline double __longlong_as_double(long long u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
inline long long __double_as_longlong(double d)
{
    long long u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* ------------------------------------------------------------------ launches */

typedef void (*shim_entry)(const void *arg);

struct shim_thread {
    struct shim_launch *l;
    shim_block *blk;
    unsigned int block, thread;
    pthread_t th;
};

/* One launch in flight. */
struct shim_launch {
    shim_entry fn;
    const void *arg;
    unsigned int grid, block;
    shim_block *blocks;
    shim_thread *threads;
    int started;       /* threads created */
};

inline void *shim_thread_main(void *a)
{
    shim_thread *t = (shim_thread *)a;
    threadIdx = shim_dim3{t->thread, 0, 0};
    blockIdx = shim_dim3{t->block, 0, 0};
    blockDim = shim_dim3{t->l->block, 1, 1};
    gridDim = shim_dim3{t->l->grid, 1, 1};
    shim_blk = t->blk;
    t->l->fn(t->l->arg);
    return NULL;
}

/* Start grid x block threads running fn(arg), smem bytes of dynamic shared memory per block
 * (filled with garbage, as a GPU's is: the kernel must set what it reads). 0, or -1 where
 * memory ran out (nothing runs; shim_launch_join frees what was made). */
inline int shim_launch_start(shim_launch *l, shim_entry fn, const void *arg, unsigned int grid,
                             unsigned int block, size_t smem)
{
    memset(l, 0, sizeof *l);
    l->fn = fn;
    l->arg = arg;
    l->grid = grid;
    l->block = block;
    l->blocks = (shim_block *)calloc(grid, sizeof *l->blocks);
    l->threads = (shim_thread *)calloc((size_t)grid * block, sizeof *l->threads);
    if (!l->blocks || !l->threads)
        return -1;
    for (unsigned int b = 0; b < grid; b++) {
        l->blocks[b].dyn = (unsigned char *)aligned_alloc(16, (smem + 16) / 16 * 16);
        if (!l->blocks[b].dyn)
            return -1;
        memset(l->blocks[b].dyn, 0x5c, (smem + 16) / 16 * 16);
        pthread_barrier_init(&l->blocks[b].bar, NULL, block);
    }
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    int ok = 1;
    for (unsigned int i = 0; i < grid * block && ok; i++) {
        shim_thread *t = &l->threads[i];
        *t = shim_thread{l, &l->blocks[i / block], i / block, i % block, pthread_t()};
        ok = pthread_create(&t->th, &at, shim_thread_main, t) == 0;
    }
    pthread_attr_destroy(&at);
    /* A block short of threads would wait at its barrier for ever: no partial launches. */
    if (!ok)
        abort();
    l->started = 1;
    return 0;
}

/* Wait for every thread of the launch, then free it. */
inline void shim_launch_join(shim_launch *l)
{
    if (l->started)
        for (unsigned int i = 0; i < l->grid * l->block; i++)
            pthread_join(l->threads[i].th, NULL);
    for (unsigned int b = 0; l->blocks && b < l->grid; b++) {
        if (l->started)
            pthread_barrier_destroy(&l->blocks[b].bar);
        free(l->blocks[b].dyn);
    }
    free(l->blocks);
    free(l->threads);
    memset(l, 0, sizeof *l);
}

#endif
