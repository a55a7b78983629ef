/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_auto.c - a topology's automorphisms by individualisation and refinement (topo_auto.h).
 *
 * The search colours two copies of the graph, A and B, alike: a node's colour is its kind and
 * part, refined round by round by the multiset of (link label, direction, neighbour's colour)
 * over its links (as a sum of hashes) until no class splits. Fixing "A's node v is B's node
 * w" gives both one fresh colour; where a class still holds several nodes, A's lowest is fixed
 * to each of B's in turn.
 * When every class is one node on each side, A's node of a colour maps onto B's, and the
 * relabelling is checked link by link before it is believed.
 */
#include "topo/topo_auto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_rates.h"

/* Search nodes one automorphism may cost before the search gives up (a symmetry not found
 * only means more planning later). */
#define SEARCH_BUDGET 20000

struct ctx {
    const struct topo *t;
    int n, m;         /* nodes, adjacency entries (two per link) */
    int *adj_off;     /* [n+1] */
    int *adj_lab;     /* [m] link label * 2 + direction (0 out, 1 in) */
    int *adj_nbr;     /* [m] */
    int *init;        /* [n] colour of kind and part */
    int *stable;      /* [n] refined colour of the graph alone */
    uint64_t *keys;   /* [2n] each node's hash of (label, neighbour colour) over its links */
    int *idx, *newcol, *cnt; /* [2n] */
    long budget;
};

static const struct ctx *sort_ctx; /* qsort has no context argument */

static int cmp_attr(const struct topo_node *a, const struct topo_node *b)
{
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    const char *pa = a->part ? a->part->name : "", *pb = b->part ? b->part->name : "";
    int c = strcmp(pa, pb);
    if (c)
        return c;
    if (a->nvlink_gen != b->nvlink_gen)
        return a->nvlink_gen - b->nvlink_gen;
    return (a->nic_gbps > b->nic_gbps) - (a->nic_gbps < b->nic_gbps);
}

static int cmp_node_attr(const void *pa, const void *pb)
{
    const struct topo *t = sort_ctx->t;
    int a = *(const int *)pa, b = *(const int *)pb;
    int c = cmp_attr(&t->nodes[a], &t->nodes[b]);
    return c ? c : a - b;
}

static int cmp_link_label(const struct topo_link *a, const struct topo_link *b)
{
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    if (a->count != b->count)
        return a->count - b->count;
    return (a->gbps > b->gbps) - (a->gbps < b->gbps);
}

static int cmp_link_idx(const void *pa, const void *pb)
{
    const struct topo *t = sort_ctx->t;
    int a = *(const int *)pa, b = *(const int *)pb;
    int c = cmp_link_label(&t->links[a], &t->links[b]);
    return c ? c : a - b;
}

/* Signature order of entries x = side * n + node: colour, then the hash of its links. */
static int cmp_sig(const void *pa, const void *pb)
{
    const struct ctx *c = sort_ctx;
    int x = *(const int *)pa, y = *(const int *)pb;
    if (c->newcol[x] != c->newcol[y])
        return c->newcol[x] < c->newcol[y] ? -1 : 1;
    return (c->keys[x] > c->keys[y]) - (c->keys[x] < c->keys[y]);
}

/* A 64-bit mix (splitmix64's finaliser): summed over a node's links, the sum stands for the
 * multiset of (label, direction, neighbour colour). A collision could only merge two classes,
 * so the search tries more and every relabelling is still checked link by link. */
static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void ctx_free(struct ctx *c)
{
    free(c->adj_off);
    free(c->adj_lab);
    free(c->adj_nbr);
    free(c->init);
    free(c->stable);
    free(c->keys);
    free(c->idx);
    free(c->newcol);
    free(c->cnt);
}

/* Refine col[2n] (A's nodes, then B's) until stable; *ncol gets the colours. 0 when A and B
 * differ in some class's size (no relabelling fits), else 1. */
static int refine(struct ctx *c, int *col, int *ncol)
{
    int n = c->n, prev = -1;
    for (;;) {
        for (int x = 0; x < 2 * n; x++) {
            int v = x % n, base = x - v;
            uint64_t h = 0;
            for (int j = c->adj_off[v]; j < c->adj_off[v + 1]; j++)
                h += mix((uint64_t)c->adj_lab[j] << 32 | (uint32_t)col[base + c->adj_nbr[j]]);
            c->keys[x] = h;
        }
        for (int x = 0; x < 2 * n; x++) {
            c->idx[x] = x;
            c->newcol[x] = col[x];
        }
        sort_ctx = c;
        qsort(c->idx, (size_t)(2 * n), sizeof *c->idx, cmp_sig);
        int k = 0;
        for (int i = 0; i < 2 * n; i++) {
            if (i > 0 && cmp_sig(&c->idx[i - 1], &c->idx[i]) != 0)
                k++;
            col[c->idx[i]] = k;
        }
        k++;
        memset(c->cnt, 0, (size_t)(2 * n) * sizeof *c->cnt);
        for (int x = 0; x < 2 * n; x++)
            c->cnt[col[x]] += x < n ? 1 : -1;
        for (int i = 0; i < k; i++)
            if (c->cnt[i] != 0)
                return 0;
        *ncol = k;
        if (k == prev)
            return 1;
        prev = k;
    }
}

/* 1 found (perm filled), 0 none within the budget, -1 out of memory. */
static int search(struct ctx *c, int *col, int *perm)
{
    if (--c->budget < 0)
        return 0;
    int n = c->n, ncol;
    if (!refine(c, col, &ncol))
        return 0;
    memset(c->cnt, 0, (size_t)ncol * sizeof *c->cnt);
    for (int v = 0; v < n; v++)
        c->cnt[col[v]]++;
    int target = -1;
    for (int i = 0; i < ncol && target < 0; i++)
        if (c->cnt[i] > 1)
            target = i;
    if (target < 0) {
        for (int u = 0; u < n; u++)
            c->cnt[col[n + u]] = u;
        for (int v = 0; v < n; v++)
            perm[v] = c->cnt[col[v]];
        return topo_is_automorphism(c->t, perm);
    }
    int v = 0;
    while (col[v] != target)
        v++;
    int *next = malloc((size_t)(2 * n) * sizeof *next);
    if (!next)
        return -1;
    int found = 0;
    for (int u = 0; u < n && !found && c->budget >= 0; u++) {
        if (col[n + u] != target)
            continue;
        memcpy(next, col, (size_t)(2 * n) * sizeof *next);
        next[v] = next[n + u] = ncol;
        found = search(c, next, perm);
    }
    free(next);
    return found;
}

/* An automorphism fixing nodes 0..nfix-1 (GPUs) and taking node `from` to `to`. */
static int find_auto(struct ctx *c, int nfix, int from, int to, int *perm)
{
    int n = c->n;
    int *col = malloc((size_t)(2 * n) * sizeof *col);
    if (!col)
        return -1;
    int ncol = 0;
    for (int v = 0; v < n; v++) {
        col[v] = col[n + v] = c->init[v];
        ncol = c->init[v] + 1 > ncol ? c->init[v] + 1 : ncol;
    }
    for (int f = 0; f < nfix; f++)
        col[f] = col[n + f] = ncol++;
    col[from] = col[n + to] = ncol;
    c->budget = SEARCH_BUDGET;
    int found = search(c, col, perm);
    free(col);
    return found;
}

BK_MUST_USE
static enum bk_status ctx_init(struct ctx *c, const struct topo *t)
{
    memset(c, 0, sizeof *c);
    c->t = t;
    c->n = t->nnodes;
    c->m = 2 * t->nlinks;
    size_t n = (size_t)c->n + 1, m = (size_t)c->m + 1;
    c->adj_off = calloc(n + 1, sizeof *c->adj_off);
    c->adj_lab = malloc(m * sizeof *c->adj_lab);
    c->adj_nbr = malloc(m * sizeof *c->adj_nbr);
    c->init = malloc(n * sizeof *c->init);
    c->stable = malloc(2 * n * sizeof *c->stable);
    c->keys = malloc(2 * n * sizeof *c->keys);
    c->idx = malloc(2 * n * sizeof *c->idx);
    c->newcol = malloc(2 * n * sizeof *c->newcol);
    c->cnt = malloc(2 * n * sizeof *c->cnt);
    int *order = malloc((m > n ? m : n) * sizeof *order);
    if (!c->adj_off || !c->adj_lab || !c->adj_nbr || !c->init || !c->stable || !c->keys ||
        !c->idx || !c->newcol || !c->cnt || !order) {
        free(order);
        ctx_free(c);
        return BK_ENOMEM;
    }
    sort_ctx = c;
    /* Colours by kind and part; link labels by kind, count and rate (values, not addresses). */
    for (int v = 0; v < c->n; v++)
        order[v] = v;
    qsort(order, (size_t)c->n, sizeof *order, cmp_node_attr);
    for (int i = 0, k = 0; i < c->n; i++) {
        if (i > 0 && cmp_attr(&t->nodes[order[i - 1]], &t->nodes[order[i]]) != 0)
            k++;
        c->init[order[i]] = k;
    }
    for (int l = 0; l < t->nlinks; l++)
        order[l] = l;
    qsort(order, (size_t)t->nlinks, sizeof *order, cmp_link_idx);
    int *lab = malloc(((size_t)t->nlinks + 1) * sizeof *lab);
    if (!lab) {
        free(order);
        ctx_free(c);
        return BK_ENOMEM;
    }
    for (int i = 0, k = 0; i < t->nlinks; i++) {
        if (i > 0 && cmp_link_label(&t->links[order[i - 1]], &t->links[order[i]]) != 0)
            k++;
        lab[order[i]] = k;
    }
    for (int l = 0; l < t->nlinks; l++) {
        c->adj_off[t->links[l].src + 1]++;
        c->adj_off[t->links[l].dst + 1]++;
    }
    for (int v = 0; v < c->n; v++)
        c->adj_off[v + 1] += c->adj_off[v];
    memcpy(order, c->adj_off, (size_t)c->n * sizeof *order);
    for (int l = 0; l < t->nlinks; l++) {
        int s = t->links[l].src, d = t->links[l].dst;
        c->adj_lab[order[s]] = lab[l] * 2;
        c->adj_nbr[order[s]++] = d;
        c->adj_lab[order[d]] = lab[l] * 2 + 1;
        c->adj_nbr[order[d]++] = s;
    }
    free(lab);
    free(order);
    for (int v = 0; v < c->n; v++)
        c->stable[v] = c->stable[c->n + v] = c->init[v];
    int ncol;
    (void)refine(c, c->stable, &ncol); /* A and B alike: cannot differ */
    return BK_OK;
}

BK_MUST_USE
static enum bk_status add_gen(struct topo_orbits *o, const int *perm)
{
    int *g = realloc(o->gens, (size_t)(o->ngens + 1) * (size_t)o->nnodes * sizeof *g);
    if (!g)
        return BK_ENOMEM;
    o->gens = g;
    memcpy(g + (size_t)o->ngens * (size_t)o->nnodes, perm, (size_t)o->nnodes * sizeof *g);
    o->ngens++;
    return BK_OK;
}

/* Close rep g's orbit under every generator: each GPU reached gets rep g and the product of
 * generators that takes g there. */
static void close_orbit(struct topo_orbits *o, int g, int *queue)
{
    int nq = 0, nn = o->nnodes;
    for (int x = 0; x < o->ngpus; x++)
        if (o->rep[x] == g)
            queue[nq++] = x;
    for (int i = 0; i < nq; i++) {
        int x = queue[i];
        for (int k = 0; k < o->ngens; k++) {
            const int *h = o->gens + (size_t)k * (size_t)nn;
            int y = h[x];
            if (y >= o->ngpus || o->rep[y] >= 0)
                continue;
            o->rep[y] = g;
            int *py = o->perm + (size_t)y * (size_t)nn, *px = o->perm + (size_t)x * (size_t)nn;
            for (int v = 0; v < nn; v++)
                py[v] = h[px[v]];
            queue[nq++] = y;
        }
    }
}

enum bk_status topo_gpu_orbits(const struct topo *t, struct topo_orbits *o)
{
    memset(o, 0, sizeof *o);
    o->ngpus = t->ngpus;
    o->nnodes = t->nnodes;
    o->rep = malloc(((size_t)t->ngpus + 1) * sizeof *o->rep);
    o->perm = malloc(((size_t)t->ngpus * (size_t)t->nnodes + 1) * sizeof *o->perm);
    int *perm = malloc(((size_t)t->nnodes + 1) * sizeof *perm);
    int *queue = malloc(((size_t)t->ngpus + 1) * sizeof *queue);
    struct ctx c;
    enum bk_status st = o->rep && o->perm && perm && queue ? ctx_init(&c, t) : BK_ENOMEM;
    if (st != BK_OK) {
        free(perm);
        free(queue);
        topo_orbits_free(o);
        return st;
    }
    for (int g = 0; g < t->ngpus; g++)
        o->rep[g] = -1;
    for (int g = 0; st == BK_OK && g < t->ngpus; g++) {
        if (o->rep[g] >= 0)
            continue;
        o->rep[g] = g;
        int *id = o->perm + (size_t)g * (size_t)t->nnodes;
        for (int v = 0; v < t->nnodes; v++)
            id[v] = v;
        close_orbit(o, g, queue);
        for (int w = g + 1; st == BK_OK && w < t->ngpus; w++) {
            if (o->rep[w] >= 0 || c.stable[w] != c.stable[g])
                continue;
            int found = find_auto(&c, 0, g, w, perm);
            if (found < 0)
                st = BK_ENOMEM;
            else if (found && (st = add_gen(o, perm)) == BK_OK)
                close_orbit(o, g, queue);
        }
    }
    ctx_free(&c);
    free(perm);
    free(queue);
    if (st != BK_OK)
        topo_orbits_free(o);
    return st;
}

enum bk_status topo_gpu_group(const struct topo *t, struct topo_orbits *o)
{
    free(o->gens);
    o->gens = NULL;
    o->ngens = 0;
    o->ngpus = t->ngpus;
    o->nnodes = t->nnodes;
    int n = t->ngpus, nn = t->nnodes;
    int *perm = malloc(((size_t)nn + 1) * sizeof *perm);
    unsigned char *in = malloc((size_t)n + 1);
    int *queue = malloc(((size_t)n + 1) * sizeof *queue);
    struct ctx c;
    enum bk_status st = perm && in && queue ? ctx_init(&c, t) : BK_ENOMEM;
    if (st != BK_OK) {
        free(perm);
        free(in);
        free(queue);
        return st;
    }
    /* Level k, deepest first: the orbit of GPU k under automorphisms fixing GPUs 0..k-1, each
     * of its GPUs reached by generators found at this level or a deeper one (all of which fix
     * 0..k-1), a new one searched for each GPU not reached yet. */
    for (int k = n - 1; st == BK_OK && k >= 0; k--) {
        for (int w = k + 1; st == BK_OK && w < n; w++) {
            /* Is w already in k's orbit under the generators that fix 0..k-1? */
            memset(in, 0, (size_t)n);
            in[k] = 1;
            int nq = 0;
            queue[nq++] = k;
            for (int i = 0; i < nq; i++)
                for (int j = 0; j < o->ngens; j++) {
                    const int *h = o->gens + (size_t)j * (size_t)nn;
                    int y = h[queue[i]];
                    if (y < n && !in[y]) {
                        in[y] = 1;
                        queue[nq++] = y;
                    }
                }
            if (in[w] || c.stable[w] != c.stable[k])
                continue;
            int found = find_auto(&c, k, k, w, perm);
            if (found < 0)
                st = BK_ENOMEM;
            else if (found)
                st = add_gen(o, perm);
        }
    }
    ctx_free(&c);
    free(perm);
    free(in);
    free(queue);
    return st;
}

void topo_orbits_free(struct topo_orbits *o)
{
    free(o->rep);
    free(o->perm);
    free(o->gens);
    memset(o, 0, sizeof *o);
}

/* ---------------------------------------------------------------- checking relabellings */

/* A finalized topology's links are sorted by (src, dst, kind) without repeats (topo_canon.c,
 * topo_alloc.c): the index is where each node's run of out-links starts. */
enum bk_status topo_link_index_build(struct topo_link_index *ix, const struct topo *t)
{
    ix->t = t;
    ix->off = calloc((size_t)t->nnodes + 1, sizeof *ix->off);
    if (!ix->off)
        return BK_ENOMEM;
    for (int l = 0; l < t->nlinks; l++) {
        if (l > 0 && topo_link_cmp(&t->links[l - 1], &t->links[l]) >= 0) {
            topo_link_index_free(ix);
            return BK_EINTERNAL; /* not finalized */
        }
        ix->off[t->links[l].src + 1]++;
    }
    for (int v = 0; v < t->nnodes; v++)
        ix->off[v + 1] += ix->off[v];
    return BK_OK;
}

void topo_link_index_free(struct topo_link_index *ix)
{
    free(ix->off);
    memset(ix, 0, sizeof *ix);
}

int topo_link_find(const struct topo_link_index *ix, int src, int dst, enum topo_link_kind kind)
{
    const struct topo_link *L = ix->t->links;
    int lo = ix->off[src], hi = ix->off[src + 1] - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = L[mid].dst != dst ? (L[mid].dst < dst ? -1 : 1) : (int)L[mid].kind - (int)kind;
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Link l's image under perm is a link with l's label. */
static int link_maps(const struct topo_link_index *ix, const int *perm, int l)
{
    const struct topo_link *a = &ix->t->links[l];
    int hit = topo_link_find(ix, perm[a->src], perm[a->dst], a->kind);
    return hit >= 0 && cmp_link_label(a, &ix->t->links[hit]) == 0;
}

int topo_is_automorphism(const struct topo *t, const int *perm)
{
    int n = t->nnodes, ok = 1;
    unsigned char *seen = calloc((size_t)n + 1, 1);
    struct topo_link_index ix;
    if (!seen || topo_link_index_build(&ix, t) != BK_OK) {
        free(seen);
        return 0;
    }
    for (int v = 0; v < n && ok; v++) {
        ok = perm[v] >= 0 && perm[v] < n && !seen[perm[v]] &&
             cmp_attr(&t->nodes[v], &t->nodes[perm[v]]) == 0 &&
             (v < t->ngpus) == (perm[v] < t->ngpus);
        if (ok)
            seen[perm[v]] = 1;
    }
    /* Every link has an image of the same label; a bijection on nodes then maps the links one
     * to one, as (src, dst, kind) names at most one link. */
    for (int l = 0; l < t->nlinks && ok; l++)
        ok = link_maps(&ix, perm, l);
    free(seen);
    topo_link_index_free(&ix);
    return ok;
}

/* ---------------------------------------------------------------- identical servers */

void topo_server_swap(const struct topo *t, int a, int b, int *perm)
{
    int ia = 0, ib = 0;
    for (int v = 0; v < t->nnodes; v++)
        perm[v] = v;
    /* The k-th node of a and the k-th node of b, in index order, trade places. */
    for (;;) {
        while (ia < t->nnodes && topo_node_server(t, ia) != a)
            ia++;
        while (ib < t->nnodes && topo_node_server(t, ib) != b)
            ib++;
        if (ia == t->nnodes || ib == t->nnodes)
            break;
        perm[ia++] = ib;
        perm[ib] = ia - 1;
        ib++;
    }
}

/* Is swapping servers a and b (perm, from topo_server_swap) an automorphism? Only their own
 * nodes and the links at them move. */
static int swap_is_automorphism(const struct topo_link_index *ix, const int *perm, int a, int b,
                                const int *count, const int *at_off, const int *at)
{
    const struct topo *t = ix->t;
    if (a == b || count[a] != count[b])
        return 0;
    for (int v = 0; v < t->nnodes; v++)
        if (perm[v] != v && (cmp_attr(&t->nodes[v], &t->nodes[perm[v]]) != 0 ||
                             (v < t->ngpus) != (perm[v] < t->ngpus)))
            return 0;
    for (int k = at_off[a]; k < at_off[a + 1]; k++)
        if (!link_maps(ix, perm, at[k]))
            return 0;
    for (int k = at_off[b]; k < at_off[b + 1]; k++)
        if (!link_maps(ix, perm, at[k]))
            return 0;
    return 1;
}

enum bk_status topo_server_twins(const struct topo *t, int *twin)
{
    int ns = t->nservers > 0 ? t->nservers : 1;
    int *count = calloc((size_t)ns, sizeof *count);
    int *at_off = calloc((size_t)ns + 1, sizeof *at_off);
    int *at = malloc(((size_t)t->nlinks * 2 + 1) * sizeof *at);
    int *perm = malloc(((size_t)t->nnodes + 1) * sizeof *perm);
    int *firsts = malloc((size_t)ns * sizeof *firsts), nfirsts = 0;
    int *fill = malloc((size_t)ns * sizeof *fill);
    struct topo_link_index ix = {0};
    enum bk_status st = count && at_off && at && perm && firsts && fill
                            ? topo_link_index_build(&ix, t) : BK_ENOMEM;
    if (st != BK_OK)
        goto out;
    for (int v = 0; v < t->nnodes; v++)
        if (topo_node_server(t, v) >= 0)
            count[topo_node_server(t, v)]++;
    /* The links at each server's nodes (a link between two servers is at both): counted, then
     * placed, as a CSR array. */
    for (int pass = 0; pass < 2; pass++) {
        for (int l = 0; l < t->nlinks; l++) {
            int ends[2] = {topo_node_server(t, t->links[l].src),
                           topo_node_server(t, t->links[l].dst)};
            for (int e = 0; e < 2; e++) {
                if (ends[e] < 0 || (e == 1 && ends[1] == ends[0]))
                    continue;
                if (pass)
                    at[fill[ends[e]]++] = l;
                else
                    at_off[ends[e] + 1]++;
            }
        }
        for (int sv = 0; !pass && sv < ns; sv++) {
            at_off[sv + 1] += at_off[sv];
            fill[sv] = at_off[sv];
        }
    }
    for (int sv = 0; sv < ns; sv++) {
        twin[sv] = sv;
        for (int k = 0; k < nfirsts && twin[sv] == sv; k++) {
            topo_server_swap(t, firsts[k], sv, perm);
            if (swap_is_automorphism(&ix, perm, firsts[k], sv, count, at_off, at))
                twin[sv] = firsts[k];
        }
        if (twin[sv] == sv)
            firsts[nfirsts++] = sv;
    }
out:
    topo_link_index_free(&ix);
    free(count);
    free(at_off);
    free(at);
    free(perm);
    free(firsts);
    free(fill);
    return st;
}
