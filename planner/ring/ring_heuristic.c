/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring_heuristic.c - the ring baseline for NVSwitch graphs and many GPUs: a few chosen orders
 * and their reverses, hops split over relay paths as a concurrent flow, one LP over all.
 */
#include "ring/ring_internal.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_auto.h"

/* ord and its reverse (rev is scratch). */
BK_MUST_USE
static enum bk_status orders_add_pair(struct orders *o, const int *ord, int *rev)
{
    for (int k = 0; k < o->n; k++)
        rev[k] = ord[o->n - 1 - k];
    BK_CHECK(orders_add(o, ord));
    return orders_add(o, rev);
}

/*
 * The nodes on some relay-only path from GPU i to GPU j, reachable from i and reaching j,
 * passing relays only, into list in index order; returns how many (0: no path). Flow elsewhere
 * could only circulate, so it is left out. Keeps the LP small: a 32-GPU cluster has ~100 relay
 * arcs, but most hops are direct. fwd: scratch of g->nnodes zeros, left zero; queue: room for
 * g->nnodes; so is list. The work is that of the nodes reached, not of the cluster.
 */
static int hop_nodes(const struct topo *t, const struct pgraph *g, int i, int j,
                     unsigned char *fwd, int *queue, int *list)
{
    int si = t->nodes[i].server, sj = t->nodes[j].server;
    /* GPUs joined by a direct link do not split (NCCL's NVL path type): one widest path. */
    for (int p = g->out_off[i]; p < g->out_off[i + 1]; p++)
        if (g->dst[g->out_arc[p]] == j) {
            list[0] = i < j ? i : j;
            list[1] = i < j ? j : i;
            return 2;
        }
    int head = 0, tail = 0, n = 0;
    queue[tail++] = i;
    fwd[i] = 1;
    while (head < tail) {
        int u = queue[head++];
        if (u != i && u < g->ngpus)
            continue;
        for (int p = g->out_off[u]; p < g->out_off[u + 1]; p++) {
            int v = g->dst[g->out_arc[p]];
            if (!fwd[v] && (v == j || (v >= g->ngpus && relay_ok(t, g, v, si, sj)))) {
                fwd[v] = 1;
                queue[tail++] = v;
            }
        }
    }
    /* Backwards from j over the forward marks; fwd[] = 2 marks a node listed. */
    if (fwd[j]) {
        list[n++] = j;
        fwd[j] = 2;
        for (head = 0; head < n;) {
            int u = list[head++];
            if (u == i)
                continue;
            for (int p = g->in_off[u]; p < g->in_off[u + 1]; p++) {
                int v = g->src[g->in_arc[p]];
                if (fwd[v] == 1 && (v == i || v >= g->ngpus)) {
                    fwd[v] = 2;
                    list[n++] = v;
                }
            }
        }
    }
    for (int k = 0; k < tail; k++)
        fwd[queue[k]] = 0;
    qsort(list, (size_t)n, sizeof *list, ring_cmp_int);
    return n;
}

/* An arc's server block for lpb_solve_blocks: that of its ends, one of them a network switch at
 * most (topo_node_server); -1 across servers. */
static int arc_block(const struct topo *t, const struct pgraph *g, int a)
{
    int ks = topo_node_server(t, g->src[a]), ke = topo_node_server(t, g->dst[a]);
    if (ks < 0 || ke < 0)
        return ks < 0 ? ke : ks;
    return ks == ke ? ks : -1;
}

/* Row id's block, in blk (grown as rows are added). */
BK_MUST_USE
static enum bk_status set_block(int **blk, int *cap, int id, int k)
{
    BK_CHECK(bk_grow_int((void **)blk, cap, id, sizeof **blk));
    (*blk)[id] = k;
    return BK_OK;
}

/*
 * The LP over the orders: per order a rate t_o; all hops share the arc capacities; maximise
 * sum t_o. A hop through NVSwitches splits: a flow from its first GPU to its second through
 * useful relays (out = t_o at the source, conservation at relays), since a ring uses every
 * switch port (NCCL models the NVSwitch as one node). Any other hop, like NCCL's channels, takes
 * one path: the direct link, or the widest relay path, charged to t_o's own column. An order
 * with a hop that has no path is left out.
 */
BK_MUST_USE
static enum bk_status flow_lp(const struct topo *t, const struct pgraph *g,
                              const struct orders *o, struct scratch *sc, struct ring_result *r,
                              struct diag *d)
{
    int n = o->n, V = g->nnodes;
    size_t na = g->narcs > 0 ? (size_t)g->narcs : 1;
    struct lpb lp = {0};
    enum bk_status st = BK_ENOMEM;
    double *x = NULL, *mult = calloc(na, sizeof *mult);
    /* Per hop of the order at hand: its nodes (hop_nodes) at list[off[h] .. off[h + 1]), each
     * with its conservation row in rows[] (-1 for none), and the row of its first GPU. */
    int *list = NULL, *rows = NULL, list_cap = 0, rows_cap = 0;
    int *off = malloc(((size_t)n + 1) * sizeof *off);
    int *src_row = malloc((size_t)n * sizeof *src_row);
    int *path = malloc((size_t)V * sizeof *path), *queue = malloc((size_t)V * sizeof *queue);
    int *tcol = malloc((size_t)o->count * sizeof *tcol);
    int *row_of = malloc((size_t)V * sizeof *row_of);
    unsigned char *fwd = calloc((size_t)V, 1), *in_hop = calloc((size_t)V, 1);
    unsigned char *split = malloc((size_t)n);
    int *blk = NULL, blk_cap = 0, *hop_arcs = malloc(na * sizeof *hop_arcs);
    if (!mult || !off || !src_row || !path || !queue || !tcol || !row_of || !fwd || !in_hop ||
        !split || !hop_arcs)
        goto out;
    for (int v = 0; v < V; v++)
        row_of[v] = -1;
    for (int a = 0; a < g->narcs; a++) {
        int id;
        BK_CHECK_GOTO(lpb_row(&lp, LP_LE, g->cap[a], &id), st, out);
        BK_CHECK_GOTO(set_block(&blk, &blk_cap, id, arc_block(t, g, a)), st, out);
    }
    for (int q = 0; q < o->count; q++) {
        const int *ord = o->v + (size_t)q * n;
        int ok = 1, nrows0 = lp.nrows;
        tcol[q] = -1;
        off[0] = 0;
        /* Classify the hops; fixed paths add to mult[], split hops get their rows. */
        for (int h = 0; h < n && ok; h++) {
            int i = ord[h], j = ord[(h + 1) % n], len = 0;
            BK_CHECK_GOTO(bk_grow_int((void **)&list, &list_cap, off[h] + V, sizeof *list), st,
                          out);
            BK_CHECK_GOTO(bk_grow_int((void **)&rows, &rows_cap, off[h] + V, sizeof *rows), st,
                          out);
            int *u = list + off[h], nu = hop_nodes(t, g, i, j, fwd, queue, u);
            off[h + 1] = off[h] + nu;
            split[h] = 0;
            src_row[h] = -1;
            for (int k = 0; k < nu; k++)
                split[h] |= u[k] >= g->ngpus && t->nodes[pgraph_node(g, u[k])].kind == TOPO_NVSWITCH;
            if (!split[h]) {
                ok = widest_path(g, g->cap, i, j, path, &len, sc) > 0;
                for (int k = 0; k < len; k++)
                    mult[path[k]] += 1;
                continue;
            }
            for (int k = 0; k < nu; k++) {
                int *row = &rows[off[h] + k];
                *row = -1;
                if (u[k] != j) {
                    BK_CHECK_GOTO(lpb_row(&lp, LP_EQ, 0.0, row), st, out);
                    BK_CHECK_GOTO(set_block(&blk, &blk_cap, *row, topo_node_server(t, u[k])), st,
                                  out);
                }
                if (u[k] == i)
                    src_row[h] = *row;
            }
        }
        if (!ok) { /* drop the order and its rows */
            lp.nrows = nrows0;
            memset(mult, 0, na * sizeof *mult);
            continue;
        }
        tcol[q] = lp.ncols;
        BK_CHECK_GOTO(lpb_col(&lp, 1.0), st, out);
        for (int a = 0; a < g->narcs; a++)
            if (mult[a] != 0)
                BK_CHECK_GOTO(lpb_entry(&lp, a, mult[a]), st, out);
        memset(mult, 0, na * sizeof *mult);
        for (int h = 0; h < n; h++)
            if (split[h])
                BK_CHECK_GOTO(lpb_entry(&lp, src_row[h], -1.0), st, out);
        for (int h = 0; h < n; h++) {
            if (!split[h])
                continue;
            int i = ord[h], na_hop = 0;
            const int *u = list + off[h];
            int nu = off[h + 1] - off[h];
            for (int k = 0; k < nu; k++) {
                in_hop[u[k]] = 1;
                row_of[u[k]] = rows[off[h] + k];
            }
            /* The hop's arcs, from its nodes' out-arcs (not all the cluster's), in index order
             * so that the LP's columns come in the same order on any cluster. */
            for (int k = 0; k < nu; k++) {
                int s = u[k];
                if (s != i && s < g->ngpus)
                    continue;
                for (int p = g->out_off[s]; p < g->out_off[s + 1]; p++) {
                    int a = g->out_arc[p], e = g->dst[a];
                    if (in_hop[e] && e != i)
                        hop_arcs[na_hop++] = a;
                }
            }
            qsort(hop_arcs, (size_t)na_hop, sizeof *hop_arcs, ring_cmp_int);
            for (int k = 0; k < na_hop; k++) {
                int a = hop_arcs[k], s = g->src[a], e = g->dst[a];
                BK_CHECK_GOTO(lpb_col(&lp, 0.0), st, out);
                BK_CHECK_GOTO(lpb_entry(&lp, a, 1.0), st, out);
                BK_CHECK_GOTO(lpb_entry(&lp, row_of[s], 1.0), st, out);
                if (row_of[e] >= 0)
                    BK_CHECK_GOTO(lpb_entry(&lp, row_of[e], -1.0), st, out);
            }
            for (int k = 0; k < nu; k++) {
                in_hop[u[k]] = 0;
                row_of[u[k]] = -1;
            }
        }
    }
    r->gbps = 0;
    r->nrings = 0;
    st = BK_OK;
    if (lp.ncols == 0)
        goto out;
    st = BK_ENOMEM;
    x = malloc((size_t)lp.ncols * sizeof *x);
    if (!x)
        goto out;
    BK_CHECK_GOTO(t->nservers > 1 ? lpb_solve_blocks(&lp, blk, t->nservers, x, &r->gbps, d)
                                  : lpb_solve(&lp, x, &r->gbps, d),
                  st, out);
    BK_CHECK_GOTO(keep_rings(r, o, tcol, x), st, out);
out:
    free(x);
    free(mult);
    lpb_free(&lp);
    free(list);
    free(rows);
    free(off);
    free(src_row);
    free(path);
    free(queue);
    free(tcol);
    free(row_of);
    free(fwd);
    free(in_hop);
    free(split);
    free(blk);
    free(hop_arcs);
    return st;
}

/*
 * w[i*n+j]: the widest relay-only GPU i -> GPU j path under capacities c (0: none); one search
 * per source and target server, since the relays allowed depend on both (relay_ok). The GPUs
 * are grouped by server first, so a search fills its server's row entries directly.
 *
 * Identical servers (twin, topo_server_twins; NULL for none) give the same widths relabelled:
 * only the first server of each class searches from its GPUs, and only to its own server and
 * to one server of each class besides; the rest of the matrix is copied through the swaps.
 */
BK_MUST_USE
static enum bk_status hop_widths(const struct pgraph *g, const double *c, const int *twin,
                                 struct scratch *s, double *w)
{
    int n = g->ngpus, nsv = 1;
    for (int j = 0; j < n; j++)
        if (s->t->nodes[j].server + 1 > nsv)
            nsv = s->t->nodes[j].server + 1;
    int *at = calloc((size_t)nsv + 1, sizeof *at), *second = malloc((size_t)nsv * sizeof *second);
    int *members = malloc(((size_t)n + 1) * sizeof *members);
    int *pos = malloc(((size_t)n + 1) * sizeof *pos);
    if (!at || !second || !members || !pos) {
        free(at);
        free(second);
        free(members);
        free(pos);
        return BK_ENOMEM;
    }
    for (int j = 0; j < n; j++)
        at[s->t->nodes[j].server + 1]++;
    for (int v = 0; v < nsv; v++)
        at[v + 1] += at[v];
    for (int j = 0; j < n; j++) /* by server, each in index order */
        members[at[s->t->nodes[j].server]++] = j;
    for (int v = nsv; v > 0; v--) /* at[] moved one server on while filling: shift it back */
        at[v] = at[v - 1];
    at[0] = 0;
    for (int sv = 0; sv < nsv; sv++) /* pos[j]: j's place among its server's GPUs */
        for (int q = at[sv]; q < at[sv + 1]; q++)
            pos[members[q]] = q - at[sv];
    for (int sv = 0; sv < nsv; sv++) /* second[c]: the server after c in c's class, or -1 */
        second[sv] = -1;
    for (int sv = 0; twin && sv < nsv; sv++)
        if (twin[sv] != sv && second[twin[sv]] < 0)
            second[twin[sv]] = sv;
    for (int i = 0; i < n; i++) {
        int si = s->t->nodes[i].server;
        if (twin && twin[si] != si)
            continue; /* copied below */
        for (int sv = 0; sv < nsv; sv++) {
            if (at[sv] == at[sv + 1])
                continue;
            /* A server alike an earlier one (neither i's) has its widths from i: their swap
             * fixes i's server. */
            int from = !twin || sv == si ? sv : twin[sv] != si ? twin[sv] : second[twin[sv]];
            if (from >= 0 && from != sv) {
                for (int q = 0; q < at[sv + 1] - at[sv]; q++)
                    w[i * n + members[at[sv] + q]] = w[i * n + members[at[from] + q]];
                continue;
            }
            widest_from(g, c, i, sv, s);
            for (int q = at[sv]; q < at[sv + 1]; q++)
                w[i * n + members[q]] = i == members[q] ? 0 : s->bw[members[q]];
        }
    }
    /* GPU i of a server with an earlier twin: w[i][j] = w[swap(i)][swap(j)]. */
    for (int i = 0; twin && i < n; i++) {
        int si = s->t->nodes[i].server, ci = twin[si];
        if (ci == si)
            continue;
        int fi = members[at[ci] + pos[i]];
        for (int j = 0; j < n; j++) {
            int sj = s->t->nodes[j].server;
            int fj = sj == si ? members[at[ci] + pos[j]] : sj == ci ? members[at[si] + pos[j]] : j;
            w[i * n + j] = w[fi * n + fj];
        }
    }
    free(at);
    free(second);
    free(members);
    free(pos);
    return BK_OK;
}

/* Is every vertex reachable from 0, and 0 from every vertex, in the graph w >= th? */
static int strongly_connected(const double *w, int m, double th, int *queue, unsigned char *seen)
{
    for (int dir = 0; dir < 2; dir++) {
        memset(seen, 0, (size_t)m);
        int head = 0, tail = 0, cnt = 1;
        queue[tail++] = 0;
        seen[0] = 1;
        while (head < tail) {
            int u = queue[head++];
            for (int v = 0; v < m; v++) {
                double x = dir ? w[v * m + u] : w[u * m + v];
                if (!seen[v] && x >= th) {
                    seen[v] = 1;
                    cnt++;
                    queue[tail++] = v;
                }
            }
        }
        if (cnt < m)
            return 0;
    }
    return 1;
}

struct nbr {
    double w;
    int v;
};

static int cmp_nbr(const void *a, const void *b)
{
    const struct nbr *x = a, *y = b;
    if (x->w != y->w)
        return x->w < y->w ? 1 : -1;
    return (x->v > y->v) - (x->v < y->v);
}

static int cmp_double_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

struct ham {
    const double *w;        /* [m*m] local widths */
    const struct nbr *nbr;  /* per vertex, every vertex by width desc, then index */
    int m;
    double th;
    long budget;
    int *ord;
    unsigned char *used;
};

/* Widest neighbour first; a budget bounds the search as NCCL's does (2^14 steps there). */
static int ham_dfs(struct ham *h, int k)
{
    int m = h->m, last = h->ord[k - 1];
    if (k == m)
        return h->w[last * m + h->ord[0]] >= h->th;
    for (int p = 0; p < m; p++) {
        const struct nbr *nb = &h->nbr[last * m + p];
        if (nb->w < h->th)
            break; /* sorted: no wider neighbour follows */
        if (h->used[nb->v] || --h->budget < 0)
            continue;
        h->used[nb->v] = 1;
        h->ord[k] = nb->v;
        if (ham_dfs(h, k + 1))
            return 1;
        h->used[nb->v] = 0;
        if (h->budget < 0)
            return 0;
    }
    return 0;
}

/* Binary search over the distinct widths ths[0..nth) (descending) for the widest threshold whose
 * graph has a cycle the DFS finds; feasibility is monotone up to the budget. Returns its index or
 * -1; the cycle (local indices, 0 first) goes to ord. */
static int widest_threshold(struct ham *h, const double *ths, int nth, int *queue, int *ord)
{
    int lo = 0, hi = nth - 1, best = -1;
    while (lo <= hi) {
        int mid = best < 0 ? hi : lo + (hi - lo) / 2;
        h->th = ths[mid];
        h->budget = RING_DFS_BUDGET;
        h->ord[0] = 0;
        int ok = strongly_connected(h->w, h->m, h->th, queue, h->used);
        if (ok) {
            memset(h->used, 0, (size_t)h->m);
            h->used[0] = 1;
            ok = ham_dfs(h, 1);
        }
        if (ok) {
            best = mid;
            memcpy(ord, h->ord, (size_t)h->m * sizeof *ord);
            hi = mid - 1;
        } else if (best < 0) {
            break; /* not even the narrowest threshold has a cycle */
        } else {
            lo = mid + 1;
        }
    }
    return best;
}

/*
 * A cycle over the GPUs set[0..m) (set[0] first) maximising its narrowest hop under the widths w
 * ([n*n]); the GPUs go to ord[0..m), the narrowest hop to *res (0: no cycle found).
 */
BK_MUST_USE
static enum bk_status bottleneck_cycle(const double *w, int n, const int *set, int m, int *ord,
                                       double *res)
{
    *res = 0;
    if (m == 1) {
        ord[0] = set[0];
        *res = DBL_MAX;
        return BK_OK;
    }
    size_t mm = (size_t)m * m;
    double *wm = malloc(mm * sizeof *wm), *ths = malloc(mm * sizeof *ths);
    struct nbr *nbr = malloc(mm * sizeof *nbr);
    int *queue = malloc((size_t)m * sizeof *queue), *cur = malloc((size_t)m * sizeof *cur);
    int *loc = malloc((size_t)m * sizeof *loc);
    unsigned char *used = malloc((size_t)m);
    enum bk_status st = BK_ENOMEM;
    if (!wm || !ths || !nbr || !queue || !cur || !loc || !used)
        goto out;
    int nth = 0;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < m; j++) {
            double x = i == j ? 0 : w[set[i] * n + set[j]];
            wm[i * m + j] = x;
            nbr[i * m + j] = (struct nbr){x, j};
        }
        qsort(nbr + (size_t)i * m, (size_t)m, sizeof *nbr, cmp_nbr);
        /* The row's distinct widths (it is sorted): a few per row, where m * m would be sorted
         * below for 1,024 GPUs. */
        for (int j = 0; j < m; j++) {
            double x = nbr[(size_t)i * m + j].w;
            if (x > RING_EPS && (j == 0 || x != nbr[(size_t)i * m + j - 1].w))
                ths[nth++] = x;
        }
    }
    qsort(ths, (size_t)nth, sizeof *ths, cmp_double_desc);
    int u = 0;
    for (int k = 0; k < nth; k++)
        if (u == 0 || ths[k] != ths[u - 1])
            ths[u++] = ths[k];
    struct ham h = {wm, nbr, m, 0, 0, cur, used};
    if (widest_threshold(&h, ths, u, queue, loc) >= 0) {
        *res = DBL_MAX;
        for (int k = 0; k < m; k++) {
            double x = wm[loc[k] * m + loc[(k + 1) % m]];
            *res = x < *res ? x : *res;
            ord[k] = set[loc[k]];
        }
    }
    st = BK_OK;
out:
    free(wm);
    free(ths);
    free(nbr);
    free(queue);
    free(cur);
    free(loc);
    free(used);
    return st;
}

/*
 * Multi-server orders (NCCL's shape: one NVLink path through each server, NICs between). Each
 * server's GPUs get their own widest cycle; order k cuts every server's cycle before its k-th
 * GPU, so the rings enter and leave the servers through different GPUs, PCIe switches and NICs.
 * Servers follow in order of their first GPU rank.
 */
BK_MUST_USE
static enum bk_status server_orders(const struct topo *t, const struct pgraph *g,
                                    struct scratch *sc, const double *w, struct orders *o,
                                    int *ord, int *rev)
{
    int n = g->ngpus;
    int *srv = malloc((size_t)n * sizeof *srv), *set = malloc((size_t)n * sizeof *set);
    int *cyc = malloc((size_t)n * sizeof *cyc), *start = malloc(((size_t)n + 1) * sizeof *start);
    int *path = malloc(((size_t)g->nnodes + 1) * sizeof *path);
    enum bk_status st = BK_ENOMEM;
    if (!srv || !set || !cyc || !start || !path)
        goto out;
    int ns = 0, mmax = 0, pos = 0;
    for (int v = 0; v < n; v++) {
        int k = 0;
        while (k < ns && srv[k] != t->nodes[v].server)
            k++;
        if (k == ns)
            srv[ns++] = t->nodes[v].server;
    }
    st = BK_OK;
    if (ns < 2)
        goto out;
    /* cyc[start[k] ..) is server k's cycle. */
    for (int k = 0; k < ns; k++) {
        int m = 0;
        double res;
        for (int v = 0; v < n; v++)
            if (t->nodes[v].server == srv[k])
                set[m++] = v;
        start[k] = pos;
        BK_CHECK_GOTO(bottleneck_cycle(w, n, set, m, cyc + pos, &res), st, out);
        if (res <= 0)
            memcpy(cyc + pos, set, (size_t)m * sizeof *set); /* no cycle: rank order */
        pos += m;
        mmax = m > mmax ? m : mmax;
    }
    start[ns] = pos;
    /* Where a cut's order has a hop between servers without a path, and the servers are even
     * in number, every other server's cycle runs backwards instead, so that a ring enters each
     * server through the GPU it left the last one by: the same NIC rail, where each GPU has a
     * NIC of its own on one of several rails (NCCL keeps a ring on one rail, NCCL_CROSS_NIC=0). */
    for (int cut = 0; cut < mmax; cut++)
        for (int alt = 0; alt < 2; alt++) {
            int p = 0;
            for (int k = 0; k < ns; k++) {
                int m = start[k + 1] - start[k];
                for (int q = 0; q < m; q++)
                    ord[p++] = alt && k % 2 ? cyc[start[k] + ((cut - 1 - q) % m + m) % m]
                                            : cyc[start[k] + (cut + q) % m];
            }
            int joined = 1; /* every hop between servers has a path */
            for (int h = 0, len; h < n && joined; h++)
                if (t->nodes[ord[h]].server != t->nodes[ord[(h + 1) % n]].server)
                    joined = widest_path(g, g->cap, ord[h], ord[(h + 1) % n], path, &len, sc) > 0;
            if (joined || alt || ns % 2) /* the LP drops an order with no path */
                BK_CHECK_GOTO(orders_add_pair(o, ord, rev), st, out);
            if (joined || ns % 2)
                break;
        }
out:
    free(srv);
    free(set);
    free(cyc);
    free(start);
    free(path);
    return st;
}

BK_MUST_USE
enum bk_status ring_heuristic(const struct topo *t, const struct pgraph *g,
                              struct ring_result *r, struct diag *d)
{
    int n = g->ngpus;
    struct orders o = {n, 0, 0, NULL};
    struct scratch s = {0};
    enum bk_status st = BK_ENOMEM;
    double res;
    int *ord = malloc((size_t)n * sizeof *ord), *rev = malloc((size_t)n * sizeof *rev);
    int *all = malloc((size_t)n * sizeof *all), *twin = NULL;
    double *w = malloc((size_t)n * n * sizeof *w);
    if (!ord || !rev || !all || !w)
        goto out;
    BK_CHECK_GOTO(scratch_init(&s, t, g->nnodes), st, out);
    for (int k = 0; k < n; k++)
        all[k] = k;
    BK_CHECK_GOTO(orders_add_pair(&o, all, rev), st, out);
    if (t->nservers > 1) {
        twin = malloc((size_t)t->nservers * sizeof *twin);
        if (!twin)
            goto out;
        BK_CHECK_GOTO(topo_server_twins(t, twin), st, out);
    }
    BK_CHECK_GOTO(hop_widths(g, g->cap, twin, &s, w), st, out);
    BK_CHECK_GOTO(bottleneck_cycle(w, n, all, n, ord, &res), st, out);
    if (res > 0)
        BK_CHECK_GOTO(orders_add_pair(&o, ord, rev), st, out);
    BK_CHECK_GOTO(server_orders(t, g, &s, w, &o, ord, rev), st, out);
    BK_CHECK_GOTO(flow_lp(t, g, &o, &s, r, d), st, out);
    r->exhaustive = 0;
    st = BK_OK;
out:
    scratch_free(&s);
    free(o.v);
    free(ord);
    free(rev);
    free(all);
    free(twin);
    free(w);
    return st;
}
