/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * bench_scaling.c - the curve of issue 32: HGX H100 servers on one switch, 8 to 128 of them
 * (64 to 1,024 GPUs), planned as blinkc --no-tune --servers N builtin:hgx-h100 does: allreduce
 * alone, every collective with broadcast and reduce from rank 0, and every collective from
 * every root as the default job plans them for its table (copies keep their numbers only).
 * Each point is planned in a child process, so its CPU seconds and peak RSS are its own;
 * clusters of identical servers should grow about linearly.
 */
#define _DEFAULT_SOURCE 1 /* execl, dprintf */
#include "bench_scaling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_util.h"
#include "plan/plan.h"
#include "topo/topo_join.h"

/* This process image's peak RSS in KB (VmHWM): getrusage's ru_maxrss keeps the peak of the
 * process it was forked from across exec. */
static long peak_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

/* A non-negative decimal argument, or -1. */
static int atoi_checked(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v >= 0 && v < 1000000 ? (int)v : -1;
}

/* The child: plan `collectives` on `servers` HGX H100s, broadcast and reduce from rank 0 or
 * (every_root) from every rank, and write the worst ratio to fd. */
static int plan_curve_point(int servers, unsigned collectives, int every_root, int fd)
{
    struct topo one, all;
    if (servers < 2 || fd < 0 || !alloc_read_builtin("hgx-h100", &one))
        return 1;
    struct topo_rates rates;
    topo_rates_default(&rates);
    struct topo_join_opts jo = {NULL, DIAG_NOWHERE, 0, &rates, "bench", NULL, DIAG_NOWHERE};
    struct diag d;
    diag_init(&d);
    struct plan_opts o;
    plan_opts_default(&o);
    o.collectives = collectives;
    o.root = every_root ? -1 : 0;
    o.numbers_only_copies = every_root;
    struct plan_set ps;
    if (topo_replicate(&one, servers, &jo, &all, &d) != BK_OK ||
        plan_all(&all, &o, &ps, &d) != BK_OK) {
        diag_print(&d, stderr);
        return 1;
    }
    double worst = INFINITY;
    for (int i = 0; i < ps.n; i++)
        worst = fmin(worst, ps.v[i].main.bound > 0 ? ps.v[i].main.algbw / ps.v[i].main.bound
                                                   : 0);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    dprintf(fd, "%.4f %.2f %ld", worst,
            (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6,
            peak_kb() / 1024);
    return 0;
}

int bench_scaling_point(int argc, char **argv)
{
    if (argc < 6)
        return 2;
    return plan_curve_point(atoi_checked(argv[2]), (unsigned)atoi_checked(argv[3]),
                            atoi_checked(argv[4]) == 1, atoi_checked(argv[5]));
}

/*
 * One point in a child: its ratio, CPU seconds and peak RSS in MB; 0 if it failed. The child
 * runs this program afresh (bench_plan scaling-point) and measures itself, so the figures are
 * its own and not the parent's pages at the fork.
 */
static int curve_point(int servers, unsigned collectives, int every_root, double *ratio,
                       double *cpu, long *rss_mb)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char n[16], mask[16], fd[16], roots[2] = {every_root ? '1' : '0', '\0'};
        close(fds[0]);
        snprintf(n, sizeof n, "%d", servers);
        snprintf(mask, sizeof mask, "%u", collectives);
        snprintf(fd, sizeof fd, "%d", fds[1]);
        execl("/proc/self/exe", "bench_plan", "scaling-point", n, mask, roots, fd,
              (char *)NULL);
        _exit(plan_curve_point(servers, collectives, every_root, fds[1])); /* no /proc */
    }
    close(fds[1]);
    char row[128];
    ssize_t got = pid > 0 ? read(fds[0], row, sizeof row - 1) : -1;
    row[got > 0 ? got : 0] = '\0';
    close(fds[0]);
    int status = 1;
    if (pid > 0)
        waitpid(pid, &status, 0);
    return got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
           sscanf(row, "%lf %lf %ld", ratio, cpu, rss_mb) == 3;
}

void bench_scaling(void)
{
    static const int servers[] = {8, 16, 32, 64, 128};
    const unsigned every = (1u << COLL_COUNT) - 1;
    printf("\n## Cluster size (N x HGX H100 on one switch, --no-tune)\n\nAllreduce alone; every "
           "collective with broadcast and reduce from rank 0; every collective from every root, "
           "as the default job plans them (the tuning skips clusters). CPU seconds and peak RSS "
           "in MB of each.\n\n| servers | GPUs | allreduce ratio | CPU s | MB | every collective "
           "ratio | CPU s | MB | every root ratio | CPU s | MB |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof servers / sizeof servers[0]; i++) {
        double ratio[3] = {0}, cpu[3] = {0};
        long rss[3] = {0};
        int ok = curve_point(servers[i], 1u << COLL_ALLREDUCE, 0, &ratio[0], &cpu[0], &rss[0]) &&
                 curve_point(servers[i], every, 0, &ratio[1], &cpu[1], &rss[1]) &&
                 curve_point(servers[i], every, 1, &ratio[2], &cpu[2], &rss[2]);
        if (!ok) {
            printf("| %d | %d | failed |\n", servers[i], 8 * servers[i]);
            continue;
        }
        printf("| %d | %d ", servers[i], 8 * servers[i]);
        for (int k = 0; k < 3; k++)
            printf("| %.4f | %.2f | %ld ", ratio[k], cpu[k], rss[k]);
        printf("|\n");
        fflush(stdout);
    }
}
