/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_expand.c - the trees of relabelled schedules (blink_plan.h), built at init: a generated
 * source names the trees of one root of each symmetric class and a rank map for every other
 * root (a broadcast's whole schedule, or an allgather's trees from one rank), and every rank
 * then runs a plan whose schedules all hold trees of their own. One copy per process and plan,
 * shared by the communicators that hold it (ranks as threads).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

struct expanded {
    const struct blink_plan *src;
    struct blink_plan plan;                /* src, with scheds for its schedules */
    struct blink_plan_schedule *scheds;
    struct blink_plan_tree *trees;         /* the relabelled schedules' trees */
    int *ints;                             /* their parents and orders */
    int refs;
    struct expanded *next;
};

static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static struct expanded *held;

static int relabelled(const struct blink_plan *p)
{
    for (int i = 0; i < p->nschedules; i++)
        if (p->schedules[i].relabel || p->schedules[i].root_relabel)
            return 1;
    return 0;
}

/* 1 where map[0..n) is a permutation of the ranks, 0 where not, -1 out of memory. */
static int permutes(const int *map, int n)
{
    unsigned char *seen = calloc((size_t)n + 1, 1);
    if (!seen)
        return -1;
    int ok = 1;
    for (int q = 0; q < n && ok; q++) {
        ok = map[q] >= 0 && map[q] < n && !seen[map[q]];
        if (ok)
            seen[map[q]] = 1;
    }
    free(seen);
    return ok;
}

/* The rank that map takes onto r. */
static int preimage(const int *map, int n, int r)
{
    int s = 0;
    while (s < n && map[s] != r)
        s++;
    return s;
}

/* The listed trees of s rooted at rank r. */
static int trees_from(const struct blink_plan_schedule *s, int r)
{
    int k = 0;
    for (int j = 0; j < s->ntrees; j++)
        k += s->trees[j].root == r;
    return k;
}

/* Schedule i's maps of ranks whose trees are another's (root_relabel): a collective without a
 * root, listed trees with ranks for roots, and for each mapped rank r a permutation taking a
 * rank whose trees are listed onto r. *ntrees: the trees once expanded. */
static blinkResult_t check_root_relabel(const struct blink_plan *p, int i, size_t *ntrees,
                                        const char *fn)
{
    const struct blink_plan_schedule *s = &p->schedules[i];
    int n = p->nranks;
    if (s->root >= 0 || s->relabel || s->ntrees < 1 || !s->trees)
        return bk_error(blinkInvalidUsage, "%s: the plan's schedule %d maps ranks' trees onto "
                        "others' but is rooted, relabelled or lists no trees", fn, i);
    for (int j = 0; j < s->ntrees; j++)
        if (s->trees[j].root < 0 || s->trees[j].root >= n)
            return bk_error(blinkInvalidUsage, "%s: the plan's schedule %d has a tree rooted "
                            "outside its %d ranks", fn, i, n);
    *ntrees = (size_t)s->ntrees;
    for (int r = 0; r < n; r++) {
        const int *map = s->root_relabel[r];
        if (!map)
            continue;
        int perm = permutes(map, n);
        if (perm < 0)
            return bk_error(blinkSystemError, "%s: out of memory", fn);
        int from = perm ? preimage(map, n, r) : n;
        int k = from < n && !s->root_relabel[from] ? trees_from(s, from) : 0;
        if (k < 1 || trees_from(s, r) > 0)
            return bk_error(blinkInvalidUsage, "%s: the plan's schedule %d maps rank %d's "
                            "trees by no permutation from a rank with trees listed (or lists "
                            "trees of its own)", fn, i, r);
        *ntrees += (size_t)k;
    }
    return blinkSuccess;
}

/* Schedule i's relabelling: an earlier schedule of the same collective with trees of its own,
 * and a permutation of the ranks that takes its root onto i's. */
static blinkResult_t check_relabel(const struct blink_plan *p, int i, const char *fn)
{
    const struct blink_plan_schedule *s = &p->schedules[i];
    int j = s->relabel_of, n = p->nranks;
    if (j < 0 || j >= i)
        return bk_error(blinkInvalidUsage, "%s: the plan's schedule %d relabels schedule %d, "
                        "which is not an earlier one", fn, i, j);
    const struct blink_plan_schedule *from = &p->schedules[j];
    if (from->relabel || from->ntrees < 1 || !from->trees || from->coll != s->coll ||
        s->ntrees != 0 || s->trees || s->npcie_trees != 0 || s->pcie_trees ||
        from->npcie_trees < 0 || (from->npcie_trees > 0 && !from->pcie_trees))
        return bk_error(blinkInvalidUsage, "%s: the plan's schedule %d relabels schedule %d, "
                        "which is not one of the same collective with trees of its own (or "
                        "has trees itself)", fn, i, j);
    int ok = permutes(s->relabel, n);
    if (ok < 0)
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    if (ok)
        ok = from->root < 0 ? s->root < 0 : from->root < n && s->relabel[from->root] == s->root;
    return ok ? blinkSuccess
              : bk_error(blinkInvalidUsage, "%s: the plan's schedule %d relabels schedule %d "
                         "by a map that is not a permutation of the %d ranks taking its root "
                         "onto this one's", fn, i, j, n);
}

/* Rank v renamed by map, where v is a rank; other values stay, for the plan check to refuse. */
static int renamed(const int *map, int n, int v)
{
    return v >= 0 && v < n ? map[v] : v;
}

static void relabel_tree(const struct blink_plan_tree *t, const int *map, int n,
                         struct blink_plan_tree *out, int *ints)
{
    *out = *t;
    out->root = renamed(map, n, t->root);
    if (t->parent) {
        for (int q = 0; q < n; q++)
            ints[map[q]] = renamed(map, n, t->parent[q]);
        out->parent = ints;
    }
    if (t->order) {
        for (int q = 0; q < n; q++)
            ints[n + q] = renamed(map, n, t->order[q]);
        out->order = ints + n;
    }
}

static void expanded_free(struct expanded *e)
{
    if (!e)
        return;
    free(e->scheds);
    free(e->trees);
    free(e->ints);
    free(e);
}

/* *out: a new expansion of p, its relabellings checked. */
static blinkResult_t expand(const struct blink_plan *p, const char *fn, struct expanded **out)
{
    size_t ntrees = 0;
    for (int i = 0; i < p->nschedules; i++) {
        const struct blink_plan_schedule *s = &p->schedules[i];
        size_t k = 0;
        blinkResult_t r = s->relabel        ? check_relabel(p, i, fn)
                          : s->root_relabel ? check_root_relabel(p, i, &k, fn)
                                            : blinkSuccess;
        if (r != blinkSuccess)
            return r;
        const struct blink_plan_schedule *from = &p->schedules[s->relabel ? s->relabel_of : i];
        ntrees += s->relabel ? (size_t)from->ntrees + (size_t)from->npcie_trees : k;
    }
    size_t n = (size_t)p->nranks;
    struct expanded *e = calloc(1, sizeof *e);
    if (e) {
        e->scheds = malloc((size_t)p->nschedules * sizeof *e->scheds);
        e->trees = malloc(ntrees * sizeof *e->trees);
        e->ints = malloc(2 * n * ntrees * sizeof *e->ints);
    }
    if (!e || !e->scheds || !e->trees || !e->ints) {
        expanded_free(e);
        return bk_error(blinkSystemError, "%s: out of memory building the plan's relabelled "
                        "trees", fn);
    }
    size_t at = 0;
    for (int i = 0; i < p->nschedules; i++) {
        struct blink_plan_schedule *s = &e->scheds[i];
        *s = p->schedules[i];
        if (s->root_relabel) { /* the listed trees, then each mapped rank's */
            const struct blink_plan_schedule *own = &p->schedules[i];
            size_t first = at;
            for (int k = 0; k < own->ntrees; k++)
                e->trees[at++] = own->trees[k];
            for (int r = 0; r < (int)n; r++) {
                const int *map = own->root_relabel[r];
                int from = map ? preimage(map, (int)n, r) : -1;
                for (int k = 0; map && k < own->ntrees; k++) {
                    if (own->trees[k].root != from)
                        continue;
                    relabel_tree(&own->trees[k], map, (int)n, &e->trees[at],
                                 e->ints + 2 * n * at);
                    at++;
                }
            }
            s->trees = e->trees + first;
            s->ntrees = (int)(at - first);
            s->root_relabel = NULL;
            continue;
        }
        if (!s->relabel)
            continue;
        const struct blink_plan_schedule *from = &p->schedules[s->relabel_of];
        s->ntrees = from->ntrees;
        s->trees = e->trees + at;
        for (int k = 0; k < from->ntrees; k++, at++)
            relabel_tree(&from->trees[k], s->relabel, (int)n, &e->trees[at],
                         e->ints + 2 * n * at);
        s->npcie_trees = from->npcie_trees;
        s->pcie_trees = from->npcie_trees > 0 ? e->trees + at : NULL;
        for (int k = 0; k < from->npcie_trees; k++, at++)
            relabel_tree(&from->pcie_trees[k], s->relabel, (int)n, &e->trees[at],
                         e->ints + 2 * n * at);
        s->relabel = NULL;
        s->relabel_of = 0;
    }
    e->src = p;
    e->plan = *p;
    e->plan.schedules = e->scheds;
    *out = e;
    return blinkSuccess;
}

blinkResult_t bk_plan_hold(const struct blink_plan *p, const struct blink_plan **out,
                           const char *fn)
{
    *out = p;
    if (!p || p->nschedules < 1 || !p->schedules || !relabelled(p))
        return blinkSuccess;
    blinkResult_t r = blinkSuccess;
    pthread_mutex_lock(&held_mu);
    struct expanded *e = held;
    while (e && e->src != p)
        e = e->next;
    if (!e && (r = expand(p, fn, &e)) == blinkSuccess) {
        e->next = held;
        held = e;
    }
    if (r == blinkSuccess) {
        e->refs++;
        *out = &e->plan;
    }
    pthread_mutex_unlock(&held_mu);
    return r;
}

void bk_plan_release(const struct blink_plan *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&held_mu);
    for (struct expanded **at = &held; *at; at = &(*at)->next)
        if (&(*at)->plan == p) {
            struct expanded *e = *at;
            if (--e->refs == 0) {
                *at = e->next;
                expanded_free(e);
            }
            break;
        }
    pthread_mutex_unlock(&held_mu);
}
