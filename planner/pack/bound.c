/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * bound.c - upper bounds on broadcast and allgather bandwidth, from max-flows alone.
 *
 * These are the yardsticks every plan is reported against, so they are computed independently of
 * the tree packers: only maxflow.c is used. Broadcast follows Edmonds' branching theorem (the
 * best rate of an arborescence packing from r is min over v of lambda(r, v)); allgather follows
 * ForestColl (each GPU sends R to all others iff B+(S) >= R |S n GPUs| for every node set S
 * that holds some but not all GPUs). Relays carry flow but are never sinks. Values in GB/s.
 */
#include "pack/bound.h"

#include <math.h>
#include <stdlib.h>

#include "graph/maxflow.h"

/* Newton-Dinkelbach needs a handful of rounds in practice; the cap only guards against bugs. */
#define ALLGATHER_MAX_ROUNDS 10000
/* A decrease of R smaller than this, relative, is rounding noise: the iteration has converged. */
#define ALLGATHER_REL_TOL 1e-12

/* min over GPUs v != root of maxflow(root, v); each run stops at the best value so far. */
static double broadcast_with(struct maxflow *m, const struct pgraph *g, int root)
{
    double best = INFINITY;
    for (int v = 0; v < g->ngpus && best > 0; v++) {
        if (v == root)
            continue;
        double f = maxflow_run(m, root, v, best, NULL);
        if (f < best)
            best = f;
    }
    return isinf(best) ? 0 : best;
}

/*
 * With a single GPU there is nothing to send and no cut to measure; the bound is defined as 0
 * and callers treat n = 1 themselves (the value is never used as a divisor here).
 */
enum bk_status bound_broadcast(const struct pgraph *g, int root, double *gbps)
{
    *gbps = 0;
    if (root < 0 || root >= g->ngpus)
        return BK_EINTERNAL;
    if (g->ngpus < 2)
        return BK_OK;
    struct maxflow *m;
    BK_CHECK(maxflow_new(&m, g, 0, 0));
    *gbps = broadcast_with(m, g, root);
    maxflow_free(m);
    return BK_OK;
}

/*
 * min over roots r of min over v of lambda(r, v) is the cheapest cut S (some GPU inside, some
 * outside) in the out-direction. Fixing GPU 0: if 0 is in S, lambda(0, v) <= c(S) for a GPU v
 * outside; otherwise lambda(v, 0) <= c(S) for a GPU v inside. So 2(n-1) flows suffice instead of
 * n(n-1). 0 with fewer than two GPUs, as for bound_broadcast.
 */
enum bk_status bound_broadcast_min(const struct pgraph *g, const unsigned char *sinks,
                                   double *gbps)
{
    *gbps = 0;
    if (g->ngpus < 2)
        return BK_OK;
    struct maxflow *m;
    BK_CHECK(maxflow_new(&m, g, 0, 0));
    double best = INFINITY;
    for (int v = 1; v < g->ngpus && best > 0; v++) {
        if (sinks && !sinks[v])
            continue;
        double f = maxflow_run(m, 0, v, best, NULL);
        if (f < best)
            best = f;
        f = maxflow_run(m, v, 0, best, NULL);
        if (f < best)
            best = f;
    }
    maxflow_free(m);
    *gbps = isinf(best) ? 0 : best;
    return BK_OK;
}

/* B+(S) / |S n GPUs| for the node set marked in side[] (g's nodes only). */
static double cut_ratio(const struct pgraph *g, const unsigned char *side)
{
    double out = 0;
    int k = 0;
    for (int a = 0; a < g->narcs; a++)
        if (side[g->src[a]] && !side[g->dst[a]])
            out += g->cap[a];
    for (int v = 0; v < g->ngpus; v++)
        k += side[v] != 0;
    return k > 0 ? out / k : INFINITY;
}

/*
 * R* = min over S of B+(S) / |S n GPUs| by Newton-Dinkelbach. With a super source s and arcs
 * s->u of capacity R for every GPU u, a cut T (s in T, GPU v outside) costs
 * n R + (B+(S) - R |S n GPUs|) with S = T - s, so R is feasible iff maxflow(s, v) >= n R for
 * every GPU v. While some v falls short, the min cut of the worst v is the set minimising
 * B+(S) - R |S n GPUs|, and the next R is that set's ratio: a Newton step on this concave
 * piecewise-linear function, so R strictly decreases through ratios of distinct sets and stops
 * after finitely many (in practice a few) rounds. R starts at the smallest single-GPU ratio,
 * min over u of B+({u}), which is an upper bound. Every R taken is some set's ratio, so the
 * result is exact up to rounding in the sums.
 */
enum bk_status bound_allgather(const struct pgraph *g, double *gbps)
{
    return bound_allgather_below(g, INFINITY, NULL, gbps);
}

/* Starting lower than every single GPU's ratio is still a step from above: R stays an upper
 * bound on R*, and a round with no sink short of n R proves R <= R*, so R = R* or, where upper
 * was below n R*, upper itself, which is the min asked for. */
enum bk_status bound_allgather_below(const struct pgraph *g, double upper,
                                     const unsigned char *sinks, double *gbps)
{
    *gbps = 0;
    int n = g->ngpus;
    if (n < 2)
        return BK_OK; /* one GPU: nothing to gather; callers handle n = 1 */
    double r = upper / n;
    for (int u = 0; u < n; u++) {
        double out = 0;
        for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++)
            out += g->cap[g->out_arc[i]];
        if (out < r)
            r = out;
    }
    if (!(r > 0))
        return BK_OK;

    struct maxflow *m;
    BK_CHECK(maxflow_new(&m, g, 1, n));
    unsigned char *side = malloc((size_t)g->nnodes + 1);
    unsigned char *worst = malloc((size_t)g->nnodes + 1);
    enum bk_status st = BK_OK;
    if (!side || !worst) {
        st = BK_ENOMEM;
        goto out;
    }
    int s = g->nnodes;
    for (int u = 0; u < n; u++)
        if (maxflow_add_arc(m, s, u, r) != u) {
            st = BK_EINTERNAL;
            goto out;
        }

    int rounds = 0;
    for (;;) {
        if (++rounds > ALLGATHER_MAX_ROUNDS) {
            st = BK_EINTERNAL;
            goto out;
        }
        for (int u = 0; u < n; u++)
            maxflow_set_extra_cap(m, u, r);
        double need = n * r, low = need;
        int found = 0;
        /* The limit n R stops satisfied sinks early; a short flow is exact, so "worst" is too. */
        for (int v = 0; v < n; v++) {
            if (sinks && !sinks[v])
                continue;
            double f = maxflow_run(m, s, v, need, side);
            if (f < low - MAXFLOW_EPS) {
                low = f;
                found = 1;
                for (int x = 0; x < g->nnodes; x++)
                    worst[x] = side[x];
            }
        }
        if (!found)
            break;
        double next = cut_ratio(g, worst);
        if (!(next < r * (1 - ALLGATHER_REL_TOL))) {
            if (next < r)
                r = next;
            break;
        }
        r = next;
        if (!(r > 0))
            break;
    }
    *gbps = n * r;
out:
    free(side);
    free(worst);
    maxflow_free(m);
    return st;
}
