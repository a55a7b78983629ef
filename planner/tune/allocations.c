/* SPDX-License-Identifier: GPL-3.0-or-later */
/* allocations.c - see allocations.h. */
#include "tune/allocations.h"

#include <stdlib.h>

#include "core/progress.h"
#include "tune/plan_tune.h"

enum bk_status plan_allocations(const struct topo *full, const struct plan_opts *o,
                                const struct sim_params *sim, struct allocations *out,
                                struct diag *d)
{
    out->n = 0;
    out->topos = NULL;
    out->sets = NULL;
    int n = full->ngpus;
    if (n > ALLOCATIONS_MAX_GPUS || n < 2) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "--all-allocations: the topology has %d GPUs; it needs 2 to %d", n,
                 ALLOCATIONS_MAX_GPUS);
        return BK_EUSAGE;
    }
    size_t cap = (size_t)1 << n;
    out->topos = calloc(cap, sizeof *out->topos);
    out->sets = calloc(cap, sizeof *out->sets);
    enum bk_status st = out->topos && out->sets ? BK_OK : BK_ENOMEM;
    for (unsigned mask = 3; st == BK_OK && mask < cap; mask++) {
        int gpus[ALLOCATIONS_MAX_GPUS], k = 0;
        for (int g = 0; g < n; g++)
            if (mask & (1u << g))
                gpus[k++] = g;
        if (k < 2)
            continue;
        /* A set the topology does not join is no allocation: skip it quietly. */
        struct topo *t = &out->topos[out->n];
        struct diag quiet;
        diag_init(&quiet);
        st = topo_restrict(full, gpus, k, t, &quiet);
        diag_free(&quiet);
        if (st == BK_EINPUT) {
            st = BK_OK;
            continue;
        }
        struct plan_set *ps = &out->sets[out->n];
        progress_context("allocation %d (%d GPUs; %u of %zu GPU sets looked at): ", out->n + 1, k,
                         mask, cap - 1);
        if (st == BK_OK)
            st = plan_all(t, o, ps, d); /* frees ps when it fails */
        if (st == BK_OK && sim && (st = plan_tune(ps, sim, d)) != BK_OK)
            plan_set_free(ps);
        if (st == BK_OK)
            out->n++;
        else
            topo_free(t);
    }
    progress_context(NULL);
    if (st != BK_OK)
        allocations_free(out);
    return st;
}

void allocations_free(struct allocations *a)
{
    for (int i = 0; i < a->n; i++) {
        plan_set_free(&a->sets[i]);
        topo_free(&a->topos[i]);
    }
    free(a->topos);
    free(a->sets);
    a->n = 0;
    a->topos = NULL;
    a->sets = NULL;
}
