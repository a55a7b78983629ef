/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * calibrate.c - `bench_plan calibrate [--check | --fit] [TSV]`: every row of the published
 * nccl-tests table (docs/calibration/nccl-published.tsv) simulated with the simulator's NCCL
 * model on the built-in topology of its machine, and the error printed. With --check the exit
 * status says whether the error is within the thresholds of docs/calibration/README.md; --fit
 * redoes the grid fit of the model's fitted values, and fits again without each source to
 * show how well the model predicts a source it was not fitted to.
 *
 * A row runs on the first ngpus GPUs of its machine's fixture unless gpus_used names them
 * ("GPUs 0-3"); rows on machines without a fixture are listed as skipped, with the reason.
 *
 * NCCL's host work per call has shrunk across releases: rows of NCCL before 2.18 (the NVLS
 * era), or of runs that do not say which, are simulated with a host cost of their own, fitted
 * with the rest. The simulator models the current NCCL, with the other value.
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

/* Host work per call of NCCL before 2.18 (or of a run that does not say), from --fit. */
#define CALL_EARLIER_US 10.0

/* The thresholds the calibration test holds the model to (docs/calibration/README.md). */
#define MEDIAN_ABS_ERROR_MAX 0.10
#define ROW_ABS_ERROR_MAX 0.25

enum { COL_ID, COL_MACHINE, COL_GPU, COL_NGPUS, COL_USED, COL_COLL = 6, COL_BYTES = 8,
       COL_BUSBW = 10, COL_VERSION = 11, COL_SOURCE = 14, NCOLS = 16 };

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

/* One row, planned once: the fit simulates it many times. */
struct row {
    char id[128], source[128], collective[32]; /* collective as the table names it */
    enum collective coll;
    int ngpus;
    double bytes, published;
    struct topo topo;
    struct plan_set ps;
    int planned;
    const char *skip; /* why it is not simulated, or NULL */
    int earlier;      /* NCCL before 2.18, or a version the source does not give */
};

/* The fitted values: the simulator's, and the host work per call of earlier NCCL. */
struct fitted {
    struct sim_params p;
    double call_earlier_us;
};

/* Plan row r's allocation; r->skip says why not. */
static void row_plan(struct row *r, char **f)
{
    r->skip = "no fixture for this GPU";
    const char *name = fixture_of(f[COL_GPU]);
    struct topo box;
    if (!name || !alloc_read_builtin(name, &box))
        return;
    r->skip = !collective_parse(f[COL_COLL], &r->coll) ? "collective unknown"
              : r->ngpus < 2 || r->ngpus > box.ngpus || r->ngpus > 64 ? "more GPUs than the fixture"
              : !(r->published > 0) ? "no published busbw"
                                    : NULL;
    if (r->skip) {
        topo_free(&box);
        return;
    }
    int gpus[64];
    gpu_list(f[COL_USED], r->ngpus, gpus);
    struct diag d;
    diag_init(&d);
    r->skip = "allocation refused";
    if (topo_restrict(&box, gpus, r->ngpus, &r->topo, &d) == BK_OK) {
        struct plan_opts o;
        plan_opts_default(&o);
        o.collectives = 1u << r->coll;
        o.root = 0;
        r->skip = "planning failed";
        if (plan_all(&r->topo, &o, &r->ps, &d) == BK_OK) {
            r->planned = 1;
            r->skip = NULL;
        } else {
            topo_free(&r->topo);
        }
    }
    topo_free(&box);
    diag_free(&d);
}

/* The model's busbw for a planned row, GB/s; 0 when the simulation fails. */
static double row_model(struct row *r, const struct fitted *f)
{
    struct diag d;
    diag_init(&d);
    struct sim_nccl nc;
    struct sim_params p = f->p;
    if (r->earlier)
        p.call_us = f->call_earlier_us;
    enum bk_status st = sim_rings(&r->ps, r->coll, r->bytes, &p, &nc, &d);
    diag_free(&d);
    return st == BK_OK && nc.best_us > 0
               ? r->bytes / (nc.best_us * 1e3) * sim_bus_factor(r->coll, r->ngpus)
               : 0;
}

/* Every data row of tsv, each planned; -1 (message printed) when the file cannot be read. */
static int rows_read(const char *tsv, struct row ***rows_out)
{
    FILE *fp = fopen(tsv, "r");
    if (!fp) {
        fprintf(stderr, "bench_plan: cannot open %s\n", tsv);
        return -1;
    }
    struct row **rows = NULL;
    int n = 0, cap = 0, lineno = 0;
    char line[8192];
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *f[NCOLS];
        if (++lineno == 1 || split(line, f) != NCOLS)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            struct row **more = realloc(rows, (size_t)cap * sizeof *rows);
            if (!more)
                break;
            rows = more;
        }
        /* One allocation per row: a plan set points at its row's topology. */
        struct row *r = calloc(1, sizeof *r);
        if (!r)
            break;
        rows[n++] = r;
        snprintf(r->id, sizeof r->id, "%s", f[COL_ID]);
        snprintf(r->collective, sizeof r->collective, "%s", f[COL_COLL]);
        /* The source's first word (a repository, or repository#issue) groups its rows. */
        snprintf(r->source, sizeof r->source, "%.*s", (int)strcspn(f[COL_SOURCE], " "),
                 f[COL_SOURCE]);
        r->ngpus = atoi(f[COL_NGPUS]);
        int major = 0, minor = 0; /* "2.26.2", "2.18.5 (stated; see note)", "unknown" */
        r->earlier = sscanf(f[COL_VERSION], "%d.%d", &major, &minor) != 2 ||
                     major * 100 + minor < 218;
        r->bytes = strtod(f[COL_BYTES], NULL);
        r->published = strtod(f[COL_BUSBW], NULL);
        row_plan(r, f);
    }
    fclose(fp);
    *rows_out = rows;
    return n;
}

static void rows_free(struct row **rows, int n)
{
    for (int i = 0; i < n; i++) {
        if (rows[i]->planned) {
            plan_set_free(&rows[i]->ps);
            topo_free(&rows[i]->topo);
        }
        free(rows[i]);
    }
    free(rows);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A planned row's absolute error under p (infinite when its simulation fails). */
static double row_error(struct row *r, const struct fitted *p)
{
    double m = row_model(r, p);
    return m > 0 ? fabs(m / r->published - 1) : INFINITY;
}

/* Median and largest of k absolute errors (sorted in place); 0 and 0 without any. */
static void summarize(double *abs_err, int k, double *median, double *worst)
{
    *median = *worst = 0;
    if (k <= 0)
        return;
    qsort(abs_err, (size_t)k, sizeof abs_err[0], by_value);
    *median = k % 2 ? abs_err[k / 2] : (abs_err[k / 2 - 1] + abs_err[k / 2]) / 2;
    *worst = abs_err[k - 1];
}

/* Median and largest absolute error of the rows, but those of source leave_out (none with
 * NULL); the number of rows. */
static int errors(struct row **rows, int n, const struct fitted *p, const char *leave_out,
                  double *median, double *worst)
{
    double *abs_err = malloc(((size_t)n + 1) * sizeof *abs_err);
    int k = 0;
    for (int i = 0; abs_err && i < n; i++)
        if (!rows[i]->skip && !(leave_out && strcmp(rows[i]->source, leave_out) == 0))
            abs_err[k++] = row_error(rows[i], p);
    summarize(abs_err, k, median, worst);
    free(abs_err);
    return k;
}

/* The grid fit of the four fitted values (host cost per call, of the current NCCL and of
 * earlier ones, the scale on NCCL's latency tables, NVLS's efficiency) on every row but
 * leave_out's: the point with the least median + 0.3 x largest absolute error; ties keep the
 * first point. */
static void fit(struct row **rows, int n, const char *leave_out, struct fitted *best)
{
    static const double calls[] = {0, 2.5, 5, 7.5, 10, 12.5, 15, 20};
    static const double scales[] = {1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 3};
    static const double nvls[] = {0.55, 0.6, 0.65, 0.7, 0.75, 0.8};
    double score = INFINITY;
    sim_params_default(&best->p);
    best->call_earlier_us = CALL_EARLIER_US;
    for (size_t e = 0; e < sizeof calls / sizeof calls[0]; e++)
        for (size_t a = 0; a < sizeof calls / sizeof calls[0]; a++)
            for (size_t b = 0; b < sizeof scales / sizeof scales[0]; b++)
                for (size_t c = 0; c < sizeof nvls / sizeof nvls[0]; c++) {
                    struct fitted f;
                    sim_params_default(&f.p);
                    f.p.call_us = calls[a];
                    f.p.nccl_lat_scale = scales[b];
                    f.p.nccl_nvls_eff = nvls[c];
                    f.call_earlier_us = calls[e];
                    double median, worst;
                    errors(rows, n, &f, leave_out, &median, &worst);
                    if (median + 0.3 * worst < score) {
                        score = median + 0.3 * worst;
                        *best = f;
                    }
                }
}

static void print_fit(struct row **rows, int n)
{
    struct fitted p;
    double median, worst;
    fit(rows, n, NULL, &p);
    int k = errors(rows, n, &p, NULL, &median, &worst);
    printf("## Grid fit on all %d rows\n\ncall %g us (NCCL before 2.18 or unknown: %g us), "
           "latency scale %g, NVLS efficiency %g: median absolute error %.1f%%, largest "
           "%.1f%%\n\n",
           k, p.p.call_us, p.call_earlier_us, p.p.nccl_lat_scale, p.p.nccl_nvls_eff,
           100 * median, 100 * worst);
    printf("## Each source left out of the fit\n\n| source | rows | call | earlier call | scale "
           "| NVLS | median error | largest error |\n|---|---|---|---|---|---|---|---|\n");
    double *held = malloc(((size_t)n + 1) * sizeof *held);
    int nheld = 0;
    for (int i = 0; held && i < n; i++) {
        int first = !rows[i]->skip;
        for (int j = 0; first && j < i; j++)
            first = rows[j]->skip || strcmp(rows[j]->source, rows[i]->source) != 0;
        if (!first)
            continue;
        fit(rows, n, rows[i]->source, &p); /* every source but this one */
        int start = nheld;
        for (int j = i; j < n; j++)
            if (!rows[j]->skip && strcmp(rows[j]->source, rows[i]->source) == 0)
                held[nheld++] = row_error(rows[j], &p);
        summarize(held + start, nheld - start, &median, &worst);
        printf("| %s | %d | %g | %g | %g | %g | %.1f%% | %.1f%% |\n", rows[i]->source,
               nheld - start, p.p.call_us, p.call_earlier_us, p.p.nccl_lat_scale,
               p.p.nccl_nvls_eff, 100 * median, 100 * worst);
    }
    if (nheld > 0) {
        summarize(held, nheld, &median, &worst);
        printf("\nEvery row predicted by a fit without its source: median absolute error "
               "%.1f%%, largest %.1f%%\n\n",
               100 * median, 100 * worst);
    }
    free(held);
}

int bench_calibrate(const char *tsv, enum calibrate_mode mode)
{
    struct row **rows = NULL;
    int n = rows_read(tsv, &rows);
    if (n < 0)
        return 2;
    if (mode == CALIBRATE_FIT) {
        print_fit(rows, n);
        rows_free(rows, n);
        return 0;
    }
    printf("## The simulator's NCCL against published nccl-tests (%s)\n\n", tsv);
    printf("| row | GPUs | collective | bytes | published busbw | model busbw | error |\n");
    printf("|---|---|---|---|---|---|---|\n");
    struct fitted p;
    sim_params_default(&p.p);
    p.call_earlier_us = CALL_EARLIER_US;
    double *abs_err = malloc(((size_t)n + 1) * sizeof *abs_err);
    int k = 0, skipped = 0;
    for (int i = 0; abs_err && i < n; i++) {
        const struct row *r = rows[i];
        double model = r->skip ? 0 : row_model(rows[i], &p);
        if (!(model > 0)) {
            printf("| %s | %d | %s | %.0f | %.2f | skipped: %s | |\n", r->id, r->ngpus,
                   r->collective, r->bytes, r->published,
                   r->skip ? r->skip : "simulation failed");
            skipped++;
            continue;
        }
        printf("| %s | %d | %s | %.0f | %.2f | %.2f | %+.1f%% |\n", r->id, r->ngpus,
               r->collective, r->bytes, r->published, model,
               100 * (model / r->published - 1));
        abs_err[k++] = fabs(model / r->published - 1);
    }
    double median, worst;
    summarize(abs_err, k, &median, &worst);
    free(abs_err);
    rows_free(rows, n);
    printf("\n%d rows simulated, %d skipped; median absolute error %.1f%%, largest %.1f%% "
           "(thresholds %.0f%% and %.0f%%)\n\n",
           k, skipped, 100 * median, 100 * worst, 100 * MEDIAN_ABS_ERROR_MAX,
           100 * ROW_ABS_ERROR_MAX);
    if (mode != CALIBRATE_CHECK)
        return 0;
    return k > 0 && median <= MEDIAN_ABS_ERROR_MAX && worst <= ROW_ABS_ERROR_MAX ? 0 : 1;
}
