/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * exec_host_ll.h - the host backend's LL moves (proto.h, LL): one chunk's up or down pass in
 * 8-byte packets {4 data bytes, 4-byte flag}, each stored and polled as one 64-bit atomic word.
 * exec_host.c decides when a pass may start and keeps the credits; these functions only move.
 */
#ifndef BK_EXEC_HOST_LL_H
#define BK_EXEC_HOST_LL_H

#include <stddef.h>
#include <stdint.h>

#include "rt.h"

/* Where a pass reads a chunk: a plain buffer holding all of it (the rank's own input or
 * output, or a staging slot an MPI receive filled), or the packets of an LL slot that peer
 * writes. */
struct bk_ll_src {
    const unsigned char *plain;
    const uint64_t *ll;
    int peer;
};

/* Where a pass writes a chunk: a plain buffer, or packets into peer's LL slot; neither: no
 * one (a peer on another server, which gets the chunk over MPI afterwards). */
struct bk_ll_dst {
    unsigned char *plain;
    uint64_t *ll;
    int peer;
};

/* Bytes per tile of a pass: a multiple of every element size and of a packet's 4 data bytes. */
#define BK_LL_TILE 512

struct bk_ll_pass {
    size_t bytes, es;          /* the chunk's data bytes; its element size */
    blinkDataType_t dt;
    blinkRedOp_t op;           /* up: the reduction (avg's sum; the root divides afterwards) */
    uint32_t flag;             /* bk_ll_flag of the chunk */
    /* While a packet is awaited, now and then: nonzero gives the pass up (idle has failed the
     * launch). *since is 0 at a wait's first call; idle keeps the wait's start there. */
    int (*idle)(void *arg, int peer, double *since);
    /* Packets are in peer's segment: wake its sleepers (the futex bell). */
    void (*ring)(void *arg, int peer);
    /* Sleep on this rank's bell until it moves from seen (or a few ms pass). */
    void (*nap)(void *arg, uint32_t seen);
    const uint32_t *bell;      /* this rank's bell */
    void *arg;
    unsigned char *scratch;    /* 2 * BK_LL_TILE bytes, 8-byte aligned (malloc's) */
    /* The edges: this rank's part of tree slot ti in the launch's set, the chunk's slot k. */
    blinkComm_t c;
    int ti, k;
    const struct bk_role *t;
    const int *kids;
    const struct bk_layout *lay; /* the launch's set's view (proto.h: each set has its slots) */
};

/* Packet 0 of an LL slot carries flag: the pass that writes the slot has begun. */
int bk_ll_begun(const uint64_t *slot, uint32_t flag);

/* Up: in op child 0 op child 1 ... (Simple's order, element by element) into plain (the output
 * at the root; the chunk going to a parent on another server) or, plain NULL, the parent's LL
 * slot. A child on another server is read from the staging slot its MPI receive filled. src:
 * room for the children's sources. 0, or -1 when idle gave up. */
int bk_ll_up(const struct bk_ll_pass *p, const unsigned char *in, unsigned char *plain,
             struct bk_ll_src *src);

/* Down: from plain (the root's output or input; the staging slot MPI filled from a parent on
 * another server) or, plain NULL, this rank's LL down slot, into out and each child's LL slot
 * (children on other servers get out over MPI afterwards). dst: room for the children. 0 or -1. */
int bk_ll_down(const struct bk_ll_pass *p, const unsigned char *plain, unsigned char *out,
               struct bk_ll_dst *dst);

#endif
