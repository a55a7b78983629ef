/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * proxy.h - the network edges of an executor that cannot send messages itself (the CUDA
 * kernel): a thread of the rank moves their chunks between host memory the kernel reads and
 * writes and the ranks on other servers, by net_edge.h's messages, so a GPU rank and a host
 * rank speak alike between servers.
 *
 * Edge kinds. The kernel finds every tree slot's words and slots through one table per slot
 * (kernel_args.h's ktseg_fill), which gives each edge its kind at init:
 *   direct       the receiver's segment in device memory, mapped by peer access;
 *   host-staged  the receiver's segment in pinned host memory, mapped by both ranks (a hybrid's
 *                PCIe trees, GPUs without peer access, and every slot with a network edge at
 *                that rank);
 *   network      the kernel writes a remote peer's chunks into a mirror of that peer's segment
 *                in this rank's pinned host memory (laid out as the peer's own, proto.h) and
 *                reads what the peer sent from its own host segment; this proxy plays the
 *                remote peer's part on both sides.
 * For a remote peer q the proxy
 *   - stores mirror(q)'s entered word once q's description of the call came and matched (and
 *     copies it into the mirror's description, for BLINK_CHECK_CALLS), having zeroed the
 *     mirror's flag words where the call cleans (proto.h, Wrap);
 *   - sends each chunk the kernel posted into mirror(q) (its up or down ready word), and once
 *     the send is done gives the kernel the credit q would give (this rank's freed word);
 *   - receives each chunk of q straight into this rank's host slot once the kernel freed the
 *     slot (the freed word it wrote into mirror(q); its entered word for the first S), then
 *     stores the ready word q would.
 * So the kernel runs one protocol on every edge and never waits on work that needs its SMs.
 *
 * Faults. A wait without progress for BLINK_TIMEOUT_S, a mismatched call, an MPI error or an
 * abort heard from another server stop this server's ranks (the backend's abort) and tell the
 * other servers; a rank of this server that gives up (its abort word in this rank's host
 * segment, where the kernel writes it too) is told to them as well.
 */
#ifndef BK_PROXY_H
#define BK_PROXY_H

#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bk_proxy;

/* What the backend gives its proxy: host addresses, valid until bk_proxy_stop. */
struct bk_proxy_mem {
    unsigned char *const *hseg;   /* [nranks] the host segments of this server's ranks
                                   * (this rank's own included), as mapped here */
    unsigned char *const *mirror; /* [nranks] a mirror of each peer on another server, else NULL */
    /* Stop this server's ranks with msg (the backend's abort: abort words from the host). */
    void (*abort)(blinkComm_t c, const char *msg);
};

/* Start c's proxy thread (c->nremote > 0, c->net set); on a failure nothing is left and *out
 * is NULL. */
blinkResult_t bk_proxy_start(blinkComm_t c, const struct bk_proxy_mem *mem,
                             struct bk_proxy **out);
/* Queue call L (its launch follows): the proxy serves calls in order, one at a time. Waits
 * (bounded) while the queue is full. */
blinkResult_t bk_proxy_post(struct bk_proxy *px, const struct bk_launch *L);
/* Tell the other servers that this rank gave up (reason: msg). */
void bk_proxy_abort(struct bk_proxy *px, const char *msg);
/* Let the queued calls finish (bounded by BLINK_TIMEOUT_S), then stop the thread and free all;
 * under BLINK_DEBUG=INFO say the bytes moved (net_edge.h). */
void bk_proxy_stop(struct bk_proxy *px);

#ifdef __cplusplus
}
#endif

#endif
