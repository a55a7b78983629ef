/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * rt.h - the runtime core's internal declarations: the last-error record, the communicator set
 * shared by the ranks of one blinkCommInitAll, the per-rank call arguments, and the entry points
 * of the rendezvous (call.c) and the executor (exec.c).
 */
#ifndef BK_RT_H
#define BK_RT_H

#include <pthread.h>
#include <stddef.h>

#include "blink.h"
#include "blink_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_MSG_MAX 512

/* Store a printf-style message as this thread's last error; returns r. */
blinkResult_t bk_error(blinkResult_t r, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* This thread's last error message ("" if none) and a way to set it verbatim. */
const char *bk_last_error(void);
void bk_set_last_error(const char *msg);

size_t bk_dtype_size(blinkDataType_t dt); /* 0 for an invalid type */
const char *bk_dtype_name(blinkDataType_t dt);
const char *bk_op_name(blinkRedOp_t op);
const char *bk_coll_name(int coll);

/* One rank's call, as posted to the rendezvous. */
struct bk_args {
    int coll;          /* enum blink_plan_coll */
    int root;          /* broadcast, reduce; -1 otherwise */
    const void *send;
    void *recv;
    size_t count;      /* broadcast/reduce/allreduce: count; allgather: sendcount;
                          reducescatter: recvcount */
    blinkDataType_t dt;
    blinkRedOp_t op;   /* blinkSum for broadcast and allgather */
    void *stream;      /* the user's blinkStream_t */
};

struct bk_slot;
struct bk_exec;

/* State shared by the communicators of one blinkCommInitAll. */
struct bk_commset {
    const struct blink_plan *plan;
    int nranks;
    int *devs;                 /* [nranks] device of each rank (the plan's, or BLINK_DEVICE_MAP) */
    size_t chunk_bytes;        /* the plan's default chunk */
    size_t chunk_env;          /* BLINK_CHUNK_BYTES, or 0 */
    int algo_env;              /* BLINK_ALGO: enum blink_plan_algo, or -1 */
    int log_level;             /* BLINK_DEBUG: 0 silent, 1 WARN, 2 INFO */
    unsigned char *said;       /* [nschedules * said_stride] choice already logged */
    struct bk_nccl *nccl;      /* NCCL's communicators (nccl_call.c), or NULL */
    int said_stride;
    pthread_mutex_t mu;        /* guards everything below and all of exec */
    pthread_cond_t cv;
    int refs;                  /* live communicators */
    unsigned long long *posted; /* [nranks] calls posted by each rank */
    unsigned long long next_exec;
    struct bk_slot *slots;     /* calls not yet consumed by every rank, by sequence */
    int failed;                /* a launch failed: refuse further calls */
    struct bk_exec *ex;
    struct blinkComm *ranks;   /* [nranks] the handles, freed with the set */
};

struct blinkComm {
    struct bk_commset *cs;
    int rank;
};

/* What one call runs (choose.c): the trees or the ring trees of its schedule, and the chunk,
 * by the schedule's ranges for the message size and BLINK_ALGO / BLINK_CHUNK_BYTES; said once
 * per schedule and range under BLINK_DEBUG. Called with cs->mu held. */
struct bk_choice {
    int algo;          /* enum blink_plan_algo */
    const struct blink_plan_tree *trees;
    int ntrees;
    size_t chunk_bytes;
};
void bk_choose(struct bk_commset *cs, const struct blink_plan_schedule *sch,
               const struct bk_args *a, int say, struct bk_choice *out);
/* nccl_call.c: NCCL for the ring sizes, where the runtime was built with it. init leaves
 * cs->nccl NULL where NCCL is missing or refuses (and says why under BLINK_DEBUG=WARN). */
void bk_nccl_init(struct bk_commset *cs);
void bk_nccl_free(struct bk_commset *cs);
blinkResult_t bk_nccl_launch(struct bk_commset *cs, const struct bk_args *args);

/* The schedule of (coll, root), or NULL. */
const struct blink_plan_schedule *bk_schedule(const struct blink_plan *plan, int coll, int root);

/* exec.c: set up, enqueue one call of every rank (args[nranks], already checked to agree),
 * wait for the last enqueued call (host, NULL streams), tear down. Called with cs->mu held. */
blinkResult_t bk_exec_init(struct bk_commset *cs);
blinkResult_t bk_exec_launch(struct bk_commset *cs, const struct bk_args *args);
blinkResult_t bk_exec_wait(struct bk_commset *cs);
void bk_exec_free(struct bk_commset *cs);

/* call.c: the collective entry points funnel into this. */
blinkResult_t bk_call(blinkComm_t comm, const struct bk_args *a, const char *fn);

/* comm.c */
void bk_commset_unref(struct bk_commset *cs);

#ifdef __cplusplus
}
#endif

#endif
