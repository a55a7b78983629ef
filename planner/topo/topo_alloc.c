/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_alloc.c - cutting an allocation (--gpus 0,1,3) out of a finalized topology.
 *
 * A job owns only its GPUs; it may route through switches, CPUs and NICs but never through
 * another job's GPU. So the kept graph is the allocated GPUs plus every non-GPU node that lies on
 * a path between them: start from all non-GPU nodes and prune non-GPU leaves until none is left,
 * then keep what is connected to the allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

/* Distinct kept neighbours of u (links are stored both ways, so out-links suffice). */
static int kept_degree(const struct topo *t, const char *keep, int u)
{
    int deg = 0, last = -1;
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        if (l->src == u && keep[l->dst] && l->dst != last) {
            deg++;
            last = l->dst;
        }
    }
    return deg;
}

enum bk_status topo_restrict(const struct topo *in, const int *gpus, int ngpus, struct topo *out,
                             struct diag *d)
{
    topo_init(out);
    if (ngpus < 1)
        return diag_error(d, NULL, DIAG_NOWHERE, "--gpus: the allocation is empty"), BK_EUSAGE;
    int n = in->nnodes;
    char *keep = calloc((size_t)n, 1);
    int *rank = malloc((size_t)n * sizeof *rank);
    int *queue = malloc((size_t)n * sizeof *queue);
    int *newidx = malloc((size_t)n * sizeof *newidx);
    enum bk_status st = BK_ENOMEM;
    if (!keep || !rank || !queue || !newidx)
        goto out;
    for (int i = 0; i < n; i++) {
        rank[i] = -1;
        keep[i] = in->nodes[i].kind != TOPO_GPU;
    }
    for (int k = 0; k < ngpus; k++) {
        int g = gpus[k];
        if (g < 0 || g >= in->ngpus) {
            diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                     "--gpus: GPU %d is out of range (the topology has %d GPUs, 0-%d)", g,
                     in->ngpus, in->ngpus - 1);
            st = BK_EUSAGE;
            goto out;
        }
        if (rank[g] >= 0) {
            diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "--gpus: GPU %d is listed twice", g);
            st = BK_EUSAGE;
            goto out;
        }
        rank[g] = k;
        keep[g] = 1;
    }
    /* Prune non-GPU nodes with fewer than two kept neighbours until none is left. */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int u = 0; u < n; u++)
            if (keep[u] && in->nodes[u].kind != TOPO_GPU && kept_degree(in, keep, u) < 2) {
                keep[u] = 0;
                changed = 1;
            }
    }
    /* Keep only what the first GPU reaches; every allocated GPU must be among it. */
    char *seen = calloc((size_t)n, 1);
    if (!seen)
        goto out;
    int head = 0, tail = 0;
    queue[tail++] = gpus[0];
    seen[gpus[0]] = 1;
    while (head < tail) {
        int u = queue[head++];
        for (int i = 0; i < in->nlinks; i++) {
            const struct topo_link *l = &in->links[i];
            if (l->src == u && keep[l->dst] && !seen[l->dst]) {
                seen[l->dst] = 1;
                queue[tail++] = l->dst;
            }
        }
    }
    for (int k = 1; k < ngpus; k++)
        if (!seen[gpus[k]]) {
            free(seen);
            st = diag_error(d, in->source, DIAG_NOWHERE,
                            "the allocation is disconnected: %s cannot reach %s without passing "
                            "through a GPU outside the allocation",
                            in->nodes[gpus[k]].id, in->nodes[gpus[0]].id);
            goto out;
        }
    memcpy(keep, seen, (size_t)n);
    free(seen);

    /* Build the result: GPUs in allocation order, then kept nodes in canonical order. */
    int m = 0;
    for (int k = 0; k < ngpus; k++)
        newidx[gpus[k]] = m++;
    for (int u = 0; u < n; u++)
        if (keep[u] && in->nodes[u].kind != TOPO_GPU)
            newidx[u] = m++;
    struct topo tmp;
    BK_CHECK_GOTO(topo_copy(in, &tmp), st, out);
    /* Move kept nodes into place, dropping the rest. */
    struct topo_node *nodes = calloc((size_t)m ? (size_t)m : 1, sizeof *nodes);
    if (!nodes) {
        topo_free(&tmp);
        st = BK_ENOMEM;
        goto out;
    }
    for (int u = 0; u < n; u++) {
        if (keep[u]) {
            nodes[newidx[u]] = tmp.nodes[u];
            nodes[newidx[u]].rank = rank[u];
            memset(&tmp.nodes[u], 0, sizeof tmp.nodes[u]);
        }
    }
    int nservers = 1;
    for (int i = 0; i < m; i++)
        if (nodes[i].server + 1 > nservers)
            nservers = nodes[i].server + 1;
    for (int u = 0; u < n; u++)
        topo_node_free(&tmp.nodes[u]);
    free(tmp.nodes);
    tmp.nodes = nodes;
    tmp.nnodes = tmp.nodes_cap = m;
    int nl = 0;
    for (int i = 0; i < tmp.nlinks; i++) {
        struct topo_link l = tmp.links[i];
        if (keep[l.src] && keep[l.dst]) {
            l.src = newidx[l.src];
            l.dst = newidx[l.dst];
            tmp.links[nl++] = l;
        }
    }
    tmp.nlinks = nl;
    qsort(tmp.links, (size_t)nl, sizeof *tmp.links, topo_link_cmp);
    tmp.ngpus = ngpus;
    tmp.nservers = nservers;
    *out = tmp;
    st = topo_reindex(out);
    if (st != BK_OK)
        topo_free(out);
out:
    free(keep), free(rank), free(queue), free(newidx);
    return st;
}
