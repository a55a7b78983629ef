/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * bench_plan.c - TreeGen's benchmark: optimality, tree counts and speedup over rings for every
 * 3-8 GPU allocation of DGX-1P and DGX-1V (the Blink paper's Figure 5), every fixture, and
 * planning time and memory. It prints tables; it asserts nothing (tests do that).
 *
 * Times are CPU seconds of this process (one core). Speedups follow blink-and-peers.md 6.1: per
 * isomorphism class of the allocation's NVLink graph, broadcast takes its worst root, and the
 * ratios are taken over the classes that have an NVLink ring.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "alloc_util.h"
#include "bench_fabrics.h"
#include "bench_scaling.h"
#include "calibrate.h"
#include "core/builtin.h"
#include "gen_cluster.h"
#include "core/input.h"
#include "plan/plan.h"
#include "core/strbuf.h"
#include "topo/topo.h"
#include "read/topo_read.h"

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

/* What one allocation's plans give. */
struct alloc_result {
    double bcast_worst;   /* broadcast algbw, worst root */
    double ring_b;        /* ring B */
    int ring_nvlink;      /* rings over NVLink */
    double ar, ar_ring;   /* allreduce algbw, trees and rings */
    double min_ratio;     /* over every plan */
    int max_trees;        /* over broadcast and reduce plans */
    int plans;
};

static int plan_one(const struct topo *t, struct alloc_result *r, int hybrid)
{
    struct plan_opts o;
    plan_opts_default(&o);
    o.hybrid = hybrid;
    struct plan_set ps;
    struct diag d;
    diag_init(&d);
    enum bk_status st = plan_all(t, &o, &ps, &d);
    if (st != BK_OK) {
        diag_print(&d, stderr);
        diag_free(&d);
        return 0;
    }
    diag_free(&d);
    memset(r, 0, sizeof *r);
    r->bcast_worst = INFINITY;
    r->min_ratio = INFINITY;
    r->ring_b = ps.ring.gbps;
    r->ring_nvlink = ps.ring.kinds == PG_NVLINK;
    for (int i = 0; i < ps.n; i++) {
        const struct plan *p = &ps.v[i];
        double ratio = p->main.bound > 0 ? p->main.algbw / p->main.bound : 0;
        r->min_ratio = fmin(r->min_ratio, ratio);
        if (p->coll == COLL_BROADCAST)
            r->bcast_worst = fmin(r->bcast_worst, p->main.algbw);
        if (collective_has_root(p->coll) && p->main.trees.n > r->max_trees)
            r->max_trees = p->main.trees.n;
        if (p->coll == COLL_ALLREDUCE) {
            r->ar = p->main.algbw;
            r->ar_ring = p->ring_algbw;
        }
    }
    r->plans = ps.n;
    plan_set_free(&ps);
    return 1;
}

struct class_row {
    char key[65];
    struct alloc_result r;
};

static void figure5(const char *box)
{
    struct topo full;
    if (!alloc_read_builtin(box, &full))
        return;
    printf("\n## %s: every allocation of 3 to 8 GPUs (all collectives, every root)\n\n", box);
    printf("| GPUs | allocations | classes | no NVLink ring | min ratio | max trees/root | "
           "bcast trees/rings max; geomean | allreduce max; geomean |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int n = 3; n <= 8; n++) {
        struct class_row rows[80];
        int nclasses = 0, nallocs = 0, noring = 0, max_trees = 0;
        double min_ratio = INFINITY, bmax = 0, blog = 0, amax = 0, alog = 0;
        int nring = 0;
        for (unsigned mask = 0; mask < 256; mask++) {
            if (__builtin_popcount(mask) != n)
                continue;
            struct topo t;
            if (!alloc_restrict_mask(&full, mask, &t))
                continue;
            struct alloc_result r;
            int ok = plan_one(&t, &r, 1);
            char key[65];
            alloc_nvlink_key(&t, key);
            topo_free(&t);
            if (!ok)
                continue;
            nallocs++;
            min_ratio = fmin(min_ratio, r.min_ratio);
            max_trees = r.max_trees > max_trees ? r.max_trees : max_trees;
            int seen = 0;
            for (int c = 0; c < nclasses && !seen; c++)
                seen = strcmp(rows[c].key, key) == 0;
            if (seen || nclasses == (int)(sizeof rows / sizeof rows[0]))
                continue;
            memcpy(rows[nclasses].key, key, sizeof key);
            rows[nclasses++].r = r;
        }
        for (int c = 0; c < nclasses; c++) {
            const struct alloc_result *r = &rows[c].r;
            if (!r->ring_nvlink) {
                noring++;
                continue;
            }
            double b = r->bcast_worst / r->ring_b, a = r->ar / r->ar_ring;
            bmax = fmax(bmax, b);
            amax = fmax(amax, a);
            blog += log(b);
            alog += log(a);
            nring++;
        }
        printf("| %d | %d | %d | %d | %.4f | %d | ", n, nallocs, nclasses, noring, min_ratio,
               max_trees);
        if (nring)
            printf("%.2f; %.2f | %.2f; %.2f |\n", bmax, exp(blog / nring), amax,
                   exp(alog / nring));
        else
            printf("- | - |\n");
    }
    topo_free(&full);
}

static void fixtures(void)
{
    static const char *const names[] = {"dgx1p",  "dgx1v",          "dgx2", "dgx-a100",
                                        "hgx-h100", "pcie8", "cluster-4x-dgx1v"};
    printf("\n## Fixtures, all GPUs\n\n");
    printf("| fixture | GPUs | plans | min ratio | max trees/root | bcast worst | ring B | "
           "allreduce | ring allreduce | CPU s |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct topo t;
        if (!alloc_read_builtin(names[i], &t))
            continue;
        double t0 = cpu_seconds();
        struct alloc_result r;
        int ok = plan_one(&t, &r, 1);
        double dt = cpu_seconds() - t0;
        if (ok)
            printf("| %s | %d | %d | %.4f | %d | %.1f | %.1f | %.1f | %.1f | %.2f |\n", names[i],
                   t.ngpus, r.plans, r.min_ratio, r.max_trees, r.bcast_worst, r.ring_b, r.ar,
                   r.ar_ring, dt);
        else
            printf("| %s | %d | failed |\n", names[i], t.ngpus);
        fflush(stdout);
        topo_free(&t);
    }
}

/* Planning time for every DGX-1V allocation x every root x every collective. */
static void timing(int hybrid)
{
    struct topo full;
    if (!alloc_read_builtin("dgx1v", &full))
        return;
    double t0 = cpu_seconds();
    int plans = 0, allocs = 0;
    for (unsigned mask = 0; mask < 256; mask++) {
        int n = __builtin_popcount(mask);
        if (n < 3)
            continue;
        struct topo t;
        if (alloc_restrict_mask(&full, mask, &t)) {
            struct alloc_result r;
            if (plan_one(&t, &r, hybrid))
                plans += r.plans;
            allocs++;
            topo_free(&t);
        }
    }
    double dt = cpu_seconds() - t0;
    printf("DGX-1V, %d allocations of 3-8 GPUs, %d plans (every root, every collective, %s): "
           "%.2f CPU s, %.2f ms per plan; peak RSS %ld MB\n",
           allocs, plans, hybrid ? "with the hybrid PCIe sets" : "NVLink trees only", dt,
           1e3 * dt / plans, peak_rss_mb());
    topo_free(&full);
}

/* A cluster of `servers` DGX-1V boxes: every collective, broadcast and reduce from `roots`
 * roots (-1: every GPU). */
static void cluster_timing(int servers, int all_roots)
{
    struct strbuf sb;
    sb_init(&sb);
    gen_dgx1v_cluster(&sb, servers, 0);
    struct topo t;
    double t0 = cpu_seconds();
    int ok = alloc_read_text("cluster", sb.data, sb.len, NULL, &t);
    sb_free(&sb);
    if (!ok)
        return;
    double t1 = cpu_seconds();
    struct plan_opts o;
    plan_opts_default(&o);
    o.root = all_roots ? -1 : 0;
    struct plan_set ps;
    struct diag d;
    diag_init(&d);
    enum bk_status st = plan_all(&t, &o, &ps, &d);
    double t2 = cpu_seconds();
    if (st != BK_OK) {
        diag_print(&d, stderr);
    } else {
        double worst = INFINITY;
        long trees = 0;
        for (int i = 0; i < ps.n; i++) {
            const struct plan_trees *m = &ps.v[i].main;
            worst = fmin(worst, m->bound > 0 ? m->algbw / m->bound : 0);
            trees += m->trees.n;
        }
        printf("| %d x DGX-1V | %d | %s | %d | %ld | %.4f | %.2f | %.2f | %ld |\n", servers,
               t.ngpus, all_roots ? "every GPU" : "gpu0", ps.n, trees, worst, t1 - t0, t2 - t1,
               peak_rss_mb());
        plan_set_free(&ps);
    }
    fflush(stdout);
    diag_free(&d);
    topo_free(&t);
}

int main(int argc, char **argv)
{
    /* `bench_plan clusters`, `bench_plan timing`, `bench_plan fabrics` or `bench_plan scaling`
       prints only that table; `bench_plan calibrate [--check | --fit] [TSV]` the simulator's
       NCCL against published measurements (--fit: redo the fit of its fitted values). */
    const char *only = argc > 1 ? argv[1] : "";
    if (strcmp(only, "scaling-point") == 0)
        return bench_scaling_point(argc, argv);
    printf("# blinkc TreeGen benchmark\n");
    if (strcmp(only, "calibrate") == 0) {
        enum calibrate_mode mode = argc > 2 && strcmp(argv[2], "--check") == 0 ? CALIBRATE_CHECK
                                   : argc > 2 && strcmp(argv[2], "--fit") == 0 ? CALIBRATE_FIT
                                                                              : CALIBRATE_REPORT;
        int at = mode == CALIBRATE_REPORT ? 2 : 3;
        return bench_calibrate(argc > at ? argv[at] : BENCH_CALIBRATION_TSV, mode);
    }
    if (strcmp(only, "clusters") == 0)
        goto clusters;
    if (strcmp(only, "fabrics") == 0) {
        bench_fabrics();
        return 0;
    }
    if (strcmp(only, "scaling") == 0) {
        bench_scaling();
        return 0;
    }
    if (strcmp(only, "timing") == 0)
        goto timing;
    figure5("dgx1p");
    figure5("dgx1v");
    fixtures();
timing:
    printf("\n## Planning time\n\n");
    timing(0);
    timing(1);
    if (strcmp(only, "timing") == 0)
        return 0;
clusters:
    printf("\n## Clusters (Blink's three phases; every collective)\n\n");
    printf("| cluster | GPUs | broadcast/reduce roots | plans | trees | min ratio | read CPU s | "
           "plan CPU s | peak RSS MB |\n|---|---|---|---|---|---|---|---|---|\n");
    cluster_timing(4, 1);
    cluster_timing(16, 1);
    cluster_timing(64, 0);
    cluster_timing(64, 1);
    bench_scaling();
    if (strcmp(only, "clusters") != 0) {
        bench_fabrics();
        printf("\n");
        bench_calibrate(BENCH_CALIBRATION_TSV, CALIBRATE_REPORT);
    }
    return 0;
}
