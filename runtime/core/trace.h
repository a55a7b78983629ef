/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * trace.h - BLINK_TRACE: where each call of each rank spends its time. A backend stamps events
 * into a ring of fixed-size records as they happen (the CUDA kernel's thread 0 of each block,
 * with %globaltimer; nothing is formatted on the hot path), and at blinkCommDestroy the rank
 * writes its records as one text file into the directory BLINK_TRACE names (trace.c).
 * bench/blink_trace.c reads the files of all ranks and prints each collective's call latency
 * (last exit minus first entry over the ranks) and the cost of each hop (a rank's post of a
 * chunk minus the post, by the rank it waited for, of the same chunk). C and CUDA C++ both
 * include this file.
 *
 * The ring keeps the first records and counts the rest as dropped, so a trace of a long run
 * shows its start, whole, rather than pieces of its end.
 */
#ifndef BK_TRACE_H
#define BK_TRACE_H

#include <stdint.h>

/* The events of a call, in the order a rank meets them. */
enum bk_trace_kind {
    BK_TR_ENTER = 0,    /* a block starts the call */
    BK_TR_UP_DECIDE,    /* a chunk may go up: every child's data is in, the parent has room */
    BK_TR_UP_START,     /* the block starts moving it */
    BK_TR_UP_POST,      /* moved and announced (the parent's ready word stored) */
    BK_TR_DOWN_DECIDE,
    BK_TR_DOWN_START,
    BK_TR_DOWN_POST,
    BK_TR_EXIT,         /* a block leaves the call */
    BK_TR_NKINDS
};

/* One event: 24 bytes. peer: for a post, the parent (the rank this rank sends to going up and
 * receives from going down), -1 at the root and for other kinds. */
struct bk_trace_rec {
    uint64_t t_ns;
    uint32_t seq;
    uint32_t chunk;
    uint16_t block, tree;
    int16_t peer;
    uint8_t kind, coll;
};

/* The ring: head counts every event offered; rec holds the first cap of them. */
struct bk_trace_ring {
    unsigned long long head, cap;
    struct bk_trace_rec rec[1];
};

#define BK_TRACE_DEFAULT_RECORDS (256u << 10)
#define BK_TRACE_MAX_RECORDS (64u << 20)

#define BK_TRACE_FORMAT "blink-trace 1"

#endif
