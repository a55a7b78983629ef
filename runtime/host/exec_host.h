/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * exec_host.h - the host backend's executor: per rank, a few threads play the threadblocks of
 * one launch and move its chunks by the protocol of proto.h through the mapped segments.
 */
#ifndef BK_EXEC_HOST_H
#define BK_EXEC_HOST_H

#include "rt.h"

struct bk_hx;

/* Start nthreads - 1 helper threads; the caller of bk_hx_run is the first thread. */
blinkResult_t bk_hx_start(blinkComm_t c, int nthreads, struct bk_hx **out);
void bk_hx_stop(struct bk_hx *x);
/* Run one launch to completion on this rank; the error's message goes to msg. */
blinkResult_t bk_hx_run(struct bk_hx *x, const struct bk_launch *L, char *msg, size_t len);
/* Mark every rank's segment aborted by this rank, with msg, and wake them all; with x (may be
 * NULL), tell the ranks on other servers too. */
void bk_hx_abort(blinkComm_t c, struct bk_hx *x, const char *msg);
/* BLINK_HOST_FAIL_COPY: the n-th chunk write of this process (from now) fails; 0: none. */
void bk_hx_fail_write(unsigned long long n);

#endif
