/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring.c - the NCCL-style ring baseline: the best fractional packing of directed Hamiltonian
 * rings over the GPUs, on the same fluid model (arc capacities in GB/s) the trees are packed on.
 *
 * Two methods (blink-and-peers 6, "an LP over enumerated cycles"):
 *  - exhaustive: for n <= RING_ENUM_MAX GPUs (8 with relays) without NVSwitches, every directed
 *    Hamiltonian cycle (GPU 0 first) whose hops all have a path is a column; each hop takes its
 *    widest relay-only path. The LP max sum x_C s.t. sum_C mult_C(a) x_C <= cap[a] is exact over
 *    that ring family.
 *  - heuristic (NVSwitch graphs, more GPUs): a few ring orders, each with its reverse: rank
 *    order, the order with the widest narrowest hop, and for several servers one order per cut
 *    point of each server's own cycle. A hop through NVSwitches splits over all switch ports (a
 *    multi-commodity flow, one rate t_o per order shared by its hops); other hops take one
 *    widest path, as NCCL's channels do. One LP over all orders.
 *  - a uniform switch plane (every GPU one arc of one capacity c each way to each of the same m
 *    switches, nothing else: HGX B200, GB200 NVL72): one ring in rank order at m c, each GPU's
 *    whole rate, which no ring set can exceed; the heuristic's LP finds the same, in a second on
 *    an NVL72.
 * A hop "through relays only" never passes another GPU: NCCL forwards through GPUs only as ring
 * members, never as a router.
 * The methods live in ring_exhaustive.c and ring_heuristic.c, what they share in ring_lp.c and
 * ring_paths.c (ring_internal.h).
 */
#include "ring/ring.h"

#include <stdlib.h>
#include <string.h>

#include "ring/ring_internal.h"

static int has_nvswitch(const struct topo *t, const struct pgraph *g)
{
    for (int a = 0; a < g->narcs; a++)
        if (t->nodes[pgraph_node(g, g->src[a])].kind == TOPO_NVSWITCH)
            return 1;
    return 0;
}

/* The uniform-plane ring (above); *done is 0 when g is no such plane. */
BK_MUST_USE
static enum bk_status ring_plane(const struct pgraph *g, struct ring_result *r, int *done)
{
    int n = g->ngpus, m = n > 0 ? g->out_off[1] - g->out_off[0] : 0;
    *done = 0;
    if (n < 3 || m < 1 || m >= n)
        return BK_OK;
    int *sw = malloc((size_t)m * sizeof *sw), *to = malloc((size_t)n * m * sizeof *to);
    int *from = malloc((size_t)n * m * sizeof *from);
    enum bk_status st = sw && to && from ? BK_OK : BK_ENOMEM;
    if (st == BK_OK && pgraph_uniform_plane(g, sw, to, from) == m) {
        r->order = malloc((size_t)n * sizeof *r->order);
        r->rate = malloc(sizeof *r->rate);
        st = r->order && r->rate ? BK_OK : BK_ENOMEM;
        for (int v = 0; st == BK_OK && v < n; v++)
            r->order[v] = v;
        if (st == BK_OK) {
            r->n = n;
            r->nrings = 1;
            r->rate[0] = r->gbps = m * g->cap[g->out_arc[0]];
            *done = 1;
        }
    }
    free(sw), free(to), free(from);
    return st;
}

enum bk_status ring_best(const struct topo *t, struct ring_result *r, struct diag *d)
{
    static const unsigned passes[] = {PG_NVLINK, PG_ALL_KINDS};
    memset(r, 0, sizeof *r);
    r->kinds = PG_NVLINK;
    r->exhaustive = 1;
    if (t->ngpus <= 1)
        return BK_OK;
    for (size_t p = 0; p < BK_ARRAY_LEN(passes); p++) {
        struct pgraph g;
        enum bk_status st = BK_OK;
        BK_CHECK(pgraph_build_tier(&g, t, passes[p]));
        ring_result_free(r);
        r->kinds = passes[p];
        r->exhaustive = 1;
        /* With NVSwitches, rings through different switch ports matter: hops split. */
        int plane = 0;
        st = ring_plane(&g, r, &plane);
        if (st == BK_OK && !plane && pgraph_gpus_connected(&g)) {
            int limit = pgraph_has_relays(&g) ? RING_ENUM_MAX_RELAY : RING_ENUM_MAX;
            if (g.ngpus <= limit && !has_nvswitch(t, &g))
                st = ring_exhaustive(t, &g, r, d);
            else
                st = ring_heuristic(t, &g, r, d);
        }
        pgraph_free(&g);
        BK_CHECK(st);
        if (r->gbps > RING_EPS)
            return BK_OK;
    }
    ring_result_free(r);
    r->kinds = PG_ALL_KINDS;
    return BK_OK;
}

void ring_result_free(struct ring_result *r)
{
    free(r->order);
    free(r->rate);
    memset(r, 0, sizeof *r);
}

double ring_algbw(double B, int ngpus, enum collective c)
{
    if (ngpus <= 1)
        return 0;
    double n = ngpus;
    switch (c) {
    case COLL_BROADCAST:
    case COLL_REDUCE:
        return B;
    case COLL_ALLREDUCE: /* 2(n-1) steps of M/n each: t = 2(n-1)/n * M/B */
        return B * n / (2 * (n - 1));
    case COLL_ALLGATHER:
    case COLL_REDUCESCATTER: /* n-1 steps of M/n */
        return B * n / (n - 1);
    default:
        return 0;
    }
}
