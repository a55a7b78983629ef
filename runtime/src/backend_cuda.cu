/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * backend_cuda.cu - the CUDA backend: internal streams are cudaStreams, events cudaEvents,
 * copies cudaMemcpyAsync on one device and cudaMemcpyPeerAsync between devices (with peer
 * access enabled wherever cudaDeviceCanAccessPeer allows it), reductions grid-stride kernels for
 * every datatype and op. Every CUDA call is checked and translated to blinkUnhandledCudaError
 * with cudaGetErrorString in the last error. Each function leaves the caller's current device as
 * it found it.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "rt.h"

struct bk_stream {
    int dev;
    cudaStream_t s;
    char label[64];
};

struct bk_event {
    int dev;
    cudaEvent_t e;
};

static blinkResult_t cuda_fail(cudaError_t e, const char *what, int line)
{
    return bk_error(blinkUnhandledCudaError, "CUDA backend: %s failed: %s (backend_cuda.cu:%d)",
                    what, cudaGetErrorString(e), line);
}

#define CU(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            blinkResult_t r_ = cuda_fail(e_, #call, __LINE__);                                \
            if (old_ >= 0)                                                                    \
                cudaSetDevice(old_);                                                          \
            return r_;                                                                        \
        }                                                                                     \
    } while (0)

/* Switch to dev for the rest of the function; CU() and LEAVE restore the caller's device. */
#define ENTER(dev)                                                                            \
    int old_ = -1;                                                                            \
    CU(cudaGetDevice(&old_));                                                                 \
    if (old_ != (dev))                                                                        \
        CU(cudaSetDevice(dev))
#define LEAVE()                                                                               \
    do {                                                                                      \
        cudaSetDevice(old_);                                                                  \
        return blinkSuccess;                                                                  \
    } while (0)

/* ------------------------------------------------------------------ kernels */

template <typename T> struct acc { typedef T type; };
template <> struct acc<__half> { typedef float type; };
template <> struct acc<__nv_bfloat16> { typedef float type; };

template <typename T> __device__ typename acc<T>::type load(T x) { return x; }
template <> __device__ float load<__half>(__half x) { return __half2float(x); }
template <> __device__ float load<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ T store(typename acc<T>::type x) { return x; }
template <> __device__ __half store<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __nv_bfloat16 store<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

/* Wrapping integer sum and prod: computed in the unsigned twin (no undefined behaviour). */
template <typename T> struct wrap { typedef T type; };
template <> struct wrap<int8_t> { typedef uint32_t type; };
template <> struct wrap<uint8_t> { typedef uint32_t type; };
template <> struct wrap<int32_t> { typedef uint32_t type; };
template <> struct wrap<int64_t> { typedef uint64_t type; };

template <typename T>
__global__ void reduce_kernel(T *dst, const T *a, const T *b, size_t n, int op)
{
    typedef typename acc<T>::type A;
    typedef typename wrap<A>::type W;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        A p = load(a[i]), q = load(b[i]), r;
        switch (op) {
        case blinkSum: r = (A)(W)((W)p + (W)q); break;
        case blinkProd: r = (A)(W)((W)p * (W)q); break;
        case blinkMax: r = p > q ? p : q; break;
        default: r = p < q ? p : q; break;
        }
        dst[i] = store<T>(r);
    }
}

template <typename T> __global__ void divide_kernel(T *buf, size_t n, int d)
{
    typedef typename acc<T>::type A;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        buf[i] = store<T>((A)(load(buf[i]) / (A)d));
}

static void grid_of(size_t n, unsigned *blocks, unsigned *threads)
{
    *threads = 256;
    size_t b = (n + 255) / 256;
    *blocks = (unsigned)(b < 1024 ? (b ? b : 1) : 1024);
}

template <typename T>
static cudaError_t launch_reduce(cudaStream_t s, void *dst, const void *a, const void *b,
                                 size_t n, int op)
{
    unsigned blocks, threads;
    grid_of(n, &blocks, &threads);
    reduce_kernel<T><<<blocks, threads, 0, s>>>((T *)dst, (const T *)a, (const T *)b, n, op);
    return cudaGetLastError();
}

template <typename T> static cudaError_t launch_divide(cudaStream_t s, void *buf, size_t n, int d)
{
    unsigned blocks, threads;
    grid_of(n, &blocks, &threads);
    divide_kernel<T><<<blocks, threads, 0, s>>>((T *)buf, n, d);
    return cudaGetLastError();
}

#define BY_TYPE(dt, F, ...)                                                                   \
    ((dt) == blinkInt8 ? F<int8_t>(__VA_ARGS__) : (dt) == blinkUint8 ? F<uint8_t>(__VA_ARGS__) \
     : (dt) == blinkInt32 ? F<int32_t>(__VA_ARGS__) : (dt) == blinkUint32 ? F<uint32_t>(__VA_ARGS__) \
     : (dt) == blinkInt64 ? F<int64_t>(__VA_ARGS__) : (dt) == blinkUint64 ? F<uint64_t>(__VA_ARGS__) \
     : (dt) == blinkFloat16 ? F<__half>(__VA_ARGS__)                                          \
     : (dt) == blinkBfloat16 ? F<__nv_bfloat16>(__VA_ARGS__)                                  \
     : (dt) == blinkFloat32 ? F<float>(__VA_ARGS__) : (dt) == blinkFloat64 ? F<double>(__VA_ARGS__) \
     : cudaErrorInvalidValue)

/* ------------------------------------------------------------------ peer access */

static pthread_mutex_t peer_mu = PTHREAD_MUTEX_INITIALIZER;
#define MAX_PEER 64
static unsigned char peer_tried[MAX_PEER][MAX_PEER];

/* Enable dst's access to src once, where the hardware allows it; copies work either way. */
static blinkResult_t enable_peer(int dst, int src)
{
    if (dst == src || dst < 0 || src < 0 || dst >= MAX_PEER || src >= MAX_PEER)
        return blinkSuccess;
    pthread_mutex_lock(&peer_mu);
    int tried = peer_tried[dst][src];
    peer_tried[dst][src] = 1;
    pthread_mutex_unlock(&peer_mu);
    if (tried)
        return blinkSuccess;
    ENTER(dst);
    int can = 0;
    CU(cudaDeviceCanAccessPeer(&can, dst, src));
    if (can) {
        cudaError_t e = cudaDeviceEnablePeerAccess(src, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled)
            (void)cudaGetLastError(); /* clear it: not an error for us */
        else
            CU(e);
    }
    LEAVE();
}

/* ------------------------------------------------------------------ the table */

static blinkResult_t configure(void) { return blinkSuccess; }

static blinkResult_t stream_create(int dev, const char *label, struct bk_stream **out)
{
    struct bk_stream *s = (struct bk_stream *)calloc(1, sizeof *s);
    if (!s)
        return bk_error(blinkSystemError, "CUDA backend: out of memory");
    snprintf(s->label, sizeof s->label, "%s", label);
    s->dev = dev;
    int old_ = -1;
    cudaError_t e = cudaGetDevice(&old_);
    if (e == cudaSuccess)
        e = cudaSetDevice(dev);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking);
    if (old_ >= 0)
        cudaSetDevice(old_);
    if (e != cudaSuccess) {
        free(s);
        return cuda_fail(e, "cudaStreamCreateWithFlags", __LINE__);
    }
    *out = s;
    return blinkSuccess;
}

static void stream_destroy(struct bk_stream *s)
{
    int old = -1;
    cudaGetDevice(&old);
    cudaSetDevice(s->dev);
    cudaStreamSynchronize(s->s);
    cudaStreamDestroy(s->s);
    if (old >= 0)
        cudaSetDevice(old);
    free(s);
}

static blinkResult_t stream_synchronize(struct bk_stream *s)
{
    ENTER(s->dev);
    CU(cudaStreamSynchronize(s->s));
    LEAVE();
}

static blinkResult_t mem_alloc(int dev, size_t bytes, void **p)
{
    ENTER(dev);
    CU(cudaMalloc(p, bytes ? bytes : 1));
    LEAVE();
}

static void mem_free(int dev, void *p)
{
    int old = -1;
    cudaGetDevice(&old);
    cudaSetDevice(dev);
    cudaFree(p);
    if (old >= 0)
        cudaSetDevice(old);
}

static blinkResult_t copy(struct bk_stream *s, int dst_dev, void *dst, int src_dev,
                          const void *src, size_t bytes)
{
    if (dst_dev != src_dev) {
        blinkResult_t r = enable_peer(dst_dev, src_dev);
        if (r == blinkSuccess)
            r = enable_peer(src_dev, dst_dev);
        if (r != blinkSuccess)
            return r;
    }
    ENTER(s->dev);
    if (dst_dev == src_dev)
        CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s->s));
    else
        CU(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, s->s));
    LEAVE();
}

static blinkResult_t reduce(struct bk_stream *s, void *dst, const void *a, const void *b,
                            size_t count, blinkDataType_t dt, blinkRedOp_t op)
{
    ENTER(s->dev);
    CU(BY_TYPE(dt, launch_reduce, s->s, dst, a, b, count, (int)op));
    LEAVE();
}

static blinkResult_t divide(struct bk_stream *s, void *buf, size_t count, blinkDataType_t dt,
                            int n)
{
    ENTER(s->dev);
    CU(BY_TYPE(dt, launch_divide, s->s, buf, count, n));
    LEAVE();
}

static blinkResult_t event_create(int dev, struct bk_event **out)
{
    struct bk_event *e = (struct bk_event *)calloc(1, sizeof *e);
    if (!e)
        return bk_error(blinkSystemError, "CUDA backend: out of memory");
    e->dev = dev;
    int old_ = -1;
    cudaError_t err = cudaGetDevice(&old_);
    if (err == cudaSuccess)
        err = cudaSetDevice(dev);
    if (err == cudaSuccess)
        err = cudaEventCreateWithFlags(&e->e, cudaEventDisableTiming);
    if (old_ >= 0)
        cudaSetDevice(old_);
    if (err != cudaSuccess) {
        free(e);
        return cuda_fail(err, "cudaEventCreateWithFlags", __LINE__);
    }
    *out = e;
    return blinkSuccess;
}

static void event_destroy(struct bk_event *e)
{
    cudaEventDestroy(e->e);
    free(e);
}

static blinkResult_t event_record(struct bk_event *e, struct bk_stream *s)
{
    ENTER(s->dev);
    CU(cudaEventRecord(e->e, s->s));
    LEAVE();
}

static blinkResult_t stream_wait(struct bk_stream *s, struct bk_event *e)
{
    ENTER(s->dev);
    CU(cudaStreamWaitEvent(s->s, e->e, 0));
    LEAVE();
}

static blinkResult_t event_synchronize(struct bk_event *e)
{
    int old_ = -1;
    CU(cudaEventSynchronize(e->e));
    return blinkSuccess;
}

static blinkResult_t user_record(struct bk_event *e, void *user, int dev)
{
    ENTER(dev);
    CU(cudaEventRecord(e->e, (cudaStream_t)user));
    LEAVE();
}

static blinkResult_t user_wait(void *user, struct bk_event *e, int dev)
{
    ENTER(dev);
    CU(cudaStreamWaitEvent((cudaStream_t)user, e->e, 0));
    LEAVE();
}

static const struct bk_backend cuda_backend = {
    "cuda", 0, configure, stream_create, stream_destroy, stream_synchronize, mem_alloc, mem_free,
    copy, reduce, divide, event_create, event_destroy, event_record, stream_wait,
    event_synchronize, user_record, user_wait,
};

extern "C" const struct bk_backend *bk_backend(void) { return &cuda_backend; }
