/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * kernel_reg.cuh - the protocol kernel's half of Registered on CUDA (proto.h): a rank publishes
 * where its output lies before it enters, and a parent finds its child's output among the
 * regions its host opened, or asks for it. The table lies in device memory, the requests in
 * pinned host memory (the shim: ordinary memory), which the rank's host serves before each
 * launch (kernel_reg.h).
 * kernel_cuda.cuh includes this file after its helpers.
 */
#ifndef BK_KERNEL_REG_CUH
#define BK_KERNEL_REG_CUH

#define KREG_PER_PEER 4 /* a peer's regions open here at once */

/* A peer's region this rank's host opened: its serial there, and its address here (a slot
 * whose serial is 0 is free or being closed). */
struct kreg_entry {
    uint64_t serial, base;
};

/* The kernel's request for a peer's region: what the peer published (serial 0: none). */
struct kreg_req {
    uint64_t serial, len, handle[BK_REG_HANDLE_WORDS];
};

#define H_OUT_SERIAL offsetof(struct bk_seg_header, out_serial)
#define H_OUT_OFF offsetof(struct bk_seg_header, out_off)
#define H_OUT_LEN offsetof(struct bk_seg_header, out_len)
#define H_OUT_HANDLE offsetof(struct bk_seg_header, out_handle)

/* Before entered, by the entering thread: this call's output region (p.reg: serial, offset,
 * bytes, handle; serial 0: none). The handle is written only when the region changed. */
__device__ __forceinline__ void d_reg_publish(const kparams &p, unsigned char *me)
{
    uint64_t s = p.reg[0];
    if (s && ld64(me + H_OUT_SERIAL) != s) {
        st64(me + H_OUT_LEN, p.reg[2]);
        for (int i = 0; i < BK_REG_HANDLE_WORDS; i++)
            st64(me + H_OUT_HANDLE + 8 * i, p.reg[3 + i]);
    }
    st64(me + H_OUT_OFF, p.reg[1]);
    st64(me + H_OUT_SERIAL, s);
}

/* Where child q's output starts here, if q published a region this rank's host has opened;
 * else NULL, and the host is asked to open it. By thread 0, once per call and block, after the
 * acquire load that saw q's entered of this call (which orders q's words before it). */
__device__ __forceinline__ unsigned char *d_reg_dest(const kparams &p, int q)
{
    const unsigned char *h = p.seg[q];
    uint64_t s = ld64(h + H_OUT_SERIAL);
    if (!s)
        return NULL;
    const kreg_entry *e = p.rtab + (size_t)q * KREG_PER_PEER;
    for (int k = 0; k < KREG_PER_PEER; k++)
        if (ld_acquire_sys64(&e[k].serial) == s)
            return (unsigned char *)(uintptr_t)ld64(&e[k].base) + ld64(h + H_OUT_OFF);
    kreg_req *rq = p.rreq + q;
    if (ld64(&rq->serial) != s) {
        st64(&rq->len, ld64(h + H_OUT_LEN));
        for (int i = 0; i < BK_REG_HANDLE_WORDS; i++)
            st64(&rq->handle[i], ld64(h + H_OUT_HANDLE + 8 * i));
        fence_acq_rel_sys(); /* the request before its serial, */
        st_relaxed_sys64(&rq->serial, s);
        fence_acq_rel_sys(); /* and the serial before the word the host looks at (rare) */
        st_relaxed_sys64(p.rasked, 1);
    }
    return NULL;
}

#endif
