/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan.c - TreeGen's driver: which graph each collective plans on, the bounds, the allreduce
 * choice, reuse of broadcast trees for reduce on full-duplex links, and the hybrid PCIe set.
 */
#include "plan/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "core/strbuf.h"
#include "pack/bound.h"
#include "pack/mwu.h"
#include "plan/plan_cluster.h"
#include "plan/plan_internal.h"
#include "ring/ring_chain.h"
#include "topo/topo_auto.h"

/* Clusters up to this many GPUs are also packed whole (cluster_flat) where the phases fall
 * short, its MWU at this accuracy or coarser: 4 x 16 MI250 GCDs take 17 s and 400 MB. */
#define CLUSTER_FLAT_MAX_GPUS 64 /* the text of cluster_flat's "why" says 64 */
#define CLUSTER_FLAT_EPSILON 0.5

/* Size limits: plan_all refuses larger inputs with an error (check_size). Planning grows about
 * as the fourth power of a server's GPUs (every root, and the packings' rounds, on a graph that
 * grows too): one plan of every collective took, in CPU time on x86-64, 7 s for a 128-GPU NVLink
 * ring and 26 s for 128 GPUs under one PCIe switch, but 85 s for a 256-GPU ring. Dense NVSwitch
 * fabrics cost more per GPU (36 GPUs x 18 switches: 30 s; 72 x 18: over 2 minutes). Several
 * servers are planned server by server (plan_cluster.h), so the caps are per server; but the
 * cluster phase and the rings span the whole graph and grow about as the square of the total:
 * 64 DGX-1V servers (512 GPUs, 1153 nodes) took 11 s, 256 (2048 GPUs) over 170 s. */
#define PLAN_MAX_SERVER_GPUS 128
#define PLAN_MAX_SERVER_NODES 1024
#define PLAN_MAX_GPUS 1024
#define PLAN_MAX_NODES 4096

void plan_opts_default(struct plan_opts *o)
{
    memset(o, 0, sizeof *o);
    o->collectives = (1u << COLL_COUNT) - 1u;
    o->root = -1;
    o->epsilon = MWU_DEFAULT_EPSILON;
    o->time_limit_ms = ILP_DEFAULT_TIME_LIMIT_MS;
    o->slack = ILP_DEFAULT_SLACK;
    o->tdpa_us = PLAN_DEFAULT_TDPA_US;
    o->hybrid = 1;
}

void plan_set_free(struct plan_set *s)
{
    for (int i = 0; i < s->n; i++) {
        plan_trees_free(&s->v[i].main);
        plan_trees_free(&s->v[i].pcie);
        free(s->v[i].tune.r);
        ptree_set_free(&s->v[i].ring_chains);
        free(s->v[i].ilp_model);
        free(s->v[i].relabel_map);
    }
    free(s->v);
    pgraph_free(&s->tier);
    pgraph_free(&s->tier_rev);
    pgraph_free(&s->pcie_tier);
    pgraph_free(&s->pcie_tier_rev);
    pgraph_free(&s->both_tiers);
    pgraph_free(&s->both_tiers_rev);
    plan_cluster_free(s->cluster);
    ring_result_free(&s->ring);
    memset(s, 0, sizeof *s);
}

BK_MUST_USE
static enum bk_status new_plan(struct plan_set *s, enum collective c, int root, struct plan **out)
{
    BK_CHECK(bk_grow_int((void **)&s->v, &s->cap, s->n, sizeof *s->v));
    struct plan *p = &s->v[s->n++];
    memset(p, 0, sizeof *p);
    p->coll = c;
    p->root = root;
    ptree_set_init(&p->main.trees);
    ptree_set_init(&p->pcie.trees);
    *out = p;
    return BK_OK;
}

/* The tier a collective's trees use: NVLink (with NVSwitch) when it joins every GPU, otherwise
 * every link kind; its reverse for reduce-like plans; and the PCIe tier for the hybrid. */
BK_MUST_USE
static enum bk_status build_graphs(struct plan_set *s, const struct topo *t, int hybrid,
                                   struct diag *d)
{
    BK_CHECK(pgraph_build(&s->tier, t, PG_NVLINK));
    if (!pgraph_gpus_connected(&s->tier)) {
        pgraph_free(&s->tier);
        BK_CHECK(pgraph_build_tier(&s->tier, t, PG_ALL_KINDS));
        if (!pgraph_gpus_connected(&s->tier))
            return diag_error(d, t->source, DIAG_NOWHERE,
                              "the GPUs of the allocation cannot all reach each other over the "
                              "topology's directed links; nothing can be planned");
    }
    s->kinds = s->tier.kinds;
    BK_CHECK(pgraph_reverse(&s->tier_rev, &s->tier));
    if (!hybrid || s->kinds != PG_NVLINK)
        return BK_OK;
    BK_CHECK(pgraph_build_staged(&s->pcie_tier, t, PG_PCIE_TIER));
    if (!pgraph_gpus_connected(&s->pcie_tier))
        return BK_OK; /* no PCIe path between some GPUs: NVLink alone */
    BK_CHECK(pgraph_reverse(&s->pcie_tier_rev, &s->pcie_tier));
    BK_CHECK(pgraph_build_staged(&s->both_tiers, t, PG_NVLINK | PG_PCIE_TIER));
    BK_CHECK(pgraph_reverse(&s->both_tiers_rev, &s->both_tiers));
    s->has_pcie_tier = 1;
    return BK_OK;
}

/*
 * Several servers: Blink's three phases are one candidate. Where they fall short of the bound,
 * the packer also plans the whole cluster graph, switches, NICs and the network as relays
 * (ForestColl's view; allreduce as undirected trees or reduce-scatter + all-gather over it,
 * reusing the allgather plan `ag_done` when there is one), and the faster plan is kept; the
 * runtime runs either, an edge between servers going through the network engine. With 16 to
 * 64 roots the MWU's heaviest trees are a poor start for column generation (hundreds of
 * rounds), so a coarse MWU seeds it with all of its trees; the LP's optimum is exact either way.
 */
BK_MUST_USE
static enum bk_status cluster_flat(struct plan *pl, const struct pgraph *g,
                                   const struct pgraph *rg, const struct plan_trees *ag_done,
                                   const struct plan_opts *o, struct plan_trees *out,
                                   struct diag *d)
{
    if (pl->coll == COLL_ALLREDUCE)
        out->bound = fmin(out->bound, plan_allreduce_injection(g));
    if (out->algbw >= 0.999 * out->bound)
        return BK_OK;
    if (g->ngpus > CLUSTER_FLAT_MAX_GPUS) {
        pl->why = "several servers: Blink's phases; clusters above 64 GPUs are not packed whole";
        return BK_OK;
    }
    struct plan_opts flat = *o;
    flat.epsilon = fmax(o->epsilon, CLUSTER_FLAT_EPSILON);
    flat.mwu_seed_all = 1;
    struct plan_trees ag, cand;
    memset(&ag, 0, sizeof ag);
    memset(&cand, 0, sizeof cand);
    int rooted = pl->coll == COLL_BROADCAST || pl->coll == COLL_REDUCE;
    enum bk_status st = BK_OK;
    if (pl->coll == COLL_ALLREDUCE && ag_done && ag_done->g == g)
        st = plan_allreduce(g, g->kinds, ag_done, &flat, NULL, NULL, &cand, d);
    else {
        st = rooted ? plan_rooted(pl->coll == COLL_REDUCE ? rg : g, g->kinds, pl->root, &flat,
                                  NULL, &ag, d)
                    : plan_gather(g, g->kinds, &flat, NULL, &ag, d);
        if (st == BK_OK && pl->coll == COLL_ALLREDUCE)
            st = plan_allreduce(g, g->kinds, &ag, &flat, NULL, NULL, &cand, d);
        else if (st == BK_OK && pl->coll == COLL_REDUCESCATTER)
            st = plan_copy_reversed(&ag, g, rg, &cand);
        else if (st == BK_OK) {
            cand = ag;
            ptree_set_init(&ag.trees);
        }
    }
    if (st == BK_OK && cand.algbw > out->algbw * (1 + PLAN_SAME_SPEED)) {
        /* Both bounds hold: the cuts and the packer's exact optimum (for allreduce, of its two
           tree families). */
        cand.bound = pl->coll == COLL_ALLREDUCE ? fmin(out->bound, cand.bound)
                                                : fmin(out->bound, ag.bound);
        pl->alt_algbw = out->algbw;
        pl->method = "trees over the whole cluster graph, not Blink's three phases";
        pl->why = "the faster";
        cand.stats.servers = out->stats.servers;
        plan_trees_free(out);
        *out = cand;
        memset(&cand, 0, sizeof cand);
    }
    plan_trees_free(&ag);
    plan_trees_free(&cand);
    return st;
}

/* Plan collective c on graphs g (forward) and rg (reversed); `mirror` is the earlier plan it
 * may reuse (mirror_of). */
BK_MUST_USE
static enum bk_status plan_tier(struct plan *pl, const struct pgraph *g,
                                const struct pgraph *rg, const struct plan *mirror,
                                struct plan_cluster *cluster, const struct plan_opts *o,
                                struct strbuf *dump, int pcie, struct plan_trees *out,
                                struct diag *d)
{
    unsigned kinds = g->kinds;
    int symmetric = pgraph_is_symmetric(g);
    const struct plan_trees *src = mirror ? (pcie ? &mirror->pcie : &mirror->main) : NULL;
    if (cluster && !pcie) {
        int reduce_like = pl->coll == COLL_REDUCE || pl->coll == COLL_REDUCESCATTER;
        if (reduce_like && symmetric && src) {
            pl->method = mirror->method;
            pl->why = mirror->why;
            return plan_copy_reversed(src, g, rg, out);
        }
        BK_CHECK(plan_cluster_tier(cluster, pl, rg, o, out, d));
        return cluster_flat(pl, g, rg, pl->coll == COLL_ALLREDUCE ? src : NULL, o, out, d);
    }
    switch (pl->coll) {
    case COLL_BROADCAST: return plan_rooted(g, kinds, pl->root, o, dump, out, d);
    case COLL_REDUCE:
        if (symmetric && src)
            return plan_copy_reversed(src, g, rg, out);
        return plan_rooted(rg, kinds, pl->root, o, dump, out, d);
    case COLL_ALLGATHER: return plan_gather(g, kinds, o, dump, out, d);
    case COLL_REDUCESCATTER:
        if (symmetric && src)
            return plan_copy_reversed(src, g, rg, out);
        return plan_gather(rg, kinds, o, dump, out, d);
    case COLL_ALLREDUCE:
        return plan_allreduce(g, kinds, src, o, dump, pcie ? NULL : pl, out, d);
    default: return BK_EINTERNAL;
    }
}

/* The earlier plan whose trees a plan reuses: reduce mirrors broadcast with the same root,
 * reduce-scatter mirrors allgather, and allreduce takes allgather's trees as its RS + AG
 * candidate. */
static const struct plan *mirror_of(const struct plan_set *s, enum collective c, int root)
{
    enum collective want = c == COLL_REDUCE ? COLL_BROADCAST : COLL_ALLGATHER;
    if (c != COLL_REDUCE && c != COLL_REDUCESCATTER && c != COLL_ALLREDUCE)
        return NULL;
    for (int i = 0; i < s->n; i++)
        if (s->v[i].coll == want && s->v[i].root == root)
            return &s->v[i];
    return NULL;
}

int plan_tree_count(const struct plan_set *s, const struct plan *p)
{
    if (p->relabels > 0 && p->relabels <= s->n && p->main.trees.n == 0)
        return s->v[p->relabels - 1].main.trees.n;
    return p->main.trees.n;
}

double plan_hybrid_share(const struct plan *p)
{
    double both = p->main.algbw + p->pcie.algbw;
    return both > 0 ? p->pcie.algbw / both : 0;
}

double plan_hybrid_pcie_bytes(const struct plan *p, double tdpa_us, double bytes)
{
    if (!p->has_hybrid || p->pcie.algbw <= 0)
        return 0;
    /* D_pcie / B_pcie + T_dpa = D_nvl / B_nvl and D_pcie + D_nvl = D (blink-and-peers 2.6). */
    double bn = p->main.algbw * 1e9, bp = p->pcie.algbw * 1e9, t = tdpa_us * 1e-6;
    double dp = (bytes - t * bn) * bp / (bp + bn);
    return dp > 0 ? dp : 0;
}

BK_MUST_USE
static enum bk_status plan_one(struct plan_set *s, enum collective c, int root,
                               const struct plan_opts *o, struct diag *d)
{
    const struct plan *mirror = mirror_of(s, c, root);
    int mirror_index = mirror ? (int)(mirror - s->v) : -1;
    struct plan *pl;
    BK_CHECK(new_plan(s, c, root, &pl));
    mirror = mirror_index >= 0 ? &s->v[mirror_index] : NULL; /* s->v may have moved */
    pl->method = "trees";
    pl->ring_algbw = ring_algbw(s->ring.gbps, s->topo->ngpus, c);
    struct strbuf ilp;
    sb_init(&ilp);
    enum bk_status st = plan_tier(pl, &s->tier, &s->tier_rev, mirror, s->cluster, o,
                                  o->keep_ilp ? &ilp : NULL, 0, &pl->main, d);
    if (st == BK_OK && ilp.len > 0 && !(pl->ilp_model = sb_take(&ilp)))
        st = BK_ENOMEM;
    sb_free(&ilp);
    BK_CHECK(st);
    if (plan_max_depth(&pl->main.trees) == 1 && s->topo->ngpus > 2 && !s->cluster)
        pl->method = c == COLL_ALLREDUCE ? (strcmp(pl->method, "undirected trees") == 0
                                                ? "undirected one-hop trees"
                                                : "reduce-scatter + all-gather, one-hop")
                                         : "one-hop trees";
    if (s->has_pcie_tier && (!mirror || mirror->has_hybrid)) {
        BK_CHECK(plan_tier(pl, &s->pcie_tier, &s->pcie_tier_rev, mirror, NULL, o, NULL, 1,
                           &pl->pcie, d));
        pl->has_hybrid = pl->pcie.algbw > 0;
        pl->switchover_bytes = s->tdpa_us * 1e-6 * pl->main.algbw * 1e9;
    }
    return BK_OK;
}

/* Refuse a topology past the planner's size limits (plan.h) with a clear error, before any
 * work that grows faster than linearly with it. */
BK_MUST_USE
static enum bk_status check_size(const struct topo *t, struct diag *d)
{
    int ns = t->nservers > 0 ? t->nservers : 1;
    int *gpus = calloc((size_t)ns, sizeof *gpus), *nodes = calloc((size_t)ns, sizeof *nodes);
    if (!gpus || !nodes) {
        free(gpus), free(nodes);
        return BK_ENOMEM;
    }
    for (int i = 0; i < t->nnodes; i++) {
        int sv = t->nodes[i].server >= 0 && t->nodes[i].server < ns ? t->nodes[i].server : 0;
        nodes[sv]++;
        gpus[sv] += t->nodes[i].kind == TOPO_GPU;
    }
    enum bk_status st = BK_OK;
    for (int sv = 0; st == BK_OK && sv < ns; sv++) {
        char where[48] = "the topology";
        if (ns > 1)
            snprintf(where, sizeof where, "server %d of the topology", sv);
        if (gpus[sv] > PLAN_MAX_SERVER_GPUS)
            st = diag_error(d, t->source, DIAG_NOWHERE,
                            "%s has %d GPUs in one server; blinkc plans at most %d", where,
                            gpus[sv], PLAN_MAX_SERVER_GPUS);
        else if (nodes[sv] > PLAN_MAX_SERVER_NODES)
            st = diag_error(d, t->source, DIAG_NOWHERE,
                            "%s has %d nodes (GPUs, switches, CPUs, NICs) in one server; blinkc "
                            "plans at most %d",
                            where, nodes[sv], PLAN_MAX_SERVER_NODES);
    }
    free(gpus), free(nodes);
    if (st == BK_OK && (t->nnodes > PLAN_MAX_NODES || t->ngpus > PLAN_MAX_GPUS))
        st = diag_error(d, t->source, DIAG_NOWHERE,
                        "the topology has %d GPUs and %d nodes in all; blinkc plans at most %d "
                        "GPUs and %d nodes",
                        t->ngpus, t->nnodes, PLAN_MAX_GPUS, PLAN_MAX_NODES);
    return st;
}

enum bk_status plan_all(const struct topo *t, const struct plan_opts *o, struct plan_set *s,
                        struct diag *d)
{
    memset(s, 0, sizeof *s);
    s->topo = t;
    s->tdpa_us = o->tdpa_us;
    struct plan_roots roots = {0};
    enum bk_status st;
    BK_CHECK(check_size(t, d));
    if (t->ngpus < 2) {
        diag_warning(d, t->source, DIAG_NOWHERE,
                     "the allocation has %d GPU; there is nothing to plan", t->ngpus);
        return BK_OK;
    }
    BK_CHECK_GOTO(build_graphs(s, t, o->hybrid, d), st, fail);
    BK_CHECK_GOTO(plan_cluster_new(&s->cluster, t, &s->tier), st, fail);
    BK_CHECK_GOTO(ring_best(t, &s->ring, d), st, fail);
    if (s->ring.gbps <= 0 && !o->quiet_no_ring)
        diag_warning(d, t->source, DIAG_NOWHERE,
                     "no ring connects all %d GPUs; the ring baseline is 0 GB/s", t->ngpus);
    /* Every root planned: roots that a symmetry takes onto each other share their plans,
     * relabelled. */
    unsigned rooted = (1u << COLL_BROADCAST) | (1u << COLL_REDUCE);
    if (o->root < 0 && (o->collectives & rooted) && t->ngpus > 2)
        BK_CHECK_GOTO(plan_roots_find(&roots, s), st, fail);
    /* Allgather before allreduce: its trees are allreduce's reduce-scatter + all-gather
     * candidate. */
    static const enum collective order[] = {COLL_BROADCAST, COLL_REDUCE, COLL_ALLGATHER,
                                            COLL_REDUCESCATTER, COLL_ALLREDUCE};
    for (size_t k = 0; k < BK_ARRAY_LEN(order); k++) {
        enum collective c = order[k];
        if (!(o->collectives & (1u << c)))
            continue;
        if (!collective_has_root(c)) {
            progress_say("planning %s on %d GPUs", collective_name(c), t->ngpus);
            BK_CHECK_GOTO(plan_one(s, c, -1, o, d), st, fail);
            continue;
        }
        int first = s->n; /* this collective's plans, one per root, in root order */
        for (int r = 0; r < t->ngpus; r++) {
            if (o->root >= 0 && o->root != r)
                continue;
            progress_say("planning %s from rank %d of %d", collective_name(c), r, t->ngpus);
            int rep = r;
            const int *perm = roots.links.t ? plan_roots_source(&roots, t, r, &rep) : NULL;
            if (perm && !(rep < r && s->v[first + rep].root == rep))
                perm = NULL; /* rep's plan is not made yet: pack r's own */
            BK_CHECK_GOTO(perm ? plan_relabel(s, &roots, first + rep, perm,
                                              !o->numbers_only_copies, d)
                               : plan_one(s, c, r, o, d),
                          st, fail);
        }
    }
    plan_roots_free(&roots);
    /* Plans of several servers are not tuned (plan_tune.h), so they never hand a size to the
     * rings: no chains for them (32 ranks would need hundreds of runtime streams each). */
    for (int i = 0; i < s->n && !s->cluster; i++)
        BK_CHECK_GOTO(ring_chain_trees(&s->ring, s->v[i].coll, s->v[i].root,
                                       &s->v[i].ring_chains),
                      st, fail);
    return BK_OK;
fail:
    plan_roots_free(&roots);
    plan_set_free(s);
    return st;
}
