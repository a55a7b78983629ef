/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * kernel_ll.cuh - the protocol kernel's LL moves (proto.h, LL): 16-byte lines of 8 data bytes
 * and two copies of the chunk's flag, {data 0-3, flag, data 4-7, flag}, stored with one vector
 * store and polled by the thread that reads them, so a hand-over needs no fence and no flag word.
 * Each half of a line carries its own flag, so a line is valid only once both halves show it:
 * no half of an older line can pose as new data, even if the 16 bytes arrive in two parts. A
 * thread moves whole lines: line i holds the chunk's bytes [8i, 8i + 8); as 8 is a multiple of
 * every element size, no element spans two lines, and a chunk's last line may be partly padding.
 * Reductions combine in Simple's order with Simple's arithmetic (kernel_moves.cuh's combine and
 * divide), so both protocols give the same bits. kernel_cuda.cuh includes this file after its
 * helpers are defined; the steps there call these passes when the call's algo word says LL.
 */
#ifndef BK_KERNEL_LL_CUH
#define BK_KERNEL_LL_CUH

/* One line: store data under flag; load it if both halves carry flag. */
__device__ __forceinline__ void ll_store(unsigned char *p, uint64_t data, uint32_t flag)
{
#ifdef BK_KERNEL_SHIM /* two 64-bit atomics: each half is what the GPU's store guarantees */
    shim_st<uint64_t>(p, (uint32_t)data | (uint64_t)flag << 32);
    shim_st<uint64_t>(p + 8, (data >> 32) | (uint64_t)flag << 32);
#else
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p),
                 "r"((uint32_t)data), "r"(flag), "r"((uint32_t)(data >> 32)), "r"(flag)
                 : "memory");
#endif
}
__device__ __forceinline__ bool ll_load(const unsigned char *p, uint32_t flag, uint64_t &data)
{
    uint32_t d0, f0, d1, f1;
#ifdef BK_KERNEL_SHIM
    uint64_t a = shim_ld<uint64_t>(p), b = shim_ld<uint64_t>(p + 8);
    d0 = (uint32_t)a;
    f0 = (uint32_t)(a >> 32);
    d1 = (uint32_t)b;
    f1 = (uint32_t)(b >> 32);
#else
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
                 : "l"(p)
                 : "memory");
#endif
    data = (uint64_t)d0 | (uint64_t)d1 << 32;
    return f0 == flag && f1 == flag;
}

/* n (1..8) bytes of a user buffer at p as one little-endian word, in the widest accesses p's
 * alignment allows; and back. */
__device__ __forceinline__ uint64_t ll_get(const unsigned char *p, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    if (n == 8 && (a & 7) == 0)
        return *(const volatile uint64_t *)p;
    if (n == 8 && (a & 3) == 0)
        return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32;
    uint64_t v = 0;
    for (size_t b = 0; b < n; b++)
        v |= (uint64_t)*(const volatile unsigned char *)(p + b) << (8 * b);
    return v;
}
__device__ __forceinline__ void ll_put(unsigned char *p, uint64_t v, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    if (n == 8 && (a & 7) == 0) {
        *(uint64_t *)p = v;
    } else if (n == 8 && (a & 3) == 0) {
        *(uint32_t *)p = (uint32_t)v;
        *(uint32_t *)(p + 4) = (uint32_t)(v >> 32);
    } else {
        for (size_t b = 0; b < n; b++)
            p[b] = (unsigned char)(v >> (8 * b));
    }
}

/* The elements of two data words combined lane by lane; and divided (avg at the root). */
template <typename T, int OP> __device__ __forceinline__ uint64_t ll_combine(uint64_t a, uint64_t b)
{
    typedef typename num<T>::R R;
    union {
        uint64_t u;
        R r[8 / sizeof(R)];
    } x, y;
    x.u = a;
    y.u = b;
#pragma unroll
    for (int e = 0; e < (int)(8 / sizeof(R)); e++)
        x.r[e] = combine<T, OP>(x.r[e], y.r[e]);
    return x.u;
}
template <typename T> __device__ __forceinline__ uint64_t ll_divide(uint64_t a, int d)
{
    typedef typename num<T>::R R;
    union {
        uint64_t u;
        R r[8 / sizeof(R)];
    } x;
    x.u = a;
#pragma unroll
    for (int e = 0; e < (int)(8 / sizeof(R)); e++)
        x.r[e] = divide<T>(x.r[e], d);
    return x.u;
}

/* Wait for line p to carry flag: true with its data, or false on this rank's abort or after
 * the timeout (the caller says which; the pass began, so its writer is on its way). */
__device__ __forceinline__ bool ll_wait(const kparams &p, const unsigned char *line, uint32_t flag,
                                        uint64_t &data)
{
    uint64_t since = 0;
    for (unsigned spins = 1;; spins++) {
        if (ll_load(line, flag, data))
            return true;
        if ((spins & 255) == 0) {
            if (ld32(p.seg[p.prank] + H_ABORT))
                return false;
            uint64_t now = gtimer();
            if (!since)
                since = now;
            else if (now - since > p.timeout_ns)
                return false;
        }
#ifdef BK_KERNEL_SHIM /* hundreds of OS threads poll on two cores: let the writer run */
        if (spins > 8)
            __nanosleep(100);
#endif
    }
}

/* What a failed wait in a pass leaves for thread 0 (block-shared): the peer, or -1. */
__device__ __forceinline__ void ll_failed(volatile int *fail, int peer) { *fail = peer; }

/* The up pass of m bytes in LL: dst (the root's output) or line (the parent's LL slot) gets
 * in (op) child_0 (op) ... (op) child_{nk-1}, child j's lines at k0 + j * kstride, divided by
 * divd if non-zero. A wait that fails stores the child's rank into *fail and ends the thread's
 * part. */
template <typename T, int OP>
static __device__ void ll_up_pass(const kparams &p, unsigned char *dst, unsigned char *line,
                                  const unsigned char *in, const unsigned char *k0, size_t kstride,
                                  const int *kids, int nk, size_t m, int divd, uint32_t flag,
                                  volatile int *fail)
{
    size_t nlines = (m + 7) / 8;
    for (size_t i = threadIdx.x; i < nlines; i += blockDim.x) {
        size_t n = m - 8 * i < 8 ? m - 8 * i : 8;
        uint64_t a = ll_get(in + 8 * i, n), x;
        for (int j = 0; j < nk; j++) {
            if (!ll_wait(p, k0 + (size_t)j * kstride + 16 * i, flag, x)) {
                ll_failed(fail, kids[j]);
                return;
            }
            a = ll_combine<T, OP>(a, x);
        }
        if (dst)
            ll_put(dst + 8 * i, divd ? ll_divide<T>(a, divd) : a, n);
        else
            ll_store(line + 16 * i, a, flag);
    }
}

template <typename T>
static __device__ void ll_up_pass_op(int op, const kparams &p, unsigned char *dst,
                                     unsigned char *line, const unsigned char *in,
                                     const unsigned char *k0, size_t kstride, const int *kids,
                                     int nk, size_t m, int divd, uint32_t flag, volatile int *fail)
{
    switch (op) {
    case blinkProd:
        ll_up_pass<T, blinkProd>(p, dst, line, in, k0, kstride, kids, nk, m, divd, flag, fail);
        break;
    case blinkMax:
        ll_up_pass<T, blinkMax>(p, dst, line, in, k0, kstride, kids, nk, m, divd, flag, fail);
        break;
    case blinkMin:
        ll_up_pass<T, blinkMin>(p, dst, line, in, k0, kstride, kids, nk, m, divd, flag, fail);
        break;
    default: /* sum, avg */
        ll_up_pass<T, blinkSum>(p, dst, line, in, k0, kstride, kids, nk, m, divd, flag, fail);
        break;
    }
}

/* The down pass of m bytes in LL: from src (the root's data) or from this rank's LL down slot
 * (src NULL, lines at mine), to out (unless it is src) and to every child's LL down slot of
 * slot k in tree ti. */
static __device__ void ll_down_pass(const kparams &p, int ti, int k, const unsigned char *src,
                                    const unsigned char *mine, unsigned char *out, const int *kids,
                                    int nk, size_t m, uint32_t flag, int parent, volatile int *fail)
{
    unsigned char *const *sg = d_segs(p, ti); /* the children's slots (host-staged or not) */
    size_t nlines = (m + 7) / 8;
    for (size_t i = threadIdx.x; i < nlines; i += blockDim.x) {
        size_t n = m - 8 * i < 8 ? m - 8 * i : 8;
        uint64_t a;
        if (src) {
            a = ll_get(src + 8 * i, n);
        } else if (!ll_wait(p, mine + 16 * i, flag, a)) {
            ll_failed(fail, parent);
            return;
        }
        if (out != src)
            ll_put(out + 8 * i, a, n);
        for (int j = 0; j < nk; j++)
            ll_store(sg[kids[j]] + bk_off_ll_down_slot(&p.lay, kids[j], ti, k) + 16 * i, a, flag);
    }
}

#endif
