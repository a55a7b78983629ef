/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * proto.h - the protocol every backend speaks between the ranks of one server: what each rank
 * exports at init (its segment: a header, flag words and staging slots) and how the ranks
 * order a chunk's hand-over through it. C and CUDA C++ both include this file.
 *
 * Connections. In a call, tree slot ti of the chosen tree set (the schedule's trees, or its ring
 * trees) moves chunks over the tree's edges. Rank v receives into its own staging only:
 *   up:   from each child, into the child's in-slots (v's children in that tree, numbered j by
 *         the tree's order), S slots each;
 *   down: from its parent, into one set of S slots (or, in a direct call, below, straight into
 *         v's output, with no slots and no credit).
 * A sender writes chunk c into slot c % S of the receiver, then stores the receiver's ready
 * word = tag(seq, c + 1) (release). The receiver consumes the slot, then stores tag(seq, c + 1)
 * into the sender's credit word for that edge ("freed"); before writing chunk c the sender
 * waits until the receiver has freed chunk c - S. Credit words are indexed by the peer's rank,
 * so every word has one writer over its whole life and a late store of an earlier call can never
 * overwrite a later one.
 *
 * Channels. A tree slot is one channel of a plan tree: roles.c cuts tree t of a set into C_t
 * channels (1 on the host backend; on CUDA by the tree's rate, bk_channels), each a slot with
 * t's roles and its own flags and staging slots, and the tree's share of the data cut among
 * them in order (bk_role's weights, scaled to whole numbers). Every rank computes the same cut
 * from the plan and the environment, so the protocol sees only more trees.
 *
 * Allreduce's root. Its down pass sends on what its up pass reduced into the output. The root
 * has no parent, so nobody else writes its down ready word: its up pass, having written chunk
 * c, stores tag(seq, c + 1) there (release, as any hand-over; in LL too, whose output is plain
 * stores), and its down pass waits on it as every other rank waits on its parent's (in Simple);
 * so the two passes may run in different executors
 * (the CUDA kernel's blocks). The host backend's thread plays both and reads its own progress
 * instead; either way the word keeps one writer.
 *
 * Calls. Every rank numbers its calls 1, 2, ... (seq, 32 bits, wrapping past 0 to 1): NCCL's
 * rule that all ranks call collectives in the same order makes the numbers agree. At the start of
 * a call a rank publishes the call's description and then entered = bk_entry(seq, hash of the
 * description) (release): its staging is free (everything of the last call was consumed). A
 * sender writes into a receiver only once the receiver's entered equals its own: one load, no
 * description read. The same seq with another hash is a mismatch: the sender then reads the
 * descriptions for its message and fails the call, aborting the communicator, so ranks that
 * disagree about a call (count, type, op, root, chunk) fail it on every rank instead of
 * corrupting memory or hanging. bk_desc_hash never maps two descriptions that differ in one
 * field (of values below 2^32) to one hash; two that differ in several collide with odds 2^-32,
 * which BLINK_CHECK_CALLS=1 closes: every first access then compares the 8 words too.
 * Before entered a rank also stores its call's output address in its header (out): the release
 * store of entered and a peer's acquire load of it order that store too, so a peer that saw
 * entered name this call reads this call's address. Only direct calls (below) read it.
 * The CUDA backend takes the call number from a counter in device memory (kernel_cuda.cuh), so a
 * captured CUDA graph that is replayed numbers its calls anew.
 *
 * Wrap. Flag words carry 32 bits of seq, so a word that no call rewrote for 2^32 calls (one that
 * only a rarely used schedule writes) would look current again. At every call where
 * bk_seq_cleans(seq) (seq 1 and 2^31 + 1) a rank therefore zeroes its own flag words before it
 * publishes entered. That is safe: a rank's flag words are written only by a peer that saw its
 * entered of the call (ready words) or that consumed the data it sent in the call (freed words),
 * so no store of this call precedes the clean. A late store of an earlier call may land after the
 * clean, but it carries that call's seq, which comes back only 2^32 calls later, past another
 * clean half an epoch on; by then the store has long landed, for a rank is never more than a few
 * calls (about twice the tree depth) away from any other: a call with elements moves some over
 * every edge of at least one spanning tree, and a sender finishes only after its receivers
 * entered (only calls of 0 elements, which store nothing, let a rank run further ahead).
 *
 * LL (the low-latency protocol, blink_plan.h's BLINK_PLAN_LL; bit 1 of the description's algo
 * word). Every connection has, beside its S staging slots, S LL slots of their own (a region no
 * Simple chunk ever enters, so no byte a user sent can pose as a flag). Data travel there in
 * lines that carry their own flags, 4 data bytes per 4-byte flag: the CUDA backend stores
 * 16-byte lines {data, flag, data, flag} with one vector store, the host backend 8-byte packets
 * {data, flag} with one 64-bit atomic store; a chunk of m data bytes takes twice m, rounded up to
 * the line. The flag of chunk c in call seq is bk_ll_flag(seq, c). A receiver polls the lines
 * themselves, so there are no ready words and no fences (but for an allreduce root's own,
 * above): the flag arrives with its data. Credit is as in Simple (the freed words, before chunk
 * c reuses the slot of chunk c - S), and a sender
 * writes into a receiver only once it entered the call. A pass starts only when line 0 of each
 * slot it reads carries its flag: then the pass that writes that slot has begun, and a pass
 * that has begun ends (its own inputs began likewise), so no executor waits inside a pass on one
 * that may never start. Flags are 32 bits: 22 of the call number and 10 of the chunk's round
 * c / S (plus one, never 0), so a call has at most BK_LL_MAX_CHUNKS chunks per tree; a line
 * left from a call 2^22 calls earlier could carry a current flag, so at every call where
 * bk_ll_cleans(seq) (once in 2^21 calls) a rank zeroes its LL region before it enters, as the
 * flag words at Wrap, above, and for the same reasons.
 *
 * Direct (bit 2 of the algo word: BK_ALGO_DIRECT; Simple calls of communicators whose ranks
 * all share one process, where a peer's output pointer means something). The down pass skips
 * the staging: a sender copies chunk c straight into each child's output (the child's out, at
 * the chunk's element position, which is the same on every rank) and then stores the child's
 * down ready word as in Simple; the child, once it sees it, has its output already and only
 * forwards it, from there, to its own children. No down slot and no down credit is used: a
 * rank's output region of a chunk is written once per call, by its parent, and nothing else of
 * the call reads it before the down ready word says it is there, so there is nothing to free.
 * Nor is an in-place call a hazard where the output is also the input the up pass reads:
 * allreduce's chunk c comes down to a rank only after the root reduced chunk c, which needed
 * this rank's up pass of chunk c (its read of the input) done. The sender waits for the child's
 * entered of the call as before, which publishes the address. The up pass stays as it is: it
 * must combine in the parent's staging. The allreduce root's own down ready word is as above.
 *
 * Registered (host backend, ranks in several processes of one server). A rank whose output in
 * a Simple call lies in memory it registered (blinkCommRegister) and that other processes can
 * map (blinkMemAlloc's) publishes where, before entered: out_pid, out_fd and out_ino name the
 * region (the file /proc/PID/fd/FD, checked to be inode INO), out_serial numbers it in its
 * process (a parent keeps a mapping by it: a later region may reuse an fd, or after 2^32
 * files an inode), out_off is the output's offset in it; out_ino 0 says there is none. The
 * down pass then goes to that rank as in Direct: its parent maps the region once and copies
 * chunk c into it, and the rank uses no down slot and gives no down credit. Both ends decide
 * from the rank's own published words, so they agree per edge without a word in the call's
 * description (whose hash all ranks must share). A parent that cannot map the region fails the
 * call and aborts the communicator.
 *
 * Registered on CUDA (the kernel, ranks in several processes of one server), by request: a
 * kernel cannot open another process's memory, so its host must have done so before the
 * launch. A rank whose output lies in a registered blinkMemAlloc region publishes out_serial
 * and out_off before entered, and, when the region changed, out_len and out_handle (its CUDA
 * IPC handle) first. A parent looks the serial up in its table of the peer's regions its host
 * has opened (kernel_reg.h, read once per call and block); where it is there, it copies the
 * child's chunks straight into its output, and where it is not, it sends them through the
 * child's down slot as in Simple and asks its host to open the region (the next call finds it
 * open). So the parent alone decides, per call and ready word, and says so in the down ready
 * word: its count carries BK_TAG_REG where the chunks went into the output. The child reads
 * its chunk from there or from its slot accordingly, and gives its down credit either way, so
 * the credit rule is Simple's, unchanged.
 *
 * Faults. abort in a rank's header (1 + the rank that gave up) ends every wait of that rank;
 * the rank that gives up writes it into every segment and leaves its reason in abort_msg.
 *
 * The header's bell and sleepers words are used by the host backend only (exec_host.c's futex).
 *
 * The inline functions are BK_HD: __host__ __device__ under nvcc, so the CUDA kernel uses these
 * very functions; plain C (C11) sees ordinary static inline functions.
 */
#ifndef BK_PROTO_H
#define BK_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "blink_plan.h"

#ifdef __CUDACC__
#define BK_HD __host__ __device__
#else
#define BK_HD
#endif

#define BK_SLOTS 4                          /* staging slots per connection */
#define BK_SEG_MAGIC 0x626c696e6b736567ull  /* "blinkseg" */
#define BK_SLOT_ALIGN 64                    /* slots start on 64-byte boundaries */
#define BK_DEFAULT_STAGING ((size_t)64 << 20)

/* Whether a collective's trees carry data up (towards the root), and down. */
static inline BK_HD int bk_has_up(int coll)
{
    return coll == BLINK_PLAN_REDUCE || coll == BLINK_PLAN_REDUCESCATTER ||
           coll == BLINK_PLAN_ALLREDUCE;
}
static inline BK_HD int bk_has_down(int coll)
{
    return coll == BLINK_PLAN_BROADCAST || coll == BLINK_PLAN_ALLGATHER ||
           coll == BLINK_PLAN_ALLREDUCE;
}

/* A flag value: the call's sequence number and a count of chunks (below BK_TAG_COUNT; the
 * count's top bit, BK_TAG_REG, marks a down ready word whose chunks went straight into the
 * receiver's registered output: Registered, above). */
#define BK_TAG_COUNT 0x7fffffffu
#define BK_TAG_REG 0x80000000u
static inline BK_HD uint64_t bk_tag(uint32_t seq, uint32_t n) { return ((uint64_t)seq << 32) | n; }
/* Has the word reached n chunks of call seq? Values of other calls count as none. */
static inline BK_HD int bk_tag_reached(uint64_t word, uint32_t seq, uint32_t n)
{
    return (uint32_t)(word >> 32) == seq && ((uint32_t)word & BK_TAG_COUNT) >= n;
}

/* A call's description, as every rank must agree on it. */
struct bk_desc {
    uint64_t seq, coll, root, dt, op, count, algo, chunk;
};
#define BK_DESC_WORDS 8
#define BK_REG_HANDLE_WORDS 8 /* a registered region's handle: 64 bytes (Registered) */

/* The call after seq: 0 is skipped, for it is what a fresh segment holds. */
static inline BK_HD uint32_t bk_seq_next(uint32_t seq) { return seq + 1 ? seq + 1 : 1; }
/* Does call seq zero this rank's flag words before it enters (Wrap, above)? */
static inline BK_HD int bk_seq_cleans(uint32_t seq) { return (seq & 0x7fffffffu) == 1; }

/* Does call seq zero this rank's LL lines before it enters (LL, above)? Every call that cleans
 * the flag words does. */
static inline BK_HD int bk_ll_cleans(uint32_t seq) { return (seq & 0x1fffffu) == 1; }

/* LL: data bytes per chunk at most (a slot of 2x in lines), and chunks per tree and call. */
#define BK_LL_CHUNK_MAX ((size_t)16 << 10)
#define BK_LL_ROUNDS 1023u
#define BK_LL_MAX_CHUNKS (BK_LL_ROUNDS * BK_SLOTS)
/* The flag of chunk c (< BK_LL_MAX_CHUNKS) of call seq: never 0, what a clean leaves. */
static inline BK_HD uint32_t bk_ll_flag(uint32_t seq, uint32_t c)
{
    return (seq << 10) | (c / BK_SLOTS + 1);
}
/* Bytes of lines that m data bytes take (4 data bytes per 8; CUDA lines hold 8 of 16). */
static inline BK_HD size_t bk_ll_line_bytes(size_t m) { return (m + 7) / 8 * 16; }

/* murmur3's finaliser: a bijection of 32 bits that mixes every bit into every other. */
static inline BK_HD uint32_t bk_mix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* The hash of a description's words other than seq (d[0]). Each step is a bijection of the
 * state for a given word and each word's fold is one to one below 2^32, so descriptions that
 * differ in one field always hash apart. */
static inline BK_HD uint32_t bk_desc_hash(const uint64_t *d)
{
    uint32_t h = 0x9e3779b9u;
    for (int i = 1; i < BK_DESC_WORDS; i++)
        h = bk_mix32(h ^ ((uint32_t)d[i] ^ bk_mix32((uint32_t)(d[i] >> 32) + (uint32_t)i)));
    return h;
}

/* A header's entered word: the call number (never 0) over the description's hash. */
static inline BK_HD uint64_t bk_entry(uint32_t seq, uint32_t hash)
{
    return ((uint64_t)seq << 32) | hash;
}
static inline BK_HD uint32_t bk_entry_seq(uint64_t e) { return (uint32_t)(e >> 32); }

/* The start of every rank's segment. Words are accessed atomically (host) or with .sys-scoped
 * loads and stores (CUDA). */
struct bk_seg_header {
    uint64_t magic;
    uint32_t rank, nranks;      /* plan ranks */
    uint32_t abort;             /* 0, or 1 + the rank that aborted the communicator */
    uint32_t bell;              /* host: futex word, bumped after every store into this segment */
    uint32_t sleepers;          /* host: threads asleep on bell */
    uint32_t pad;
    uint64_t entered;           /* bk_entry of the call this rank is in: its staging is free */
    uint64_t out;               /* the entered call's output address (Calls, Direct) */
    uint64_t desc[BK_DESC_WORDS]; /* the entered call (struct bk_desc) */
    char abort_msg[384];        /* why, written by the rank that aborted, before abort */
    uint32_t out_pid, out_fd;   /* the entered call's registered output (Registered) */
    uint64_t out_ino, out_off;  /* its region's inode (0: none) and the output's offset */
    uint64_t out_serial;        /* the region's number in its process, never reused there */
    uint64_t out_len;           /* CUDA: the region's bytes, and what opens it in another */
    uint64_t out_handle[BK_REG_HANDLE_WORDS]; /* process (a CUDA IPC handle) */
};

/*
 * Where everything lies in every rank's segment. One rank's numbers depend only on the plan
 * (and the channels, which every rank cuts alike), so every rank computes every other rank's
 * layout (roles.c) and no offsets are exchanged.
 * Flag words are laid out over the union of the tree sets: per rank v and tree slot ti,
 * fanin[v][ti] = F is the most children v has in slot ti of any schedule and either tree set,
 * and the words of (v, ti), from flag_base[v][ti], are
 *   [0, F)            up ready, one per child position j
 *   [F]               down ready (the root's own, in allreduce: above)
 *   [F + 1 + p]       up freed: credit from parent p (n words)
 *   [F + 1 + n + c]   down freed: credit from child c (n words)
 * They must be the union: a word is written by one peer over its whole life (Connections),
 * whichever schedule a call runs. Data slots need not be: a rank's staging holds only its
 * current call's chunks (it enters a call with its staging free, and leaves it only once it
 * consumed every chunk sent to it), so every tree set has a slot layout of its own over its
 * own fan-in, and the sets' slots overlap. A set's view of the layout (bk_roleset.lay) has its
 * slot_base and slot_fanin: the slots of (v, ti), from slot_base[v][ti], are f * S up in-slots
 * (f = slot_fanin[v][ti]; child j's slot k at j * S + k), then S down slots; a rank's staging
 * is as large as its largest set's. LL slots (ll_slot_bytes each, from ll_off[v]) are
 * numbered the same way. A segment: header, flag words, LL slots, staging slots.
 */
struct bk_layout {
    int nranks, ntrees;           /* ntrees: tree slots, the most trees of any tree set */
    size_t slot_bytes;            /* one slot; every chunk of every call fits */
    const int *fanin;             /* [nranks * ntrees] */
    const size_t *flag_base;      /* [nranks * ntrees] in flag words from flags_off */
    const size_t *slot_base;      /* [nranks * ntrees] in slots from slots_off (a set's) */
    const size_t *flags_off;      /* [nranks] byte offset of the flag words in v's segment */
    const size_t *slots_off;      /* [nranks] byte offset of the slots */
    const size_t *seg_bytes;      /* [nranks] segment size */
    size_t ll_slot_bytes;         /* one LL slot, in line bytes (LL chunks of half of it) */
    const size_t *ll_off;         /* [nranks] byte offset of the LL slots */
    const int *slot_fanin;        /* [nranks * ntrees] the fan-in that numbers the slots */
};

static inline BK_HD size_t bk_lx(const struct bk_layout *L, int v, int ti)
{
    return (size_t)v * (size_t)L->ntrees + (size_t)ti;
}

/* Byte offsets into rank v's segment. */
static inline BK_HD size_t bk_off_up_ready(const struct bk_layout *L, int v, int ti, int j)
{
    return L->flags_off[v] + 8 * (L->flag_base[bk_lx(L, v, ti)] + (size_t)j);
}
static inline BK_HD size_t bk_off_down_ready(const struct bk_layout *L, int v, int ti)
{
    return L->flags_off[v] + 8 * (L->flag_base[bk_lx(L, v, ti)] + (size_t)L->fanin[bk_lx(L, v, ti)]);
}
static inline BK_HD size_t bk_off_up_freed(const struct bk_layout *L, int v, int ti, int parent)
{
    return bk_off_down_ready(L, v, ti) + 8 * (1 + (size_t)parent);
}
static inline BK_HD size_t bk_off_down_freed(const struct bk_layout *L, int v, int ti, int child)
{
    return bk_off_down_ready(L, v, ti) + 8 * (1 + (size_t)L->nranks + (size_t)child);
}
static inline BK_HD size_t bk_off_up_slot(const struct bk_layout *L, int v, int ti, int j, int k)
{
    return L->slots_off[v] +
           L->slot_bytes * (L->slot_base[bk_lx(L, v, ti)] + (size_t)j * BK_SLOTS + (size_t)k);
}
static inline BK_HD size_t bk_off_down_slot(const struct bk_layout *L, int v, int ti, int k)
{
    return bk_off_up_slot(L, v, ti, L->slot_fanin[bk_lx(L, v, ti)], k);
}

/* The same slots in LL's region. */
static inline BK_HD size_t bk_off_ll_up_slot(const struct bk_layout *L, int v, int ti, int j,
                                             int k)
{
    return L->ll_off[v] +
           L->ll_slot_bytes * (L->slot_base[bk_lx(L, v, ti)] + (size_t)j * BK_SLOTS + (size_t)k);
}
static inline BK_HD size_t bk_off_ll_down_slot(const struct bk_layout *L, int v, int ti, int k)
{
    return bk_off_ll_up_slot(L, v, ti, L->slot_fanin[bk_lx(L, v, ti)], k);
}

/* What a call's description says in its algo word: which tree set, which protocol. */
#define BK_ALGO_RING_SET 1u
#define BK_ALGO_LL 2u
#define BK_ALGO_DIRECT 4u /* down pass into the children's outputs (Direct, above) */
#define BK_ALGO_HYBRID_SET 8u /* the hybrid set: the trees and the PCIe trees */

/*
 * Where a tree's share of a data group starts: of n elements of es bytes, the first element
 * after prefix weight s of total w. The ideal floor(n * s / w) (in 128 bits: no overflow) is
 * rounded to the nearest multiple of BK_SPLIT_ALIGN bytes (BK_SPLIT_ALIGN / es elements), or
 * down where rounding up would pass n; s >= w gives n. It grows with s, so consecutive trees
 * get contiguous, disjoint ranges covering [0, n); every interior boundary lies on the unit,
 * so every tree (and, with chunks a multiple of the unit, every chunk) starts as aligned as the
 * user buffer itself, and the vector paths see co-aligned addresses. A share is off its ideal
 * by at most one unit and an element; small groups may leave trees empty (no chunks, no flags).
 * Both backends cut here.
 */
#define BK_SPLIT_ALIGN 256
static inline BK_HD size_t bk_split_at(size_t n, size_t es, uint64_t s, uint64_t w)
{
    if (s >= w)
        return w ? n : 0;
    uint64_t q = n / w, r = n % w;
    size_t x = (size_t)(q * s + (uint64_t)((unsigned __int128)r * s / w));
    size_t u = es && es <= BK_SPLIT_ALIGN && BK_SPLIT_ALIGN % es == 0 ? BK_SPLIT_ALIGN / es : 1;
    size_t rem = x % u;
    x -= rem;
    if (2 * rem >= u && n - x >= u)
        x += u;
    return x;
}

/* A tree slot's elements [lo, hi) in chunks of ce elements: how many chunks, and the elements
 * of chunk ch (the last may be short). Every executor, and the network proxy, cuts alike. */
static inline BK_HD uint32_t bk_nchunks(size_t lo, size_t hi, size_t ce)
{
    return (uint32_t)((hi - lo + ce - 1) / ce);
}
static inline BK_HD size_t bk_chunk_len(size_t lo, size_t hi, uint32_t ch, size_t ce)
{
    size_t x0 = lo + (size_t)ch * ce;
    return hi - x0 < ce ? hi - x0 : ce;
}

/*
 * One rank's part of one tree in the tree set a call runs (roles.c), all in plan ranks:
 * parent and this rank's position among the parent's children, and the children with the
 * position each has here. lo_w/hi_w: the tree's share of its data group, as prefix sums of
 * weights out of total_w (blink_plan.h's data split).
 */
struct bk_role {
    int root, parent, kpos, nkids, kids_at; /* kids_at: index into the set's kids[] */
    uint64_t lo_w, hi_w, total_w;
};

#endif
