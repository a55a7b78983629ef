/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * kernel_moves.cuh - the protocol kernel's data moves: element types and their reductions
 * (combine and divide, in one order on every path so both protocols give the same bits),
 * 16-byte vector copies with a scalar head and tail, and the up pass that reduces the children's
 * slots with this rank's input. kernel_cuda.cuh includes it after the flags; kernel_ll.cuh's LL
 * moves build on it.
 */
#ifndef BK_KERNEL_MOVES_CUH
#define BK_KERNEL_MOVES_CUH

/* ------------------------------------------------------------------ device: element types */

/* T's raw bits R, its arithmetic type A, and the conversions between them. */
template <typename T> struct num;
#define INT_NUM(T, U)                                                                         \
    template <> struct num<T> {                                                               \
        typedef U R;                                                                          \
        typedef T A;                                                                          \
        enum { is_int = 1, is_signed = (T)(-1) < (T)0 };                                      \
        static __device__ __forceinline__ A get(R r) { return (A)r; }                         \
        static __device__ __forceinline__ R put(A a) { return (R)a; }                         \
    }
INT_NUM(int8_t, uint8_t);
INT_NUM(uint8_t, uint8_t);
INT_NUM(int32_t, uint32_t);
INT_NUM(uint32_t, uint32_t);
INT_NUM(int64_t, unsigned long long);
INT_NUM(uint64_t, unsigned long long);
template <> struct num<float> {
    typedef uint32_t R;
    typedef float A;
    enum { is_int = 0, is_signed = 1 };
    static __device__ __forceinline__ A get(R r) { return __uint_as_float(r); }
    static __device__ __forceinline__ R put(A a) { return __float_as_uint(a); }
};
template <> struct num<double> {
    typedef unsigned long long R;
    typedef double A;
    enum { is_int = 0, is_signed = 1 };
    static __device__ __forceinline__ A get(R r) { return __longlong_as_double((long long)r); }
    static __device__ __forceinline__ R put(A a) { return (R)__double_as_longlong(a); }
};
template <> struct num<__half> {
    typedef unsigned short R;
    typedef float A;
    enum { is_int = 0, is_signed = 1 };
    static __device__ __forceinline__ A get(R r) { return __half2float(__ushort_as_half(r)); }
    static __device__ __forceinline__ R put(A a) { return __half_as_ushort(__float2half_rn(a)); }
};
template <> struct num<__nv_bfloat16> {
    typedef unsigned short R;
    typedef float A;
    enum { is_int = 0, is_signed = 1 };
    static __device__ __forceinline__ A get(R r)
    {
        return __bfloat162float(__ushort_as_bfloat16(r));
    }
    static __device__ __forceinline__ R put(A a)
    {
        return __bfloat16_as_ushort(__float2bfloat16_rn(a));
    }
};

/* reduce_host.c's fmax and fmin: the number wins over a NaN; equal values give q. */
template <typename A> __device__ __forceinline__ A d_fmax(A p, A q)
{
    return q != q ? p : p != p ? q : p > q ? p : q;
}
template <typename A> __device__ __forceinline__ A d_fmin(A p, A q)
{
    return q != q ? p : p != p ? q : p < q ? p : q;
}

/* One combine, on raw bits: integers wrap (in the unsigned twin), 16-bit floats round once. */
template <typename T, int OP>
__device__ __forceinline__ typename num<T>::R combine(typename num<T>::R a, typename num<T>::R b)
{
    typedef num<T> N;
    typedef typename N::R R;
    typedef typename N::A A;
    if (N::is_int) {
        if (OP == blinkSum)
            return (R)(a + b);
        if (OP == blinkProd)
            return (R)(a * b); /* uint8 promotes to int: 255 * 255 fits */
        A p = N::get(a), q = N::get(b);
        if (OP == blinkMax)
            return p > q ? a : b;
        return p < q ? a : b;
    }
    A p = N::get(a), q = N::get(b);
    if (OP == blinkSum)
        return N::put(p + q);
    if (OP == blinkProd)
        return N::put(p * q);
    if (OP == blinkMax)
        return N::put(d_fmax(p, q));
    return N::put(d_fmin(p, q));
}

/* avg at the root: the (wrapped) sum divided by nranks, as reduce_host.c's bk_host_divide:
 * integers as mathematical integers truncating toward zero, never nranks cast to T. */
template <typename T>
__device__ __forceinline__ typename num<T>::R divide(typename num<T>::R a, int d)
{
    typedef num<T> N;
    typedef typename N::R R;
    typedef typename N::A A;
    if (N::is_int) {
        if (N::is_signed)
            return (R)(T)((long long)(T)a / (long long)d);
        return (R)((unsigned long long)a / (unsigned long long)d);
    }
    return N::put(N::get(a) / (A)d);
}

/* ------------------------------------------------------------------ device: moving bytes */

__device__ __forceinline__ uint4 ldv16(const void *p)
{
    uint4 v;
#ifdef BK_KERNEL_SHIM
    v = shim_ldv16(p);
#else
    asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
#endif
    return v;
}

template <typename W> __device__ __forceinline__ W ldw(const unsigned char *p)
{
    return *(const volatile W *)p;
}
template <> __device__ __forceinline__ uint4 ldw<uint4>(const unsigned char *p) { return ldv16(p); }

/* A raw element at p: typed where aligned, else byte by byte (little-endian). */
template <typename R> __device__ __forceinline__ R ld_el(const unsigned char *p, bool aligned)
{
    if (aligned)
        return *(const volatile R *)p;
    R r = 0;
    for (int b = 0; b < (int)sizeof(R); b++)
        r = (R)(r | (R)((R)*(const volatile unsigned char *)(p + b) << (8 * b)));
    return r;
}
template <typename R> __device__ __forceinline__ void st_el(unsigned char *p, R v, bool aligned)
{
    if (aligned) {
        *(R *)p = v;
        return;
    }
    for (int b = 0; b < (int)sizeof(R); b++)
        p[b] = (unsigned char)(v >> (8 * b));
}

/* n bytes from src to dst by the block, in words of W where both are W-aligned. */
template <typename W>
__device__ __forceinline__ void copy_w(unsigned char *dst, const unsigned char *src, size_t n)
{
    const size_t tid = threadIdx.x, nth = blockDim.x, w = sizeof(W);
    size_t head = (w - ((uintptr_t)src & (w - 1))) & (w - 1);
    head = head < n ? head : n;
    size_t nw = (n - head) / w, tail = head + nw * w;
    for (size_t i = tid; i < head; i += nth)
        dst[i] = *(const volatile unsigned char *)(src + i);
    const unsigned char *s = src + head;
    unsigned char *d = dst + head;
    for (size_t b = tid; b < nw; b += UNROLL * nth) {
        W v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (b + u * nth < nw)
                v[u] = ldw<W>(s + (b + u * nth) * w);
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (b + u * nth < nw)
                *(W *)(d + (b + u * nth) * w) = v[u];
    }
    for (size_t i = tail + tid; i < n; i += nth)
        dst[i] = *(const volatile unsigned char *)(src + i);
}

static __device__ void copy_bytes(unsigned char *dst, const unsigned char *src, size_t n)
{
    uintptr_t diff = (uintptr_t)dst ^ (uintptr_t)src;
    if ((diff & 15) == 0)
        copy_w<uint4>(dst, src, n);
    else if ((diff & 7) == 0)
        copy_w<unsigned long long>(dst, src, n);
    else if ((diff & 3) == 0)
        copy_w<uint32_t>(dst, src, n);
    else if ((diff & 1) == 0)
        copy_w<unsigned short>(dst, src, n);
    else
        copy_w<unsigned char>(dst, src, n);
}

/* The 16 bytes at base + q * 4 + b * 16, base 16-byte aligned: two aligned loads, the window
 * taken from their 32-bit words (q 1..3; q 0 is one plain load). */
__device__ __forceinline__ uint4 ldv16_at(const unsigned char *base, size_t b, int q)
{
    uint4 a = ldv16(base + b * 16);
    if (q == 0)
        return a;
    uint4 c = ldv16(base + b * 16 + 16), r;
    r.x = q == 1 ? a.y : q == 2 ? a.z : a.w;
    r.y = q == 1 ? a.z : q == 2 ? a.w : c.x;
    r.z = q == 1 ? a.w : q == 2 ? c.x : c.y;
    r.w = q == 1 ? c.x : q == 2 ? c.y : c.z;
    return r;
}

/* up_pass's elements [i0, i1), UNROLL_S of them in flight per thread (the head and tail of a
 * chunk, or all of it where no vector fits). ea: every address is element-aligned. */
template <typename T, int OP>
__device__ __forceinline__ void up_scalar(unsigned char *dst, const unsigned char *in,
                                          const unsigned char *k0, size_t kstride, int nk,
                                          size_t i0, size_t i1, int divd, bool ea)
{
    typedef typename num<T>::R R;
    const size_t tid = threadIdx.x, nth = blockDim.x, es = sizeof(R);
    for (size_t b = i0 + tid; b < i1; b += UNROLL_S * nth) {
        R a[UNROLL_S];
#pragma unroll
        for (int u = 0; u < UNROLL_S; u++)
            a[u] = b + u * nth < i1 ? ld_el<R>(in + (b + u * nth) * es, ea) : (R)0;
        for (int j = 0; j < nk; j++) {
            const unsigned char *s = k0 + (size_t)j * kstride;
            R x[UNROLL_S];
#pragma unroll
            for (int u = 0; u < UNROLL_S; u++)
                x[u] = b + u * nth < i1 ? ld_el<R>(s + (b + u * nth) * es, ea) : (R)0;
#pragma unroll
            for (int u = 0; u < UNROLL_S; u++)
                a[u] = combine<T, OP>(a[u], x[u]);
        }
#pragma unroll
        for (int u = 0; u < UNROLL_S; u++)
            if (b + u * nth < i1)
                st_el<R>(dst + (b + u * nth) * es, divd ? divide<T>(a[u], divd) : a[u], ea);
    }
}

/* up_pass's 16-byte vectors [v0, v1) of dst and the slots (16-byte aligned); in's vector b is
 * ldv16_at(ib, b, q). */
template <typename T, int OP>
__device__ __forceinline__ void up_vec(unsigned char *dst, const unsigned char *ib, int q,
                                       const unsigned char *k0, size_t kstride, int nk, size_t v0,
                                       size_t v1, int divd)
{
    typedef typename num<T>::R R;
    const int V = 16 / (int)sizeof(R);
    const size_t tid = threadIdx.x, nth = blockDim.x;
    union vec {
        uint4 v;
        R r[16 / sizeof(R)];
    };
    for (size_t b = v0 + tid; b < v1; b += UNROLL_UP * nth) {
        vec acc[UNROLL_UP];
#pragma unroll
        for (int u = 0; u < UNROLL_UP; u++)
            if (b + u * nth < v1)
                acc[u].v = ldv16_at(ib, b + u * nth, q);
        for (int j = 0; j < nk; j++) {
            const unsigned char *s = k0 + (size_t)j * kstride;
            vec x[UNROLL_UP];
#pragma unroll
            for (int u = 0; u < UNROLL_UP; u++)
                if (b + u * nth < v1)
                    x[u].v = ldv16(s + (b + u * nth) * 16);
#pragma unroll
            for (int u = 0; u < UNROLL_UP; u++)
#pragma unroll
                for (int e = 0; e < V; e++)
                    acc[u].r[e] = combine<T, OP>(acc[u].r[e], x[u].r[e]);
        }
        if (divd)
#pragma unroll
            for (int u = 0; u < UNROLL_UP; u++)
#pragma unroll
                for (int e = 0; e < V; e++)
                    acc[u].r[e] = divide<T>(acc[u].r[e], divd);
#pragma unroll
        for (int u = 0; u < UNROLL_UP; u++)
            if (b + u * nth < v1)
                *(uint4 *)(dst + (b + u * nth) * 16) = acc[u].v;
    }
}

/* The fused up pass: dst[i] = in[i] (op) slot_0[i] (op) ... (op) slot_{nk-1}[i], slot_j at
 * k0 + j * kstride, combined left to right as exec_host.c does; divided by divd if non-zero.
 * dst and the slots (slots are 64-byte aligned, and trees and chunks start on 256-byte units of
 * the user buffer, proto.h) share their offset mod 16: a scalar head of h elements brings them
 * to a 16-byte boundary. in may lie elsewhere (a user buffer at, say, +4 bytes): at a multiple of
 * 4 bytes off, its vectors are cut from two aligned loads (ldv16_at) from the second vector on,
 * so no load leaves the chunk; otherwise the chunk stays scalar. The rest is an unrolled scalar
 * tail. Every element is combined in the same order on every path. */
template <typename T, int OP>
__device__ __forceinline__ void up_pass(unsigned char *dst, const unsigned char *in,
                                        const unsigned char *k0, size_t kstride, int nk, size_t m,
                                        int divd)
{
    typedef typename num<T>::R R;
    const size_t V = 16 / sizeof(R), es = sizeof(R);
    uintptr_t ad = (uintptr_t)dst, ak = nk ? (uintptr_t)k0 | (uintptr_t)kstride : ad;
    bool ea = (((uintptr_t)in | ad | ak) & (es - 1)) == 0;
    size_t h = m, v0 = 0, v1 = 0; /* head elements; vectors [v0, v1) from element h */
    int q = 0;
    if (ea && (ak & 15) == (ad & 15)) {
        h = ((16 - (ad & 15)) & 15) / es;
        h = h < m ? h : m;
        size_t a = ((uintptr_t)in + h * es) & 15, bytes = (m - h) * es;
        if (a == 0) {
            v1 = bytes / 16;
        } else if ((a & 3) == 0 && a + bytes >= 32) {
            q = (int)(a / 4);
            v0 = 1;
            v1 = (a + bytes - 16) / 16;
        }
        v0 = v1 > v0 ? v0 : v1;
    }
    const unsigned char *ib = in + h * es - (q ? 4 * (size_t)q : 0);
    size_t ks = h * es;
    up_scalar<T, OP>(dst, in, k0, kstride, nk, 0, h + v0 * V, divd, ea);
    if (v1 > v0)
        up_vec<T, OP>(dst + ks, ib, q, k0 + ks, kstride, nk, v0, v1, divd);
    up_scalar<T, OP>(dst, in, k0, kstride, nk, h + v1 * V, m, divd, ea);
}

template <typename T>
static __device__ void up_pass_op(int op, unsigned char *dst, const unsigned char *in,
                                  const unsigned char *k0, size_t kstride, int nk, size_t m,
                                  int divd)
{
    switch (op) {
    case blinkProd: up_pass<T, blinkProd>(dst, in, k0, kstride, nk, m, divd); break;
    case blinkMax: up_pass<T, blinkMax>(dst, in, k0, kstride, nk, m, divd); break;
    case blinkMin: up_pass<T, blinkMin>(dst, in, k0, kstride, nk, m, divd); break;
    default: up_pass<T, blinkSum>(dst, in, k0, kstride, nk, m, divd); break; /* sum, avg */
    }
}

__device__ __forceinline__ size_t d_dtype_size(uint64_t dt)
{
    switch (dt) {
    case blinkInt8: case blinkUint8: return 1;
    case blinkFloat16: case blinkBfloat16: return 2;
    case blinkInt32: case blinkUint32: case blinkFloat32: return 4;
    default: return 8;
    }
}

#endif
