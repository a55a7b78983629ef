/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan.h - TreeGen: plans for every collective on one allocation.
 *
 * For each collective (and each root of broadcast and reduce) the planner
 *   1. computes the physical bound from max-flows alone (bound.h);
 *   2. gathers candidate trees: one-hop stars, an exact integral packing where capacities are
 *      whole multiples of one link, and Blink's MWU packing (mwu.h);
 *   3. finishes exactly with LP column generation, then keeps the rate with the fewest trees by
 *      Blink's ILP (ilp.h);
 *   4. compares with the best NCCL-style ring set (ring.h).
 * Allreduce takes the faster of two candidates: undirected trees (reduce up, broadcast down the
 * same tree) and reduce-scatter + all-gather over per-root trees. Where PCIe links join the GPUs
 * besides NVLink, a second tree set over PCIe and the CPU links is planned, and the data split so
 * both finish together (hybrid, with T_dpa).
 *
 * Where a symmetry of the allocation (topo_auto.h) takes one root onto another, the second
 * root's plans are the first's relabelled, not packed again: on one server the GPUs' orbits, in
 * a cluster the swaps of identical servers, so S servers alike pack one server's roots.
 *
 * The planner reads the model and never changes it; outputs (plan JSON, --explain) read plans.
 */
#ifndef BK_PLAN_H
#define BK_PLAN_H

#include "core/bk.h"
#include "core/collective.h"
#include "core/diag.h"
#include "ilp/ilp.h"
#include "graph/pgraph.h"
#include "graph/ptree.h"
#include "ring/ring.h"
#include "topo/topo.h"

/* T_dpa default: the cost of switching CUDA peer access off and on again to force a copy onto
 * PCIe, as we read the Blink paper (blink-and-peers.md 2.6); --tdpa overrides it. */
#define PLAN_DEFAULT_TDPA_US 50.0

struct plan_opts {
    unsigned collectives; /* bit (1u << enum collective) per collective to plan */
    int root;             /* broadcast/reduce: this rank only; -1 for every root */
    double epsilon;       /* MWU epsilon */
    int time_limit_ms;    /* ILP time limit per model */
    double slack;         /* ILP rate slack */
    double tdpa_us;       /* hybrid split: T_dpa in microseconds */
    int hybrid;           /* plan the PCIe tree set too (1 by default) */
    int keep_ilp;             /* --dump-ilp: each plan keeps the last ILP it solved (ilp_model) */
    int mwu_seed_all;         /* seed column generation with every MWU tree, not the heaviest */
    int quiet_no_ring;        /* no warning where no ring joins the GPUs (the caller sums up) */
    int numbers_only_copies;  /* a root's plan that is another's relabelled keeps its numbers,
                                 not its trees: for callers that read no trees (the table) */
};

void plan_opts_default(struct plan_opts *o);

/* How a plan's trees were obtained (for --explain and the plan file). */
struct plan_stats {
    long mwu_rounds;
    int mwu_trees;     /* distinct trees MWU produced */
    double mwu_value;  /* MWU's own (1 - eps)^2-approximate value */
    int integral_trees;
    int lp_columns;
    double lp_value;
    int ilp_status;    /* ilp_report.mip_status */
    int trees_before;  /* trees in the LP solution */
    int partitions;    /* several servers: data partitions composed across servers, else 0 */
    int servers;       /* several servers: how many */
};

/* One tree set: the trees of one link tier and its numbers. */
struct plan_trees {
    unsigned kinds;           /* link-kind mask of the tier */
    const struct pgraph *g;   /* the graph the trees' arcs index (reversed for reduce-like) */
    enum pack_kind pack;      /* load rule the trees were packed under */
    double algbw;             /* GB/s (plan-json.md) */
    double bound;             /* GB/s */
    struct ptree_set trees;
    struct plan_stats stats;
};

/* What a plan runs at each message size (plan_tune.h fills it in; with no ranges the runtime
 * runs the trees at every size with its default chunk). */
enum plan_algo {
    PLAN_ALGO_TREES, /* the plan's trees */
    PLAN_ALGO_RINGS, /* NCCL's rings (the ring set as chains where NCCL is not there) */
    PLAN_ALGO_HYBRID /* the trees and the PCIe trees together (plan_hybrid_set), the PCIe
                        trees' edges host-staged */
};

/* The protocol of the runtime's trees in a range (blink_plan.h's enum blink_plan_proto). */
enum plan_proto {
    PLAN_PROTO_SIMPLE, /* chunks into staging slots, a flag word each */
    PLAN_PROTO_LL      /* 16-byte lines of data and flags: less per hop, half the bandwidth */
};

struct plan_range {
    double min_bytes;   /* from this size (nccl-tests' S) up to the next range's */
    enum plan_algo algo;
    size_t chunk_bytes; /* pipeline chunk of the runtime's trees (and of its own rings) */
    double at_bytes;    /* the simulated size that decided the range, and its times (us) */
    double tree_us, ring_us;
    enum plan_proto proto; /* the trees' protocol (rings ranges: Simple) */
    enum plan_algo fallback; /* what runs where the hybrid cannot (a runtime without
                                host-staged edges, MSCCL): the trees where they alone beat NCCL
                                too, else the rings; algo in other ranges */
};

struct plan_tuning {
    int n;
    struct plan_range *r; /* [n] by min_bytes, the first from 0 */
    int cap;              /* r's room (bk_grow_int); 0 for an array allocated to size */
};

struct plan {
    enum collective coll;
    int root;                 /* GPU rank for broadcast and reduce, else -1 */
    struct plan_trees main;
    double ring_algbw;        /* GB/s */
    const char *method;       /* "trees", "one-hop trees", "rs+ag", ... */
    const char *why;          /* one line on the choice, for --explain (static text) */
    double alt_algbw;         /* allreduce: the rejected candidate's algbw, else 0 */
    int has_hybrid;
    struct plan_trees pcie;   /* hybrid: the PCIe tree set */
    double switchover_bytes;  /* hybrid: below this, NVLink alone (D* = T_dpa * BW_nvl) */
    struct plan_tuning tune;  /* per message size: trees or rings, and the chunk */
    struct ptree_set ring_chains; /* NCCL's rings as chains the runtime can run itself
                                     (ring_chain.h); empty for several servers */
    char *ilp_model;          /* keep_ilp: the last ILP solved for the main tier, in CPLEX LP
                                 format (glpsol --lp); NULL when none was solved */
    int relabels;             /* 1 + the index in its set of the plan this one is, relabelled by
                                 a symmetry of the allocation (its tuning is that plan's);
                                 0 for a plan packed for itself. With numbers_only_copies its
                                 trees are that plan's, and not kept (plan_tree_count) */
    int *relabel_map;         /* with relabels: [ngpus] the GPU rank that each rank of that
                                 plan's trees becomes here (the generated source writes the
                                 copy as that plan's trees and this map); else NULL */
};

struct plan_cluster;

struct plan_set {
    const struct topo *topo;
    unsigned kinds;           /* main tier */
    struct pgraph tier, tier_rev;         /* the main tier's graph, and reversed */
    struct pgraph pcie_tier, pcie_tier_rev; /* hybrid: the PCIe tier (host-staged: paths turn
                                               in CPU memory, pgraph_build_staged), reversed */
    struct pgraph both_tiers, both_tiers_rev; /* hybrid: both tiers in one graph, reversed (the
                                               simulator runs the hybrid set on it) */
    int has_pcie_tier;        /* the PCIe graphs built: the hybrid can be planned */
    struct ring_result ring;
    struct plan_cluster *cluster; /* several servers: Blink's three phases (plan_cluster.h) */
    double tdpa_us;
    struct plan *v;
    int n;
    int cap;                  /* v's room (bk_grow_int); 0 for an array allocated to size */
};

/* Plan everything o asks for on t (restricted to the allocation). */
BK_MUST_USE
enum bk_status plan_all(const struct topo *t, const struct plan_opts *o, struct plan_set *out,
                        struct diag *d);
void plan_set_free(struct plan_set *s);

/* The trees in p's main tier, p in s (its source's where p keeps numbers only). */
int plan_tree_count(const struct plan_set *s, const struct plan *p);

/* The set a plan's hybrid runs, as the runtime builds it: the main trees, then the PCIe trees,
 * all on ps->both_tiers (both_tiers_rev for a plan on reversed graphs), into out and *g. Only
 * for a plan with has_hybrid and its trees; errors: BK_ENOMEM. */
BK_MUST_USE
enum bk_status plan_hybrid_set(const struct plan_set *ps, const struct plan *pl,
                               const struct pgraph **g, struct ptree_set *out);

/* The part of the data a hybrid's PCIe trees carry when both sets run as one (their rates'
 * share); 0 without rates (a plan read from a file). */
double plan_hybrid_share(const struct plan *p);

/* Hybrid split for a message of `bytes`: bytes sent over PCIe (0 below the switch-over size). */
double plan_hybrid_pcie_bytes(const struct plan *p, double tdpa_us, double bytes);

#endif
