/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * rt_testutil.h - helpers for the runtime tests: hand-made plans from tree shapes, and running
 * one collective in either calling style and checking it against an independently computed
 * reference (integers bit-exact; float16/bfloat16 exact, since their inputs are small integers,
 * except avg, within half an ulp; float32 within 1e-5 and float64 within 1e-12, relative).
 */
#ifndef BK_RT_TESTUTIL_H
#define BK_RT_TESTUTIL_H

#include <stddef.h>

#include "blink.h"
#include "blink_plan.h"

struct rt_plan {
    struct blink_plan plan;
    struct blink_plan_schedule *scheds;
    struct blink_plan_tree *trees;
    int *ints;
    int *devices;
};

/*
 * Schedules for every collective from ntrees shapes over n ranks (each shape a parent array; its
 * root is the rank with parent -1): broadcast and reduce from every root and allgather and
 * reducescatter use each shape re-rooted as needed; allreduce uses the shapes as given.
 */
void rt_plan_build(struct rt_plan *p, int n, int ntrees, const int *const *shapes,
                   const unsigned *weights, size_t chunk_bytes);
void rt_plan_free(struct rt_plan *p);

enum rt_style { RT_THREADS, RT_GROUP };

struct rt_case {
    int coll;              /* enum blink_plan_coll */
    int root;
    blinkDataType_t dt;
    blinkRedOp_t op;
    size_t count;
    int inplace;
    enum rt_style style;
    int streams;           /* user streams (async, then synchronized) or NULL streams */
    size_t skew;           /* the output area (in place: and the input) starts this many bytes
                            * past a 16-byte boundary; the bytes before it must stay untouched */
    size_t send_skew;      /* out of place: the input's own */
};

/* Run c on comms[n] and compare with the reference: 0, or 1 with a reason in why. */
/* Bytes by which every rank's buffers start past malloc's alignment (default 0): one element
 * breaks 16-byte alignment, one byte even the element's own. */
extern size_t rt_shift;

int rt_run_check(blinkComm_t *comms, int n, const struct rt_case *c, char *why, size_t len);

/* One rank of n, each in its own process: only this rank's buffers, its call (RT_GROUP: a group
 * of this one call; streams: a user stream, then synchronized) and its output checked against
 * the same reference: 0, or 1 with a reason in why. Every rank must run the same c. */
int rt_rank_run_check(blinkComm_t comm, int rank, int n, const struct rt_case *c, char *why,
                      size_t len);

/* Run c without checking data: each rank's result (call, then stream synchronize) in res[n],
 * and its last error message in msgs[n] (may be NULL). */
void rt_run(blinkComm_t *comms, int n, const struct rt_case *c, blinkResult_t *res,
            char (*msgs)[512]);

/* Call the collective for one rank. */
blinkResult_t rt_call(const struct rt_case *c, const void *send, void *recv, blinkComm_t comm,
                      blinkStream_t stream);

size_t rt_size(blinkDataType_t dt);

/* rt_run_check with every rank's staging slots poisoned first (comms all of this process), then
 * the bytes of the down slots of the call's tree set (the plan's trees, not its rings) that
 * changed, over all ranks: 0 for a call that went down direct (proto.h, Direct); -1 when the
 * check failed (why says how). */
long rt_down_slot_writes(blinkComm_t *comms, int n, const struct rt_case *c, char *why,
                         size_t len);

#endif
