/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pgraph_staged.c - the tier host-staged edges cross: PCIe switches split so that every path
 * from GPU to GPU turns in a CPU's memory (pgraph.h).
 */
#include "graph/pgraph.h"

#include <stdlib.h>
#include <string.h>

#include "graph/pgraph_internal.h"

/* dist[v]: PCIe hops from v to the nearest CPU over g's arcs (either way), or -1. */
static void cpu_distances(const struct pgraph *g, const struct topo *t, int *dist, int *queue)
{
    int head = 0, tail = 0;
    for (int v = 0; v < g->nnodes; v++) {
        dist[v] = t->nodes[v].kind == TOPO_CPU ? 0 : -1;
        if (dist[v] == 0)
            queue[tail++] = v;
    }
    while (head < tail) {
        int v = queue[head++];
        for (int i = g->in_off[v]; i < g->in_off[v + 1]; i++) {
            int a = g->in_arc[i], w = g->src[a];
            if (dist[w] < 0 && t->links[g->link[a]].kind == TOPO_PCIE) {
                dist[w] = dist[v] + 1;
                queue[tail++] = w;
            }
        }
    }
}

/* Each arc's reverse: the arc of the same kind whose link joins the same two topology nodes the
 * other way (the split halves make the graph's own endpoints differ). */
static void reverses_by_links(struct pgraph *g, const struct topo *t)
{
    for (int a = 0; a < g->narcs; a++) {
        const struct topo_link *la = &t->links[g->link[a]];
        g->rev[a] = -1;
        for (int b = 0; b < g->narcs && g->rev[a] < 0; b++) {
            const struct topo_link *lb = &t->links[g->link[b]];
            if (lb->src == la->dst && lb->dst == la->src && lb->kind == la->kind)
                g->rev[a] = b;
        }
    }
}

enum bk_status pgraph_build_tier(struct pgraph *g, const struct topo *t, unsigned kinds)
{
    if ((kinds & PG_KIND(TOPO_PCIE)) && topo_no_p2p(t))
        return pgraph_build_staged(g, t, kinds);
    return pgraph_build(g, t, kinds);
}

enum bk_status pgraph_build_staged(struct pgraph *g, const struct topo *t, unsigned kinds)
{
    struct pgraph flat;
    BK_CHECK(pgraph_build(&flat, t, kinds));
    int n = t->nnodes;
    int *dist = malloc((size_t)n * sizeof *dist), *down = malloc((size_t)n * sizeof *down);
    int *queue = malloc((size_t)n * sizeof *queue);
    enum bk_status st = dist && down && queue ? BK_OK : BK_ENOMEM;
    int nodes = n;
    if (st == BK_OK) {
        cpu_distances(&flat, t, dist, queue);
        for (int v = 0; v < n; v++)
            down[v] = t->nodes[v].kind == TOPO_PCIE_SWITCH && dist[v] > 0 ? nodes++ : v;
        st = pgraph_alloc_arrays(g, nodes, flat.narcs);
    }
    if (st == BK_OK && !(g->node = malloc((size_t)nodes * sizeof *g->node))) {
        pgraph_free(g);
        st = BK_ENOMEM;
    }
    if (st == BK_OK) {
        g->ngpus = flat.ngpus;
        g->kinds = kinds;
        for (int v = 0; v < n; v++)
            g->node[v] = g->node[down[v]] = v;
        for (int a = 0; a < flat.narcs; a++) {
            int u = flat.src[a], v = flat.dst[a];
            /* Going down (away from the CPU) an arc leaves a switch's down half and enters
             * the next one's; going up, or level, it joins the up halves (the switches' own
             * indices). So up meets down only in a CPU. */
            int going_down = dist[u] >= 0 && dist[v] >= 0 && dist[u] < dist[v];
            g->src[a] = going_down ? down[u] : u;
            g->dst[a] = going_down ? down[v] : v;
            g->cap[a] = flat.cap[a];
            g->link[a] = flat.link[a];
        }
        pgraph_build_adjacency(g);
        reverses_by_links(g, t);
    }
    pgraph_free(&flat);
    free(dist);
    free(down);
    free(queue);
    return st;
}
