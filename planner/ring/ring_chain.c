/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring_chain.c - rings as chain trees (see ring_chain.h).
 */
#include "ring/ring_chain.h"

#include <stdlib.h>

/* One chain over ring `ord` (n ranks in ring order) ending at or starting from rank `root`:
 * forward chains (data moves forward round the ring, as on a broadcast) have parent(v) =
 * previous rank; backward ones (data moves forward into the root, as on a reduce) have
 * parent(v) = next rank. */
BK_MUST_USE
static enum bk_status add_chain(struct ptree_set *out, const int *ord, int n, int root,
                                int forward, double rate, int *parent, int *len)
{
    for (int i = 0; i < n; i++) {
        int v = ord[i], prev = ord[(i + n - 1) % n], next = ord[(i + 1) % n];
        parent[v] = v == root ? -1 : forward ? prev : next;
        len[v] = 0;
    }
    struct ptree t;
    BK_CHECK(ptree_make(&t, n, root, parent, NULL, len));
    t.rate = rate;
    enum bk_status st = ptree_set_add(out, &t, NULL);
    ptree_free(&t);
    return st;
}

enum bk_status ring_chain_trees(const struct ring_result *r, enum collective c, int root,
                                struct ptree_set *out)
{
    int n = r->n;
    if (r->nrings < 1 || n < 2 || !r->order || !r->rate)
        return BK_OK;
    int *parent = malloc((size_t)n * sizeof *parent), *len = malloc((size_t)n * sizeof *len);
    enum bk_status st = parent && len ? BK_OK : BK_ENOMEM;
    int forward = c == COLL_BROADCAST || c == COLL_ALLGATHER;
    for (int k = 0; st == BK_OK && k < r->nrings; k++) {
        /* Only the heaviest rings (ties to the earlier), in the LP's order: a subset of a
         * feasible set is feasible. */
        int heavier = 0;
        for (int j = 0; j < r->nrings; j++)
            heavier += r->rate[j] > r->rate[k] || (r->rate[j] == r->rate[k] && j < k);
        if (heavier >= RING_CHAIN_MAX_RINGS)
            continue;
        const int *ord = r->order + (size_t)k * (size_t)n;
        if (c == COLL_BROADCAST || c == COLL_REDUCE)
            st = add_chain(out, ord, n, root, forward, r->rate[k], parent, len);
        else
            for (int v = 0; st == BK_OK && v < n; v++)
                st = add_chain(out, ord, n, v, forward,
                               c == COLL_ALLREDUCE ? r->rate[k] / n : r->rate[k], parent, len);
    }
    free(parent);
    free(len);
    return st;
}
