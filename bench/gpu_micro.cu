/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * gpu_micro.cu - gpu-micro: the two costs the executor's speed rests on, measured on the GPU it
 * runs on (issue 33; tools/gpu-check runs it):
 *   1. a flag hand-over between two blocks (ping-pong), with the fence the poster uses:
 *      none, fence.acq_rel.sys in the posting thread (NCCL's form), fence.sc.sys in the
 *      posting thread, and fence.sc.sys in all 512 threads before the barrier (the protocol
 *      kernel's form before issue 33). Nanoseconds per one-way hand-over.
 *   2. one block copying 64 MiB with 16-, 8- and 4-byte words (source and destination aligned
 *      to the word) and 4 or 8 words in flight per thread: GB/s of bytes copied. The protocol
 *      kernel runs one block per tree, so this is the rate one tree's data moves at.
 *   3. the whole device copying 1 GiB (cudaMemcpy): bytes read plus written per second, the
 *      rate blink-perf --hbm-gbps takes for the one-GPU bound.
 * It prints markdown tables. Without a GPU it says so and exits 0.
 *
 *   gpu-micro [-d DEVICE]
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 512
#define HOPS 20000

enum { F_NONE, F_ACQREL_ONE, F_SC_ONE, F_SC_ALL, F_N };
static const char *const fence_names[F_N] = {
    "none (relaxed store)", "fence.acq_rel.sys, posting thread", "fence.sc.sys, posting thread",
    "fence.sc.sys, all 512 threads",
};

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_relaxed(unsigned *p, unsigned v)
{
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* Blocks 0 and 1 take turns: the block whose turn it is writes a word of data per thread,
 * fences as `form` says, and its thread 0 raises the flag; the other's thread 0 waits for it. */
__global__ void ping_pong(unsigned *flag, unsigned *data, int form, unsigned long long *ns)
{
    const int me = blockIdx.x, tid = threadIdx.x;
    unsigned long long t0 = 0;
    if (tid == 0)
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (unsigned i = 0; i < HOPS; i++) {
        if ((int)(i & 1) == me) {
            data[me * THREADS + tid] = i;
            if (form == F_SC_ALL)
                asm volatile("fence.sc.sys;" ::: "memory");
            __syncthreads();
            if (tid == 0) {
                if (form == F_ACQREL_ONE)
                    asm volatile("fence.acq_rel.sys;" ::: "memory");
                else if (form == F_SC_ONE)
                    asm volatile("fence.sc.sys;" ::: "memory");
                st_relaxed(flag, i + 1);
            }
        } else {
            if (tid == 0)
                while (ld_acquire(flag) != i + 1) {
                }
            __syncthreads();
        }
    }
    if (tid == 0 && me == 0) {
        unsigned long long t1;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        *ns = t1 - t0;
    }
}

template <typename W, int U>
__global__ void copy_block(unsigned char *dst, const unsigned char *src, size_t n)
{
    const size_t nw = n / sizeof(W), nth = blockDim.x;
    const W *s = (const W *)src;
    W *d = (W *)dst;
    for (size_t b = threadIdx.x; b < nw; b += U * nth) {
        W v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (b + u * nth < nw)
                v[u] = s[b + u * nth];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (b + u * nth < nw)
                d[b + u * nth] = v[u];
    }
}

#define CK(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "gpu-micro: %s: %s\n", #call, cudaGetErrorString(e_));            \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

typedef void (*copy_fn)(unsigned char *, const unsigned char *, size_t);

/* ms of the best of 5 launches. */
static float time_copy(copy_fn f, unsigned char *dst, const unsigned char *src, size_t n)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    float best = 1e30f;
    for (int rep = 0; rep < 6; rep++) {
        CK(cudaEventRecord(a));
        f<<<1, THREADS>>>(dst, src, n);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (rep > 0 && ms < best) /* the first is a warm-up */
            best = ms;
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return best;
}

int main(int argc, char **argv)
{
    int dev = 0, n = 0;
    char *end = NULL;
    if (argc == 3 && !strcmp(argv[1], "-d"))
        dev = (int)strtol(argv[2], &end, 10);
    if ((argc == 3 && (strcmp(argv[1], "-d") || !end || *end || end == argv[2] || dev < 0)) ||
        (argc != 1 && argc != 3)) {
        fprintf(stderr, "Usage: gpu-micro [-d DEVICE]\n");
        return 2;
    }
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("gpu-micro: no GPU here: nothing measured\n");
        return 0;
    }
    CK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("gpu-micro on device %d: %s, %d SMs\n\n", dev, prop.name, prop.multiProcessorCount);

    unsigned *flag, *data;
    unsigned long long *ns, host_ns;
    CK(cudaMalloc(&flag, 256));
    CK(cudaMalloc(&data, 2 * THREADS * sizeof(unsigned)));
    CK(cudaMalloc(&ns, sizeof *ns));
    printf("| hand-over between two blocks | ns per hop |\n| --- | --- |\n");
    for (int form = 0; form < F_N; form++) {
        CK(cudaMemset(flag, 0, 256));
        ping_pong<<<2, THREADS>>>(flag, data, form, ns);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(&host_ns, ns, sizeof host_ns, cudaMemcpyDeviceToHost));
        printf("| %s | %.0f |\n", fence_names[form], (double)host_ns / HOPS);
    }

    const size_t bytes = (size_t)64 << 20;
    unsigned char *src, *dst;
    CK(cudaMalloc(&src, bytes + 64));
    CK(cudaMalloc(&dst, bytes + 64));
    CK(cudaMemset(src, 1, bytes + 64));
    struct {
        const char *name;
        copy_fn f;
        size_t off;
    } rows[] = {
        {"16 B words, 4 in flight", copy_block<uint4, 4>, 0},
        {"16 B words, 8 in flight", copy_block<uint4, 8>, 0},
        {"8 B words, 4 in flight (8-byte aligned)", copy_block<unsigned long long, 4>, 8},
        {"8 B words, 8 in flight (8-byte aligned)", copy_block<unsigned long long, 8>, 8},
        {"4 B words, 4 in flight (4-byte aligned)", copy_block<unsigned, 4>, 4},
        {"4 B words, 8 in flight (4-byte aligned)", copy_block<unsigned, 8>, 4},
    };
    printf("\n| one block (%d threads) copies 64 MiB | GB/s |\n| --- | --- |\n", THREADS);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        float ms = time_copy(rows[i].f, dst + rows[i].off, src + rows[i].off, bytes);
        printf("| %s | %.1f |\n", rows[i].name, (double)bytes / (ms * 1e-3) / 1e9);
    }
    CK(cudaFree(src));
    CK(cudaFree(dst));

    /* The whole device's copy rate: what --hbm-gbps takes (bytes read plus written). */
    const size_t big = (size_t)1 << 30;
    CK(cudaMalloc(&src, big));
    CK(cudaMalloc(&dst, big));
    CK(cudaMemset(src, 1, big));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    float best = 1e30f;
    for (int rep = 0; rep < 6; rep++) {
        float ms = 0;
        CK(cudaEventRecord(a));
        CK(cudaMemcpy(dst, src, big, cudaMemcpyDeviceToDevice));
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms, a, b));
        best = rep > 0 && ms < best ? ms : best;
    }
    printf("\n| the whole device copies 1 GiB (cudaMemcpy) | GB/s read + written |\n"
           "| --- | --- |\n| device to device | %.0f |\n", 2.0 * big / (best * 1e-3) / 1e9);
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    CK(cudaFree(src));
    CK(cudaFree(dst));
    CK(cudaFree(flag));
    CK(cudaFree(data));
    CK(cudaFree(ns));
    return 0;
}
