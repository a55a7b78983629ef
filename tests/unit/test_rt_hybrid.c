/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_hybrid.c - the hybrid (blink_plan.h): a schedule's trees and its PCIe trees run as one
 * set, the PCIe trees' edges host-staged. On the committed DGX-1P and DGX-1V sources (host
 * backend) each rank's bytes per edge kind after a call equal what the plan's tables put on
 * each kind: every tree's share cut by the contract's split rule (written here from
 * blink_plan.h's text, not taken from the runtime), one copy per tree edge the rank sends on.
 * test_e2e runs every collective, datatype and op on the hybrid against the reference. A plan
 * of GPUs without peer access (the 8 x RTX 4090 box) has every edge host-staged.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "rt_testutil.h"

blinkResult_t e2e_init_dgx1p(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_dgx1v(blinkComm_t *, int, const int *);
const struct blink_plan_library *e2e_lib_dgx1p(void);
const struct blink_plan_library *e2e_lib_dgx1v(void);
blinkResult_t e2e_init_rtx4090x8(blinkComm_t *, int, const int *);
const struct blink_plan_library *e2e_lib_rtx4090x8(void);

/* Element where the tree after prefix weight s of w starts, for n elements of es bytes: the
 * floor of n * s / w, to the nearest 256-byte unit (halves up), down where up passes n. */
static size_t split(size_t n, size_t es, unsigned long long s, unsigned long long w)
{
    if (s >= w)
        return n;
    size_t x = (size_t)((unsigned __int128)n * s / w), u = 256 / es, rem = x % u;
    x -= rem;
    return 2 * rem >= u && n - x >= u ? x + u : x;
}

/* The bytes plan rank v hands over each edge kind when schedule s runs trees[0..nt) (the last
 * from `staged` on host-staged) on count elements of es bytes: its share of each tree times its
 * edges there (up to its parent, down to its children, as the collective moves). */
static void expected(const struct blink_plan_schedule *s, const struct blink_plan_tree *t,
                     int nt, int staged, int nranks, int v, size_t count, size_t es,
                     unsigned long long out[2])
{
    int up = s->coll == BLINK_PLAN_REDUCE || s->coll == BLINK_PLAN_REDUCESCATTER ||
             s->coll == BLINK_PLAN_ALLREDUCE;
    int down = s->coll == BLINK_PLAN_BROADCAST || s->coll == BLINK_PLAN_ALLGATHER ||
               s->coll == BLINK_PLAN_ALLREDUCE;
    int sharded = s->coll == BLINK_PLAN_ALLGATHER || s->coll == BLINK_PLAN_REDUCESCATTER;
    out[0] = out[1] = 0;
    for (int i = 0; i < nt; i++) {
        unsigned long long before = 0, total = 0;
        for (int j = 0; j < nt; j++) {
            if (sharded && t[j].root != t[i].root)
                continue;
            before += j < i ? t[j].weight : 0;
            total += t[j].weight;
        }
        size_t m = split(count, es, before + t[i].weight, total) - split(count, es, before, total);
        int kids = 0;
        for (int q = 0; q < nranks; q++)
            kids += t[i].parent[q] == v;
        out[i >= staged] += (unsigned long long)m * es *
                            (unsigned long long)((up && t[i].parent[v] >= 0) + (down ? kids : 0));
    }
}

/* One call of coll (root 0 where it has one) of count floats with algo on every rank of the
 * library's only plan, checked against the reference, then each rank's bytes per edge kind
 * against the schedule as init expanded it (its roots' trees relabelled back into tables): the
 * hybrid's PCIe trees host-staged, or every tree where the plan's GPUs have no peer access.
 * Returns the host-staged bytes over all ranks. */
static unsigned long long run(blinkResult_t (*init)(blinkComm_t *, int, const int *),
                              const struct blink_plan_library *lib, int coll, const char *algo,
                              size_t count)
{
    int n = lib->plans[0]->nranks;
    setenv("BLINK_ALGO", algo, 1);
    blinkComm_t comms[8];
    cr_assert_eq(init(comms, n, NULL), blinkSuccess, "%s", blinkGetLastError(NULL));
    const struct blink_plan *p = comms[0]->plan;
    const struct blink_plan_schedule *s =
        bk_schedule(p, coll, bk_is_rooted(coll) ? comms[0]->plan_of[0] : -1);
    cr_assert(s && !s->relabel && !s->root_relabel, "%s coll %d", p->topology, coll);
    int hybrid = strcmp(algo, "hybrid") == 0;
    cr_assert(!hybrid || s->npcie_trees > 0, "%s: no PCIe trees", p->topology);
    int nt = s->ntrees + (hybrid ? s->npcie_trees : 0);
    struct blink_plan_tree *t = malloc((size_t)nt * sizeof *t);
    memcpy(t, s->trees, (size_t)s->ntrees * sizeof *t);
    if (hybrid)
        memcpy(t + s->ntrees, s->pcie_trees, (size_t)s->npcie_trees * sizeof *t);
    struct rt_case c = {coll, 0, blinkFloat32, blinkSum, count, 0, RT_THREADS, 0, 0, 0};
    char why[512] = "";
    cr_assert_eq(rt_run_check(comms, n, &c, why, sizeof why), 0, "%s", why);
    unsigned long long staged = 0, all[2] = {0, 0}, want_all[2] = {0, 0};
    for (int v = 0; v < n; v++) {
        struct blinkrt_stats st;
        unsigned long long want[2];
        cr_assert_eq(blinkrtCommStats(comms[v], &st), blinkSuccess);
        expected(s, t, nt, p->host_staged ? 0 : s->ntrees, n, st.plan_rank, count, sizeof(float),
                 want);
        for (int k = 0; k < 2; k++) {
            cr_expect_eq(st.last_call_edge_bytes[k], want[k], "%s %s coll %d rank %d: %llu "
                         "bytes over %s edges, the plan puts %llu there", p->topology, algo,
                         coll, st.plan_rank, st.last_call_edge_bytes[k],
                         k ? "host-staged" : "direct", want[k]);
            all[k] += st.last_call_edge_bytes[k];
            want_all[k] += want[k];
        }
        staged += st.last_call_edge_bytes[1];
    }
    printf("%s %s coll %d, %zu floats: %llu bytes direct, %llu host-staged (plan: %llu, %llu)\n",
           p->topology, algo, coll, count, all[0], all[1], want_all[0], want_all[1]);
    for (int v = 0; v < n; v++) /* last: p and s are the communicators' */
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    free(t);
    return staged;
}

/* Every collective: the hybrid moves a share over host-staged edges, the trees none. */
static void every_collective(blinkResult_t (*init)(blinkComm_t *, int, const int *),
                             const struct blink_plan_library *lib)
{
    unsetenv("BLINK_CHUNK_BYTES");
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++) {
        size_t count = coll == BLINK_PLAN_ALLGATHER || coll == BLINK_PLAN_REDUCESCATTER ? 125003
                                                                                        : 1000003;
        cr_expect_gt(run(init, lib, coll, "hybrid", count), 0, "coll %d", coll);
        cr_expect_eq(run(init, lib, coll, "trees", count), 0, "coll %d", coll);
    }
    unsetenv("BLINK_ALGO");
}

Test(rt_hybrid, dgx1v_bytes_per_edge_kind, .timeout = 300)
{
    every_collective(e2e_init_dgx1v, e2e_lib_dgx1v());
}

Test(rt_hybrid, dgx1p_bytes_per_edge_kind, .timeout = 300)
{
    every_collective(e2e_init_dgx1p, e2e_lib_dgx1p());
}

/* BLINK_DEBUG=INFO gives each rank's hybrid call its bytes per edge kind, as the stats do, and
 * says once what the range runs. */
Test(rt_hybrid, info_lines_give_bytes_per_edge_kind, .timeout = 120)
{
    char dir[] = "/tmp/blink-hybrid-XXXXXX", pattern[96], path[128];
    cr_assert(mkdtemp(dir));
    snprintf(pattern, sizeof pattern, "%s/log", dir);
    setenv("BLINK_DEBUG", "INFO", 1);
    setenv("BLINK_DEBUG_SUBSYS", "COLL", 1);
    setenv("BLINK_DEBUG_FILE", pattern, 1);
    setenv("BLINK_ALGO", "hybrid", 1);
    unsetenv("BLINK_CHUNK_BYTES");
    blinkComm_t comms[8];
    cr_assert_eq(e2e_init_dgx1v(comms, 8, NULL), blinkSuccess, "%s", blinkGetLastError(NULL));
    struct rt_case c = {BLINK_PLAN_ALLREDUCE, 0, blinkFloat32, blinkSum, 1000003, 0, RT_THREADS,
                        0, 0, 0};
    char why[512] = "";
    cr_assert_eq(rt_run_check(comms, 8, &c, why, sizeof why), 0, "%s", why);
    unsigned long long want[2] = {0, 0};
    for (int v = 0; v < 8; v++) {
        struct blinkrt_stats st;
        cr_assert_eq(blinkrtCommStats(comms[v], &st), blinkSuccess);
        want[0] += st.last_call_edge_bytes[0];
        want[1] += st.last_call_edge_bytes[1];
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    }
    unsetenv("BLINK_DEBUG");
    unsetenv("BLINK_DEBUG_SUBSYS");
    unsetenv("BLINK_DEBUG_FILE");
    unsetenv("BLINK_ALGO");
    snprintf(path, sizeof path, "%s/log", dir);
    FILE *f = fopen(path, "r");
    cr_assert(f, "no %s", path);
    char line[1024];
    unsigned long long got[2] = {0, 0};
    int calls = 0, choices = 0;
    while (fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "(hybrid): ");
        unsigned long long d = 0, h = 0;
        if (at && sscanf(at, "(hybrid): %llu bytes over direct edges, %llu host-staged", &d,
                         &h) == 2) {
            got[0] += d;
            got[1] += h;
            calls++;
        }
        choices += strstr(line, "hybrid: 12 trees and 2 PCIe trees on host-staged edges") != NULL;
    }
    fclose(f);
    unlink(path);
    rmdir(dir);
    cr_expect_eq(calls, 8, "one line per rank");
    cr_expect_eq(choices, 1, "the choice said once");
    cr_expect_eq(got[0], want[0]);
    cr_expect_eq(got[1], want[1]);
    cr_expect_gt(got[1], 0);
}

/* GPUs without peer access: the source says so, and every byte of every collective goes over
 * host-staged edges (none direct), as many as the plan's trees put there. */
Test(rt_hybrid, no_peer_access_stages_every_edge, .timeout = 300)
{
    const struct blink_plan_library *lib = e2e_lib_rtx4090x8();
    cr_assert_eq(lib->plans[0]->host_staged, 1);
    unsetenv("BLINK_CHUNK_BYTES");
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++) {
        size_t count = coll == BLINK_PLAN_ALLGATHER || coll == BLINK_PLAN_REDUCESCATTER ? 4099
                                                                                        : 32771;
        cr_expect_gt(run(e2e_init_rtx4090x8, lib, coll, "trees", count), 0, "coll %d", coll);
    }
    unsetenv("BLINK_ALGO");
}
