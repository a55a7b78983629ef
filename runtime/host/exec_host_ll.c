/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * exec_host_ll.c - the host backend's LL moves (proto.h, LL): a chunk of m bytes travels as
 * ceil(m / 4) packets, packet i = {data bytes 4i .. 4i + 3 (the last padded with zeros), the
 * chunk's flag}, each written with one relaxed 64-bit atomic store and polled with relaxed
 * loads: the flag arrives in the same word as its data, so no fence and no ready word is
 * needed. A pass works in tiles of whole elements: it assembles each source's bytes, then
 * reduces with reduce_host.c element by element in Simple's order (input, then child 0, 1, ...),
 * so results are bit-identical to Simple's and no element is ever made of padding.
 * exec_host.c decides when a pass may start (packet 0 of each slot it reads carries the flag)
 * and keeps the credits; inside a pass a worker polls the remaining packets: it spins a few
 * times, yielding, then naps on its rank's futex bell, which writers ring as they go. Pure
 * spinning starves the writers where ranks' threads outnumber the cores (an 8-rank DGX-1V
 * allreduce of 64 KiB on 2 cores took twice as long).
 */
#define _DEFAULT_SOURCE
#include <sched.h>
#include <string.h>

#include "exec_host_ll.h"
#include "reduce_host.h"

#define TILE BK_LL_TILE

int bk_ll_begun(const uint64_t *slot, uint32_t flag)
{
    return (uint32_t)(__atomic_load_n(&slot[0], __ATOMIC_RELAXED) >> 32) == flag;
}

/* Packet *w once it carries the flag: spins a little, yielding (a writer may share this
 * core), then sleeps on this rank's bell (ring_now), asking idle between naps. 0, or -1 when
 * idle gave up. */
static int await(const struct bk_ll_pass *p, const uint64_t *w, int peer, uint64_t *v)
{
    double since = 0;
    for (unsigned spins = 1;; spins++) {
        uint32_t seen = __atomic_load_n(p->bell, __ATOMIC_SEQ_CST);
        *v = __atomic_load_n(w, __ATOMIC_RELAXED);
        if ((uint32_t)(*v >> 32) == p->flag)
            return 0;
        if (spins < 16) {
            sched_yield();
            continue;
        }
        if (p->idle(p->arg, peer, &since))
            return -1;
        p->nap(p->arg, seen);
    }
}

/* The data of packet *w once it carries the flag; -1 when idle gave up. */
static int64_t data_of(const struct bk_ll_pass *p, const uint64_t *w, int peer)
{
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
    if ((uint32_t)(v >> 32) != p->flag && await(p, w, peer, &v) != 0)
        return -1;
    return (int64_t)(uint32_t)v;
}

/* Bytes [off, off + n) of the chunk in slot (off a multiple of 4) into dst: whole packets,
 * then the tail's bytes of the last (its padding stays behind). */
static int get(const struct bk_ll_pass *p, const uint64_t *slot, int peer, size_t off,
               unsigned char *dst, size_t n)
{
    const uint64_t *w = &slot[off / 4];
    size_t whole = n / 4;
    for (size_t i = 0; i < whole; i++) {
        int64_t d = data_of(p, &w[i], peer);
        uint32_t data = (uint32_t)d;
        if (d < 0)
            return -1;
        memcpy(dst + 4 * i, &data, 4);
    }
    if (n % 4) {
        int64_t d = data_of(p, &w[whole], peer);
        uint32_t data = (uint32_t)d;
        if (d < 0)
            return -1;
        memcpy(dst + 4 * whole, &data, n % 4);
    }
    return 0;
}

/* src[0, n) as bytes [off, off + n) of the chunk into slot; the last packet padded with 0. */
static void put(const struct bk_ll_pass *p, uint64_t *slot, size_t off, const unsigned char *src,
                size_t n)
{
    uint64_t *w = &slot[off / 4], flag = (uint64_t)p->flag << 32;
    size_t whole = n / 4;
    for (size_t i = 0; i < whole; i++) {
        uint32_t data;
        memcpy(&data, src + 4 * i, 4);
        __atomic_store_n(&w[i], flag | data, __ATOMIC_RELAXED);
    }
    if (n % 4) {
        uint32_t data = 0;
        memcpy(&data, src + 4 * whole, n % 4);
        __atomic_store_n(&w[whole], flag | data, __ATOMIC_RELAXED);
    }
}

/* Ring a receiver after the first tile (the pass began), every RING_EVERY tiles and the last:
 * a reader asleep inside a pass wakes a few KiB later, not at every tile. */
#define RING_EVERY 8
static int ring_now(const struct bk_ll_pass *p, size_t off, size_t n)
{
    return off == 0 || (off / TILE) % RING_EVERY == RING_EVERY - 1 || off + n == p->bytes;
}

static unsigned char *seg_at(blinkComm_t c, int q, size_t off) { return c->peer[q].seg + off; }

static int up_pass(const struct bk_ll_pass *p, const unsigned char *in,
                   const struct bk_ll_src *kids, int nkids, struct bk_ll_dst to)
{
    unsigned char *acc_mem = p->scratch, *kid_mem = p->scratch + TILE;
    if (nkids == 0 && to.plain && to.plain != in)
        memmove(to.plain, in, p->bytes);
    for (size_t off = 0; off < p->bytes; off += TILE) {
        size_t n = p->bytes - off < TILE ? p->bytes - off : TILE;
        unsigned char *acc = to.plain ? to.plain + off : acc_mem;
        const unsigned char *res = nkids ? acc : in + off;
        for (int j = 0; j < nkids; j++) {
            const unsigned char *kid = kid_mem;
            if (kids[j].plain)
                kid = kids[j].plain + off;
            else if (get(p, kids[j].ll, kids[j].peer, off, kid_mem, n) != 0)
                return -1;
            bk_host_reduce(acc, j ? acc : in + off, kid, n / p->es, p->dt, p->op);
        }
        if (to.ll) {
            put(p, to.ll, off, res, n);
            if (ring_now(p, off, n))
                p->ring(p->arg, to.peer);
        }
    }
    return 0;
}

static int down_pass(const struct bk_ll_pass *p, struct bk_ll_src from, unsigned char *out,
                     const struct bk_ll_dst *kids, int nkids)
{
    if (from.plain && from.plain != out)
        memmove(out, from.plain, p->bytes);
    for (size_t off = 0; off < p->bytes; off += TILE) {
        size_t n = p->bytes - off < TILE ? p->bytes - off : TILE;
        if (!from.plain && get(p, from.ll, from.peer, off, out + off, n) != 0)
            return -1;
        for (int j = 0; j < nkids; j++) {
            if (!kids[j].ll)
                continue;
            put(p, kids[j].ll, off, out + off, n);
            if (ring_now(p, off, n))
                p->ring(p->arg, kids[j].peer);
        }
    }
    return 0;
}

int bk_ll_up(const struct bk_ll_pass *p, const unsigned char *in, unsigned char *plain,
             struct bk_ll_src *src)
{
    blinkComm_t c = p->c;
    const struct bk_layout *lay = p->lay;
    const struct bk_role *t = p->t;
    int me = c->prank;
    for (int j = 0; j < t->nkids; j++) {
        int q = p->kids[j];
        src[j] = (struct bk_ll_src){NULL, NULL, q};
        if (c->peer[q].remote)
            src[j].plain = seg_at(c, me, bk_off_up_slot(lay, me, p->ti, j, p->k));
        else
            src[j].ll = (const uint64_t *)seg_at(c, me, bk_off_ll_up_slot(lay, me, p->ti, j,
                                                                           p->k));
    }
    struct bk_ll_dst to = {plain, NULL, t->parent};
    if (!plain)
        to.ll = (uint64_t *)seg_at(c, t->parent, bk_off_ll_up_slot(lay, t->parent, p->ti,
                                                                    t->kpos, p->k));
    return up_pass(p, in, src, t->nkids, to);
}

int bk_ll_down(const struct bk_ll_pass *p, const unsigned char *plain, unsigned char *out,
               struct bk_ll_dst *dst)
{
    blinkComm_t c = p->c;
    const struct bk_layout *lay = p->lay;
    const struct bk_role *t = p->t;
    int me = c->prank;
    struct bk_ll_src from = {plain, NULL, t->parent};
    if (!plain)
        from.ll = (const uint64_t *)seg_at(c, me, bk_off_ll_down_slot(lay, me, p->ti, p->k));
    for (int j = 0; j < t->nkids; j++) {
        int q = p->kids[j];
        dst[j] = (struct bk_ll_dst){NULL, NULL, q};
        if (!c->peer[q].remote)
            dst[j].ll = (uint64_t *)seg_at(c, q, bk_off_ll_down_slot(lay, q, p->ti, p->k));
    }
    return down_pass(p, from, out, dst, t->nkids);
}
