/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim.h - the schedule simulator: how long a plan's schedule, and NCCL's rings, take on a
 * flow-level model of the topology.
 *
 * Model (issue 5). Every directed arc of the planning graph is a resource of its capacity (GB/s,
 * 1e9 B/s, per direction); concurrent flows share each arc max-min fairly. A chunk handed over a
 * tree edge costs the protocol's step plus the latency alpha of each arc's link kind, then
 * moves its bytes as a flow over every arc of the path at once (switches store nothing); going
 * up, the same flow also runs through the sender's reduction unit (the runtime receives,
 * reduces and sends in one pass), whose rate concurrent passes on one GPU share. The engine is
 * sim_engine.h.
 *
 * Trees (sim_trees) follow the runtime's protocol (runtime/core/proto.h and blink_plan.h, the
 * work graph in sim_tree.c): weights are the rates in whole units of 1e-4 GB/s, the elements
 * are split among the trees (per root for allgather and reduce-scatter) by the same integer
 * rule, boundaries on 256-byte units as the runtime cuts them, each tree's share is cut into
 * chunks that move up and down the tree through four staging slots per connection, and the
 * call costs one kernel launch. Calls are taken as in place, so the root makes no local copy.
 * A plan's PCIe tier (hybrid) is not simulated: the runtime does not run it either. Nor are
 * the CUDA backend's channels (several threadblocks per tree, proto.h): they cut a tree's
 * share into parallel pipelines over the same edges, so they move the same bytes over the
 * same arcs, and the model's one pipeline per tree is the host backend's.
 *
 * The trees run one of two protocols (sim_job.proto, as blink_plan.h's enum blink_plan_proto):
 * Simple, where a chunk lands in the receiver's slot and one flag word (fence, store) hands it
 * over, at step_us per chunk and edge; or LL, where every 8 data bytes travel in a 16-byte line
 * with their own flags and the receiver polls the lines, at ll_step_us per chunk and edge but
 * with twice the bytes on every link, in chunks of at most SIM_LL_CHUNK_MAX. Both add the arcs'
 * alpha. The flow-level rings below are NCCL's and run Simple.
 *
 * NCCL as the tuning and --simulate compare with it (sim_rings) is NCCL's own cost model,
 * calibrated against published nccl-tests results (sim_nccl.c). The flow-level NCCL below
 * (sim_run on SIM_RING and SIM_DBT jobs) remains for the cluster figure of make figures.
 *
 * Flow-level rings follow NCCL's ring algorithm with the Simple protocol, on the planner's ring
 * result: ring.h records the summed ring rate B and the ring count but not the orders, so each
 * of the nrings channels runs over n virtual hop links of B / nrings (which the planner's LP has
 * already shown to fit the arcs), in an order chosen here (the widest Hamiltonian cycle) that
 * also sets each hop's latency class. Double binary trees (allreduce) run over real arcs: two
 * complementary in-order binary trees over the ranks in that ring order (NCCL trees.cc), each
 * with half the data, every edge along the widest relay-only path of any link kind.
 *
 * Units: bytes, microseconds, GB/s. Sizes are nccl-tests' S: the whole buffer (count x n x
 * element size for allgather and reduce-scatter). Deterministic; never prints.
 */
#ifndef BK_SIM_H
#define BK_SIM_H

#include <stddef.h>

#include "core/bk.h"
#include "core/collective.h"
#include "core/diag.h"
#include "plan/plan.h"
#include "graph/ptree.h"
#include "ring/ring.h"
#include "topo/topo.h"

#define SIM_GENERATIONS 4 /* GPU generations NCCL's constants distinguish */

struct sim_params {
    /* What both sides pay, measured (docs/calibration): the host's cost of issuing one call
     * (argument checks, enqueue, the kernel launch call), and the fraction of a link's rate
     * that copy kernels with flags reach, per GPU generation (Volta, Ampere, Hopper,
     * Blackwell). */
    double call_us;
    double eff[SIM_GENERATIONS];
    /* The runtime's trees: latency of one arc of each link kind, for each arc a chunk crosses;
     * the kernel's start on the GPU, once per call; a chunk's hand-over (fence, flag, poll),
     * once per chunk and edge; the same with the LL protocol (no fence, no flag word: the
     * receiver polls the data lines). */
    double alpha_us[TOPO_LINK_KINDS];
    double launch_us;
    double step_us;
    double ll_step_us;
    double reduce_gbps;      /* fused reduction rate of one GPU, GB/s of output */
    size_t elem_bytes;       /* element size: the runtime splits data in whole elements */
    /* NCCL, flow-level (SIM_RING, SIM_DBT: the figures): a per-collective launch and a per-step
     * cost by the slowest link kind on the hop (NCCL's hwLat, which includes the wire latency);
     * NCCL reduces inside its copy kernel, so ring and tree reductions cost no extra time. */
    double nccl_launch_us;
    double nccl_step_us[TOPO_LINK_KINDS];
    /* NCCL as it chooses and runs a call (sim_rings, sim_nccl.c), fitted to published
     * nccl-tests (docs/calibration): the scale on NCCL's own latency tables and NVLS's
     * fraction of a GPU's NVLink rate. */
    double nccl_lat_scale;
    double nccl_nvls_eff;
};

/* Defaults; every value's source is given where they are set (sim.c). */
void sim_params_default(struct sim_params *p);

/* The generation that indexes eff[] and NCCL's constants: the oldest GPU's (Volta for anything
 * older or unknown, as NCCL's tables start there). */
int sim_generation(const struct topo *t);

/* nccl-tests' bus bandwidth factor of a collective on n ranks. */
double sim_bus_factor(enum collective c, int n);

/* Which schedule a job simulates. */
enum sim_algo {
    SIM_TREES, /* a plan's trees, as the runtime runs them */
    SIM_RING,  /* NCCL rings */
    SIM_DBT    /* NCCL double binary trees (allreduce only) */
};

/* The protocol a plan's trees run (SIM_TREES; blink_plan.h's enum blink_plan_proto). */
enum sim_proto {
    SIM_SIMPLE, /* data into the staging slot, then a flag word */
    SIM_LL      /* 16-byte lines of 8 data bytes and their flags: half the bandwidth */
};

/* LL's largest chunk of data: the runtime's LL slot holds 32 KiB of lines. Mirrors BK_LL_CHUNK_MAX
 * in runtime/core/proto.h. */
#define SIM_LL_CHUNK_MAX ((size_t)16 << 10)
/* Bytes on the wire per data byte with LL: 16-byte lines carry 8 (CUDA); the host backend's
 * 8-byte packets carry 4, the same ratio. */
#define SIM_LL_WIRE 2.0

struct sim_job {
    enum sim_algo algo;
    const struct topo *topo;        /* the allocation (ranks = GPU nodes 0..n-1) */
    enum collective coll;
    int root;                       /* broadcast and reduce: root rank */
    const struct pgraph *g;         /* SIM_TREES: the graph the trees' arcs index */
    const struct ptree_set *trees;  /* SIM_TREES */
    const struct ring_result *ring; /* SIM_RING, SIM_DBT */
    struct sim_memo *memo;          /* SIM_RING, SIM_DBT: tables kept between calls, or NULL */
    enum sim_proto proto;           /* SIM_TREES: the protocol (SIM_SIMPLE unless set) */
    struct sim_seen *seen;          /* SIM_TREES: times already run for these trees, or NULL */
};

/* The times one plan's trees were simulated at, by size, chunk and protocol: a search that
 * comes back to a run it made (a size's first chunk is the last size's best, whose time at
 * this size the tuner needs too) takes the time found, for the same run gives the same time.
 * Results are those without it; only the work shrinks. One serves one plan's trees. */
struct sim_seen {
    struct sim_seen_run {
        double bytes;
        size_t chunk;
        enum sim_proto proto;
        double us;
    } *v;
    int n, cap;
};
void sim_seen_free(struct sim_seen *s);

/* What NCCL's simulated rings and trees share between calls on one allocation (the widest
 * paths between its GPUs and the ring order, sim_hops.h): results are the same with or without
 * it, only faster. One memo serves one topology while it lives (it is keyed by the topology's
 * address). */
struct sim_memo;
BK_MUST_USE
enum bk_status sim_memo_new(struct sim_memo **m);
void sim_memo_free(struct sim_memo *m);

/* Jobs from a plan set: a plan's main tree set, or the ring baseline of its collective. */
void sim_job_plan(struct sim_job *j, const struct plan_set *ps, const struct plan *p);
void sim_job_rings(struct sim_job *j, const struct plan_set *ps, enum collective c, int root,
                   enum sim_algo algo);

/*
 * Completion time in microseconds of job j for a message of `bytes` cut into chunks of
 * `chunk_bytes` (rounded down to whole elements, at least one; LL trees at most
 * SIM_LL_CHUNK_MAX, as the runtime cuts them). Errors: BK_EUSAGE for a job the
 * model cannot run (double binary trees for anything but allreduce, a tree without a reverse
 * arc for allreduce's way up, no ring), BK_ENOMEM; d gets a message.
 */
BK_MUST_USE
enum bk_status sim_run(const struct sim_job *j, double bytes, size_t chunk_bytes,
                       const struct sim_params *p, double *us, struct diag *d);

/* The chunk size (a power of two from SIM_CHUNK_MIN to SIM_CHUNK_MAX, or SIM_LL_CHUNK_MAX for
 * LL trees, at most the message rounded up to a power of two, and never more than
 * SIM_MAX_CHUNKS chunks in all unless the cap leaves no larger one) with the
 * smallest time, searched from the largest down until two in a row were worse than the best
 * so far; ties go to the larger chunk. */
#define SIM_CHUNK_MIN ((size_t)4 << 10)
#define SIM_CHUNK_MAX ((size_t)64 << 20)
#define SIM_MAX_CHUNKS 8192.0
BK_MUST_USE
enum bk_status sim_best_chunk(const struct sim_job *j, double bytes, const struct sim_params *p,
                              size_t *chunk_bytes, double *us, struct diag *d);

/* The same search, cheaper: from `start` (a power of two; clamped to the sizes above, and to
 * `max` unless 0), towards larger chunks while the time drops, else towards smaller ones. The
 * best chunk moves little between neighbouring message sizes, so a search seeded with the last
 * size's best takes about three runs instead of a dozen. */
BK_MUST_USE
enum bk_status sim_chunk_near(const struct sim_job *j, double bytes, const struct sim_params *p,
                              size_t start, size_t max, size_t *chunk_bytes, double *us,
                              struct diag *d);

/* Shorthands: one plan's trees; the rings (and, for allreduce, double binary trees: dbt_us,
 * else 0) of the same collective, each at chunk_bytes, or at its own best chunk
 * (sim_best_chunk) when chunk_bytes is 0. */
BK_MUST_USE
enum bk_status sim_tree_plan(const struct plan_set *ps, const struct plan *pl, double bytes,
                             size_t chunk_bytes, const struct sim_params *p, double *us,
                             struct diag *d);
/* NCCL's time for a call, us, by algorithm (each at its best protocol). */
struct sim_nccl {
    double ring_us;
    double dbt_us;  /* allreduce only, else 0: NCCL's tree (a chain per channel in a server) */
    double nvls_us; /* allreduce on NVSwitch parts from Hopper on, else 0 */
    double best_us; /* what NCCL picks: the fastest */
};
/* NCCL's calibrated cost model (sim_nccl.c) for collective c of `bytes` on topology t with the
 * planner's ring result. BK_EUSAGE without a ring. */
BK_MUST_USE
enum bk_status sim_nccl_model(const struct topo *t, const struct ring_result *ring,
                              enum collective c, double bytes, const struct sim_params *p,
                              struct sim_nccl *out, struct diag *d);
/* The same for a plan set's allocation, after checking the parameters. */
BK_MUST_USE
enum bk_status sim_rings(const struct plan_set *ps, enum collective c, double bytes,
                         const struct sim_params *p, struct sim_nccl *out, struct diag *d);

/* Internal: where a tree's share of n elements of es bytes ends, as the runtime cuts it
 * (sim_tree.c; the runtime's own copy is proto.h's bk_split_at, which test_sim holds it to). */
size_t sim_split_at(size_t n, size_t es, unsigned long long s, unsigned long long w);

/* Internal: the two builders sim_run dispatches to (sim_tree.c, sim_ring.c). */
BK_MUST_USE
enum bk_status sim_run_trees(const struct sim_job *j, double bytes, size_t chunk_bytes,
                             const struct sim_params *p, double *us, struct diag *d);
BK_MUST_USE
enum bk_status sim_run_nccl(const struct sim_job *j, double bytes, size_t chunk_bytes,
                            const struct sim_params *p, double *us, struct diag *d);

#endif
