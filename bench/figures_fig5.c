/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * figures_fig5.c - Figure 5: the theoretical speedup of packed trees over rings on every 3-8 GPU
 * allocation of an 8-GPU box, from the planner's rates alone (blink-and-peers.md 6.1's method,
 * as bench_plan.c's figure5 computes it).
 */
#include <math.h>
#include <string.h>

#include "alloc_util.h"
#include "figures.h"
#include "plan/plan.h"

struct class_result {
    char key[65];
    int nvlink_ring;
    double bcast, ring_b; /* broadcast algbw (worst root) and ring B */
    double ar, ar_ring;   /* allreduce algbw, trees and rings */
};

/* Broadcast (every root) and allreduce plans of one allocation. 1 on success. */
static int plan_alloc(const struct topo *t, struct class_result *r)
{
    struct plan_opts o;
    plan_opts_default(&o);
    o.collectives = (1u << COLL_BROADCAST) | (1u << COLL_ALLREDUCE);
    o.hybrid = 0; /* the PCIe tier changes no main-tier rate */
    struct plan_set ps;
    struct diag d;
    diag_init(&d);
    enum bk_status st = plan_all(t, &o, &ps, &d);
    diag_free(&d);
    if (st != BK_OK)
        return 0;
    r->bcast = INFINITY;
    r->ring_b = ps.ring.gbps;
    r->nvlink_ring = ps.ring.kinds == PG_NVLINK;
    r->ar = r->ar_ring = 0;
    for (int i = 0; i < ps.n; i++) {
        const struct plan *p = &ps.v[i];
        if (p->coll == COLL_BROADCAST)
            r->bcast = fmin(r->bcast, p->main.algbw);
        else if (p->coll == COLL_ALLREDUCE) {
            r->ar = p->main.algbw;
            r->ar_ring = p->ring_algbw;
        }
    }
    plan_set_free(&ps);
    return 1;
}

static void fig5_count(const struct topo *full, int n, struct fig5_row *row)
{
    struct class_result cls[80];
    int ncls = 0;
    memset(row, 0, sizeof *row);
    row->gpus = n;
    for (unsigned mask = 0; mask < 256; mask++) {
        if (__builtin_popcount(mask) != n)
            continue;
        struct topo t;
        if (!alloc_restrict_mask(full, mask, &t))
            continue;
        char key[65];
        alloc_nvlink_key(&t, key);
        int seen = 0;
        for (int c = 0; c < ncls && !seen; c++)
            seen = strcmp(cls[c].key, key) == 0;
        /* One allocation per class: isomorphic NVLink graphs give the same NVLink rates. */
        if (!seen && ncls < (int)(sizeof cls / sizeof cls[0]) && plan_alloc(&t, &cls[ncls])) {
            memcpy(cls[ncls].key, key, sizeof key);
            ncls++;
        }
        row->allocs++;
        topo_free(&t);
    }
    row->classes = ncls;
    double blog = 0, alog = 0;
    for (int c = 0; c < ncls; c++) {
        if (!cls[c].nvlink_ring || !(cls[c].ring_b > 0) || !(cls[c].ar_ring > 0)) {
            row->no_ring++;
            continue;
        }
        double b = cls[c].bcast / cls[c].ring_b, a = cls[c].ar / cls[c].ar_ring;
        row->bcast_max = fmax(row->bcast_max, b);
        row->ar_max = fmax(row->ar_max, a);
        blog += log(b);
        alog += log(a);
        row->ratios++;
    }
    if (row->ratios) {
        row->bcast_geomean = exp(blog / row->ratios);
        row->ar_geomean = exp(alog / row->ratios);
    }
}

int fig5_box(const char *box, struct fig5_row rows[6])
{
    struct topo full;
    if (!alloc_read_builtin(box, &full))
        return 0;
    for (int n = 3; n <= 8; n++)
        fig5_count(&full, n, &rows[n - 3]);
    topo_free(&full);
    return 1;
}
