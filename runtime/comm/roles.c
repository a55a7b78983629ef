/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * roles.c - what a rank needs from its plan before any call: its role in every tree of every
 * schedule (parent, children, its share of the data), and where every rank's flags and staging
 * slots lie (proto.h). Both depend on the plan alone, so every rank computes them the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "rt.h"

static int sharded(int coll)
{
    return coll == BLINK_PLAN_ALLGATHER || coll == BLINK_PLAN_REDUCESCATTER;
}

/* The plan trees of set `set` of s into rs->trees, plan_trees and staged_from: the hybrid's
 * are a table of its own, the trees then the PCIe trees (none where s has no PCIe trees, or
 * the backend cannot stage edges in host memory: no layout is spent on it then). A plan of
 * GPUs without peer access has every edge host-staged. */
static blinkResult_t set_trees(blinkComm_t c, const struct blink_plan_schedule *s, int set,
                               struct bk_roleset *rs)
{
    const struct blink_plan *plan = c->plan;
    rs->trees = set == BK_SET_RINGS ? s->ring_trees : s->trees;
    rs->plan_trees = set == BK_SET_RINGS ? s->nring_trees : s->ntrees;
    rs->staged_from = plan->host_staged && bk_host_staged(c) ? 0 : rs->plan_trees;
    if (set != BK_SET_HYBRID)
        return blinkSuccess;
    if (s->npcie_trees <= 0 || !bk_host_staged(c)) {
        rs->trees = NULL;
        rs->plan_trees = rs->staged_from = 0;
        return blinkSuccess;
    }
    size_t nt = (size_t)s->ntrees + (size_t)s->npcie_trees;
    if (!(rs->own = malloc(nt * sizeof *rs->own)))
        return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
    memcpy(rs->own, s->trees, (size_t)s->ntrees * sizeof *rs->own);
    memcpy(rs->own + s->ntrees, s->pcie_trees, (size_t)s->npcie_trees * sizeof *rs->own);
    rs->trees = rs->own;
    rs->plan_trees = (int)nt;
    return blinkSuccess;
}

int bk_channels(uint64_t weight, double gbps, int forced)
{
    if (forced > 0)
        return forced < BK_MAX_CHANNELS ? forced : BK_MAX_CHANNELS;
    double q = (double)weight / (gbps * 1e4); /* weight: 1e-4 GB/s */
    if (!(q < BK_MAX_CHANNELS))
        return BK_MAX_CHANNELS;
    int ch = (int)q;
    ch += ch < q; /* the ceiling, without libm */
    return ch < 1 ? 1 : ch;
}

int bk_channel_fill(int slots, int min, int forced)
{
    return forced > 0 || slots < 1 || slots >= min ? 1 : min / slots;
}

/* The channels of each of a set's nt plan trees on this backend, into C: the same on every rank
 * (plan and environment). */
static void set_channels(blinkComm_t c, const struct blink_plan_tree *t, int nt, int *C)
{
    int cut = bk_backend()->channels, slots = 0;
    for (int ti = 0; ti < nt; ti++) {
        C[ti] = cut ? bk_channels(t[ti].weight, c->env.channel_gbps, c->env.nchannels) : 1;
        slots += C[ti];
    }
    int f = cut ? bk_channel_fill(slots, c->env.min_channels, c->env.nchannels) : 1;
    for (int ti = 0; ti < nt; ti++)
        C[ti] = C[ti] * f < BK_MAX_CHANNELS ? C[ti] * f : BK_MAX_CHANNELS;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/*
 * The set's tree slots: plan tree t of weight w becomes C_t channels, each a slot with t's
 * roles and its own flags and staging slots. Channel ch takes the weights
 *   lo_w * M + ch * w * M / C_t  ..  lo_w * M + (ch + 1) * w * M / C_t  of  total_w * M,
 * M the least common multiple of the set's C_t (at most lcm(1..16) = 720720, so 64 bits hold
 * it): whole numbers, so bk_split_at cuts the tree's range into the channels' on its 256-byte
 * unit, and the channels of a tree cover exactly what the tree alone would.
 */
static blinkResult_t build_set(blinkComm_t c, const struct blink_plan_schedule *s, int set,
                               struct bk_roleset *rs)
{
    int n = c->nranks, me = c->prank, nkids_all = 0, ns = 0;
    rs->ntrees = 0;
    blinkResult_t res = set_trees(c, s, set, rs);
    if (res != blinkSuccess)
        return res;
    int nt = rs->plan_trees;
    const struct blink_plan_tree *t = rs->trees;
    if (nt == 0)
        return blinkSuccess;
    int *C = malloc((size_t)nt * sizeof *C);
    if (!C)
        return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
    set_channels(c, t, nt, C);
    uint64_t M = 1;
    for (int ti = 0; ti < nt; ti++) {
        uint64_t ch = (uint64_t)C[ti];
        M = M / gcd64(M, ch) * ch;
        ns += (int)ch;
        for (int v = 0; v < n; v++)
            nkids_all += t[ti].parent[v] == me;
    }
    rs->roles = calloc((size_t)ns, sizeof *rs->roles);
    rs->tree_of = calloc((size_t)ns, sizeof *rs->tree_of);
    rs->kids = calloc((size_t)nkids_all + 1, sizeof *rs->kids);
    if (!rs->roles || !rs->tree_of || !rs->kids) {
        free(C);
        return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
    }
    int at = 0;
    for (int ti = 0; ti < nt; ti++) {
        struct bk_role r = {0};
        r.root = t[ti].root;
        r.parent = t[ti].parent[me];
        r.kids_at = at;
        /* Children in the tree's order; a rank's position among its parent's children names
         * its in-slots there. */
        int pos = 0;
        for (int i = 0; i < n; i++) {
            int v = t[ti].order[i];
            if (t[ti].parent[v] == me)
                rs->kids[at++] = v;
            if (r.parent >= 0 && t[ti].parent[v] == r.parent) {
                if (v == me)
                    r.kpos = pos;
                pos++;
            }
        }
        r.nkids = at - r.kids_at;
        uint64_t lo_w = 0, total_w = 0;
        for (int tj = 0; tj < nt; tj++) {
            if (sharded(s->coll) && t[tj].root != t[ti].root)
                continue;
            if (tj < ti)
                lo_w += t[tj].weight;
            total_w += t[tj].weight;
        }
        uint64_t w = t[ti].weight * (M / (uint64_t)C[ti]);
        for (int ch = 0; ch < C[ti]; ch++) {
            struct bk_role *x = &rs->roles[rs->ntrees];
            *x = r;
            x->lo_w = lo_w * M + (uint64_t)ch * w;
            x->hi_w = x->lo_w + w;
            x->total_w = total_w * M;
            rs->tree_of[rs->ntrees++] = ti;
        }
    }
    free(C);
    return blinkSuccess;
}

blinkResult_t bk_roles_build(blinkComm_t c)
{
    int ns = c->plan->nschedules;
    c->sets = calloc((size_t)ns * BK_SETS + 1, sizeof *c->sets);
    if (!c->sets)
        return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
    for (int i = 0; i < ns; i++)
        for (int set = 0; set < BK_SETS; set++) {
            blinkResult_t r = build_set(c, &c->plan->schedules[i], set,
                                        &c->sets[BK_SETS * i + set]);
            if (r != blinkSuccess)
                return r;
        }
    return blinkSuccess;
}

void bk_roles_free(blinkComm_t c)
{
    if (c->sets)
        for (int i = 0; i < BK_SETS * c->plan->nschedules; i++) {
            free(c->sets[i].own);
            free(c->sets[i].roles);
            free(c->sets[i].kids);
            free(c->sets[i].tree_of);
            free(c->sets[i].slot_mem);
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
    int n = c->nranks, T = 1, nsets = BK_SETS * plan->nschedules;
    for (int i = 0; i < nsets; i++)
        T = c->sets[i].ntrees > T ? c->sets[i].ntrees : T;
    size_t cells = (size_t)n * (size_t)T;
    size_t bytes = cells * (sizeof(int) + 2 * sizeof(size_t)) + 4 * (size_t)n * sizeof(size_t);
    char *mem = calloc(1, bytes);
    if (!mem)
        return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
    size_t *flag_base = (size_t *)mem, *nslots = flag_base + cells; /* nslots: [n] of cells */
    size_t *flags_off = nslots + cells, *slots_off = flags_off + n, *seg_bytes = slots_off + n;
    size_t *ll_off = seg_bytes + n;
    int *fanin = (int *)(ll_off + n);
    c->layout_mem = mem;
    int *kids = calloc((size_t)n, sizeof *kids);
    if (!kids)
        return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
    /* Tree slot ti of a set is a channel of plan tree tree_of[ti]: its fan-in is that tree's. */
    for (int i = 0; i < nsets; i++) {
        const struct bk_roleset *rs = &c->sets[i];
        const struct blink_plan_tree *t = rs->trees;
        for (int ti = 0; ti < rs->ntrees; ti++) {
            const struct blink_plan_tree *tr = &t[rs->tree_of[ti]];
            memset(kids, 0, (size_t)n * sizeof *kids);
            for (int v = 0; v < n; v++)
                if (tr->parent[v] >= 0)
                    kids[tr->parent[v]]++;
            for (int v = 0; v < n; v++) {
                int *f = &fanin[(size_t)v * (size_t)T + (size_t)ti];
                *f = kids[v] > *f ? kids[v] : *f;
            }
        }
    }
    free(kids);
    /* Flag words: the union over the sets (one writer per word, proto.h). Data slots: one
     * layout per set, over its own fan-in; only one call runs at a time, so the sets' slots
     * overlap, and a rank's slots are the most of any one set's. */
    size_t most_slots = 0, most_flags = 0;
    for (int v = 0; v < n; v++) {
        size_t words = 0;
        for (int ti = 0; ti < T; ti++) {
            size_t x = (size_t)v * (size_t)T + (size_t)ti;
            flag_base[x] = words;
            words += (size_t)fanin[x] + 1 + 2 * (size_t)n;
        }
        flags_off[v] = round_up(sizeof(struct bk_seg_header), BK_SLOT_ALIGN);
        ll_off[v] = round_up(flags_off[v] + 8 * words, BK_SLOT_ALIGN);
        most_flags = ll_off[v] > most_flags ? ll_off[v] : most_flags;
    }
    for (int i = 0; i < nsets; i++) {
        struct bk_roleset *rs = &c->sets[i];
        rs->slot_mem = calloc(cells + 1, sizeof(size_t) + sizeof(int));
        if (!rs->slot_mem)
            return bk_error(blinkSystemError, "blinkCommInitRank: out of memory");
        size_t *base = rs->slot_mem;
        int *sfan = (int *)(base + cells + 1);
        const struct blink_plan_tree *t = rs->trees;
        for (int ti = 0; ti < rs->ntrees; ti++)
            for (int v = 0; v < n; v++)
                if (t[rs->tree_of[ti]].parent[v] >= 0)
                    sfan[(size_t)t[rs->tree_of[ti]].parent[v] * (size_t)T + (size_t)ti]++;
        for (int v = 0; v < n; v++) {
            size_t slots = 0;
            for (int ti = 0; ti < rs->ntrees; ti++) {
                size_t x = (size_t)v * (size_t)T + (size_t)ti;
                base[x] = slots;
                slots += ((size_t)sfan[x] + 1) * BK_SLOTS;
            }
            nslots[v] = slots > nslots[v] ? slots : nslots[v];
            most_slots = slots > most_slots ? slots : most_slots;
        }
    }
    most_slots = most_slots ? most_slots : 1;
    size_t room = c->env.staging > most_flags ? c->env.staging - most_flags : 0;
    size_t ll_slot = room / 8 / most_slots / BK_SLOT_ALIGN * BK_SLOT_ALIGN;
    if (ll_slot > bk_ll_line_bytes(BK_LL_CHUNK_MAX))
        ll_slot = bk_ll_line_bytes(BK_LL_CHUNK_MAX);
    room -= ll_slot * most_slots;
    for (int v = 0; v < n; v++)
        slots_off[v] = ll_off[v] + ll_slot * nslots[v];
    size_t want = round_up(largest_chunk(c), BK_SLOT_ALIGN);
    size_t fit = room / most_slots / BK_SLOT_ALIGN * BK_SLOT_ALIGN;
    if (fit < BK_SLOT_ALIGN)
        return bk_error(blinkInvalidArgument, "blinkCommInitRank: BLINK_STAGING_BYTES=%zu is too "
                        "small for this plan: its fullest rank has %zu staging slots and %zu "
                        "bytes of flags, so it needs at least %zu", c->env.staging, most_slots,
                        most_flags, most_flags + most_slots * BK_SLOT_ALIGN);
    size_t slot = want < fit ? want : fit;
    for (int v = 0; v < n; v++)
        seg_bytes[v] = slots_off[v] + slot * nslots[v];
    /* The communicator's layout has no slots of its own: each set's view has its slots. */
    c->layout = (struct bk_layout){n, T, slot, fanin, flag_base, NULL, flags_off, slots_off,
                                   seg_bytes, ll_slot, ll_off, NULL};
    for (int i = 0; i < nsets; i++) {
        struct bk_roleset *rs = &c->sets[i];
        rs->lay = c->layout;
        rs->lay.slot_base = rs->slot_mem;
        rs->lay.slot_fanin = (const int *)(rs->slot_mem + cells + 1);
    }
    return blinkSuccess;
}
