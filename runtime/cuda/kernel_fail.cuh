/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * kernel_fail.cuh - the protocol kernel's messages and failures: text formatted on the device
 * (the same words the host backend writes), the abort of every reachable rank, the status
 * block's first failure, the entered/description check of a peer and the timeout's report.
 * kernel_cuda.cuh includes it after the flags and the block-shared state it uses.
 */
#ifndef BK_KERNEL_FAIL_CUH
#define BK_KERNEL_FAIL_CUH

/* ------------------------------------------------------------------ device: messages */

struct dmsg {
    char *b;
    int n, cap;
};

/* Every function of the kernel is static, inline or a template: three objects compile this
 * header (kernel_8_16bit.cu and its siblings) and link into one library. */
static __device__ void put_s(dmsg &m, const char *s)
{
    while (*s && m.n < m.cap - 1)
        m.b[m.n++] = *s++;
    m.b[m.n] = '\0';
}

static __device__ void put_u(dmsg &m, unsigned long long v)
{
    char t[24];
    int k = 0;
    do {
        t[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k && m.n < m.cap - 1)
        m.b[m.n++] = t[--k];
    m.b[m.n] = '\0';
}

static __device__ void put_i(dmsg &m, long long v)
{
    if (v < 0) {
        put_s(m, "-");
        put_u(m, 0ull - (unsigned long long)v);
    } else {
        put_u(m, (unsigned long long)v);
    }
}

/* Bytes of a string another agent wrote (volatile: never a stale line). */
static __device__ void put_vol(dmsg &m, const unsigned char *s, int max)
{
    for (int i = 0; i < max && m.n < m.cap - 1; i++) {
        char ch = (char)*(const volatile unsigned char *)(s + i);
        if (!ch)
            break;
        m.b[m.n++] = ch;
    }
    m.b[m.n] = '\0';
}

/* errors.c's names. */
static __device__ const char *d_coll_name(uint64_t c)
{
    switch (c) {
    case 0: return "broadcast";
    case 1: return "reduce";
    case 2: return "allreduce";
    case 3: return "allgather";
    case 4: return "reducescatter";
    default: return "invalid collective";
    }
}

static __device__ const char *d_dtype_name(uint64_t dt)
{
    switch (dt) {
    case 0: return "int8";
    case 1: return "uint8";
    case 2: return "int32";
    case 3: return "uint32";
    case 4: return "int64";
    case 5: return "uint64";
    case 6: return "float16";
    case 7: return "float32";
    case 8: return "float64";
    case 9: return "bfloat16";
    default: return "invalid datatype";
    }
}

static __device__ const char *d_op_name(uint64_t op)
{
    switch (op) {
    case 0: return "sum";
    case 1: return "prod";
    case 2: return "max";
    case 3: return "min";
    case 4: return "avg";
    default: return "invalid op";
    }
}

/* exec_host.c's describe(). */
static __device__ void d_describe(dmsg &m, const uint64_t *d)
{
    int coll = (int)d[1];
    put_s(m, d_coll_name(d[1]));
    put_s(m, " count ");
    put_u(m, d[5]);
    put_s(m, " ");
    put_s(m, d_dtype_name(d[3]));
    if (coll != BLINK_PLAN_BROADCAST && coll != BLINK_PLAN_ALLGATHER) {
        put_s(m, " ");
        put_s(m, d_op_name(d[4]));
    }
    if ((int64_t)d[2] >= 0) {
        put_s(m, " root (plan rank) ");
        put_i(m, (long long)(int64_t)d[2]);
    }
    put_s(m, d[6] & BK_ALGO_RING_SET ? ", rings" : ", trees");
    if (d[6] & BK_ALGO_LL)
        put_s(m, ", LL");
    if (d[6] & BK_ALGO_DIRECT)
        put_s(m, ", direct");
    put_s(m, ", chunk ");
    put_u(m, d[7]);
}

/* ------------------------------------------------------------------ device: failing */

/* This rank gives up: reason into its header, then 1 + prank into every reachable header
 * (this rank's first), as bk_hx_abort does. */
static __device__ void d_abort_all(const kparams &p, const char *msg)
{
    uint32_t mine = (uint32_t)p.prank + 1;
    /* The reason and the words go into the host segments too, where they are apart: the
     * network proxy reads them there (proxy.h) and tells the other servers. */
    for (int h = 0; h < 2; h++) {
        unsigned char *me = (h ? p.hseg : p.seg)[p.prank];
        if ((h && me == p.seg[p.prank]) || ld32(me + H_ABORT) != 0)
            continue;
        int i = 0;
        for (; msg[i] && i < (int)H_MSG_BYTES - 1; i++)
            *(volatile char *)(me + H_MSG + i) = msg[i];
        *(volatile char *)(me + H_MSG + i) = '\0';
        __threadfence_system();
    }
    for (int i = 0; i < 2 * p.nranks; i++) {
        int v = (i % p.nranks + p.prank) % p.nranks;
        unsigned char *h = (i < p.nranks ? p.seg : p.hseg)[v];
        if (!h || !p.reach[v] || (i >= p.nranks && h == p.seg[v]))
            continue;
        if (p.atom[v] && i < p.nranks)
            atomicCAS_system((unsigned int *)(h + H_ABORT), 0u, mine);
        else if (ld32(h + H_ABORT) == 0)
            st32(h + H_ABORT, mine);
    }
    __threadfence_system();
}

/* Record a failure (the first of this rank's life wins the status block); spread: abort the
 * communicator too (every failure but a remote one, as exec_host.c's fail()). */
static __device__ void d_fail(const kparams &p, unsigned int res, int peer, uint32_t seq,
                              const char *msg, bool spread)
{
    if (atomicCAS(&p.ctl->failed, 0u, 1u) == 0u) {
        volatile struct kstatus *st = p.status;
        st->peer = peer;
        st->seq = seq;
        st->coll = (unsigned int)p.d[1];
        int i = 0;
        for (; msg[i] && i < BK_MSG_MAX - 1; i++)
            st->msg[i] = msg[i];
        st->msg[i] = '\0';
        __threadfence_system();
        st->code = res;
        __threadfence_system();
    }
    if (spread)
        d_abort_all(p, msg);
}

/* This rank's header says rank who - 1 aborted (exec_host.c's fail_aborted). */
static __device__ void d_fail_aborted(const kparams &p, uint32_t seq, uint32_t who)
{
    char *buf = ksh().msg;
    dmsg m = {buf, 0, BK_MSG_MAX};
    buf[0] = '\0';
    int q = (int)who - 1;
    if (q < 0 || q >= p.nranks) {
        put_s(m, "the communicator was aborted (abort word ");
        put_u(m, who);
        put_s(m, ")");
    } else {
        if (q != p.prank) {
            put_s(m, "rank ");
            put_i(m, p.user_of[q]);
            put_s(m, " gave up: ");
        }
        if (p.seg[q] && p.reach[q])
            put_vol(m, p.seg[q] + H_MSG, (int)H_MSG_BYTES);
    }
    d_fail(p, blinkRemoteError, q, seq, buf, false);
}

/* ------------------------------------------------------------------ device: descriptions */

/* Peer q is in this call with the same description: 1; not yet: 0; a mismatch: -1. One acquire
 * load of its entered word decides (proto.h, Calls), unless that names this call with another
 * hash or BLINK_CHECK_CALLS=1: then both descriptions are read and compared. */
static __device__ int d_peer_ready(const kparams &p, uint32_t seq, unsigned char *checked, int q,
                                   int &waiting)
{
    if (checked[q])
        return 1;
    const unsigned char *h = p.seg[q];
    uint64_t entry = bk_entry(seq, bk_desc_hash(p.d));
    uint64_t e = ld_acquire_sys64(h + H_ENTERED);
    if (e == entry && !p.check_calls) {
        checked[q] = 1;
        return 1;
    }
    uint32_t es = bk_entry_seq(e);
    if (es != seq) {
        waiting = q;
        if (es != 0 && (int32_t)(es - seq) > 0) { /* 0: no call yet (a fresh header) */
            char *buf = ksh().msg;
            dmsg m = {buf, 0, BK_MSG_MAX};
            put_s(m, "mismatched collective calls: rank ");
            put_i(m, p.user_of[q]);
            put_s(m, " is at call ");
            put_u(m, es);
            put_s(m, " of the communicator, rank ");
            put_i(m, p.user_of[p.prank]);
            put_s(m, " at call ");
            put_u(m, seq);
            d_fail(p, blinkInvalidUsage, q, seq, buf, true);
            return -1;
        }
        return 0;
    }
    uint64_t theirs[BK_DESC_WORDS], mine[BK_DESC_WORDS];
    bool same = e == entry;
    for (int i = 0; i < BK_DESC_WORDS; i++) {
        theirs[i] = ld64(h + H_DESC + 8 * i);
        mine[i] = i == 0 ? (uint64_t)seq : p.d[i];
        same = same && theirs[i] == mine[i];
    }
    __threadfence_system(); /* the description before the reload (a rare path) */
    if (ld_acquire_sys64(h + H_ENTERED) != e)
        return 0; /* moved on while we read: look again */
    if (!same) {
        char *buf = ksh().msg;
        dmsg m = {buf, 0, BK_MSG_MAX};
        put_s(m, "mismatched collective calls (call ");
        put_u(m, seq);
        put_s(m, " of the communicator): rank ");
        put_i(m, p.user_of[p.prank]);
        put_s(m, ": ");
        d_describe(m, mine);
        put_s(m, "; rank ");
        put_i(m, p.user_of[q]);
        put_s(m, ": ");
        d_describe(m, theirs);
        d_fail(p, blinkInvalidUsage, q, seq, buf, true);
        return -1;
    }
    checked[q] = 1;
    return 1;
}

/* The timeout message's tail about peer q: where it is, when that is not this call. */
static __device__ void d_peer_state(dmsg &m, const kparams &p, uint32_t seq, int q)
{
    const unsigned char *h = p.seg[q];
    if (!h || !p.reach[q])
        return;
    uint64_t e = ld_acquire_sys64(h + H_ENTERED);
    if (e == bk_entry(seq, bk_desc_hash(p.d)))
        return;
    if (bk_entry_seq(e) == 0) {
        put_s(m, ", which has entered no call yet");
        return;
    }
    uint64_t theirs[BK_DESC_WORDS];
    for (int i = 0; i < BK_DESC_WORDS; i++)
        theirs[i] = ld64(h + H_DESC + 8 * i);
    put_s(m, ", which is in call ");
    put_u(m, bk_entry_seq(e));
    put_s(m, ": ");
    d_describe(m, theirs);
}

/* No progress for BLINK_TIMEOUT_S while waiting for peer q: fail, and abort the communicator. */
static __device__ void d_fail_timeout(const kparams &p, uint32_t seq, int q)
{
    char *buf = ksh().msg;
    dmsg m = {buf, 0, BK_MSG_MAX};
    put_s(m, "rank ");
    put_i(m, p.user_of[p.prank]);
    put_s(m, " (device ");
    put_i(m, p.topo_dev[p.prank]);
    put_s(m, "): no progress for ");
    put_s(m, p.timeout_str);
    put_s(m, " s in ");
    put_s(m, d_coll_name(p.d[1]));
    put_s(m, " (call ");
    put_u(m, seq);
    put_s(m, "), waiting for rank ");
    put_i(m, p.user_of[q]);
    put_s(m, " (device ");
    put_i(m, p.topo_dev[q]);
    put_s(m, ")");
    d_peer_state(m, p, seq, q);
    put_s(m, " (BLINK_TIMEOUT_S)");
    d_fail(p, blinkSystemError, q, seq, buf, true);
}

#endif
