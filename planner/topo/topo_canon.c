/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_canon.c - validation and canonical order of a freshly read topology (topo_finalize).
 *
 * The same machine must give the same graph whichever format described it, so nodes are ordered
 * by what the graph itself says, not by how a file happened to list them: GPUs by the input's own
 * GPU order; every other node by kind, server, then its nearest GPU (hop distance, then lowest GPU
 * number), then bus id, then input order. Ids are then kind prefixes numbered in that order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "topo/topo.h"

struct canon_key {
    int node;     /* index before sorting */
    int dist;     /* hops to the nearest GPU; INT_MAX-ish when unreachable */
    int anchor;   /* lowest GPU position at that distance */
    const struct topo *t;
};

static int cmp_str_nullable(const char *a, const char *b)
{
    if (!a || !b)
        return (a == NULL) - (b == NULL); /* known bus ids first */
    return strcmp(a, b);
}

static int cmp_gpu(const void *pa, const void *pb)
{
    const struct canon_key *a = pa, *b = pb;
    const struct topo_node *na = &a->t->nodes[a->node], *nb = &b->t->nodes[b->node];
    if (na->gpu_order != nb->gpu_order)
        return na->gpu_order < nb->gpu_order ? -1 : 1;
    return a->node - b->node;
}

static int cmp_other(const void *pa, const void *pb)
{
    const struct canon_key *a = pa, *b = pb;
    const struct topo_node *na = &a->t->nodes[a->node], *nb = &b->t->nodes[b->node];
    if (na->kind != nb->kind)
        return na->kind < nb->kind ? -1 : 1;
    if (na->server != nb->server)
        return na->server < nb->server ? -1 : 1;
    if (a->dist != b->dist)
        return a->dist < b->dist ? -1 : 1;
    if (a->anchor != b->anchor)
        return a->anchor < b->anchor ? -1 : 1;
    int c = cmp_str_nullable(na->busid, nb->busid);
    if (c)
        return c;
    return a->node - b->node;
}

BK_MUST_USE
static enum bk_status validate(const struct topo *t, struct diag *d)
{
    const char *file = t->source;
    int ngpus = 0;
    for (int i = 0; i < t->nnodes; i++)
        ngpus += t->nodes[i].kind == TOPO_GPU;
    if (ngpus == 0)
        return diag_error(d, file, DIAG_NOWHERE, "the topology has no GPUs");
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        const char *a = t->nodes[l->src].name, *b = t->nodes[l->dst].name;
        if (l->count < 1)
            return diag_error(d, file, l->loc, "link %s -> %s: link count %d must be at least 1",
                              a, b, l->count);
        if (!isfinite(l->gbps) || l->gbps <= 0 || l->gbps > TOPO_MAX_GBPS)
            return diag_error(d, file, l->loc,
                              "link %s -> %s: bandwidth %g GB/s must be positive, finite and at "
                              "most %g GB/s",
                              a, b, l->gbps, TOPO_MAX_GBPS);
    }
    char *linked = calloc((size_t)t->nnodes, 1);
    if (!linked)
        return BK_ENOMEM;
    for (int i = 0; i < t->nlinks; i++)
        linked[t->links[i].src] = 1;
    enum bk_status st = BK_OK;
    for (int i = 0; i < t->nnodes && st == BK_OK; i++)
        if (t->nodes[i].kind == TOPO_GPU && !linked[i])
            st = diag_error(d, file, t->nodes[i].loc,
                            "GPU '%s' has no links: it cannot take part in any collective",
                            t->nodes[i].name);
    free(linked);
    return st;
}

/* Multi-source BFS from the GPUs (already sorted) filling dist and anchor. */
BK_MUST_USE
static enum bk_status nearest_gpu(const struct topo *t, const int *gpu_pos, int *dist, int *anchor)
{
    int n = t->nnodes;
    int *start = calloc((size_t)n + 1, sizeof *start);
    int *adj = malloc(((size_t)t->nlinks + 1) * sizeof *adj);
    int *queue = malloc(((size_t)n + 1) * sizeof *queue);
    if (!start || !adj || !queue) {
        free(start), free(adj), free(queue);
        return BK_ENOMEM;
    }
    for (int i = 0; i < t->nlinks; i++)
        start[t->links[i].src + 1]++;
    for (int i = 0; i < n; i++)
        start[i + 1] += start[i];
    int *fill = queue; /* reuse as a cursor array before the BFS */
    memcpy(fill, start, (size_t)n * sizeof *fill);
    for (int i = 0; i < t->nlinks; i++)
        adj[fill[t->links[i].src]++] = t->links[i].dst;
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) {
        dist[i] = -1;
        anchor[i] = n;
    }
    for (int i = 0; i < n; i++)
        if (gpu_pos[i] >= 0) {
            dist[i] = 0;
            anchor[i] = gpu_pos[i];
        }
    for (int i = 0; i < n; i++)
        if (gpu_pos[i] >= 0)
            queue[tail++] = i;
    while (head < tail) {
        int u = queue[head++];
        for (int k = start[u]; k < start[u + 1]; k++) {
            int v = adj[k];
            if (dist[v] < 0) {
                dist[v] = dist[u] + 1;
                queue[tail++] = v;
            }
            if (dist[v] == dist[u] + 1 && anchor[u] < anchor[v])
                anchor[v] = anchor[u];
        }
    }
    for (int i = 0; i < n; i++)
        if (dist[i] < 0)
            dist[i] = 0x7fffffff;
    free(start), free(adj), free(queue);
    return BK_OK;
}

enum bk_status topo_finalize(struct topo *t, struct diag *d)
{
    BK_CHECK(validate(t, d));
    int n = t->nnodes;
    enum bk_status st = BK_ENOMEM;
    struct canon_key *keys = calloc((size_t)n, sizeof *keys);
    int *gpu_pos = malloc((size_t)n * sizeof *gpu_pos);
    int *dist = malloc((size_t)n * sizeof *dist);
    int *anchor = malloc((size_t)n * sizeof *anchor);
    int *newpos = malloc((size_t)n * sizeof *newpos);
    struct topo_node *nodes = malloc((size_t)n * sizeof *nodes);
    int *local = NULL;
    if (!keys || !gpu_pos || !dist || !anchor || !newpos || !nodes)
        goto out;

    /* GPUs first, by the input's own order. */
    int ngpus = 0;
    for (int i = 0; i < n; i++)
        if (t->nodes[i].kind == TOPO_GPU)
            keys[ngpus++] = (struct canon_key){i, 0, 0, t};
    qsort(keys, (size_t)ngpus, sizeof *keys, cmp_gpu);
    for (int i = 0; i < n; i++)
        gpu_pos[i] = -1;
    for (int k = 0; k < ngpus; k++) {
        if (k > 0 && t->nodes[keys[k].node].gpu_order == t->nodes[keys[k - 1].node].gpu_order &&
            t->nodes[keys[k].node].gpu_order >= 0) {
            st = diag_error(d, t->source, t->nodes[keys[k].node].loc,
                            "GPU '%s' has the same GPU number as '%s'", t->nodes[keys[k].node].name,
                            t->nodes[keys[k - 1].node].name);
            goto out;
        }
        gpu_pos[keys[k].node] = k;
    }
    BK_CHECK_GOTO(nearest_gpu(t, gpu_pos, dist, anchor), st, out);
    int m = ngpus;
    for (int i = 0; i < n; i++)
        if (t->nodes[i].kind != TOPO_GPU)
            keys[m++] = (struct canon_key){i, dist[i], anchor[i], t};
    qsort(keys + ngpus, (size_t)(n - ngpus), sizeof *keys, cmp_other);

    /* Apply the permutation and name the nodes. */
    int counter[TOPO_NODE_KINDS] = {0};
    static const char *const prefix[TOPO_NODE_KINDS] = {"gpu", "nvs", "pcisw",
                                                        "cpu", "nic", "netsw"};
    /* local[s]: GPUs of server s numbered so far (local_gpu). */
    int nservers = 1;
    for (int i = 0; i < n; i++)
        if (t->nodes[i].server + 1 > nservers)
            nservers = t->nodes[i].server + 1;
    if (!(local = calloc((size_t)nservers, sizeof *local)))
        goto out;
    for (int k = 0; k < n; k++) {
        nodes[k] = t->nodes[keys[k].node];
        newpos[keys[k].node] = k;
        struct topo_node *nd = &nodes[k];
        free(nd->id);
        nd->id = bk_asprintf("%s%d", prefix[nd->kind], counter[nd->kind]++);
        if (!nd->id) {
            /* nodes[] now owns the strings: hand it back before failing. */
            for (int j = k + 1; j < n; j++)
                nodes[j] = t->nodes[keys[j].node];
            free(t->nodes);
            t->nodes = nodes;
            nodes = NULL;
            goto out;
        }
        nd->rank = nd->kind == TOPO_GPU ? k : -1;
        nd->local_gpu = nd->kind == TOPO_GPU ? local[nd->server]++ : -1;
    }
    free(t->nodes);
    t->nodes = nodes;
    t->nodes_cap = n;
    nodes = NULL;
    t->ngpus = ngpus;
    t->nservers = nservers;
    for (int i = 0; i < t->nlinks; i++) {
        t->links[i].src = newpos[t->links[i].src];
        t->links[i].dst = newpos[t->links[i].dst];
    }
    qsort(t->links, (size_t)t->nlinks, sizeof *t->links, topo_link_cmp);
    st = BK_OK;
    for (int i = 1; i < t->nlinks && st == BK_OK; i++) {
        const struct topo_link *a = &t->links[i - 1], *b = &t->links[i];
        if (a->src == b->src && a->dst == b->dst && a->kind == b->kind)
            st = diag_error(d, t->source, b->loc,
                            "duplicate %s link between '%s' and '%s' (declare one link with a "
                            "count instead)",
                            topo_link_kind_name(b->kind), t->nodes[b->src].name,
                            t->nodes[b->dst].name);
    }
    if (st == BK_OK)
        st = topo_reindex(t);
out:
    free(keys), free(gpu_pos), free(dist), free(anchor), free(newpos), free(nodes), free(local);
    return st;
}
