/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * calibrate.c - `bench_plan calibrate [TSV]`: every row of the published nccl-tests table
 * (docs/calibration/nccl-published.tsv) simulated with the simulator's NCCL model on the
 * built-in topology of its machine, and the error printed. With --check the exit status says
 * whether the error is within the thresholds of docs/calibration/README.md.
 *
 * A row runs on the first ngpus GPUs of its machine's fixture unless gpus_used names them
 * ("GPUs 0-3"); rows on machines without a fixture are listed as skipped, with the reason.
 */
#include "calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_util.h"
#include "core/gpu_list.h"
#include "core/strbuf.h"
#include "out/sim_report.h"
#include "plan/plan.h"
#include "sim/sim.h"

/* The thresholds the calibration test holds the model to (docs/calibration/README.md). */
#define MEDIAN_ABS_ERROR_MAX 0.10
#define ROW_ABS_ERROR_MAX 0.25

enum { COL_ID, COL_MACHINE, COL_GPU, COL_NGPUS, COL_USED, COL_COLL = 6, COL_BYTES = 8,
       COL_BUSBW = 10, NCOLS = 16 };

/* Which fixture a row's GPU runs on: the first prefix of its gpu column that matches. */
static const struct {
    const char *gpu_prefix, *builtin;
} machines[] = {
    {"V100-SXM2", "dgx1v"}, {"V100-SXM3", "dgx2"},       {"A100-SXM4", "dgx-a100"},
    {"H100-SXM5", "hgx-h100"}, {"H200-SXM", "hgx-h200"},
};

static const char *fixture_of(const char *gpu)
{
    for (size_t i = 0; i < sizeof machines / sizeof machines[0]; i++)
        if (strncmp(gpu, machines[i].gpu_prefix, strlen(machines[i].gpu_prefix)) == 0)
            return machines[i].builtin;
    return NULL;
}

/* Split line at tabs into at most NCOLS fields (in place). The number of fields. */
static int split(char *line, char **f)
{
    int n = 0;
    for (char *p = line; n < NCOLS;) {
        f[n++] = p;
        p = strchr(p, '\t');
        if (!p)
            break;
        *p++ = '\0';
    }
    return n;
}

/* "GPUs 0-3" or "GPUs 0,1" in gpus_used: those GPUs; otherwise the first ngpus. */
static void gpu_list(const char *used, int ngpus, int *gpus)
{
    const char *p = strstr(used, "GPUs ");
    char list[64] = "";
    if (p) {
        p += 5;
        size_t k = strspn(p, "0123456789,-");
        if (k < sizeof list) {
            memcpy(list, p, k);
            list[k] = '\0';
        }
    }
    if (gpu_list_parse(list, gpus, ngpus) != ngpus)
        for (int g = 0; g < ngpus; g++)
            gpus[g] = g;
}

/* The model's busbw for one row, GB/s; 0 with *why set when it cannot be simulated. */
static double model_busbw(const struct topo *box, char **f, const char **why)
{
    enum collective c;
    int ngpus = atoi(f[COL_NGPUS]);
    double bytes = strtod(f[COL_BYTES], NULL);
    if (!collective_parse(f[COL_COLL], &c)) {
        *why = "collective unknown";
        return 0;
    }
    if (ngpus < 2 || ngpus > box->ngpus || ngpus > 64) {
        *why = "more GPUs than the fixture";
        return 0;
    }
    int gpus[64];
    gpu_list(f[COL_USED], ngpus, gpus);
    struct topo t;
    struct diag d;
    diag_init(&d);
    if (topo_restrict(box, gpus, ngpus, &t, &d) != BK_OK) {
        diag_free(&d);
        *why = "allocation refused";
        return 0;
    }
    struct plan_opts o;
    plan_opts_default(&o);
    o.collectives = 1u << c;
    o.root = 0;
    struct plan_set ps;
    double us = 0;
    enum bk_status st = plan_all(&t, &o, &ps, &d);
    if (st == BK_OK) {
        struct sim_params p;
        sim_params_default(&p);
        struct sim_nccl nc;
        st = sim_rings(&ps, c, bytes, &p, &nc, &d);
        us = nc.best_us;
        plan_set_free(&ps);
    }
    topo_free(&t);
    diag_free(&d);
    if (st != BK_OK || !(us > 0)) {
        *why = "simulation failed";
        return 0;
    }
    return bytes / (us * 1e3) * sim_bus_factor(c, ngpus);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int bench_calibrate(const char *tsv, int check)
{
    FILE *fp = fopen(tsv, "r");
    if (!fp) {
        fprintf(stderr, "bench_plan: cannot open %s\n", tsv);
        return 2;
    }
    printf("## The simulator's NCCL against published nccl-tests (%s)\n\n", tsv);
    printf("| row | GPUs | collective | bytes | published busbw | model busbw | error |\n");
    printf("|---|---|---|---|---|---|---|\n");
    char line[8192];
    double err[4096];
    int n = 0, skipped = 0, lineno = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *f[NCOLS];
        if (++lineno == 1 || split(line, f) != NCOLS)
            continue;
        const char *name = fixture_of(f[COL_GPU]), *why = "no fixture for this GPU";
        double pub = strtod(f[COL_BUSBW], NULL), model = 0;
        struct topo box;
        if (name && alloc_read_builtin(name, &box)) {
            model = model_busbw(&box, f, &why);
            topo_free(&box);
        }
        if (!(model > 0) || !(pub > 0) || n == (int)(sizeof err / sizeof err[0])) {
            printf("| %s | %s | %s | %s | %.2f | skipped: %s | |\n", f[COL_ID], f[COL_NGPUS],
                   f[COL_COLL], f[COL_BYTES], pub, why);
            skipped++;
            continue;
        }
        err[n] = model / pub - 1;
        printf("| %s | %s | %s | %s | %.2f | %.2f | %+.1f%% |\n", f[COL_ID], f[COL_NGPUS],
               f[COL_COLL], f[COL_BYTES], pub, model, 100 * err[n]);
        n++;
    }
    fclose(fp);
    double abs_err[4096], worst = 0;
    for (int i = 0; i < n; i++) {
        abs_err[i] = fabs(err[i]);
        worst = fmax(worst, abs_err[i]);
    }
    qsort(abs_err, (size_t)n, sizeof abs_err[0], by_value);
    double median = n == 0 ? 0 : n % 2 ? abs_err[n / 2] : (abs_err[n / 2 - 1] + abs_err[n / 2]) / 2;
    printf("\n%d rows simulated, %d skipped; median absolute error %.1f%%, largest %.1f%% "
           "(thresholds %.0f%% and %.0f%%)\n\n",
           n, skipped, 100 * median, 100 * worst, 100 * MEDIAN_ABS_ERROR_MAX,
           100 * ROW_ABS_ERROR_MAX);
    if (!check)
        return 0;
    return n > 0 && median <= MEDIAN_ABS_ERROR_MAX && worst <= ROW_ABS_ERROR_MAX ? 0 : 1;
}
