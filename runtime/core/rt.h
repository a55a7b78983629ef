/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * rt.h - the runtime core's internal declarations: the last-error record, the communicator
 * (one rank's view: its plan, its peers' mapped segments, its tree roles), one call's launch,
 * and the entry points of the plan checks, plan choice, rendezvous and calls.
 */
#ifndef BK_RT_H
#define BK_RT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "blink.h"
#include "blink_plan.h"
#include "log.h"
#include "proto.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_MSG_MAX 512
#define BK_HANDLE_BYTES 64   /* a backend's segment handle (a cudaIpcMemHandle_t is 64) */
#define BK_DEFAULT_TIMEOUT_S 600.0

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

/* A schedule's tree sets (roles.c): comm->sets[BK_SETS * schedule + set]. */
enum bk_set {
    BK_SET_TREES,  /* its trees */
    BK_SET_RINGS,  /* its ring trees (NCCL's rings as chains) */
    BK_SET_HYBRID, /* its trees, then its PCIe trees, whose edges are host-staged */
    BK_SETS
};

/* One schedule's tree set as this rank plays it (roles.c): every plan tree cut into channels,
 * tree slots of their own (proto.h), tree 0's channels first. */
struct bk_roleset {
    int ntrees;              /* tree slots: the channels of all the set's trees */
    struct bk_role *roles;   /* [ntrees] */
    int *kids;               /* children (plan ranks) of every role, at roles[t].kids_at */
    int plan_trees;          /* the plan's trees */
    const struct blink_plan_tree *trees; /* [plan_trees] (the schedule's, or own) */
    struct blink_plan_tree *own; /* the hybrid's: the trees and the PCIe trees in one table */
    int staged_from;         /* plan trees from this one on are PCIe trees: their edges are
                                host-staged (plan_trees where there are none) */
    int *tree_of;            /* [ntrees] the plan tree of each slot */
    struct bk_layout lay;    /* the staging layout as this set's calls see it (roles.c): the
                                communicator's flags, the set's own data slots */
    size_t *slot_mem;        /* what lay's slot_base and slot_fanin point into */
};

/* Channels per tree: BLINK_NCHANNELS, else one per BLINK_CHANNEL_GBPS of the tree's rate. */
#define BK_MAX_CHANNELS 16
#define BK_DEFAULT_CHANNEL_GBPS 20.0
/* The channels of a tree of rate weight (blink_plan_tree.weight: 1e-4 GB/s): forced (> 0), else
 * ceil(rate / gbps), within 1 .. BK_MAX_CHANNELS. */
int bk_channels(uint64_t weight, double gbps, int forced);
/* Channels by rate leave a set with few blocks: a broadcast over two rings ran on 3 of the 16
 * blocks a rank had on one H200, at 37 GB/s for 64 MiB, and at 133 on 15 (docs/gpu-runs.md).
 * A set of `slots` channels by rate below min gets every tree's channels multiplied by
 * min / slots (whole), each within BK_MAX_CHANNELS; 1 at min or above, or where forced (> 0). */
#define BK_DEFAULT_MIN_CHANNELS 16
#define BK_MAX_MIN_CHANNELS 64
int bk_channel_fill(int slots, int min, int forced);

/* Another rank of the communicator (or this one), by plan rank. */
struct bk_peer {
    int pid, topo_dev, phys_dev;
    int world;               /* MPI world rank, or -1 */
    int server;              /* the plan's server it plays (0 on one server) */
    int remote;              /* on another server than this rank: its edges go over MPI */
    char host[64], busid[32];
    unsigned char *seg;      /* its segment, mapped here (NULL when remote; a device pointer
                                on CUDA) */
};

/* Environment settings, read once per init (comm.c). */
struct bk_env {
    size_t chunk_env;        /* BLINK_CHUNK_BYTES, or 0 */
    int algo_env;            /* BLINK_ALGO: enum blink_plan_algo, or -1 */
    int proto_env;           /* BLINK_PROTO: enum blink_plan_proto, or -1 */
    int log_level;           /* BLINK_DEBUG: enum bk_log_level (log.h) */
    unsigned log_mask;       /* BLINK_DEBUG_SUBSYS: BK_SUB_* bits */
    double timeout_s;        /* BLINK_TIMEOUT_S */
    size_t staging;          /* BLINK_STAGING_BYTES */
    int device;              /* BLINK_DEVICE, or -1 */
    char server[64];         /* BLINK_SERVER, or "" */
    char trace_dir[1024];    /* BLINK_TRACE: where each rank writes its events, or "" */
    size_t trace_records;    /* BLINK_TRACE_RECORDS: events a rank keeps */
    int check_calls;         /* BLINK_CHECK_CALLS=1: compare whole descriptions, not hashes */
    uint32_t seq_start;      /* BLINK_DEBUG_SEQ_START: the first call's number (default 1) */
    double channel_gbps;     /* BLINK_CHANNEL_GBPS: a channel's rate (roles.c) */
    int nchannels;           /* BLINK_NCHANNELS: channels per tree, or 0 (by rate) */
    int min_channels;        /* BLINK_MIN_NCHANNELS: a set's fewest channels (bk_channel_fill) */
    int direct;              /* BLINK_DIRECT: 0 keeps every down pass in the staging (default 1) */
    int host_staged;         /* BLINK_HOST_STAGED: 1 asks a backend that can for host-staged edges
                                (default 0) */
};

/* Whether e says lines of this level and subsystem: a compare, so a line that is off costs
 * nothing more (log.h). */
static inline int bk_logs(const struct bk_env *e, int level, unsigned sub)
{
    return e->log_level >= level && (e->log_mask & sub) != 0;
}

/* BLINK_ALGO=nccl: hand every call to NCCL (not a plan's algo, so outside blink_plan_algo). */
#define BK_ALGO_NCCL 3

struct bk_be;                /* the backend's per-rank state */
struct bk_net_comm;          /* the MPI communicator of a cluster plan's ranks (net.h) */
struct bk_nccl;              /* NCCL's communicator for the ring sizes (nccl_call.c) */

struct blinkComm {
    const struct blink_plan *plan; /* NULL: no plan for the devices (BK_INIT_PLANLESS) */
    const struct blink_plan *held; /* what bk_plan_hold gave (released with the comm) */
    int plan_index;          /* the chosen plan's index in the library's plans, or -1 */
    int nranks, rank, prank; /* rank: the user's; prank: the plan's */
    int *plan_of, *user_of;  /* [nranks] user rank -> plan rank and back */
    struct bk_peer *peer;    /* [nranks] by plan rank */
    struct bk_layout layout;
    void *layout_mem;        /* what layout's arrays point into */
    struct bk_roleset *sets; /* [nschedules * BK_SETS] (enum bk_set) */
    struct bk_env env;
    size_t chunk_bytes;      /* the plan's default chunk */
    unsigned char *said;     /* [nschedules * said_stride] choice already logged */
    int said_stride;
    uint32_t seq;            /* the last call's number */
    unsigned long long ops;  /* backend operations the last call issued */
    unsigned long long edge_bytes[2]; /* data bytes this rank handed over edges in its last
                                         finished call: direct, host-staged */
    int nstreams, nworkers;  /* what rank_init made: streams, threads (threadblocks on CUDA) */
    struct bk_nccl *nccl;
    char plan_why[BK_MSG_MAX]; /* why plan is NULL */
    char nccl_why[192];      /* why nccl is NULL, where its init failed */
    char token[20];          /* the rendezvous token of this communicator's id */
    unsigned nsplits;        /* communicators split from this one so far */
    int mpi_root;            /* the id's maker's MPI world rank, or -1 (shared memory) */
    struct bk_net_comm *net; /* cluster plans: the ranks' MPI communicator, by plan rank */
    int nremote;             /* peers on other servers */
    int one_process;         /* every rank is a thread of this process (BK_INIT_ONE_PROCESS) */
    struct bk_be *be;
    pthread_mutex_t reg_mu;  /* guards regs and maps (memreg.c) */
    struct bk_reg *regs;     /* blinkCommRegister's ranges */
    struct bk_peer_map *maps; /* peers' registered outputs mapped here */
};

/* Where a call's output lies in memory other processes can map (proto.h, Registered); ino 0:
 * nowhere such. */
struct bk_out_reg {
    uint32_t pid, fd;
    uint64_t ino, off, serial;
    uint64_t len;            /* the region's bytes */
    uint64_t handle[BK_REG_HANDLE_WORDS]; /* what opens it elsewhere: a CUDA IPC handle, or
                                           * pid, fd and ino (the host's; the shim's) */
};

/* One call of this rank, as the backend runs it. */
struct bk_launch {
    struct bk_desc d;        /* seq, coll, root (plan rank or -1), dt, op, count, algo, chunk */
    const void *send;
    void *recv;
    const struct bk_roleset *set;
    int set_index;           /* into comm->sets (the CUDA backend keeps device copies) */
    size_t chunk_elems;      /* elements per chunk (fits a slot) */
    struct bk_out_reg reg;   /* the output's registered region (host backend, Simple) */
};

/* Broadcast and reduce have a root; every collective but broadcast and allgather an op. */
static inline int bk_is_rooted(int coll)
{
    return coll == BLINK_PLAN_BROADCAST || coll == BLINK_PLAN_REDUCE;
}
static inline int bk_has_op(int coll)
{
    return coll != BLINK_PLAN_BROADCAST && coll != BLINK_PLAN_ALLGATHER;
}

/* What one call runs (choose.c): a tree set of its schedule, the chunk and the protocol, by
 * the schedule's ranges for the message size and BLINK_ALGO / BLINK_CHUNK_BYTES / BLINK_PROTO;
 * said once per schedule and range under BLINK_DEBUG. */
struct bk_choice {
    int algo;          /* enum blink_plan_algo */
    int set;           /* enum bk_set: the set it runs */
    int ntrees;
    size_t chunk_bytes;
    int proto;         /* enum blink_plan_proto */
};
/* One call's arguments, as the user passed them (call.c). */
struct bk_args {
    int coll;          /* enum blink_plan_coll */
    int root;          /* user rank: broadcast, reduce; -1 otherwise */
    const void *send;
    void *recv;
    size_t count;      /* broadcast/reduce/allreduce: count; allgather: sendcount;
                          reducescatter: recvcount */
    blinkDataType_t dt;
    blinkRedOp_t op;   /* blinkSum for broadcast and allgather */
    void *stream;      /* the user's blinkStream_t */
};
void bk_choose(blinkComm_t c, const struct blink_plan_schedule *sch, const struct bk_args *a,
               int say, struct bk_choice *out);
/* The schedule of (coll, plan root), or NULL. */
const struct blink_plan_schedule *bk_schedule(const struct blink_plan *plan, int coll, int root);

/* plan_expand.c: *out is p where every schedule has trees of its own; else a copy of p, shared
 * by the process's holders, whose relabelled schedules (blink_plan.h) hold their trees. Errors:
 * blinkInvalidUsage (a relabelling that is no permutation of an earlier schedule), and
 * blinkSystemError. bk_plan_release(*out) when done (nothing for p itself). */
blinkResult_t bk_plan_hold(const struct blink_plan *p, const struct blink_plan **out,
                           const char *fn);
void bk_plan_release(const struct blink_plan *p);

/* plan_check.c: a compiled plan's tables, all checked before any rank uses them. */
blinkResult_t bk_check_plan(const struct blink_plan *plan, const char *fn);

/* library.c: the plan of lib for the ranks' devices topo_dev[nranks] on their servers
 * group[nranks] (0..ngroups-1: ranks of one group share a server), in any order: plan_of[r]
 * is the plan rank of user rank r. Where lib is sound but has no plan for these devices (or
 * two ranks of a server claim one device), *plan is NULL, the reason is stored as the last
 * error, and the result is blinkSuccess: the caller decides whether that is an error. */
#define BK_MAX_SERVERS 512
blinkResult_t bk_pick_plan(const struct blink_plan_library *lib, int nranks,
                           const int *topo_dev, const int *group, int ngroups,
                           const struct blink_plan **plan, int *plan_of);

/* roles.c: this rank's roles in every schedule's tree sets, and the staging layout. */
blinkResult_t bk_roles_build(blinkComm_t c);
void bk_roles_free(blinkComm_t c);
blinkResult_t bk_layout_build(blinkComm_t c);

/* nccl_call.c: the real NCCL's communicator of this rank (nccl_real.h). bk_nccl_id makes an
 * ncclUniqueId (0: no NCCL); bk_nccl_init joins it (leaves c->nccl NULL where NCCL is missing
 * or refuses, says why under BLINK_DEBUG=WARN and keeps the reason for bk_nccl_missing). */
#define BK_NCCL_ID_BYTES 128
int bk_nccl_id(void *id);
void bk_nccl_init(blinkComm_t c, const void *id);
void bk_nccl_free(blinkComm_t c);
void bk_nccl_abort(blinkComm_t c);
blinkResult_t bk_nccl_launch(blinkComm_t c, const struct bk_args *a);
/* The rank's ncclComm_t, or NULL; and why there is none ("" when there is). */
void *bk_nccl_comm(blinkComm_t c);
const char *bk_nccl_missing(blinkComm_t c);

/* call.c */
blinkResult_t bk_call(blinkComm_t comm, const struct bk_args *a, const char *fn);

/* comm.c: read the environment; the init of one rank (rank, nranks, id, or for InitAll the
 * device that rank i of this process plays and its physical device, else -1), and of ndev
 * ranks as threads of this process. Flags: */
#define BK_INIT_PLANLESS 1  /* no plan for the devices: a communicator of NCCL alone */
#define BK_INIT_NCCL_ONLY 2 /* do not look for a plan: NCCL alone */
#define BK_INIT_ONE_PROCESS 4 /* ranks as threads: a cluster plan runs all in shared memory */
blinkResult_t bk_read_env(struct bk_env *env, const char *fn);
/* BLINK_TRACE: write a rank's events (trace.h, trace.c); offered counts every event, the first
 * cap of which are in rec. */
struct bk_trace_rec;
struct bk_trace_ring;
/* A ring of cap events in host memory (free() it), the monotonic clock in ns, and one event
 * stamped now by any thread (the host backend's; the CUDA kernel stamps its own). */
struct bk_trace_ring *bk_trace_ring_new(size_t cap);
uint64_t bk_trace_now(void);
void bk_trace_add(struct bk_trace_ring *r, int kind, uint32_t seq, int coll, int block, int tree,
                  uint32_t chunk, int peer);
void bk_trace_write(blinkComm_t c, const char *backend, const char *clock,
                    const struct bk_trace_rec *rec, unsigned long long offered,
                    unsigned long long cap);
blinkResult_t bk_init_rank(const struct blink_plan_library *lib, blinkComm_t *out, int nranks,
                           const blinkUniqueId *id, int rank, int topo_dev, int phys_dev,
                           unsigned flags, const char *fn);
blinkResult_t bk_init_all(const struct blink_plan_library *lib, blinkComm_t *comms, int ndev,
                          const int *devlist, unsigned flags, const char *fn);
void bk_comm_free(blinkComm_t c);
/* A peer's regions kept mapped at most (memreg.c). A mapping holds its region's pages even
 * after the peer frees it, so a job that allocates afresh must not collect them; one of the
 * last call is in use and stays, the least recently used of the others goes. */
#define BK_REG_MAPS_PER_PEER 8

/* memreg.c: whether [buf, buf + bytes) is registered with c and lies in blinkMemAlloc's memory
 * (then *out says where); a peer's registered region mapped here for call number `call` (a
 * count that grows call by call; cached, a few per peer; need: bytes it must hold), or NULL with
 * why; c's registrations and mappings freed. */
int bk_reg_find(blinkComm_t c, const void *buf, size_t bytes, struct bk_out_reg *out);
unsigned char *bk_reg_map(blinkComm_t c, int peer, const struct bk_out_reg *reg, size_t need,
                          uint64_t call, char *why, size_t len);
void bk_reg_free(blinkComm_t c);
/* The memory file a process made (blinkMemAlloc on the host), mapped here through
 * /proc/PID/fd/FD where it is inode ino of at least need bytes (*got: its size); else NULL and
 * why. And the INFO line that a rank now writes a peer's registered output. */
unsigned char *bk_region_map(uint32_t pid, uint32_t fd, uint64_t ino, size_t need, size_t *got,
                             char *why, size_t len);
void bk_reg_said(blinkComm_t c, int peer, size_t bytes);
/* This process's blinkMemAlloc region numbered serial, if it still exists. */
int bk_region_here(uint64_t serial, unsigned char **base, size_t *len);
/* The plan ranks below 64 whose registered outputs c has mapped, a bit each, and how many
 * regions (for tests). */
unsigned long long bk_reg_mapped(blinkComm_t c, int *count);
/* The device c's log lines name: the one its rank runs on (blinkCommCuDevice's). */
int bk_log_dev(blinkComm_t c);
/* BLINK_DEBUG=TRACE (COLL): one line per call as it is issued, with what runs it. */
void bk_trace_call(blinkComm_t c, const struct bk_args *a, const char *fn, const char *runs);

#ifdef __cplusplus
}
#endif

#endif
