/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * figures.c - `make figures`: the Blink paper's Figures 5, 6, 7 and 9b reproduced on blinkc's
 * planner and simulator, each written as a table (DIR/figN.dat, whitespace columns under a '#'
 * header whose last line names them) and printed to stdout; the gnuplot scripts bench/figN.gp
 * draw them.
 *
 * Usage: figures DIR [fig5|fig6|fig7|fig9b]...  (default: all four). Progress and timings go to
 * stderr, so stdout and the tables are deterministic.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "figures.h"
#include "plan.h"

/* 500 MB as the paper states it: 500e6 bytes (125e6 floats). */
#define FIG_BYTES 500e6

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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
    fig7_table(sb, FIG_BYTES, PLAN_DEFAULT_TDPA_US, rows);
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

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: figures DIR [fig5|fig6|fig7|fig9b]...\n");
        return 2;
    }
    static const char *const names[] = {"fig5", "fig6", "fig7", "fig9b"};
    int want[4] = {argc == 2, argc == 2, argc == 2, argc == 2};
    for (int a = 2; a < argc; a++) {
        int k = 0;
        while (k < 4 && strcmp(argv[a], names[k]) != 0)
            k++;
        if (k == 4) {
            fprintf(stderr, "figures: unknown figure '%s' (fig5, fig6, fig7, fig9b)\n", argv[a]);
            return 2;
        }
        want[k] = 1;
    }
    struct sim_params p;
    sim_params_default(&p);
    int status = 0;
    for (int k = 0; k < 4; k++) {
        if (!want[k])
            continue;
        struct strbuf sb, err;
        sb_init(&sb);
        sb_init(&err);
        double t0 = now_s();
        int ok = k == 0   ? run_fig5(&sb, &err)
                 : k == 1 ? run_fig6(&sb, &p, &err)
                 : k == 2 ? run_fig7(&sb, &p, &err)
                          : run_fig9(&sb, &p, &err);
        if (ok)
            ok = write_table(argv[1], names[k], &sb);
        else
            fprintf(stderr, "figures: %s: %s", names[k], err.len ? err.data : "failed\n");
        fprintf(stderr, "figures: %s %s in %.1f s\n", names[k], ok ? "done" : "FAILED",
                now_s() - t0);
        status |= !ok;
        sb_free(&sb);
        sb_free(&err);
    }
    return status;
}
