/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_engine.c - the flow-level discrete-event engine: a DAG of delays and flows, max-min fair
 * sharing by progressive filling, rates recomputed only when the set of flows changes.
 *
 * Cost per event is O(active flows + filling rounds x resources still filling); each resource
 * keeps the list of active flows that cross it as flows start and end (O(path length) each),
 * so no event rebuilds them. The active set is bounded by the number of streams (a few
 * hundred), so tens of thousands of copies take tens of milliseconds.
 */
#include "sim/sim_engine.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

enum bk_status sim_eng_init(struct sim_eng *e, int nres, const double *cap_gbps)
{
    memset(e, 0, sizeof *e);
    e->nres = nres;
    e->cap = malloc(((size_t)nres + 1) * sizeof *e->cap);
    if (!e->cap)
        return BK_ENOMEM;
    for (int r = 0; r < nres; r++) {
        if (!(cap_gbps[r] > 0) || cap_gbps[r] > DBL_MAX / 1e3) {
            sim_eng_free(e);
            return BK_EINTERNAL;
        }
        e->cap[r] = cap_gbps[r] * 1e3; /* GB/s = 1e9 B/s = 1e3 B/us */
    }
    return BK_OK;
}

void sim_eng_free(struct sim_eng *e)
{
    free(e->cap);
    free(e->delay);
    free(e->bytes);
    free(e->finish);
    free(e->res_off);
    free(e->res_n);
    free(e->res);
    free(e->dep_from);
    free(e->dep_to);
    memset(e, 0, sizeof *e);
}

enum bk_status sim_eng_task(struct sim_eng *e, double delay_us, double bytes, const int *res,
                            int nres, int *id)
{
    int n = e->ntasks;
    for (int i = 0; i < nres; i++)
        if (res[i] < 0 || res[i] >= e->nres)
            return BK_EINTERNAL;
    struct bk_array tasks[] = {BK_ARRAY(e->delay), BK_ARRAY(e->bytes), BK_ARRAY(e->finish),
                               BK_ARRAY(e->res_off), BK_ARRAY(e->res_n)};
    BK_CHECK(bk_grow_int_arrays(tasks, (int)BK_ARRAY_LEN(tasks), &e->tcap, n));
    if (nres > 0) {
        BK_CHECK(bk_grow_int((void **)&e->res, &e->res_cap, e->nres_used + nres - 1,
                             sizeof *e->res));
        memcpy(e->res + e->nres_used, res, (size_t)nres * sizeof *res);
    }
    e->delay[n] = delay_us > 0 ? delay_us : 0;
    e->bytes[n] = nres > 0 && bytes > 0 ? bytes : 0;
    e->finish[n] = -1;
    e->res_off[n] = e->nres_used;
    e->res_n[n] = nres;
    e->nres_used += nres;
    e->ntasks = n + 1;
    *id = n;
    return BK_OK;
}

enum bk_status sim_eng_dep(struct sim_eng *e, int before, int after)
{
    if (before < 0)
        return BK_OK;
    if (before >= e->ntasks || after < 0 || after >= e->ntasks)
        return BK_EINTERNAL;
    struct bk_array deps[] = {BK_ARRAY(e->dep_from), BK_ARRAY(e->dep_to)};
    BK_CHECK(bk_grow_int_arrays(deps, 2, &e->dep_cap, e->ndeps));
    e->dep_from[e->ndeps] = before;
    e->dep_to[e->ndeps] = after;
    e->ndeps++;
    return BK_OK;
}

/* ------------------------------------------------------------------ the run */

struct run {
    struct sim_eng *e;
    int *succ_off, *succ, *indeg;
    double *ht;  /* heap of (time, task): delays ending */
    int *hid, hn;
    int *act, nact;      /* active flows, in activation order */
    double *rem, *rate;  /* [ntasks] */
    double *left;        /* [nres] capacity not yet handed out while filling */
    int *cnt;            /* [nres] unfrozen flows crossing the resource */
    unsigned char *frozen; /* [ntasks] */
    int *used, nused;    /* resources crossed by active flows, kept as flows come and go */
    int *live;           /* [nres] while filling: the used resources with unfrozen flows */
    int *at_used;        /* [nres] r's index in used[], -1 when no active flow crosses it */
    int *roff, *rend;    /* [nres] r's active flows: rlist[roff[r] .. rend[r]), a region
                            sized for every task that crosses r */
    int *rlist;          /* [resource entries of every task] */
    int *at_list;        /* [resource entries of every task] where entry k of task f
                            (e->res[e->res_off[f] + k]) sits in rlist while f is active */
    int *full;           /* [nres] resources filled in one round */
    int *hit;            /* [ntasks] flows frozen in one round */
    double t_last;       /* when rem[] was last brought up to date */
    int done;
};

static int heap_less(const struct run *R, int a, int b)
{
    return R->ht[a] < R->ht[b] || (R->ht[a] == R->ht[b] && R->hid[a] < R->hid[b]);
}

static void heap_swap(struct run *R, int a, int b)
{
    double t = R->ht[a];
    R->ht[a] = R->ht[b];
    R->ht[b] = t;
    int i = R->hid[a];
    R->hid[a] = R->hid[b];
    R->hid[b] = i;
}

static void heap_push(struct run *R, double t, int id)
{
    int i = R->hn++;
    R->ht[i] = t;
    R->hid[i] = id;
    while (i > 0 && heap_less(R, i, (i - 1) / 2)) {
        heap_swap(R, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_pop(struct run *R)
{
    R->hn--;
    heap_swap(R, 0, R->hn);
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < R->hn && heap_less(R, l, m))
            m = l;
        if (r < R->hn && heap_less(R, r, m))
            m = r;
        if (m == i)
            break;
        heap_swap(R, i, m);
        i = m;
    }
}

static void finish_task(struct run *R, int id, double now)
{
    struct sim_eng *e = R->e;
    e->finish[id] = now;
    R->done++;
    for (int k = R->succ_off[id]; k < R->succ_off[id + 1]; k++) {
        int s = R->succ[k];
        if (--R->indeg[s] == 0)
            heap_push(R, now + e->delay[s], s);
    }
}

/* Flow f starts: it joins the flow list of every resource it crosses. */
static void flow_on(struct run *R, int f)
{
    struct sim_eng *e = R->e;
    for (int k = 0; k < e->res_n[f]; k++) {
        int r = e->res[e->res_off[f] + k];
        if (R->rend[r] == R->roff[r]) {
            R->at_used[r] = R->nused;
            R->used[R->nused++] = r;
        }
        R->at_list[e->res_off[f] + k] = R->rend[r];
        R->rlist[R->rend[r]++] = f;
    }
}

/* Flow f ends: the last flow of each of its resources' lists takes its place there. */
static void flow_off(struct run *R, int f)
{
    struct sim_eng *e = R->e;
    for (int k = 0; k < e->res_n[f]; k++) {
        int r = e->res[e->res_off[f] + k], at = R->at_list[e->res_off[f] + k];
        int last = --R->rend[r], g = R->rlist[last];
        R->rlist[at] = g;
        for (int q = 0; q < e->res_n[g]; q++)
            if (R->at_list[e->res_off[g] + q] == last && e->res[e->res_off[g] + q] == r)
                R->at_list[e->res_off[g] + q] = at;
        if (R->rend[r] == R->roff[r]) {
            int moved = R->used[--R->nused];
            R->used[R->at_used[r]] = moved;
            R->at_used[moved] = R->at_used[r];
            R->at_used[r] = -1;
        }
    }
}

/* Max-min fair rates of the active flows by progressive filling: raise every unfrozen flow's
 * rate together until some resource is full, freeze the flows crossing it, repeat. A round
 * visits only the resources in use and the flows of the resources that filled (each used
 * resource lists its flows), and a flow's rate is the level reached when it froze: the same
 * sums in the same order as raising every flow by each round's step. */
static void fill_rates(struct run *R)
{
    struct sim_eng *e = R->e;
    for (int i = 0; i < R->nact; i++) {
        int f = R->act[i];
        R->rate[f] = 0;
        R->frozen[f] = 0;
    }
    int nlive = R->nused;
    for (int i = 0; i < nlive; i++) {
        int r = R->live[i] = R->used[i];
        R->left[r] = e->cap[r];
        R->cnt[r] = R->rend[r] - R->roff[r];
    }
    int nfree = R->nact;
    double level = 0;
    while (nfree > 0) {
        /* A resource whose flows are all frozen has nothing left to fill: it leaves live[]. */
        double delta = DBL_MAX;
        int keep = 0;
        for (int i = 0; i < nlive; i++) {
            int r = R->live[i];
            if (R->cnt[r] > 0) {
                R->live[keep++] = r;
                if (R->left[r] / R->cnt[r] < delta)
                    delta = R->left[r] / R->cnt[r];
            }
        }
        nlive = keep;
        level += delta;
        /* Which flows freeze is decided on the counts before any of them is removed. */
        int nfull = 0, nhit = 0;
        for (int i = 0; i < nlive; i++) {
            int r = R->live[i];
            R->left[r] -= delta * R->cnt[r];
            if (R->left[r] <= 1e-12 * e->cap[r])
                R->full[nfull++] = r;
        }
        for (int i = 0; i < nfull; i++) {
            int r = R->full[i];
            for (int j = R->roff[r]; j < R->rend[r]; j++) {
                int f = R->rlist[j];
                if (!R->frozen[f]) {
                    R->frozen[f] = 1;
                    R->rate[f] = level;
                    R->hit[nhit++] = f;
                }
            }
        }
        for (int i = 0; i < nhit; i++) {
            int f = R->hit[i];
            nfree--;
            for (int k = 0; k < e->res_n[f]; k++)
                R->cnt[e->res[e->res_off[f] + k]]--;
        }
    }
}

static void run_free(struct run *R)
{
    free(R->succ_off);
    free(R->succ);
    free(R->indeg);
    free(R->ht);
    free(R->hid);
    free(R->act);
    free(R->rem);
    free(R->rate);
    free(R->left);
    free(R->cnt);
    free(R->frozen);
    free(R->used);
    free(R->at_used);
    free(R->live);
    free(R->at_list);
    free(R->roff);
    free(R->rend);
    free(R->rlist);
    free(R->full);
    free(R->hit);
}

BK_MUST_USE
static enum bk_status run_init(struct run *R, struct sim_eng *e)
{
    memset(R, 0, sizeof *R);
    R->e = e;
    size_t n = (size_t)e->ntasks + 1, m = (size_t)e->nres + 1;
    R->succ_off = calloc(n + 1, sizeof *R->succ_off);
    R->succ = malloc(((size_t)e->ndeps + 1) * sizeof *R->succ);
    R->indeg = calloc(n, sizeof *R->indeg);
    R->ht = malloc(n * sizeof *R->ht);
    R->hid = malloc(n * sizeof *R->hid);
    R->act = malloc(n * sizeof *R->act);
    R->rem = calloc(n, sizeof *R->rem);
    R->rate = calloc(n, sizeof *R->rate);
    R->frozen = calloc(n, 1);
    R->left = calloc(m, sizeof *R->left);
    R->cnt = calloc(m, sizeof *R->cnt);
    R->used = malloc(m * sizeof *R->used);
    R->at_used = malloc(m * sizeof *R->at_used);
    R->live = malloc(m * sizeof *R->live);
    R->at_list = malloc(((size_t)e->nres_used + 1) * sizeof *R->at_list);
    R->roff = malloc(m * sizeof *R->roff);
    R->rend = malloc(m * sizeof *R->rend);
    R->rlist = malloc(((size_t)e->nres_used + 1) * sizeof *R->rlist);
    R->full = malloc(m * sizeof *R->full);
    R->hit = malloc(n * sizeof *R->hit);
    if (!R->succ_off || !R->succ || !R->indeg || !R->ht || !R->hid || !R->act || !R->rem ||
        !R->rate || !R->frozen || !R->left || !R->cnt || !R->used || !R->at_used || !R->live ||
        !R->at_list || !R->roff || !R->rend || !R->rlist || !R->full || !R->hit) {
        run_free(R);
        return BK_ENOMEM;
    }
    /* Each resource's flow list gets a region for every task that crosses it. */
    for (int r = 0; r <= e->nres; r++)
        R->roff[r] = 0;
    for (int k = 0; k < e->nres_used; k++)
        R->roff[e->res[k] + 1]++;
    for (int r = 0; r < e->nres; r++) {
        R->roff[r + 1] += R->roff[r];
        R->rend[r] = R->roff[r];
        R->at_used[r] = -1;
    }
    /* Successor lists by counting sort, in the order the dependencies were added. */
    for (int k = 0; k < e->ndeps; k++) {
        R->succ_off[e->dep_from[k] + 1]++;
        R->indeg[e->dep_to[k]]++;
    }
    for (int i = 0; i < e->ntasks; i++)
        R->succ_off[i + 1] += R->succ_off[i];
    int *pos = malloc(n * sizeof *pos);
    if (!pos) {
        run_free(R);
        return BK_ENOMEM;
    }
    memcpy(pos, R->succ_off, n * sizeof *pos);
    for (int k = 0; k < e->ndeps; k++)
        R->succ[pos[e->dep_from[k]]++] = e->dep_to[k];
    free(pos);
    return BK_OK;
}

enum bk_status sim_eng_run(struct sim_eng *e, double *makespan)
{
    struct run R;
    *makespan = 0;
    BK_CHECK(run_init(&R, e));
    for (int i = 0; i < e->ntasks; i++) {
        e->finish[i] = -1;
        if (R.indeg[i] == 0)
            heap_push(&R, e->delay[i], i);
    }
    double now = 0;
    for (;;) {
        double next = R.hn > 0 ? R.ht[0] : DBL_MAX;
        for (int i = 0; i < R.nact; i++) {
            int f = R.act[i];
            double t = R.t_last + R.rem[f] / R.rate[f];
            if (t < next)
                next = t;
        }
        if (next == DBL_MAX)
            break;
        now = next > now ? next : now;
        double eps = 1e-12 + 1e-12 * now;
        int changed = 0, progress = 1;
        /* Bring the remaining bytes up to now, then settle everything due at now, including
         * zero-delay successors of what just finished. */
        for (int i = 0; i < R.nact; i++) {
            int f = R.act[i];
            R.rem[f] -= R.rate[f] * (now - R.t_last);
        }
        R.t_last = now;
        while (progress) {
            progress = 0;
            while (R.hn > 0 && R.ht[0] <= now + eps) {
                int id = R.hid[0];
                heap_pop(&R);
                progress = 1;
                if (e->bytes[id] > 0) {
                    R.act[R.nact++] = id;
                    R.rem[id] = e->bytes[id];
                    flow_on(&R, id);
                    changed = 1;
                } else {
                    finish_task(&R, id, now);
                }
            }
            int keep = 0;
            for (int i = 0; i < R.nact; i++) {
                int f = R.act[i];
                /* A flow is done when its bytes are gone to within rounding. */
                if (R.rate[f] > 0 && R.rem[f] <= R.rate[f] * eps + 1e-9 * e->bytes[f]) {
                    finish_task(&R, f, now);
                    flow_off(&R, f);
                    changed = progress = 1;
                } else {
                    R.act[keep++] = f;
                }
            }
            R.nact = keep;
        }
        if (changed)
            fill_rates(&R);
    }
    *makespan = now;
    int done = R.done;
    run_free(&R);
    return done == e->ntasks ? BK_OK : BK_EINTERNAL;
}
