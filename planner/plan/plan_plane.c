/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_plane.c - allgather trees on a uniform switch plane, one or two per root.
 *
 * On a plane where every GPU has one arc of capacity c each way to each of the same m switches,
 * and nothing else, the allgather optimum gives every root r = m c / (n-1) and fills every arc
 * both ways (each GPU sends its shard n-1 times and receives n-1 shards). One-hop stars reach
 * it only with one star per root and switch: m n trees, 1296 on an NVL72, and the runtime pays
 * for each. Instead, each receiver takes the n-1 other roots in cyclic order from itself: the
 * first q m whole, q = (n-1) div m per switch (position i through switch i mod m), and the
 * R = (n-1) mod m left over:
 *   R = 0:      nothing is left; one tree per root;
 *   R = m - 1:  two trees per root, of (m-1)/m and 1/m of its rate: leftover j sends the big
 *               one through switch j and the small one through switch m-1, which so takes m-1
 *               small pieces, as much as one big piece on every other switch.
 * Every root meets each position once over the receivers, so its sends fill its own arcs the
 * same way. NVL72 (72 GPUs, 18 switches) and HGX B200 (8 GPUs, 2 switches) have R = m - 1.
 * Other planes are left to the packer.
 */
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"

/* Root h's tree `part` (0: whole roots and the big pieces, 1: the small pieces). */
BK_MUST_USE
static enum bk_status add_tree(int n, int m, int h, int part, const int *to, const int *from,
                               int *parent, int *len, int *buf, const int **paths,
                               struct ptree_set *cand)
{
    int q = (n - 1) / m;
    for (int v = 0; v < n; v++) {
        parent[v] = v == h ? -1 : h;
        len[v] = v == h ? 0 : 2;
        if (v == h)
            continue;
        int i = (h - v - 1 + n) % n; /* h's position among the roots v receives */
        int k = i < q * m ? i % m : part ? m - 1 : i - q * m;
        buf[2 * v] = to[h * m + k];
        buf[2 * v + 1] = from[k * n + v];
        paths[v] = &buf[2 * v];
    }
    struct ptree t;
    BK_CHECK(ptree_make(&t, n, h, parent, paths, len));
    enum bk_status st = ptree_set_add(cand, &t, NULL);
    ptree_free(&t);
    return st;
}

enum bk_status plan_plane_trees(const struct pgraph *g, struct ptree_set *cand)
{
    int n = g->ngpus, m = n > 0 ? g->out_off[1] - g->out_off[0] : 0;
    if (n < 2 || m < 1 || m >= n)
        return BK_OK;
    int *sw = malloc((size_t)m * sizeof *sw), *to = malloc((size_t)n * m * sizeof *to);
    int *from = malloc((size_t)n * m * sizeof *from), *parent = malloc((size_t)n * sizeof *parent);
    int *len = malloc((size_t)n * sizeof *len), *buf = malloc((size_t)n * 2 * sizeof *buf);
    const int **paths = calloc((size_t)n, sizeof *paths);
    enum bk_status st = sw && to && from && parent && len && buf && paths ? BK_OK : BK_ENOMEM;
    int left = (n - 1) % m;
    if (st == BK_OK && pgraph_uniform_plane(g, sw, to, from) == m && (left == 0 || left == m - 1))
        for (int h = 0; st == BK_OK && h < n; h++)
            for (int part = 0; st == BK_OK && part < (left ? 2 : 1); part++)
                st = add_tree(n, m, h, part, to, from, parent, len, buf, paths, cand);
    free(sw), free(to), free(from), free(parent), free(len), free(buf), free(paths);
    return st;
}
