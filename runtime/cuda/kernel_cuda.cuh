/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * kernel_cuda.cuh - the device side of the CUDA backend: the protocol kernel that runs this
 * rank's part of the protocol of proto.h in one launch per call, its instantiations (one per
 * datatype) and the table that picks one, its device helpers (flag loads and stores, messages,
 * failing and aborting, description checks, element types, the fused reduce and copy loops), and
 * the structures it shares with the host (launch arguments, device counters, status block).
 * backend_cuda.cu, the host side, includes it: the backend stays one nvcc compile
 * (runtime/local.mk), kept in two files so that each holds one job. Tag and layout functions are
 * proto.h's own (BK_HD), the same the host backend uses.
 *
 * The kernel (one instantiation per datatype, so each holds only its own reductions): one
 * threadblock per work item (kernel_args.h's kitems_for): a tree slot of the set (a channel of a
 * plan tree, proto.h), and for allreduce its up pass and its down pass apart, so that a root
 * forwards down while it still reduces up (the root's down pass waits on the down-ready word its
 * up pass posts, proto.h); at most as many blocks as are resident on the device at once beside
 * the other ranks sharing it, and MAX_BLOCKS (backend_cuda.cu; a block then plays several items,
 * taking each a step at a time, as the host's threads do). Thread 0 of a block decides, from the
 * flag words, whether an item's next chunk can move up or down (never blocking on one while
 * another could move); the block's threads then move it together, with 16-byte accesses where
 * alignment allows (trees and chunks start on 256-byte units of the user buffers, proto.h's
 * bk_split_at and call.c, so an aligned buffer moves in vectors whole; up_pass says what
 * misaligned ones do):
 * going up, one fused pass reads this rank's input and every child's in-slot, reduces in registers
 * and writes the parent's slot (the output at the root, divided there for avg), combining in
 * exec_host.c's order with reduce_host.c's arithmetic (integers wrap, float16/bfloat16 go through
 * float and are rounded after every combine, max/min let a number win over a NaN), so both backends
 * should agree bit for bit, NaN payloads aside; going down, the chunk is copied to the output and
 * to every child's down slot, or, in a direct call (proto.h's Direct), straight into every
 * child's output, which a child then only forwards (no slot, no down credit).
 *
 * Ordering, in NCCL's form: thread 0 polls the flag words with acquire loads (ld_acquire_sys64)
 * and the barrier after its decision orders the other threads' data accesses after them; after
 * the data moved, a barrier, then thread 0 alone makes the release (fence_acq_rel_sys, then
 * relaxed stores of the ready and freed words), which covers the writes of the whole block by
 * cumulativity. No thread but the posting one fences. Data a peer wrote is read with ld.volatile
 * (never a stale L1 line). The abort and status paths keep full system fences: they are rare.
 *
 * LL (proto.h, and kernel_ll.cuh, where its moves live): where the call's algo word says LL, a
 * chunk goes as lines that carry their flags; thread 0 decides as above, but from line 0 of each
 * slot it reads instead of ready words, every thread then polls its own lines, and the post is
 * the credit alone, with no fence. A wait that gives up (abort, BLINK_TIMEOUT_S) inside the pass
 * leaves the peer in the block-shared llfail, and the launch ends there on every thread.
 *
 * Call numbers: the kernel takes its call number from a counter in device memory that the last
 * block of each launch advances, not from the launch's arguments, so a captured graph that is
 * replayed numbers each replay anew (on every rank alike, as long as all replay in the same
 * order, NCCL's rule). Outside graphs the numbers are those call.c gives. Block 0 enters the
 * call (proto.h, Calls); on a call that cleans (proto.h, Wrap) it first zeroes this rank's flag
 * words, and the other blocks, which read them, wait until it has entered.
 *
 * Faults: wait loops watch this rank's abort word and a timeout (BLINK_TIMEOUT_S without
 * progress, by %globaltimer). A rank that gives up writes its reason into its header's
 * abort_msg and 1 + its rank into every reachable peer's abort word (atomicCAS where the link
 * has native atomics); the first failure of the rank's life goes to the status block, which
 * async_error and wait turn into the result and message (the kernel formats the message, so
 * the text the peers read and the text this rank reports are the same, as on the host).
 */
#ifndef BK_KERNEL_CUDA_CUH
#define BK_KERNEL_CUDA_CUH

#ifdef BK_KERNEL_SHIM
#include "cuda_shim.h" /* host C++ in place of CUDA (tests/shim): no GPU, no CUDA headers */
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif
#include <stddef.h>
#include <stdint.h>

#include "rt.h"
#include "trace.h"

#define KTHREADS 512     /* threads per block */
#define UNROLL 4         /* 16-byte vectors in flight per thread: copies */
#define UNROLL_UP 2      /* and the up pass (unpacked 8-bit lanes take a register each) */
#define UNROLL_S 4       /* elements in flight per thread on the up pass's scalar head and tail */

/* ------------------------------------------------------------------ shared with the host */

/* Device words the kernel keeps between launches. */
struct kctl {
    unsigned int seq;       /* the last launch's call number */
    unsigned int done;      /* blocks of the running launch that have finished */
    unsigned int failed;    /* 1 once a failure was written into the status block (sticky) */
    unsigned int launches;  /* launches finished, copied to kstatus.finished */
};

/* Pinned, mapped: the kernel's report (the first failure of this rank's life). */
struct kstatus {
    unsigned int finished;  /* launches that have finished (the host's completion test) */
    unsigned int code;      /* blinkResult_t: 0 none */
    int peer;               /* plan rank waited for or blamed, or -1 */
    unsigned int seq;       /* the call */
    unsigned int coll;
    char msg[BK_MSG_MAX];
};

struct kreg_entry; /* kernel_reg.cuh */
struct kreg_req;

/* One launch's arguments (by value). */
struct kparams {
    uint64_t d[BK_DESC_WORDS];   /* the description; d[0] is replaced by the device's number */
    const unsigned char *send;
    unsigned char *recv;
    uint64_t chunk_elems;
    const struct bk_role *roles;
    const int *kids;
    int ntrees, nitems, tpb;     /* tree slots of the set; work items (kitems_for); items per
                                  * block */
    int prank, nranks;
    int check_calls;             /* BLINK_CHECK_CALLS=1: compare whole descriptions */
    struct bk_layout lay;        /* the staging layout: device copies of the call's set's view
                                  * (seg_bytes NULL: the kernel never needs it) */
    unsigned char *const *seg;   /* [nranks] every rank's segment, mapped here */
    unsigned char *const *hseg;  /* [nranks] the segments in pinned host memory of host-staged
                                  * edges (d_segs), or the same as seg */
    int staged_slot;             /* tree slots from this one on are host-staged (ntrees: none) */
    unsigned char *const *tseg;  /* [ntrees * nranks] each slot's segments, where the set has
                                  * edges to other servers (kernel_args.h's ktseg_fill), or NULL */
    const unsigned char *reach;  /* [nranks] 1: this device can load and store there */
    const unsigned char *atom;   /* [nranks] 1: and has native atomics there */
    const int *user_of;          /* [nranks] */
    const int *topo_dev;         /* [nranks] */
    const char *timeout_str;     /* BLINK_TIMEOUT_S as "%g" */
    uint64_t timeout_ns;
    struct kstatus *status;      /* device pointer of the pinned block */
    struct kctl *ctl;
    struct bk_trace_ring *trace; /* BLINK_TRACE: this rank's events, or NULL */
    /* Registered on CUDA (proto.h, kernel_reg.cuh), in calls that may take it, else NULL: */
    const struct kreg_entry *rtab; /* [nranks * KREG_PER_PEER] peers' regions opened here
                                    * (device memory) */
    struct kreg_req *rreq;       /* [nranks] what this rank's kernel asks its host to open */
    uint64_t *rasked;            /* set after a request */
    uint64_t reg[3 + BK_REG_HANDLE_WORDS]; /* this rank's output: serial (0: none), offset,
                                            * region bytes, handle */
};

/* Where tree slot ti's flags and slots lie: every rank's segment, or for a tree whose edges are
 * host-staged (from slot staged_slot on: a hybrid's PCIe trees) every rank's segment in pinned
 * host memory; in a set with edges to other servers, the slot's own table (tseg): a rank with
 * such an edge in the slot keeps its words in host memory, where the network proxy reaches
 * them, and a peer on another server is its mirror here (proxy.h). Headers (entered,
 * description, abort, output) stay in the segment. */
__device__ __forceinline__ unsigned char *const *d_segs(const kparams &p, int ti)
{
    if (p.tseg)
        return p.tseg + (size_t)ti * (size_t)p.nranks;
    return ti >= p.staged_slot ? p.hseg : p.seg;
}

/* A work item's progress in this launch (block-shared, written by thread 0 only): a tree
 * slot's passes, or one of them (the other marked done). */
struct tstate {
    unsigned long long lo, hi;
    unsigned int nchunks, up, down;
    unsigned int reg;            /* the down chunk came straight into the output (BK_TAG_REG) */
};

#define H_ENTERED offsetof(struct bk_seg_header, entered)
#define H_ABORT offsetof(struct bk_seg_header, abort)
#define H_OUT offsetof(struct bk_seg_header, out)
#define H_DESC offsetof(struct bk_seg_header, desc)
#define H_MSG offsetof(struct bk_seg_header, abort_msg)
#define H_MSG_BYTES sizeof(((struct bk_seg_header *)0)->abort_msg)

/* ------------------------------------------------------------------ device: flags */

#ifdef BK_KERNEL_SHIM /* flag words are atomics there: the shim's threads race on them */
__device__ __forceinline__ uint64_t ld64(const void *p) { return shim_ld<uint64_t>(p); }
__device__ __forceinline__ uint32_t ld32(const void *p) { return shim_ld<uint32_t>(p); }
__device__ __forceinline__ void st64(void *p, uint64_t v) { shim_st<uint64_t>(p, v); }
__device__ __forceinline__ void st32(void *p, uint32_t v) { shim_st<uint32_t>(p, v); }
#else
__device__ __forceinline__ uint64_t ld64(const void *p) { return *(const volatile uint64_t *)p; }
__device__ __forceinline__ uint32_t ld32(const void *p) { return *(const volatile uint32_t *)p; }
__device__ __forceinline__ void st64(void *p, uint64_t v) { *(volatile uint64_t *)p = v; }
__device__ __forceinline__ void st32(void *p, uint32_t v) { *(volatile uint32_t *)p = v; }
#endif

/* The hand-over's accesses (proto.h): system-scoped acquire loads of flag words, relaxed stores
 * of them after one release fence in the posting thread. sm_70 and later have these forms;
 * older targets fall back to volatile accesses and full fences; the CPU shim uses its atomics
 * (acquire and release there, which TSan follows). */
__device__ __forceinline__ uint64_t ld_acquire_sys64(const void *p)
{
    uint64_t v;
#if defined(BK_KERNEL_SHIM)
    v = shim_ld<uint64_t>(p);
#elif __CUDA_ARCH__ >= 700
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
#else
    v = *(const volatile uint64_t *)p;
    __threadfence_system();
#endif
    return v;
}
__device__ __forceinline__ void st_relaxed_sys64(void *p, uint64_t v)
{
#if defined(BK_KERNEL_SHIM)
    shim_st<uint64_t>(p, v);
#elif __CUDA_ARCH__ >= 700
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
    *(volatile uint64_t *)p = v;
#endif
}
/* Release (and acquire) at system scope: what the block did before the barrier that precedes
 * it happens before the posting thread's next stores, for every observer. */
__device__ __forceinline__ void fence_acq_rel_sys()
{
#if defined(BK_KERNEL_SHIM)
    __atomic_thread_fence(__ATOMIC_ACQ_REL);
#elif __CUDA_ARCH__ >= 700
    asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
    __threadfence_system();
#endif
}

__device__ __forceinline__ uint64_t gtimer()
{
#ifdef BK_KERNEL_SHIM
    return shim_globaltimer();
#else
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#endif
}

/* BLINK_TRACE (trace.h): one event at time t, stamped by the thread that calls it (thread 0). */
__device__ __forceinline__ void d_trace_at(const kparams &p, uint64_t t, uint32_t seq, int kind,
                                           int tree, uint32_t chunk, int peer)
{
    if (!p.trace)
        return;
    unsigned long long i = atomicAdd(&p.trace->head, 1ull);
    if (i >= p.trace->cap)
        return;
    struct bk_trace_rec r;
    r.t_ns = t;
    r.seq = seq;
    r.chunk = chunk;
    r.block = (uint16_t)blockIdx.x;
    r.tree = (uint16_t)tree;
    r.peer = (int16_t)peer;
    r.kind = (uint8_t)kind;
    r.coll = (uint8_t)p.d[1];
    p.trace->rec[i] = r;
}

/* One event now; when tracing is off, one uniform test of a launch argument (the clock is read
 * only past it). */
__device__ __forceinline__ void d_trace(const kparams &p, uint32_t seq, int kind, int tree,
                                        uint32_t chunk, int peer)
{
    if (p.trace)
        d_trace_at(p, gtimer(), seq, kind, tree, chunk, peer);
}

/* ------------------------------------------------------------------ device: block-shared */

/* What the block's threads share besides the dynamic part (written by thread 0 only). */
struct kshared {
    char msg[BK_MSG_MAX];   /* thread 0's message under construction (no stack for it) */
    int dec;                /* thread 0's decision, read by the block after a barrier */
    uint32_t seq;           /* the call number */
    int llfail;             /* -1, or the peer an LL wait gave up on (kernel_ll.cuh) */
};

/* The block's shared state, and its dynamic shared memory (tstate[tpb], then checked[nranks],
 * then rdst[nranks]: kernel_args.h's ksmem); under the shim, the storage of the calling
 * thread's block. */
#ifdef BK_KERNEL_SHIM
__device__ __forceinline__ kshared &ksh() { return *shim_block_static<kshared>(); }
__device__ __forceinline__ unsigned long long *kdsm()
{
    return (unsigned long long *)shim_block_dynamic();
}
#else
__device__ __forceinline__ kshared &ksh()
{
    __shared__ kshared s; /* one per block, however many call sites inline this */
    return s;
}
__device__ __forceinline__ unsigned long long *kdsm()
{
    extern __shared__ unsigned long long dsm[];
    return dsm;
}
#endif

#include "kernel_fail.cuh"  /* messages and failures */
#include "kernel_moves.cuh" /* element types, copies, the up pass */
#include "kernel_ll.cuh"    /* LL's moves, on the helpers above */
#include "kernel_reg.cuh"   /* Registered: outputs in other processes */

/* ------------------------------------------------------------------ device: the protocol */

/* This rank's input and output at element x of tree t's group (exec_host.c's in_at, out_at). */
__device__ __forceinline__ const unsigned char *d_in_at(const kparams &p, const bk_role &t,
                                                        size_t x)
{
    size_t es = d_dtype_size(p.d[3]);
    size_t base = p.d[1] == BLINK_PLAN_REDUCESCATTER ? (size_t)p.user_of[t.root] * p.d[5] : 0;
    return p.send + (base + x) * es;
}
__device__ __forceinline__ unsigned char *d_out_at(const kparams &p, const bk_role &t, size_t x)
{
    size_t es = d_dtype_size(p.d[3]);
    size_t base = p.d[1] == BLINK_PLAN_ALLGATHER ? (size_t)p.user_of[t.root] * p.d[5] : 0;
    return p.recv + (base + x) * es;
}

/* Chunk s->up of tree ti: may it go up now? (thread 0; exec_host.c's up_step checks) */
static __device__ int up_ready(const kparams &p, int ti, const tstate *s, uint32_t seq,
                               unsigned char *checked, int &waiting)
{
    const bk_role &t = p.roles[ti];
    const int *kids = p.kids + t.kids_at;
    const unsigned char *me = d_segs(p, ti)[p.prank];
    uint32_t ch = s->up;
    if (ch >= s->nchunks || !bk_has_up((int)p.d[1]))
        return 0;
    for (int j = 0; j < t.nkids; j++) {
        uint64_t x;
        int k = (int)(ch % BK_SLOTS);
        bool in = p.d[6] & BK_ALGO_LL /* LL: line 0 has come, so the child's pass began */
                      ? ll_load(me + bk_off_ll_up_slot(&p.lay, p.prank, ti, j, k),
                                bk_ll_flag(seq, ch), x)
                      : bk_tag_reached(
                            ld_acquire_sys64(me + bk_off_up_ready(&p.lay, p.prank, ti, j)), seq,
                            ch + 1);
        if (!in) {
            waiting = kids[j];
            return 0;
        }
    }
    if (t.parent >= 0) {
        int r = d_peer_ready(p, seq, checked, t.parent, waiting);
        if (r <= 0)
            return r;
        if (ch >= BK_SLOTS &&
            !bk_tag_reached(ld_acquire_sys64(me + bk_off_up_freed(&p.lay, p.prank, ti, t.parent)),
                            seq, ch - BK_SLOTS + 1)) {
            waiting = t.parent;
            return 0;
        }
    }
    return 1; /* the acquire loads, then the caller's barrier, order the data after the flags */
}

/* Registered (kernel_reg.cuh): rdst[q], where child q's output starts here or 0, follows
 * checked[] in the block's dynamic shared memory; bit 2 of checked[q] says it was looked up. */
__device__ __forceinline__ unsigned long long *d_rdst(const kparams &p, unsigned char *checked)
{
    return (unsigned long long *)(checked + ((p.nranks + 7) & ~7));
}

/* Chunk s->down of tree ti: may it go down now? (s->reg: whether it came into the output.) */
static __device__ int down_ready(const kparams &p, int ti, tstate *s, uint32_t seq,
                                 unsigned char *checked, int &waiting)
{
    const bk_role &t = p.roles[ti];
    const int *kids = p.kids + t.kids_at;
    const unsigned char *me = d_segs(p, ti)[p.prank];
    uint32_t ch = s->down;
    if (ch >= s->nchunks || !bk_has_down((int)p.d[1]))
        return 0;
    /* An allreduce root's up pass, maybe in another block, posts its own down-ready word, in
     * Simple and LL alike (proto.h); another rank's down pass waits on its parent's hand-over. */
    uint64_t x, w = 0;
    int self = t.parent < 0 && p.d[1] == BLINK_PLAN_ALLREDUCE;
    if (self ? !bk_tag_reached(ld_acquire_sys64(me + bk_off_down_ready(&p.lay, p.prank, ti)), seq,
                               ch + 1)
             : t.parent >= 0 &&
                   (p.d[6] & BK_ALGO_LL
                        ? !ll_load(me + bk_off_ll_down_slot(&p.lay, p.prank, ti,
                                                            (int)(ch % BK_SLOTS)),
                                   bk_ll_flag(seq, ch), x)
                        : !bk_tag_reached(w = ld_acquire_sys64(me + bk_off_down_ready(
                                                                &p.lay, p.prank, ti)),
                                          seq, ch + 1))) {
        waiting = t.parent >= 0 ? t.parent : p.prank;
        for (int j = 0; self && j < t.nkids; j++) /* the root: the child its up pass lacks */
            if (j == t.nkids - 1 ||
                !bk_tag_reached(ld_acquire_sys64(me + bk_off_up_ready(&p.lay, p.prank, ti, j)),
                                seq, ch + 1)) {
                waiting = kids[j];
                break;
            }
        return 0;
    }
    s->reg = ((uint32_t)w & BK_TAG_REG) != 0;
    for (int j = 0; j < t.nkids; j++) {
        int r = d_peer_ready(p, seq, checked, kids[j], waiting);
        if (r <= 0)
            return r;
        if (p.rtab && !(checked[kids[j]] & 2)) {
            d_rdst(p, checked)[kids[j]] = (unsigned long long)(uintptr_t)d_reg_dest(p, kids[j]);
            checked[kids[j]] |= 2;
        }
        if (!(p.d[6] & BK_ALGO_DIRECT) && ch >= BK_SLOTS && /* direct: no slot, no credit */
            !bk_tag_reached(ld_acquire_sys64(me + bk_off_down_freed(&p.lay, p.prank, ti, kids[j])),
                            seq, ch - BK_SLOTS + 1)) {
            waiting = kids[j];
            return 0;
        }
    }
    return 1;
}

/* After an LL pass in which a wait gave up (every thread reads llfail past the barrier, and it
 * stays set: the launch ends): thread 0 reports the abort or the timeout. -1 for all. */
static __device__ int ll_fail(const kparams &p, uint32_t seq)
{
    if (threadIdx.x == 0) {
        uint32_t who = ld32(p.seg[p.prank] + H_ABORT);
        if (who)
            d_fail_aborted(p, seq, who);
        else
            d_fail_timeout(p, seq, ksh().llfail);
    }
    return -1;
}

/* One step of tree ti going up, by the whole block: 1 moved, 0 not ready, -1 failed.
 * Thread 0 decides; exactly two barriers on every path, so the block stays in step. */
template <typename T>
static __device__ int up_step(const kparams &p, int ti, tstate *s, uint32_t seq,
                              unsigned char *checked, int &waiting, volatile int *dec_sh)
{
    if (threadIdx.x == 0) {
        *dec_sh = up_ready(p, ti, s, seq, checked, waiting);
        if (*dec_sh == 1)
            d_trace(p, seq, BK_TR_UP_DECIDE, ti, s->up, p.roles[ti].parent);
    }
    __syncthreads();
    int dec = *dec_sh;
    unsigned char *const *sg = d_segs(p, ti); /* host-staged trees: slots in host memory */
    if (dec == 1) {
        const bk_role &t = p.roles[ti];
        uint32_t ch = s->up;
        if (threadIdx.x == 0)
            d_trace(p, seq, BK_TR_UP_START, ti, ch, t.parent);
        int k = (int)(ch % BK_SLOTS), root = t.parent < 0;
        size_t x0 = s->lo + (size_t)ch * p.chunk_elems;
        size_t m = bk_chunk_len(s->lo, s->hi, ch, p.chunk_elems);
        const unsigned char *in = d_in_at(p, t, x0);
        unsigned char *dst = root ? d_out_at(p, t, x0)
                                  : sg[t.parent] +
                                        bk_off_up_slot(&p.lay, t.parent, ti, t.kpos, k);
        const unsigned char *k0 = sg[p.prank] + bk_off_up_slot(&p.lay, p.prank, ti, 0, k);
        int avg = p.d[4] == blinkAvg, divd = root && avg ? p.nranks : 0;
        if (p.d[6] & BK_ALGO_LL) {
            unsigned char *line = root ? NULL : sg[t.parent] + bk_off_ll_up_slot(
                                                    &p.lay, t.parent, ti, t.kpos, k);
            ll_up_pass_op<T>(avg ? blinkSum : (int)p.d[4], p, root ? dst : NULL, line, in,
                             sg[p.prank] + bk_off_ll_up_slot(&p.lay, p.prank, ti, 0, k),
                             (size_t)BK_SLOTS * p.lay.ll_slot_bytes, p.kids + t.kids_at, t.nkids,
                             m * d_dtype_size(p.d[3]), divd, bk_ll_flag(seq, ch), &ksh().llfail);
        } else if (t.nkids == 0 && !divd) {
            if (dst != in)
                copy_bytes(dst, in, m * d_dtype_size(p.d[3]));
        } else {
            up_pass_op<T>(avg ? blinkSum : (int)p.d[4], dst, in, k0,
                          (size_t)BK_SLOTS * p.lay.slot_bytes, t.nkids, m, divd);
        }
    }
    __syncthreads();
    if (dec == 1 && ksh().llfail >= 0)
        dec = ll_fail(p, seq);
    if (dec == 1 && threadIdx.x == 0) {
        const bk_role &t = p.roles[ti];
        const int *kids = p.kids + t.kids_at;
        uint32_t ch = s->up;
        /* LL: the lines were the announcement; credit needs no fence, for the reads it follows
         * have returned. An allreduce root hands its output (plain stores, either protocol) to
         * its own down pass by its down-ready word, released like any Simple hand-over. */
        int self = t.parent < 0 && p.d[1] == BLINK_PLAN_ALLREDUCE;
        if (!(p.d[6] & BK_ALGO_LL) || self) {
            fence_acq_rel_sys(); /* release: the block's moves (barrier above) before the flags */
            if (t.parent >= 0)
                st_relaxed_sys64(sg[t.parent] + bk_off_up_ready(&p.lay, t.parent, ti, t.kpos),
                                 bk_tag(seq, ch + 1));
            else if (self)
                st_relaxed_sys64(sg[p.prank] + bk_off_down_ready(&p.lay, p.prank, ti),
                                 bk_tag(seq, ch + 1));
        }
        for (int j = 0; j < t.nkids; j++)
            st_relaxed_sys64(sg[kids[j]] + bk_off_up_freed(&p.lay, kids[j], ti, p.prank),
                             bk_tag(seq, ch + 1));
        d_trace(p, seq, BK_TR_UP_POST, ti, ch, t.parent);
        s->up = ch + 1;
    }
    return dec;
}

/* Child q's output here, where tree ti's chunks go straight into it (Registered), else NULL:
 * only trees whose words lie in the device segments (host-staged ones go through the staging). */
__device__ __forceinline__ unsigned char *d_reg_at(const kparams &p, int ti, unsigned char *checked,
                                                   int q)
{
    if (!p.rtab || d_segs(p, ti) != p.seg)
        return NULL;
    return (unsigned char *)(uintptr_t)d_rdst(p, checked)[q];
}

/* One step of tree ti going down, by the whole block. */
static __device__ int down_step(const kparams &p, int ti, tstate *s, uint32_t seq,
                                unsigned char *checked, int &waiting, volatile int *dec_sh)
{
    if (threadIdx.x == 0) {
        *dec_sh = down_ready(p, ti, s, seq, checked, waiting);
        if (*dec_sh == 1)
            d_trace(p, seq, BK_TR_DOWN_DECIDE, ti, s->down, p.roles[ti].parent);
    }
    __syncthreads();
    int dec = *dec_sh;
    unsigned char *const *sg = d_segs(p, ti); /* host-staged trees: slots in host memory */
    if (dec == 1) {
        const bk_role &t = p.roles[ti];
        const int *kids = p.kids + t.kids_at;
        uint32_t ch = s->down;
        if (threadIdx.x == 0)
            d_trace(p, seq, BK_TR_DOWN_START, ti, ch, t.parent);
        int k = (int)(ch % BK_SLOTS), root = t.parent < 0;
        size_t es = d_dtype_size(p.d[3]), x0 = s->lo + (size_t)ch * p.chunk_elems;
        size_t m = bk_chunk_len(s->lo, s->hi, ch, p.chunk_elems);
        bool direct = p.d[6] & BK_ALGO_DIRECT;
        unsigned char *out = d_out_at(p, t, x0);
        const unsigned char *src;
        if (root)
            src = p.d[1] == BLINK_PLAN_ALLREDUCE ? out : d_in_at(p, t, x0);
        else /* direct or registered: the parent wrote the output itself */
            src = direct || s->reg ? out : sg[p.prank] + bk_off_down_slot(&p.lay, p.prank, ti, k);
        if (p.d[6] & BK_ALGO_LL) {
            ll_down_pass(p, ti, k, root ? src : NULL,
                         sg[p.prank] + bk_off_ll_down_slot(&p.lay, p.prank, ti, k), out, kids,
                         t.nkids, m * es, bk_ll_flag(seq, ch), t.parent, &ksh().llfail);
        } else {
            if (out != src)
                copy_bytes(out, src, m * es);
            /* Direct: into the child's output at the same place (proto.h): its address was
             * stored before the entered word that down_ready's acquire load saw. Registered:
             * the same, where this rank's host opened the child's region. */
            for (int j = 0; j < t.nkids; j++) {
                unsigned char *reg = d_reg_at(p, ti, checked, kids[j]);
                copy_bytes(direct ? (unsigned char *)ld64(p.seg[kids[j]] + H_OUT) + (out - p.recv)
                           : reg  ? reg + (out - p.recv)
                                  : sg[kids[j]] + bk_off_down_slot(&p.lay, kids[j], ti, k),
                           src, m * es);
            }
        }
    }
    __syncthreads();
    if (dec == 1 && ksh().llfail >= 0)
        dec = ll_fail(p, seq);
    if (dec == 1 && threadIdx.x == 0) {
        const bk_role &t = p.roles[ti];
        const int *kids = p.kids + t.kids_at;
        uint32_t ch = s->down;
        if (!(p.d[6] & BK_ALGO_LL)) {
            fence_acq_rel_sys(); /* release, as in up_step */
            for (int j = 0; j < t.nkids; j++)
                st_relaxed_sys64(sg[kids[j]] + bk_off_down_ready(&p.lay, kids[j], ti),
                                 bk_tag(seq, (ch + 1) | (d_reg_at(p, ti, checked, kids[j])
                                                             ? BK_TAG_REG : 0u)));
        }
        if (t.parent >= 0 && !(p.d[6] & BK_ALGO_DIRECT))
            st_relaxed_sys64(sg[t.parent] + bk_off_down_freed(&p.lay, t.parent, ti, p.prank),
                             bk_tag(seq, ch + 1));
        d_trace(p, seq, BK_TR_DOWN_POST, ti, ch, t.parent);
        s->down = ch + 1;
    }
    return dec;
}

#if defined(__CUDACC_VER_MAJOR__) &&                                                         \
    (__CUDACC_VER_MAJOR__ > 11 || (__CUDACC_VER_MAJOR__ == 11 && __CUDACC_VER_MINOR__ >= 7))
#define GRID_CONSTANT __grid_constant__
#else
#define GRID_CONSTANT
#endif

template <typename T>
__global__ void __launch_bounds__(KTHREADS, 1) bk_kernel(const GRID_CONSTANT kparams p)
{
    unsigned long long *dsm = kdsm();
    int &dec_sh = ksh().dec;
    uint32_t &seq_sh = ksh().seq;
    tstate *ts = (tstate *)dsm;
    unsigned char *checked = (unsigned char *)(ts + p.tpb);
    const int tid = threadIdx.x;
    unsigned char *me = p.seg[p.prank];
    int waiting = 0; /* thread 0: the peer the last blocked step waited for */
    const uint64_t t_enter = p.trace ? gtimer() : 0;

    for (int i = tid; i < p.nranks; i += blockDim.x)
        checked[i] = 0;
    if (tid == 0) {
        seq_sh = bk_seq_next(ld32(&p.ctl->seq));
        ksh().llfail = -1;
    }
    __syncthreads();
    /* Wrap and LL (proto.h): block 0 zeroes this rank's flag words, or its LL lines, before it
     * enters, so that no word or line of an earlier epoch looks current; all its threads help
     * (the LL lines are megabytes). The barrier, then the release before entered, publish it. */
    if (blockIdx.x == 0 && bk_ll_cleans(seq_sh)) {
        size_t from = bk_seq_cleans(seq_sh) ? p.lay.flags_off[p.prank] : p.lay.ll_off[p.prank];
        unsigned char *hme = p.hseg[p.prank]; /* host-staged edges' words, where apart */
        for (size_t o = from + 8 * (size_t)tid; o < p.lay.slots_off[p.prank];
             o += 8 * (size_t)blockDim.x) {
            st64(me + o, 0);
            if (hme != me)
                st64(hme + o, 0);
        }
    }
    __syncthreads();
    if (tid == 0) {
        uint32_t seq = seq_sh;
        uint32_t who = ld32(me + H_ABORT);
        if (!who && blockIdx.x != 0 && bk_ll_cleans(seq))
            while (bk_entry_seq(ld_acquire_sys64(me + H_ENTERED)) != seq &&
                   !(who = ld32(me + H_ABORT)))
                ; /* block 0 cleans what this block reads before it enters: not them first */
        if (who) {
            char *buf = ksh().msg;
            dmsg m = {buf, 0, BK_MSG_MAX};
            int q = (int)who - 1;
            put_s(m, d_coll_name(p.d[1]));
            put_s(m, ": the communicator was aborted: ");
            if (q >= 0 && q < p.nranks && p.seg[q] && p.reach[q])
                put_vol(m, p.seg[q] + H_MSG, (int)H_MSG_BYTES);
            d_fail(p, blinkRemoteError, q, seq, buf, false);
            dec_sh = -1;
        } else {
            if (blockIdx.x == 0) {
                /* Enter: the description first, then the word that makes it valid (release:
                 * the clean and the last launch's reads of the staging come before it too). */
                for (int i = 0; i < BK_DESC_WORDS; i++)
                    st64(me + H_DESC + 8 * i, i == 0 ? (uint64_t)seq : p.d[i]);
                st64(me + H_OUT, (uint64_t)(uintptr_t)p.recv);
                if (p.rtab)
                    d_reg_publish(p, me);
                fence_acq_rel_sys();
                st_relaxed_sys64(me + H_ENTERED, bk_entry(seq, bk_desc_hash(p.d)));
                if (p.hseg[p.prank] != me) /* the network proxy reads it there (proxy.h) */
                    st_relaxed_sys64(p.hseg[p.prank] + H_ENTERED, bk_entry(seq, bk_desc_hash(p.d)));
            }
            for (int it = blockIdx.x, i = 0; it < p.nitems; it += gridDim.x, i++) {
                const bk_role &t = p.roles[it % p.ntrees];
                tstate *s = &ts[i];
                size_t es = d_dtype_size(p.d[3]);
                s->lo = bk_split_at(p.d[5], es, t.lo_w, t.total_w);
                s->hi = bk_split_at(p.d[5], es, t.hi_w, t.total_w);
                s->nchunks = bk_nchunks(s->lo, s->hi, p.chunk_elems);
                s->up = s->down = s->reg = 0;
                if (p.nitems > p.ntrees) /* passes apart: item ti goes up, ntrees + ti down */
                    *(it < p.ntrees ? &s->down : &s->up) = s->nchunks;
            }
            dec_sh = 0;
        }
        /* Recorded once entered: the ring's atomic is not on the way to the entered word. */
        d_trace_at(p, t_enter, seq, BK_TR_ENTER, 0, 0, -1);
    }
    __syncthreads();
    const uint32_t seq = seq_sh;
    int go = dec_sh == 0;
    __syncthreads();

    uint64_t idle_since = 0;
    unsigned int spins = 0;
    while (go) {
        int moved = 0, done = 1, failed = 0;
        for (int it = blockIdx.x, i = 0; it < p.nitems; it += gridDim.x, i++) {
            tstate *s = &ts[i];
            int ti = it % p.ntrees, r;
            while ((r = up_step<T>(p, ti, s, seq, checked, waiting, &dec_sh)) > 0)
                moved = 1;
            if (r == 0)
                while ((r = down_step(p, ti, s, seq, checked, waiting, &dec_sh)) > 0)
                    moved = 1;
            if (r < 0) {
                failed = 1;
                break;
            }
            done &= (!bk_has_up((int)p.d[1]) || s->up >= s->nchunks) &&
                    (!bk_has_down((int)p.d[1]) || s->down >= s->nchunks);
        }
        if (failed || done)
            break;
        if (moved) {
            idle_since = 0;
            spins = 0;
            continue;
        }
        /* Nothing could move: an abort, the timeout, or look again. */
        if (tid == 0) {
            int stop = 0;
            uint32_t who = ld32(me + H_ABORT);
            uint64_t now = gtimer();
            if (who) {
                d_fail_aborted(p, seq, who);
                stop = 1;
            } else if (idle_since == 0) {
                idle_since = now;
            } else if (now - idle_since > p.timeout_ns) {
                d_fail_timeout(p, seq, waiting);
                stop = 1;
            }
#if defined(BK_KERNEL_SHIM) || __CUDA_ARCH__ >= 700
            if (!stop && ++spins > 64)
                __nanosleep(spins > 4096 ? 1000 : 100);
#endif
            dec_sh = stop;
        }
        __syncthreads();
        go = !dec_sh;
        __syncthreads();
    }

    /* The last block out advances the call number the next launch takes. */
    if (tid == 0) {
        d_trace(p, seq, BK_TR_EXIT, 0, 0, -1);
        __threadfence();
        if (atomicAdd(&p.ctl->done, 1u) == gridDim.x - 1) {
            st32(&p.ctl->seq, seq);
            st32(&p.ctl->done, 0);
            unsigned int n = ld32(&p.ctl->launches) + 1;
            st32(&p.ctl->launches, n);
            /* Every block's work is done (each fenced before its count): tell the host. No
             * fence after: nothing here follows the store, and the launch's end publishes it. */
            __threadfence_system();
            st32((void *)&p.status->finished, n);
        }
    }
}

/* ------------------------------------------------------------------ the table */

typedef void (*kernel_fn)(const kparams);

/* The kernels by datatype (one per type: each holds only its own reductions), in three lists
 * by element width. The CUDA build compiles each list in an object of its own
 * (kernel_8_16bit.cu, kernel_32bit.cu, kernel_64bit.cu), so that make -j runs nvcc's longest
 * work at once; the shim compiles all three in one. */
#define BK_KERNEL_8_16BIT(X)                                                                       \
    X(blinkInt8, int8_t) X(blinkUint8, uint8_t) X(blinkFloat16, __half)                           \
    X(blinkBfloat16, __nv_bfloat16)
#define BK_KERNEL_32BIT(X) X(blinkInt32, int32_t) X(blinkUint32, uint32_t) X(blinkFloat32, float)
#define BK_KERNEL_64BIT(X) X(blinkInt64, int64_t) X(blinkUint64, uint64_t) X(blinkFloat64, double)
#define BK_KERNEL_CASE(dt, T)                                                                      \
    case dt:                                                                                       \
        return bk_kernel<T>;
/* Defines NAME(dt): the kernel of dt if LIST has it, else NULL. */
#define BK_KERNEL_OF(NAME, LIST)                                                                   \
    kernel_fn NAME(int dt)                                                                         \
    {                                                                                              \
        switch (dt) {                                                                              \
            LIST(BK_KERNEL_CASE)                                                                   \
        default:                                                                                   \
            return NULL;                                                                           \
        }                                                                                          \
    }
kernel_fn bk_kernel_8_16bit(int dt);
kernel_fn bk_kernel_32bit(int dt);
kernel_fn bk_kernel_64bit(int dt);

/* The kernel of a datatype (float's for one no list has: call.c refuses those first). */
static inline kernel_fn kernel_for(int dt)
{
    kernel_fn f = bk_kernel_8_16bit(dt);
    if (!f)
        f = bk_kernel_32bit(dt);
    if (!f)
        f = bk_kernel_64bit(dt);
    return f ? f : bk_kernel_32bit(blinkFloat32);
}

#endif
