/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_nccl.c - what NCCL does with a call, on NCCL's own cost model, calibrated against
 * published nccl-tests results (docs/calibration/nccl-published.tsv).
 *
 * NCCL picks an algorithm and protocol per call by the time its tuner predicts (src/graph/
 * tuning.cc): time = latency + bytes / bandwidth for each of ring (LL, LL128, Simple), tree
 * (allreduce; in one server, a chain per channel) and NVLS (allreduce on NVSwitch parts from
 * Hopper on), and the fastest runs. The same form predicts the measured times here, with:
 *
 *   bandwidth: the planner's ring rate B (the best NCCL-style ring set on the allocation's
 *     links) times the efficiency NCCL reaches on that GPU generation, then NCCL's protocol
 *     factors: LL half of it, capped at NCCL's llMaxBw; LL128 0.92 (120 of 128 bytes);
 *     tree 0.92 and, for LL, 1/3.8, for LL128 7/9 (one server), at half for allreduce's two
 *     passes; NVLS: each GPU's NVLink rate times its efficiency, for bytes (n + 1) / n;
 *   latency: the fitted host work per call (sim_params.call_us, the trees' too) plus NCCL's
 *     base and per-step latencies (its tables for ring and tree, by link kind) times one
 *     fitted scale; NVLS's own 25 us unscaled;
 *   steps: allreduce 2(n-1) (tree 2(n-1) too, a chain down and up), allgather and
 *     reduce-scatter n-1, broadcast and reduce n; across servers, the steps between servers
 *     at NCCL's network latency.
 *
 * The fitted values (sim_params_default) and their fit are in docs/calibration/README.md.
 */
#include <math.h>
#include <stdlib.h>

#include "sim/sim.h"
#include "topo/topo_rates.h"

enum proto { LL, LL128, SIMPLE, NPROTO };

/* NCCL's latencies, us (tuning.cc, ncclTunerConstantsDefaults): base per call, and per step by
 * the hardware the step crosses (NVLink, PCI, network). SMP paths count as PCI in NCCL. */
static const double ring_base[NPROTO] = {6.6, 14.0, 8.4};
static const double tree_base[NPROTO] = {6.8, 14.0, 8.4};
static const double ring_hw[3][NPROTO] = {{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};
static const double tree_hw[3][NPROTO] = {{0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}};
/* llMaxBws for one node, GB/s, by generation (Volta, Ampere, Hopper, Blackwell). */
static const double ll_max_gbps[SIM_GENERATIONS] = {39.0, 87.7, 141.0, 282.0};
/* NVLS hardware latency on NVLink, us. */
#define NVLS_HW_US 25.0

enum hw { HW_NVLINK, HW_PCI, HW_NET };

/* NCCL's nNodes: the servers that hold GPUs of the allocation (not the highest server index:
 * --gpus may skip servers). -1 without memory. */
static int servers(const struct topo *t)
{
    int top = 0;
    for (int g = 0; g < t->ngpus; g++)
        top = t->nodes[g].server + 1 > top ? t->nodes[g].server + 1 : top;
    unsigned char *seen = calloc((size_t)top + 1, 1);
    if (!seen)
        return -1;
    int s = 0;
    for (int g = 0; g < t->ngpus; g++)
        if (!seen[t->nodes[g].server]++)
            s++;
    free(seen);
    return s;
}

/* NVLS: one server, sm 90 or newer, every GPU's NVLinks on NVSwitches. The smallest NVLink
 * rate of a GPU, GB/s; 0 where NCCL has no NVLS. */
static double nvls_gbps(const struct topo *t, int gen, int nodes)
{
    if (gen < 2 || nodes > 1 || t->ngpus < 2)
        return 0;
    double least = INFINITY;
    for (int g = 0; g < t->ngpus; g++) {
        double out = 0;
        for (int l = 0; l < t->nlinks; l++) {
            const struct topo_link *k = &t->links[l];
            if (k->kind != TOPO_NVLINK || k->src != g)
                continue;
            if (t->nodes[k->dst].kind != TOPO_NVSWITCH)
                return 0;
            out += k->gbps;
        }
        least = out < least ? out : least;
    }
    return isfinite(least) ? least : 0;
}

/* latency + bytes / rate, us; +inf where the rate is 0 (the protocol is not available). */
static double cost(double lat_us, double bytes, double gbps)
{
    return gbps > 0 ? lat_us + bytes / (gbps * 1e3) : INFINITY;
}

enum bk_status sim_nccl_model(const struct topo *t, const struct ring_result *ring,
                              enum collective c, double bytes, const struct sim_params *p,
                              struct sim_nccl *out, struct diag *d)
{
    out->ring_us = out->dbt_us = out->nvls_us = out->best_us = 0;
    int n = t->ngpus, nodes = servers(t), gen = sim_generation(t);
    if (nodes < 0)
        return BK_ENOMEM;
    if (!ring || !(ring->gbps > 0) || n < 2) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "simulation: no ring to simulate");
        return BK_EUSAGE;
    }
    /* Steps, and those between servers (NCCL's nInterSteps). */
    int steps = c == COLL_ALLREDUCE ? 2 * (n - 1)
                : c == COLL_ALLGATHER || c == COLL_REDUCESCATTER ? n - 1 : n;
    int inter = nodes < 2 ? 0
                : c == COLL_ALLREDUCE ? 2 * (nodes - 1)
                : c == COLL_ALLGATHER || c == COLL_REDUCESCATTER ? nodes - 1 : nodes;
    enum hw intra = ring->kinds == PG_NVLINK ? HW_NVLINK : HW_PCI;
    /* Bus bandwidth to algorithm bandwidth, nccl-tests' factors. */
    double bus = sim_bus_factor(c, n);
    double b = ring->gbps * p->eff[gen];
    /* LL128 only where NCCL enables it by default: NVLink inside servers (Volta and newer). */
    double ring_gbps[NPROTO] = {fmin(ll_max_gbps[gen], 0.5 * b),
                                intra == HW_NVLINK ? 0.92 * b : 0, b};
    double best = INFINITY;
    out->ring_us = INFINITY;
    for (int q = 0; q < NPROTO; q++) {
        double lat =
            ring_base[q] + (steps - inter) * ring_hw[intra][q] + inter * ring_hw[HW_NET][q];
        double us = cost(p->call_us + p->nccl_lat_scale * lat, bytes, ring_gbps[q] / bus);
        out->ring_us = fmin(out->ring_us, us);
    }
    best = out->ring_us;
    if (c == COLL_ALLREDUCE) {
        /* Trees: a chain per channel in a server (NCCL's in-node tree), binary across. */
        double tb = 0.92 * b;
        double tree_gbps[NPROTO] = {fmin(ll_max_gbps[gen], tb / 3.8),
                                    intra == HW_NVLINK ? tb * (nodes < 2 ? 7.0 / 9.0 : 0.915) : 0,
                                    tb};
        int per_node = n / (nodes > 0 ? nodes : 1), log_nodes = 0;
        while ((1 << (log_nodes + 1)) <= nodes)
            log_nodes++;
        double tree = INFINITY;
        for (int q = 0; q < NPROTO; q++) {
            double lat = tree_base[q] + 2 * ((per_node - 1) * tree_hw[intra][q] +
                                             log_nodes * tree_hw[HW_NET][q]);
            tree = fmin(tree, cost(p->call_us + p->nccl_lat_scale * lat, bytes,
                                   tree_gbps[q] * 0.5));
        }
        out->dbt_us = tree;
        best = fmin(best, tree);
        /* NVLS sums in the switch: a GPU's whole buffer leaves it once (the switch reads it
         * for every shard's sum) and its shard's sum once more (the multicast store); as much
         * comes in (its shard's sum, then every shard's). So bytes (n + 1) / n each way. */
        double nv = nvls_gbps(t, gen, nodes) * p->nccl_nvls_eff * n / (n + 1.0);
        if (nv > 0) {
            out->nvls_us = cost(p->call_us + NVLS_HW_US, bytes, nv);
            best = fmin(best, out->nvls_us);
        }
    }
    out->best_us = best;
    return BK_OK;
}
