/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tune_jobs.c - plan_tune_sets: the plans of many sets (a library's allocation classes, or one
 * topology's collectives and roots) simulated on several threads.
 *
 * Each plan a symmetry does not copy is one unit of work; the threads take units in order from
 * a shared counter, and each unit writes only its own plan's tuning and its own diagnostics, so
 * the result is the same for any number of threads. Planning stays on one thread (GLPK and the
 * symmetry search keep state of their own); simulating is most of a tuned library's time.
 */
#include "tune/plan_tune.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/collective.h"
#include "core/progress.h"

struct unit {
    int set, plan;
    enum bk_status st;
    struct diag d;
};

struct pool {
    struct plan_set *const *sets;
    const struct sim_params *p;
    struct unit *u;
    int nunits;
    int next;      /* the next unit to take (atomic) */
    int done;      /* units finished (atomic), for the calling thread's progress line */
    int failed;    /* a unit failed: take no more (atomic) */
};

/* Take units until none are left; the calling thread (say) reports progress. */
static void work(struct pool *pl, int say)
{
    for (;;) {
        if (__atomic_load_n(&pl->failed, __ATOMIC_ACQUIRE))
            return;
        int k = __atomic_fetch_add(&pl->next, 1, __ATOMIC_ACQ_REL);
        if (k >= pl->nunits)
            return;
        struct unit *u = &pl->u[k];
        if (say)
            progress_say("simulating sizes for %s (plan %d of %d)",
                         collective_name(pl->sets[u->set]->v[u->plan].coll),
                         __atomic_load_n(&pl->done, __ATOMIC_ACQUIRE) + 1, pl->nunits);
        u->st = plan_tune_plan(pl->sets[u->set], u->plan, pl->p, &u->d);
        __atomic_fetch_add(&pl->done, 1, __ATOMIC_ACQ_REL);
        if (u->st != BK_OK)
            __atomic_store_n(&pl->failed, 1, __ATOMIC_RELEASE);
    }
}

static void *worker(void *arg)
{
    work(arg, 0);
    return NULL;
}

enum bk_status plan_tune_sets(struct plan_set *const *sets, int n, const struct sim_params *p,
                              int jobs, struct diag *d)
{
    struct pool pl = {sets, p, NULL, 0, 0, 0, 0};
    size_t plans = 0;
    for (int s = 0; s < n; s++)
        plans += (size_t)sets[s]->n;
    pl.u = calloc(plans + 1, sizeof *pl.u);
    if (!pl.u)
        return BK_ENOMEM;
    for (int s = 0; s < n; s++)
        for (int i = 0; !sets[s]->cluster && i < sets[s]->n; i++) /* clusters: plan_tune.h */
            if (!sets[s]->v[i].relabels) {
                pl.u[pl.nunits] = (struct unit){s, i, BK_OK, {0}};
                diag_init(&pl.u[pl.nunits++].d);
            }
    int nthreads = jobs < pl.nunits ? jobs : pl.nunits;
    pthread_t *tid = calloc((size_t)(nthreads > 1 ? nthreads : 1), sizeof *tid);
    int started = 0;
    for (int t = 1; tid && t < nthreads; t++, started++)
        if (pthread_create(&tid[t], NULL, worker, &pl) != 0)
            break; /* fewer threads: the same result, later */
    work(&pl, 1);
    for (int t = 1; t <= started; t++)
        pthread_join(tid[t], NULL);
    free(tid);
    /* Every unit before the first failure was taken before it, so ran: the diagnostics up to
     * it, and its status, are the same for any number of threads. */
    enum bk_status st = BK_OK;
    for (int k = 0; k < pl.nunits; k++) {
        if (st == BK_OK) {
            diag_append(d, &pl.u[k].d);
            st = pl.u[k].st;
        }
        diag_free(&pl.u[k].d);
    }
    free(pl.u);
    for (int s = 0; st == BK_OK && s < n; s++)
        if (!sets[s]->cluster)
            st = plan_tune_copies(sets[s]);
    return st;
}

enum bk_status plan_tune(struct plan_set *ps, const struct sim_params *p, struct diag *d)
{
    return plan_tune_sets(&ps, 1, p, 1, d);
}
