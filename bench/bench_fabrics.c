/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * bench_fabrics.c - the table of today's fabrics (issue 19): NVSwitch boards, the NVL72
 * domain and clusters, every collective, with its worst root's algbw, bound and ratio, the most
 * trees any root needs, and the CPU time and peak memory of planning that collective alone.
 * Each row is planned in a child process, so its CPU seconds and peak RSS are its own.
 */
#define _DEFAULT_SOURCE 1 /* wait4 */
#include "bench_fabrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_util.h"
#include "plan/plan.h"
#include "topo/topo_join.h"

struct fabric {
    const char *label, *builtin;
    int servers;       /* replicate the built-in (--servers), 0: as it is */
    int half;          /* with servers: GPUs 0-3 of each server only */
};

static const struct fabric fabrics[] = {
    {"HGX H200", "hgx-h200", 0, 0},
    {"HGX B200", "hgx-b200", 0, 0},
    {"GB200 NVL72", "gb200-nvl72", 0, 0},
    {"2 x DGX-1V, GPUs 0-3 of each", "dgx1v", 2, 1},
    {"2 x DGX A100 (a 200 Gb/s NIC per GPU)", "dgx-a100", 2, 0},
    {"4 x DGX A100", "dgx-a100", 4, 0},
    {"4 x HGX H100, NICs on one switch", "hgx-h100", 4, 0},
    {"8 x HGX H100 on rails", "cluster-8x-hgx-h100", 0, 0},
    {"2 x MI250 servers (16 GCDs, 16 NICs each)", "mi250", 2, 0},
};

static int read_fabric(const struct fabric *f, struct topo *t)
{
    struct topo one;
    if (!alloc_read_builtin(f->builtin, &one))
        return 0;
    if (!f->servers) {
        *t = one;
        return 1;
    }
    struct topo_rates rates;
    topo_rates_default(&rates);
    struct topo_join_opts jo = {NULL, DIAG_NOWHERE, 0, &rates, "bench", NULL, DIAG_NOWHERE};
    struct topo all;
    struct diag d;
    diag_init(&d);
    int ok = topo_replicate(&one, f->servers, &jo, &all, &d) == BK_OK;
    topo_free(&one);
    if (ok && f->half) {
        int gpus[64], n = 0;
        for (int g = 0; g < all.ngpus && n < 64; g++)
            if (all.nodes[g].local_gpu < 4)
                gpus[n++] = g;
        ok = topo_restrict(&all, gpus, n, t, &d) == BK_OK;
        topo_free(&all);
    } else if (ok) {
        *t = all;
    }
    if (!ok)
        diag_print(&d, stderr);
    diag_free(&d);
    return ok;
}

/* The child: plan collective c (every root) and write its row's figures to fd. */
static int plan_row(const struct fabric *f, enum collective c, int fd)
{
    struct topo t;
    if (!read_fabric(f, &t))
        return 1;
    struct plan_opts o;
    plan_opts_default(&o);
    o.collectives = 1u << c;
    struct plan_set ps;
    struct diag d;
    diag_init(&d);
    if (plan_all(&t, &o, &ps, &d) != BK_OK) {
        diag_print(&d, stderr);
        return 1;
    }
    double algbw = INFINITY, bound = 0, ratio = INFINITY;
    int most = 0;
    for (int i = 0; i < ps.n; i++) {
        const struct plan_trees *m = &ps.v[i].main;
        double r = m->bound > 0 ? m->algbw / m->bound : 0;
        if (r < ratio || (r == ratio && m->algbw < algbw))
            ratio = r, algbw = m->algbw, bound = m->bound;
        for (int root = 0; root < t.ngpus; root++) {
            int k = 0;
            for (int j = 0; j < m->trees.n; j++)
                k += m->trees.t[j].root == root;
            most = k > most ? k : most;
        }
    }
    dprintf(fd, "| %d | %.1f | %.1f | %.4f | %d |", t.ngpus, algbw, bound, ratio, most);
    return 0;
}

void bench_fabrics(void)
{
    printf("\n## Today's fabrics (every collective; broadcast and reduce: the worst root)\n\n");
    printf("| fabric | collective | GPUs | algbw | bound | ratio | most trees per root | CPU s | "
           "peak RSS MB |\n|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);
    for (size_t i = 0; i < sizeof fabrics / sizeof fabrics[0]; i++)
        for (int c = 0; c < COLL_COUNT; c++) {
            int fds[2];
            if (pipe(fds) != 0)
                return;
            pid_t pid = fork();
            if (pid == 0) {
                close(fds[0]);
                _exit(plan_row(&fabrics[i], (enum collective)c, fds[1]));
            }
            close(fds[1]);
            char row[256] = "";
            ssize_t got = pid > 0 ? read(fds[0], row, sizeof row - 1) : -1;
            row[got > 0 ? got : 0] = '\0';
            close(fds[0]);
            int status = 0;
            struct rusage ru;
            memset(&ru, 0, sizeof ru);
            if (pid > 0)
                wait4(pid, &status, 0, &ru);
            double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
            printf("| %s | %s %s %.2f | %ld |\n", fabrics[i].label,
                   collective_name((enum collective)c), got > 0 ? row : "| failed |", cpu,
                   ru.ru_maxrss / 1024);
            fflush(stdout);
        }
}
