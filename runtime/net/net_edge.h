/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * net_edge.h - what every executor says to ranks on other servers, over net.h: the message
 * tags, the call descriptions each side checks before its first chunk, the abort message, and
 * the bytes it reports under BLINK_DEBUG=INFO. The host executor (exec_host.c) and the network
 * proxy of the CUDA kernel (proxy.c) speak it alike, so a host rank and a GPU rank could share
 * an edge, and the CPU tests of the one prove the messages of the other.
 *
 * An edge between servers moves chunk c of a tree slot as one message of exactly its bytes,
 * tag bk_net_tag_edge(ti, down), from the sender's staging (or its input or output) into the
 * receiver's slot c % S: a receiver posts that receive once chunk c - S has left the slot, so
 * its posted receives are its credit; a sender keeps at most S sends in flight per edge. MPI
 * keeps one sender's messages of one tag in order, which orders the chunks.
 */
#ifndef BK_NET_EDGE_H
#define BK_NET_EDGE_H

#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_NET_TAG_DESC 0  /* a call's description (BK_DESC_WORDS words), once per neighbour */
#define BK_NET_TAG_ABORT 1 /* the reason of a rank that gave up (its header's abort_msg) */
static inline int bk_net_tag_edge(int ti, int down) { return 2 + 2 * ti + down; }

/* A call's description in words, for messages ("allreduce count 7 float32 sum, trees, ..."). */
void bk_net_describe(const uint64_t *d, char *buf, size_t len);

/* The message of a call whose description mine differs from remote peer q's. */
void bk_net_mismatch(blinkComm_t c, int q, const uint64_t *mine, const uint64_t *theirs,
                     char *msg, size_t len);

/* Whether tree slot ti of set (c->sets index) gives rank q an edge to another server: its
 * parent or one of its children there. Every rank answers alike from the plan. */
int bk_net_crosses(blinkComm_t c, int set, int ti, int q);

/* An abort message from another server: 1 + the rank that sent it, its reason in msg; or 0. */
int bk_net_heard_abort(blinkComm_t c, char *msg, size_t len);
/* Send reason to every rank on another server whose reqs[q] is not already live. */
void bk_net_send_abort(blinkComm_t c, const char *reason, size_t bytes, struct bk_net_req *reqs);
/* Let the abort messages leave (a moment each), then drop them. */
void bk_net_finish_aborts(blinkComm_t c, struct bk_net_req *reqs);

/* BLINK_DEBUG=INFO (subsystem NET): the bytes sent to and received from each peer on another
 * server ([nranks] each), one line per peer; the tests read these lines. */
void bk_net_say(blinkComm_t c, const unsigned long long *sent, const unsigned long long *recvd);

#ifdef __cplusplus
}
#endif

#endif
