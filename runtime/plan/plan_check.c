/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_check.c - a compiled plan's tables checked before any rank uses them: every tree a tree
 * (a permutation order, each rank after its parent), roots and weights in range, ranges in
 * order. A source that was edited by hand or built for another runtime is refused with what is
 * wrong, never run.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt.h"

static _Thread_local const char *check_fn = "blinkCommInitAll";

static const char *str_or(const char *s, const char *dflt) { return s ? s : dflt; }

#define PLAN_ERR(...) bk_plan_error(plan, __VA_ARGS__)
static blinkResult_t bk_plan_error(const struct blink_plan *plan, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static blinkResult_t bk_plan_error(const struct blink_plan *plan, const char *fmt, ...)
{
    char what[BK_MSG_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return bk_error(blinkInvalidUsage, "%s: corrupt plan for topology '%s' "
                    "(fingerprint %s): %s", check_fn, str_or(plan->topology, "?"),
                    str_or(plan->fingerprint, "?"), what);
}

/* One tree: roots and parents in range, order a permutation with each rank after its parent. */
static blinkResult_t check_tree(const struct blink_plan *plan, int si, const char *set, int ti,
                                const struct blink_plan_tree *t, int *pos)
{
    int n = plan->nranks;
    if (t->root < 0 || t->root >= n)
        return PLAN_ERR("schedule %d %s %d: root %d out of range", si, set, ti, t->root);
    if (!t->parent || !t->order)
        return PLAN_ERR("schedule %d %s %d: no parent or order table", si, set, ti);
    for (int v = 0; v < n; v++)
        pos[v] = -1;
    for (int i = 0; i < n; i++) {
        int v = t->order[i];
        if (v < 0 || v >= n || pos[v] >= 0)
            return PLAN_ERR("schedule %d %s %d: order is not a permutation of the ranks",
                            si, set, ti);
        pos[v] = i;
    }
    if (t->order[0] != t->root || t->parent[t->root] != -1)
        return PLAN_ERR("schedule %d %s %d: root %d is not first or has a parent", si, set, ti,
                        t->root);
    for (int v = 0; v < n; v++) {
        int p = t->parent[v];
        if (v == t->root)
            continue;
        if (p < 0 || p >= n || p == v || pos[p] > pos[v])
            return PLAN_ERR("schedule %d %s %d: rank %d has parent %d, not earlier in order",
                            si, set, ti, v, p);
    }
    return blinkSuccess;
}

/* Valid trees, rooted at the schedule's root where it has one. */
static blinkResult_t check_trees(const struct blink_plan *plan, int si, const char *set,
                                 const struct blink_plan_tree *t, int nt, int *pos)
{
    const struct blink_plan_schedule *s = &plan->schedules[si];
    int rooted = s->coll == BLINK_PLAN_BROADCAST || s->coll == BLINK_PLAN_REDUCE;
    for (int ti = 0; ti < nt; ti++) {
        blinkResult_t r = check_tree(plan, si, set, ti, &t[ti], pos);
        if (r != blinkSuccess)
            return r;
        if (rooted && t[ti].root != s->root)
            return PLAN_ERR("schedule %d (%s root %d): %s %d is rooted at %d", si,
                            bk_coll_name(s->coll), s->root, set, ti, t[ti].root);
    }
    return blinkSuccess;
}

/* The weights of t[0..nt) in data group g (every tree, or the trees rooted at g). */
static uint64_t group_weight(const struct blink_plan_tree *t, int nt, int sharded, int g)
{
    uint64_t w = 0;
    for (int ti = 0; ti < nt; ti++)
        w += !sharded || t[ti].root == g ? t[ti].weight : 0;
    return w;
}

static int is_sharded(int coll)
{
    return coll == BLINK_PLAN_ALLGATHER || coll == BLINK_PLAN_REDUCESCATTER;
}

/* A schedule's trees or ring trees: check_trees, and positive weights below 2^32 per data group
 * (all trees, or the trees of one root). */
static blinkResult_t check_tree_set(const struct blink_plan *plan, int si, const char *set,
                                    const struct blink_plan_tree *t, int nt, int *pos)
{
    const struct blink_plan_schedule *s = &plan->schedules[si];
    int sharded = is_sharded(s->coll);
    blinkResult_t r = check_trees(plan, si, set, t, nt, pos);
    for (int g = 0; r == blinkSuccess && g < (sharded ? plan->nranks : 1); g++) {
        uint64_t w = group_weight(t, nt, sharded, g);
        if (w == 0 || w >= ((uint64_t)1 << 32))
            return PLAN_ERR("schedule %d (%s): weights of the %ss %s%d sum to %llu (must be 1 .. "
                            "2^32-1)", si, bk_coll_name(s->coll), set, sharded ? "rooted at rank "
                            : "of group ", g, (unsigned long long)w);
    }
    return r;
}

/* The hybrid's PCIe trees: check_trees, and weights that, with the trees', still sum below 2^32
 * in every group (the trees alone already cover every group). */
static blinkResult_t check_pcie_trees(const struct blink_plan *plan, int si, int *pos)
{
    const struct blink_plan_schedule *s = &plan->schedules[si];
    if (s->npcie_trees < 0 || (s->npcie_trees > 0 && !s->pcie_trees))
        return PLAN_ERR("schedule %d (%s): %d PCIe trees", si, bk_coll_name(s->coll),
                        s->npcie_trees);
    int sharded = is_sharded(s->coll);
    blinkResult_t r = check_trees(plan, si, "PCIe tree", s->pcie_trees, s->npcie_trees, pos);
    for (int g = 0; r == blinkSuccess && s->npcie_trees > 0 && g < (sharded ? plan->nranks : 1);
         g++) {
        uint64_t w = group_weight(s->trees, s->ntrees, sharded, g) +
                     group_weight(s->pcie_trees, s->npcie_trees, sharded, g);
        if (w >= ((uint64_t)1 << 32))
            return PLAN_ERR("schedule %d (%s): the weights of its trees and PCIe trees %s%d sum "
                            "to %llu (must be below 2^32)", si, bk_coll_name(s->coll),
                            sharded ? "rooted at rank " : "of group ", g,
                            (unsigned long long)w);
    }
    return r;
}

static blinkResult_t check_ranges(const struct blink_plan *plan, int si)
{
    const struct blink_plan_schedule *s = &plan->schedules[si];
    if (s->nranges < 0 || (s->nranges > 0 && !s->ranges))
        return PLAN_ERR("schedule %d: %d ranges", si, s->nranges);
    for (int i = 0; i < s->nranges; i++) {
        const struct blink_plan_range *r = &s->ranges[i];
        if (i == 0 && r->min_bytes != 0)
            return PLAN_ERR("schedule %d: range 0 starts at %zu bytes; the first must start at "
                            "0", si, r->min_bytes);
        if (i > 0 && r->min_bytes <= s->ranges[i - 1].min_bytes)
            return PLAN_ERR("schedule %d: range %d starts at %zu bytes; each must start after "
                            "the last", si, i, r->min_bytes);
        if ((r->algo != BLINK_PLAN_TREES && r->algo != BLINK_PLAN_RINGS &&
             r->algo != BLINK_PLAN_HYBRID) || r->chunk_bytes == 0 ||
            (r->algo == BLINK_PLAN_HYBRID && r->fallback != BLINK_PLAN_TREES &&
             r->fallback != BLINK_PLAN_RINGS))
            return PLAN_ERR("schedule %d: range %d has algorithm %d (fallback %d) and chunk %zu",
                            si, i, r->algo, r->fallback, r->chunk_bytes);
    }
    return blinkSuccess;
}

static blinkResult_t check_schedule(const struct blink_plan *plan, int si, int *pos)
{
    const struct blink_plan_schedule *s = &plan->schedules[si];
    int n = plan->nranks;
    if (s->coll < 0 || s->coll >= BLINK_PLAN_COLLS)
        return PLAN_ERR("schedule %d: collective %d unknown", si, s->coll);
    int rooted = s->coll == BLINK_PLAN_BROADCAST || s->coll == BLINK_PLAN_REDUCE;
    if (rooted ? (s->root < 0 || s->root >= n) : s->root != -1)
        return PLAN_ERR("schedule %d (%s): root %d invalid", si, bk_coll_name(s->coll), s->root);
    if (s->ntrees < 1 || !s->trees)
        return PLAN_ERR("schedule %d (%s): no trees", si, bk_coll_name(s->coll));
    if (s->nring_trees < 0 || (s->nring_trees > 0 && !s->ring_trees))
        return PLAN_ERR("schedule %d (%s): %d ring trees", si, bk_coll_name(s->coll),
                        s->nring_trees);
    for (int j = 0; j < si; j++)
        if (plan->schedules[j].coll == s->coll && plan->schedules[j].root == s->root)
            return PLAN_ERR("schedules %d and %d are both %s root %d", j, si,
                            bk_coll_name(s->coll), s->root);
    blinkResult_t r = check_tree_set(plan, si, "tree", s->trees, s->ntrees, pos);
    if (r == blinkSuccess && s->nring_trees > 0)
        r = check_tree_set(plan, si, "ring tree", s->ring_trees, s->nring_trees, pos);
    if (r == blinkSuccess)
        r = check_pcie_trees(plan, si, pos);
    return r == blinkSuccess ? check_ranges(plan, si) : r;
}

blinkResult_t bk_check_plan(const struct blink_plan *plan, const char *fn)
{
    check_fn = fn;
    if (plan->abi != BLINK_PLAN_ABI)
        return PLAN_ERR("plan ABI %d, this runtime reads ABI %d (regenerate the source with a "
                        "matching blinkc)", plan->abi, BLINK_PLAN_ABI);
    if (plan->nranks < 1 || plan->nranks > 4096 || !plan->devices)
        return PLAN_ERR("%d ranks", plan->nranks);
    if (plan->nschedules < 0 || (plan->nschedules > 0 && !plan->schedules))
        return PLAN_ERR("%d schedules", plan->nschedules);
    if (plan->nservers < 0 || plan->nservers > plan->nranks ||
        (plan->nservers > 1) != (plan->servers != NULL))
        return PLAN_ERR("%d servers", plan->nservers);
    for (int q = 0; plan->servers && q < plan->nranks; q++)
        if (plan->servers[q] < 0 || plan->servers[q] >= plan->nservers)
            return PLAN_ERR("rank %d is on server %d of %d", q, plan->servers[q],
                            plan->nservers);
    int *pos = malloc(sizeof *pos * (size_t)plan->nranks);
    if (!pos)
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    blinkResult_t r = blinkSuccess;
    for (int si = 0; si < plan->nschedules && r == blinkSuccess; si++)
        r = check_schedule(plan, si, pos);
    free(pos);
    return r;
}
