/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_tune.c - per-size choice of trees or rings, and of the chunk (see plan_tune.h).
 */
#include "tune/plan_tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

/* Trees must beat NCCL by this much at both ends of a size interval to take it: between
 * samples the two times are only interpolated, and with the runtime's protocol modelled
 * (sim_tree.c) the trees' time at one chunk bends by up to about 1% between two samples an
 * octave apart (0.5% let {0,1,4,5,6} allreduce run 0.7% slower than NCCL at 2.8 MiB). */
#define TREE_MARGIN 0.02

struct sample {
    double bytes;
    size_t chunk;   /* the trees' best chunk here (Simple) */
    double tree_us; /* at that chunk */
    double next_us; /* at that chunk, at the next sample's size (the interval's far end) */
    int ll;         /* LL was timed here (PLAN_TUNE_LL_MAX_BYTES and below, while it can win) */
    size_t ll_chunk; /* the same three for the LL protocol */
    double ll_us, ll_next_us;
    int hy;         /* the hybrid set was timed here (PLAN_TUNE_HYBRID_MIN_BYTES and up) */
    size_t hy_chunk; /* the same three for the hybrid set */
    double hy_us, hy_next_us;
    double nccl_us; /* 0: no rings to compare with */
};

/* What the samples time: the plan's trees, and its hybrid set where it has one (hy.trees.n). */
struct jobs {
    struct sim_job trees, ll, hy;
    struct sim_seen seen, hy_seen;
    struct ptree_set hy_trees;
};

static int trees_win(double tree_us, double nccl_us)
{
    return nccl_us <= 0 || tree_us * (1 + TREE_MARGIN) <= nccl_us;
}

BK_MUST_USE
static enum bk_status add_range(struct plan_tuning *tu, const struct plan_range *r)
{
    struct plan_range *last = tu->n ? &tu->r[tu->n - 1] : NULL;
    if (last && last->algo == r->algo && last->chunk_bytes == r->chunk_bytes &&
        last->proto == r->proto && last->fallback == r->fallback)
        return BK_OK;
    BK_CHECK(bk_grow_int((void **)&tu->r, &tu->cap, tu->n, sizeof *tu->r));
    tu->r[tu->n++] = *r;
    return BK_OK;
}

/* The hybrid set's best chunk and time at sample k, and at the next size with that chunk. */
BK_MUST_USE
static enum bk_status sample_hybrid(struct jobs *jb, const struct sim_params *p,
                                    struct sample *sm, int k, int ns, size_t *chunk,
                                    struct diag *d)
{
    sm[k].hy = 1;
    BK_CHECK(sim_chunk_near(&jb->hy, sm[k].bytes, p, *chunk, PLAN_TUNE_MAX_CHUNK, chunk,
                            &sm[k].hy_us, d));
    sm[k].hy_chunk = *chunk;
    /* Beyond the last sample, as for the trees: the time one size below at the last chunk. */
    double other = k + 1 < ns ? PLAN_TUNE_MIN_BYTES * pow(2, k + 1) : sm[k - 1].bytes;
    return sim_run(&jb->hy, other, *chunk, p, &sm[k].hy_next_us, d);
}

/* The samples: the trees' best chunk and time at each size, the same chunk's time at the next
 * size, and NCCL's time; for each protocol, and for the hybrid set from
 * PLAN_TUNE_HYBRID_MIN_BYTES up. LL is timed from the smallest size up to
 * PLAN_TUNE_LL_MAX_BYTES and only until it is slower than Simple: its lines double every
 * byte, so past that size it only falls further behind, and its small chunks are the most
 * expensive to simulate. */
BK_MUST_USE
static enum bk_status sample_with(const struct plan_set *ps, const struct plan *pl,
                                  struct jobs *jb, const struct sim_params *p,
                                  struct sample *sm, int ns, struct diag *d)
{
    size_t chunk = SIM_CHUNK_MIN, ll_chunk = SIM_CHUNK_MIN, hy_chunk = SIM_CHUNK_MIN;
    int ll = 1;
    for (int k = 0; k < ns; k++) {
        sm[k].bytes = PLAN_TUNE_MIN_BYTES * pow(2, k);
        BK_CHECK(sim_chunk_near(&jb->trees, sm[k].bytes, p, chunk, PLAN_TUNE_MAX_CHUNK, &chunk,
                                &sm[k].tree_us, d));
        sm[k].chunk = chunk;
        ll = ll && sm[k].bytes <= PLAN_TUNE_LL_MAX_BYTES;
        sm[k].ll = ll;
        if (ll) {
            BK_CHECK(sim_chunk_near(&jb->ll, sm[k].bytes, p, ll_chunk, SIM_LL_CHUNK_MAX,
                                    &ll_chunk, &sm[k].ll_us, d));
            sm[k].ll_chunk = ll_chunk;
            ll = sm[k].ll_us <= sm[k].tree_us;
            if (k + 1 < ns)
                BK_CHECK(sim_run(&jb->ll, PLAN_TUNE_MIN_BYTES * pow(2, k + 1), ll_chunk, p,
                                 &sm[k].ll_next_us, d));
        }
        if (jb->hy_trees.n > 0 && k > 0 && sm[k].bytes >= PLAN_TUNE_HYBRID_MIN_BYTES)
            BK_CHECK(sample_hybrid(jb, p, sm, k, ns, &hy_chunk, d));
        sm[k].nccl_us = 0;
        if (ps->ring.nrings > 0) {
            struct sim_nccl nc;
            BK_CHECK(sim_rings(ps, pl->coll, sm[k].bytes, p, &nc, d));
            sm[k].nccl_us = nc.best_us;
        }
    }
    for (int k = 0; k + 1 < ns; k++)
        BK_CHECK(sim_run(&jb->trees, sm[k + 1].bytes, sm[k].chunk, p, &sm[k].next_us, d));
    /* Beyond the last sample the times are extrapolated linearly from the last two at the last
     * chunk: next_us of the last sample holds the trees' time there at the one before. */
    if (ns > 1)
        BK_CHECK(sim_run(&jb->trees, sm[ns - 2].bytes, sm[ns - 1].chunk, p, &sm[ns - 1].next_us,
                         d));
    return BK_OK;
}

/* sample_with, each run made once (a size's first chunk is the last size's best, whose time
 * here is also that size's next_us). */
BK_MUST_USE
static enum bk_status take_samples(const struct plan_set *ps, const struct plan *pl,
                                   const struct sim_params *p, struct sample *sm, int ns,
                                   struct diag *d)
{
    struct jobs jb = {0};
    sim_job_plan(&jb.trees, ps, pl);
    jb.trees.seen = &jb.seen;
    jb.ll = jb.trees;
    jb.ll.proto = SIM_LL;
    enum bk_status st = BK_OK;
    ptree_set_init(&jb.hy_trees);
    if (pl->has_hybrid && pl->pcie.trees.n > 0 && pl->main.trees.n > 0) {
        jb.hy = jb.trees;
        jb.hy.seen = &jb.hy_seen;
        st = plan_hybrid_set(ps, pl, &jb.hy.g, &jb.hy_trees);
        jb.hy.trees = &jb.hy_trees;
    }
    if (st == BK_OK)
        st = sample_with(ps, pl, &jb, p, sm, ns, d);
    sim_seen_free(&jb.seen);
    sim_seen_free(&jb.hy_seen);
    ptree_set_free(&jb.hy_trees);
    return st;
}

/* The hybrid set takes interval k where it beats NCCL and, by the same margin, the trees at
 * both ends (Simple at the chunk each found; LL never reaches these sizes). The open-ended last
 * interval asks, as for the trees, that its time grow no faster than theirs and NCCL's. */
static int hybrid_wins(const struct sample *sm, int k, int ns)
{
    const struct sample *s = &sm[k];
    if (!s->hy || !trees_win(s->hy_us, s->nccl_us) || !trees_win(s->hy_us, s->tree_us))
        return 0;
    if (k + 1 < ns)
        return sm[k + 1].hy && trees_win(s->hy_next_us, sm[k + 1].nccl_us) &&
               trees_win(s->hy_next_us, s->next_us);
    double hy_slope = s->hy_us - s->hy_next_us, tree_slope = s->tree_us - s->next_us;
    double nccl_slope = s->nccl_us - sm[k - 1].nccl_us;
    return hy_slope <= tree_slope && (s->nccl_us <= 0 || hy_slope <= nccl_slope);
}

BK_MUST_USE
static enum bk_status tune_one(const struct plan_set *ps, struct plan *pl,
                               const struct sim_params *p, struct diag *d)
{
    int ns = 0;
    for (double b = PLAN_TUNE_MIN_BYTES; b <= PLAN_TUNE_MAX_BYTES; b *= 2)
        ns++;
    struct sample *sm = calloc((size_t)ns, sizeof *sm);
    struct plan_tuning tu = {0};
    enum bk_status st = sm ? take_samples(ps, pl, p, sm, ns, d) : BK_ENOMEM;
    /* Interval k runs from sample k to sample k+1 (the first from 0); the last sample's from
     * there on. Trees take an interval only where they win at both of its ends. */
    for (int k = 0; st == BK_OK && k < ns; k++) {
        const struct sample *s = &sm[k];
        struct plan_range r = {k == 0 ? 0 : s->bytes, PLAN_ALGO_RINGS, s->chunk, s->bytes,
                               s->tree_us, s->nccl_us, PLAN_PROTO_SIMPLE, PLAN_ALGO_RINGS};
        int win = trees_win(s->tree_us, s->nccl_us);
        if (k + 1 < ns) {
            win = win && trees_win(s->next_us, sm[k + 1].nccl_us);
        } else if (k > 0 && s->nccl_us > 0) {
            /* Open-ended: the trees' time must not grow faster than NCCL's. */
            double tree_slope = s->tree_us - s->next_us, nccl_slope = s->nccl_us - sm[k - 1].nccl_us;
            win = win && tree_slope <= nccl_slope;
        }
        /* LL (never open-ended: it stops below the last sample) takes the interval where it
         * wins at both ends too, and where both protocols do, the one faster over the interval
         * (the sum of its two ends, as the times are interpolated between them). */
        int ll_win = s->ll && k + 1 < ns && trees_win(s->ll_us, s->nccl_us) &&
                     trees_win(s->ll_next_us, sm[k + 1].nccl_us);
        if (ll_win && (!win || s->ll_us + s->ll_next_us < s->tree_us + s->next_us)) {
            r.chunk_bytes = s->ll_chunk;
            r.tree_us = s->ll_us;
            r.proto = PLAN_PROTO_LL;
            win = 1;
        }
        if (win)
            r.algo = r.fallback = PLAN_ALGO_TREES;
        if (hybrid_wins(sm, k, ns)) {
            r.algo = PLAN_ALGO_HYBRID;
            r.chunk_bytes = s->hy_chunk;
            r.tree_us = s->hy_us;
            r.proto = PLAN_PROTO_SIMPLE;
        }
        st = add_range(&tu, &r);
    }
    free(sm);
    if (st != BK_OK) {
        free(tu.r);
        return st;
    }
    free(pl->tune.r);
    pl->tune = tu;
    return BK_OK;
}

enum bk_status plan_tune_plan(struct plan_set *ps, int i, const struct sim_params *p,
                              struct diag *d)
{
    return tune_one(ps, &ps->v[i], p, d);
}

enum bk_status plan_tune_copies(struct plan_set *ps)
{
    for (int i = 0; i < ps->n; i++) {
        const struct plan *same = ps->v[i].relabels ? &ps->v[ps->v[i].relabels - 1] : NULL;
        if (!same)
            continue;
        /* The same trees, relabelled (kept or not): the same times. */
        struct plan_tuning *tu = &ps->v[i].tune;
        free(tu->r);
        tu->r = malloc(((size_t)same->tune.n + 1) * sizeof *tu->r);
        if (!tu->r)
            return BK_ENOMEM;
        memcpy(tu->r, same->tune.r, (size_t)same->tune.n * sizeof *tu->r);
        tu->n = same->tune.n;
        tu->cap = 0;
    }
    return BK_OK;
}

const struct plan_range *plan_range_at(const struct plan *pl, double bytes)
{
    const struct plan_range *r = NULL;
    for (int i = 0; i < pl->tune.n && pl->tune.r[i].min_bytes <= bytes; i++)
        r = &pl->tune.r[i];
    return r;
}
