/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ptree.c - packed trees and tree sets: construction, comparison, loads and the independent
 * validity check.
 */
#include "graph/ptree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

void ptree_free(struct ptree *t)
{
    free(t->parent);
    free(t->path_off);
    free(t->path_arc);
    memset(t, 0, sizeof *t);
}

BK_MUST_USE
static enum bk_status alloc_tree(struct ptree *t, int ngpus, int narcs)
{
    memset(t, 0, sizeof *t);
    t->ngpus = ngpus;
    t->parent = malloc((size_t)ngpus * sizeof *t->parent);
    t->path_off = malloc(((size_t)ngpus + 1) * sizeof *t->path_off);
    t->path_arc = malloc((narcs > 0 ? (size_t)narcs : 1) * sizeof *t->path_arc);
    if (!t->parent || !t->path_off || !t->path_arc) {
        ptree_free(t);
        return BK_ENOMEM;
    }
    return BK_OK;
}

enum bk_status ptree_copy(struct ptree *out, const struct ptree *in)
{
    int narcs = in->path_off[in->ngpus];
    BK_CHECK(alloc_tree(out, in->ngpus, narcs));
    out->root = in->root;
    out->rate = in->rate;
    memcpy(out->parent, in->parent, (size_t)in->ngpus * sizeof *in->parent);
    memcpy(out->path_off, in->path_off, ((size_t)in->ngpus + 1) * sizeof *in->path_off);
    memcpy(out->path_arc, in->path_arc, (size_t)narcs * sizeof *in->path_arc);
    return BK_OK;
}

enum bk_status ptree_make(struct ptree *out, int ngpus, int root, const int *parent,
                          const int *const *path_of, const int *path_len)
{
    int narcs = 0;
    for (int v = 0; v < ngpus; v++)
        if (v != root)
            narcs += path_len[v];
    BK_CHECK(alloc_tree(out, ngpus, narcs));
    out->root = root;
    out->rate = 0;
    int k = 0;
    for (int v = 0; v < ngpus; v++) {
        out->parent[v] = v == root ? -1 : parent[v];
        out->path_off[v] = k;
        if (v == root)
            continue;
        if (path_len[v] > 0) /* path_of may be NULL for trees without arcs (ring_chain.h) */
            memcpy(out->path_arc + k, path_of[v], (size_t)path_len[v] * sizeof *out->path_arc);
        k += path_len[v];
    }
    out->path_off[ngpus] = k;
    return BK_OK;
}

int ptree_shape_cmp(const struct ptree *a, const struct ptree *b)
{
    if (a->root != b->root)
        return a->root < b->root ? -1 : 1;
    if (a->ngpus != b->ngpus)
        return a->ngpus < b->ngpus ? -1 : 1;
    int n = a->ngpus;
    int c = memcmp(a->parent, b->parent, (size_t)n * sizeof *a->parent);
    if (c)
        return c < 0 ? -1 : 1;
    for (int v = 0; v <= n; v++)
        if (a->path_off[v] != b->path_off[v])
            return a->path_off[v] < b->path_off[v] ? -1 : 1;
    for (int i = 0; i < a->path_off[n]; i++)
        if (a->path_arc[i] != b->path_arc[i])
            return a->path_arc[i] < b->path_arc[i] ? -1 : 1;
    return 0;
}

int ptree_same_shape(const struct ptree *a, const struct ptree *b)
{
    return ptree_shape_cmp(a, b) == 0;
}

int ptree_is_relabelled(const struct ptree *a, const struct ptree *b, const int *map)
{
    if (a->ngpus != b->ngpus || map[a->root] != b->root)
        return 0;
    for (int q = 0; q < a->ngpus; q++)
        if (b->parent[map[q]] != (a->parent[q] < 0 ? -1 : map[a->parent[q]]))
            return 0;
    return 1;
}

void ptree_add_load(const struct ptree *t, const struct pgraph *g, enum pack_kind kind, int *mult)
{
    for (int i = 0; i < t->path_off[t->ngpus]; i++) {
        int a = t->path_arc[i];
        mult[a]++;
        if (kind == PACK_ALLREDUCE && g->rev[a] >= 0)
            mult[g->rev[a]]++;
    }
}

/* Every rank's walk to the root: O(n x depth), and it stops on a cycle. */
static int depth_by_walks(const struct ptree *t)
{
    int depth = 0;
    for (int v = 0; v < t->ngpus; v++) {
        int d = 0;
        for (int u = v; t->parent[u] >= 0 && d <= t->ngpus; u = t->parent[u])
            d++;
        if (d > depth)
            depth = d;
    }
    return depth;
}

int ptree_depth(const struct ptree *t)
{
    /* Each rank's depth once: walk up to a rank whose depth is known, then fill the path in
     * (O(n), where chains of a thousand ranks made the walks quadratic). A cycle, or no
     * memory, falls back to the walks. */
    int n = t->ngpus, depth = 0;
    int *dep = malloc(2 * ((size_t)n + 1) * sizeof *dep), *path = dep ? dep + n + 1 : NULL;
    if (!dep)
        return depth_by_walks(t);
    for (int v = 0; v < n; v++)
        dep[v] = -1;
    for (int v = 0; v < n; v++) {
        int len = 0, u = v;
        while (u >= 0 && dep[u] < 0 && len <= n) {
            path[len++] = u;
            u = t->parent[u];
        }
        if (len > n) {
            free(dep);
            return depth_by_walks(t);
        }
        int d = u >= 0 ? dep[u] + 1 : 0; /* the depth of path[len - 1] */
        for (int k = len - 1; k >= 0; k--, d++) {
            dep[path[k]] = d;
            if (d > depth)
                depth = d;
        }
    }
    free(dep);
    return depth;
}

int ptree_bfs(const struct ptree *t, int *order, int *kstart, int *kids)
{
    int n = t->ngpus;
    if (t->root < 0 || t->root >= n)
        return 0;
    for (int u = 0; u <= n; u++)
        kstart[u] = 0;
    for (int v = 0; v < n; v++)
        if (v != t->root) {
            if (t->parent[v] < 0 || t->parent[v] >= n)
                return 0;
            kstart[t->parent[v] + 1]++;
        }
    for (int u = 0; u < n; u++)
        kstart[u + 1] += kstart[u];
    for (int u = 0; u < n; u++) /* order[u]: where u's next child goes, until the walk */
        order[u] = kstart[u];
    for (int v = 0; v < n; v++)
        if (v != t->root)
            kids[order[t->parent[v]]++] = v;
    int len = 0;
    order[len++] = t->root;
    for (int head = 0; head < len; head++)
        for (int k = kstart[order[head]]; k < kstart[order[head] + 1]; k++)
            order[len++] = kids[k];
    return len == n;
}

void ptree_set_init(struct ptree_set *s)
{
    memset(s, 0, sizeof *s);
}

void ptree_set_clear(struct ptree_set *s)
{
    for (int i = 0; i < s->n; i++)
        ptree_free(&s->t[i]);
    s->n = 0;
}

void ptree_set_free(struct ptree_set *s)
{
    ptree_set_clear(s);
    free(s->t);
    memset(s, 0, sizeof *s);
}

enum bk_status ptree_set_add(struct ptree_set *s, const struct ptree *t, int *index)
{
    for (int i = 0; i < s->n; i++)
        if (ptree_same_shape(&s->t[i], t)) {
            s->t[i].rate += t->rate;
            if (index)
                *index = i;
            return BK_OK;
        }
    if (index)
        *index = s->n;
    return ptree_set_add_new(s, t);
}

enum bk_status ptree_set_add_new(struct ptree_set *s, const struct ptree *t)
{
    BK_CHECK(bk_grow_int((void **)&s->t, &s->cap, s->n, sizeof *s->t));
    BK_CHECK(ptree_copy(&s->t[s->n], t));
    s->n++;
    return BK_OK;
}

double ptree_set_rate(const struct ptree_set *s)
{
    double sum = 0;
    for (int i = 0; i < s->n; i++)
        sum += s->t[i].rate;
    return sum;
}

double ptree_set_root_rate(const struct ptree_set *s, int root)
{
    double sum = 0;
    for (int i = 0; i < s->n; i++)
        if (s->t[i].root == root)
            sum += s->t[i].rate;
    return sum;
}

void ptree_set_drop_below(struct ptree_set *s, double min_rate)
{
    int k = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->t[i].rate < min_rate)
            ptree_free(&s->t[i]);
        else
            s->t[k++] = s->t[i];
    }
    s->n = k;
}

static int output_order(const void *pa, const void *pb)
{
    const struct ptree *a = pa, *b = pb;
    if (a->root != b->root)
        return a->root < b->root ? -1 : 1;
    if (a->rate != b->rate)
        return a->rate > b->rate ? -1 : 1;
    return ptree_shape_cmp(a, b);
}

void ptree_set_sort(struct ptree_set *s)
{
    if (s->n > 1)
        qsort(s->t, (size_t)s->n, sizeof *s->t, output_order);
}

/* Does every GPU's parent chain reach the root without a cycle? */
static int spans(const struct ptree *t, char *why, int why_cap)
{
    if (t->root < 0 || t->root >= t->ngpus || t->parent[t->root] != -1) {
        snprintf(why, (size_t)why_cap, "root gpu %d is not a root", t->root);
        return 0;
    }
    for (int v = 0; v < t->ngpus; v++) {
        int steps = 0, u = v;
        while (u != t->root) {
            int p = t->parent[u];
            if (p < 0 || p >= t->ngpus || ++steps > t->ngpus) {
                snprintf(why, (size_t)why_cap, "gpu %d does not lead to root %d", v, t->root);
                return 0;
            }
            u = p;
        }
    }
    return 1;
}

/* Does each edge's path run from parent to child through relays only? */
static int paths_connect(const struct ptree *t, const struct pgraph *g, char *why, int why_cap)
{
    for (int v = 0; v < t->ngpus; v++) {
        if (v == t->root)
            continue;
        int at = t->parent[v];
        for (int i = t->path_off[v]; i < t->path_off[v + 1]; i++) {
            int a = t->path_arc[i];
            if (a < 0 || a >= g->narcs || g->src[a] != at || (at < g->ngpus && at != t->parent[v])) {
                snprintf(why, (size_t)why_cap, "the path to gpu %d is broken", v);
                return 0;
            }
            at = g->dst[a];
        }
        if (at != v || t->path_off[v] == t->path_off[v + 1]) {
            snprintf(why, (size_t)why_cap, "the path to gpu %d does not end there", v);
            return 0;
        }
    }
    return 1;
}

int ptree_set_check(const struct ptree_set *s, const struct pgraph *g, enum pack_kind kind,
                    double tol, char *why, int why_cap)
{
    double *load = calloc(g->narcs > 0 ? (size_t)g->narcs : 1, sizeof *load);
    int *mult = calloc(g->narcs > 0 ? (size_t)g->narcs : 1, sizeof *mult);
    int ok = load && mult;
    if (!ok)
        snprintf(why, (size_t)why_cap, "out of memory");
    for (int i = 0; ok && i < s->n; i++) {
        const struct ptree *t = &s->t[i];
        ok = t->ngpus == g->ngpus && isfinite(t->rate) && t->rate >= 0;
        if (!ok)
            snprintf(why, (size_t)why_cap, "tree %d has a bad size or rate", i);
        ok = ok && spans(t, why, why_cap) && paths_connect(t, g, why, why_cap);
        if (!ok)
            break;
        memset(mult, 0, (size_t)g->narcs * sizeof *mult);
        ptree_add_load(t, g, kind, mult);
        for (int a = 0; a < g->narcs; a++)
            load[a] += mult[a] * t->rate;
    }
    for (int a = 0; ok && a < g->narcs; a++)
        if (load[a] > g->cap[a] * (1 + tol) + 1e-9) {
            snprintf(why, (size_t)why_cap, "arc %d (%d->%d) carries %.6g of %.6g GB/s", a,
                     g->src[a], g->dst[a], load[a], g->cap[a]);
            ok = 0;
        }
    free(load);
    free(mult);
    return ok;
}
