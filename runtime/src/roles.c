/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * roles.c - what a rank needs from its plan before any call: its role in every tree of every
 * schedule (parent, children, its share of the data), and where every rank's flags and staging
 * slots lie (proto.h). Both depend on the plan alone, so every rank computes them the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static int sharded(int coll)
{
    return coll == BLINK_PLAN_ALLGATHER || coll == BLINK_PLAN_REDUCESCATTER;
}

static const struct blink_plan_tree *set_trees(const struct blink_plan_schedule *s, int set,
                                               int *nt)
{
    *nt = set ? s->nring_trees : s->ntrees;
    return set ? s->ring_trees : s->trees;
}

static blinkResult_t build_set(blinkComm_t c, const struct blink_plan_schedule *s, int set,
                               struct bk_roleset *rs)
{
    int nt, n = c->nranks, me = c->prank, nkids_all = 0;
    const struct blink_plan_tree *t = set_trees(s, set, &nt);
    rs->ntrees = nt;
    if (nt == 0)
        return blinkSuccess;
    for (int ti = 0; ti < nt; ti++)
        for (int v = 0; v < n; v++)
            nkids_all += t[ti].parent[v] == me;
    rs->roles = calloc((size_t)nt, sizeof *rs->roles);
    rs->kids = calloc((size_t)nkids_all + 1, sizeof *rs->kids);
    if (!rs->roles || !rs->kids)
        return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
    int at = 0;
    for (int ti = 0; ti < nt; ti++) {
        struct bk_role *r = &rs->roles[ti];
        r->root = t[ti].root;
        r->parent = t[ti].parent[me];
        r->kids_at = at;
        /* Children in the tree's order; a rank's position among its parent's children names
         * its in-slots there. */
        int pos = 0;
        for (int i = 0; i < n; i++) {
            int v = t[ti].order[i];
            if (t[ti].parent[v] == me)
                rs->kids[at++] = v;
            if (r->parent >= 0 && t[ti].parent[v] == r->parent) {
                if (v == me)
                    r->kpos = pos;
                pos++;
            }
        }
        r->nkids = at - r->kids_at;
        for (int tj = 0; tj < nt; tj++) {
            if (sharded(s->coll) && t[tj].root != t[ti].root)
                continue;
            if (tj < ti)
                r->lo_w += t[tj].weight;
            r->total_w += t[tj].weight;
        }
        r->hi_w = r->lo_w + t[ti].weight;
    }
    return blinkSuccess;
}

blinkResult_t bk_roles_build(blinkComm_t c)
{
    int ns = c->plan->nschedules;
    c->sets = calloc((size_t)ns * 2 + 1, sizeof *c->sets);
    if (!c->sets)
        return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
    for (int i = 0; i < ns; i++)
        for (int set = 0; set < 2; set++) {
            blinkResult_t r = build_set(c, &c->plan->schedules[i], set, &c->sets[2 * i + set]);
            if (r != blinkSuccess)
                return r;
        }
    return blinkSuccess;
}

void bk_roles_free(blinkComm_t c)
{
    if (c->sets)
        for (int i = 0; i < 2 * c->plan->nschedules; i++) {
            free(c->sets[i].roles);
            free(c->sets[i].kids);
        }
    free(c->sets);
    c->sets = NULL;
    free(c->layout_mem);
    c->layout_mem = NULL;
}

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* The largest chunk any call may ask for: the environment's, else the plan's and its ranges'. */
static size_t largest_chunk(blinkComm_t c)
{
    if (c->env.chunk_env)
        return c->env.chunk_env;
    size_t m = c->chunk_bytes;
    for (int i = 0; i < c->plan->nschedules; i++) {
        const struct blink_plan_schedule *s = &c->plan->schedules[i];
        for (int k = 0; k < s->nranges; k++)
            m = s->ranges[k].chunk_bytes > m ? s->ranges[k].chunk_bytes : m;
    }
    return m;
}

blinkResult_t bk_layout_build(blinkComm_t c)
{
    const struct blink_plan *plan = c->plan;
    int n = c->nranks, T = 1;
    for (int i = 0; i < plan->nschedules; i++)
        for (int set = 0; set < 2; set++) {
            int nt;
            set_trees(&plan->schedules[i], set, &nt);
            T = nt > T ? nt : T;
        }
    size_t cells = (size_t)n * (size_t)T;
    size_t bytes = cells * (sizeof(int) + 2 * sizeof(size_t)) + 4 * (size_t)n * sizeof(size_t);
    char *mem = calloc(1, bytes);
    if (!mem)
        return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
    size_t *flag_base = (size_t *)mem, *slot_base = flag_base + cells;
    size_t *flags_off = slot_base + cells, *slots_off = flags_off + n, *seg_bytes = slots_off + n;
    size_t *ll_off = seg_bytes + n;
    int *fanin = (int *)(ll_off + n);
    c->layout_mem = mem;
    for (int i = 0; i < plan->nschedules; i++)
        for (int set = 0; set < 2; set++) {
            int nt;
            const struct blink_plan_tree *t = set_trees(&plan->schedules[i], set, &nt);
            for (int ti = 0; ti < nt; ti++) {
                int *kids = calloc((size_t)n, sizeof *kids);
                if (!kids)
                    return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
                for (int v = 0; v < n; v++)
                    if (t[ti].parent[v] >= 0)
                        kids[t[ti].parent[v]]++;
                for (int v = 0; v < n; v++) {
                    int *f = &fanin[(size_t)v * (size_t)T + (size_t)ti];
                    *f = kids[v] > *f ? kids[v] : *f;
                }
                free(kids);
            }
        }
    /* Flags and slot counts per rank; the slot sizes are what the fullest rank can afford:
     * LL's up to BK_LL_CHUNK_MAX of data, within an eighth of the staging, the rest Simple's. */
    size_t most_slots = 0, most_flags = 0;
    for (int v = 0; v < n; v++) {
        size_t words = 0, slots = 0;
        for (int ti = 0; ti < T; ti++) {
            size_t x = (size_t)v * (size_t)T + (size_t)ti;
            flag_base[x] = words;
            slot_base[x] = slots;
            words += (size_t)fanin[x] + 1 + 2 * (size_t)n;
            slots += ((size_t)fanin[x] + 1) * BK_SLOTS;
        }
        flags_off[v] = round_up(sizeof(struct bk_seg_header), BK_SLOT_ALIGN);
        ll_off[v] = round_up(flags_off[v] + 8 * words, BK_SLOT_ALIGN);
        slots_off[v] = slots; /* for now: its count of slots */
        most_slots = slots > most_slots ? slots : most_slots;
        most_flags = ll_off[v] > most_flags ? ll_off[v] : most_flags;
    }
    size_t room = c->env.staging > most_flags ? c->env.staging - most_flags : 0;
    size_t ll_slot = room / 8 / most_slots / BK_SLOT_ALIGN * BK_SLOT_ALIGN;
    if (ll_slot > bk_ll_line_bytes(BK_LL_CHUNK_MAX))
        ll_slot = bk_ll_line_bytes(BK_LL_CHUNK_MAX);
    room -= ll_slot * most_slots;
    for (int v = 0; v < n; v++)
        slots_off[v] = ll_off[v] + ll_slot * slots_off[v];
    size_t want = round_up(largest_chunk(c), BK_SLOT_ALIGN);
    size_t fit = room / most_slots / BK_SLOT_ALIGN * BK_SLOT_ALIGN;
    if (fit < BK_SLOT_ALIGN)
        return bk_error(blinkInvalidArgument, "blinkCommInitRank: BLINK_STAGING_BYTES=%zu is too "
                        "small for this plan: its fullest rank has %zu staging slots and %zu "
                        "bytes of flags, so it needs at least %zu", c->env.staging, most_slots,
                        most_flags, most_flags + most_slots * BK_SLOT_ALIGN);
    size_t slot = want < fit ? want : fit;
    for (int v = 0; v < n; v++) {
        size_t x = (size_t)v * (size_t)T + (size_t)(T - 1);
        seg_bytes[v] = slots_off[v] + slot * (slot_base[x] + ((size_t)fanin[x] + 1) * BK_SLOTS);
    }
    c->layout = (struct bk_layout){n, T, slot, fanin, flag_base, slot_base, flags_off, slots_off,
                                   seg_bytes, ll_slot, ll_off};
    return blinkSuccess;
}
