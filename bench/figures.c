/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * figures.c - `make figures`: the Blink paper's Figures 5, 6, 7 and 9b reproduced on blinkc's
 * planner and simulator, each written as a table (DIR/figN.dat, whitespace columns under a '#'
 * header whose last line names them) and printed to stdout; the gnuplot scripts bench/figN.gp
 * draw them.
 *
 * Usage: figures DIR [fig5|fig6|fig7|fig9b|fig9b-h100]...  (default: the first four; fig9b-h100,
 * Figure 9b extended to HGX H100 servers and to 8 servers, takes about half an hour of CPU and
 * runs only when named). Progress and timings go to stderr, so stdout and the tables are
 * deterministic.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "figures.h"
#include "plan/plan.h"

/* 500 MB as the paper states it: 500e6 bytes (125e6 floats). */
#define FIG_BYTES 500e6

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int write_table(const char *dir, const char *name, const struct strbuf *sb)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.dat", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fwrite(sb->data, 1, sb->len, f) != sb->len) {
        fprintf(stderr, "figures: %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return 0;
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "figures: %s: %s\n", path, strerror(errno));
        return 0;
    }
    fwrite(sb->data, 1, sb->len, stdout);
    putchar('\n');
    fflush(stdout);
    return 1;
}

static int run_fig5(struct strbuf *sb, struct strbuf *err)
{
    static const char *const boxes[] = {"dgx1p", "dgx1v"};
    struct fig5_row rows[2][6];
    for (int b = 0; b < 2; b++)
        if (!fig5_box(boxes[b], rows[b])) {
            sb_printf(err, "cannot plan the allocations of builtin:%s\n", boxes[b]);
            return 0;
        }
    fig5_table(sb, boxes, rows, 2);
    return 1;
}

static int run_fig6(struct strbuf *sb, const struct sim_params *p, struct strbuf *err)
{
    struct fig6_row rows[FIG6_MAX_ROWS];
    int n = fig6_dgx1v(FIG_BYTES, p, rows, err);
    if (n < 0)
        return 0;
    fig6_table(sb, FIG_BYTES, rows, n);
    return 1;
}

static int run_fig7(struct strbuf *sb, const struct sim_params *p, struct strbuf *err)
{
    struct fig7_row rows[6];
    if (!fig7_dgx1v(FIG_BYTES, p, rows, err))
        return 0;
    fig7_table(sb, FIG_BYTES, rows);
    return 1;
}

static int run_fig9(struct strbuf *sb, const struct sim_params *p, struct strbuf *err)
{
    /* Per NIC: 10, 25, 50, 100, 200, 400 and 800 Gb/s. */
    static const double nic[] = {1.25, 3.125, 6.25, 12.5, 25, 50, 100};
    static const int servers[] = {2, 4};
    enum { NRATES = sizeof nic / sizeof nic[0], NSERVERS = sizeof servers / sizeof servers[0] };
    struct fig9_row rows[NRATES * NSERVERS];
    int n = 0;
    for (int s = 0; s < NSERVERS; s++)
        for (int r = 0; r < NRATES; r++) {
            /* 32 ranks take the simulator about a minute per point: the fluid model there. */
            int simulate = servers[s] <= 2;
            if (!fig9_point(servers[s], nic[r], FIG_BYTES, simulate, p, &rows[n], err))
                return 0;
            n++;
        }
    fig9_table(sb, FIG_BYTES, rows, n);
    return 1;
}

/* Figure 9b extended: 2, 4 and 8 servers of DGX-1V and of HGX H100 at 100 and 400 Gb/s per NIC,
 * every point simulated. From 8 servers (64 ranks) on, the chunk search stops at FIG9X_FLOOR:
 * there each halving of the chunk costs the simulator about four times the CPU of the size
 * before, and 1 MiB already takes minutes (docs/figures.md gives the measurements). */
#define FIG9X_FLOOR_SERVERS 8
#define FIG9X_FLOOR ((size_t)1 << 20)

static int run_fig9x(struct strbuf *sb, const struct sim_params *p, struct strbuf *err)
{
    static const enum gen_server kinds[] = {GEN_DGX1V, GEN_HGX_H100};
    static const int servers[] = {2, 4, 8};
    static const double nic[] = {12.5, 50}; /* 100 and 400 Gb/s */
    enum { NK = 2, NS = 3, NR = 2 };
    struct fig9_row rows[NK * NS * NR];
    int n = 0;
    for (int k = 0; k < NK; k++)
        for (int s = 0; s < NS; s++)
            for (int r = 0; r < NR; r++) {
                size_t min_chunk = servers[s] >= FIG9X_FLOOR_SERVERS ? FIG9X_FLOOR : 0;
                double t0 = now_s(), c0 = cpu_s();
                if (!fig9_kind_point(kinds[k], servers[s], nic[r], FIG_BYTES, 1, min_chunk, p,
                                     &rows[n], err))
                    return 0;
                fprintf(stderr, "figures: fig9b-h100: %d x %s at %g Gb/s: %.1f s (%.1f s CPU)\n",
                        servers[s], gen_server_name(kinds[k]), nic[r] * 8, now_s() - t0,
                        cpu_s() - c0);
                n++;
            }
    fig9x_table(sb, FIG_BYTES, rows, n);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: figures DIR [fig5|fig6|fig7|fig9b|fig9b-h100]...\n");
        return 2;
    }
    /* With no names, the first four (fig9b-h100 takes long: only when named). */
    static const char *const names[] = {"fig5", "fig6", "fig7", "fig9b", "fig9b-h100"};
    enum { NFIG = 5 };
    int want[NFIG] = {argc == 2, argc == 2, argc == 2, argc == 2, 0};
    for (int a = 2; a < argc; a++) {
        int k = 0;
        while (k < NFIG && strcmp(argv[a], names[k]) != 0)
            k++;
        if (k == NFIG) {
            fprintf(stderr, "figures: unknown figure '%s' (fig5, fig6, fig7, fig9b, fig9b-h100)\n",
                    argv[a]);
            return 2;
        }
        want[k] = 1;
    }
    struct sim_params p;
    sim_params_default(&p);
    int status = 0;
    for (int k = 0; k < NFIG; k++) {
        if (!want[k])
            continue;
        struct strbuf sb, err;
        sb_init(&sb);
        sb_init(&err);
        double t0 = now_s(), c0 = cpu_s();
        int ok = k == 0   ? run_fig5(&sb, &err)
                 : k == 1 ? run_fig6(&sb, &p, &err)
                 : k == 2 ? run_fig7(&sb, &p, &err)
                 : k == 3 ? run_fig9(&sb, &p, &err)
                          : run_fig9x(&sb, &p, &err);
        if (ok)
            ok = write_table(argv[1], names[k], &sb);
        else
            fprintf(stderr, "figures: %s: %s", names[k], err.len ? err.data : "failed\n");
        fprintf(stderr, "figures: %s %s in %.1f s (%.1f s CPU)\n", names[k],
                ok ? "done" : "FAILED", now_s() - t0, cpu_s() - c0);
        status |= !ok;
        sb_free(&sb);
        sb_free(&err);
    }
    return status;
}
