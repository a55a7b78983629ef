/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_cluster.c - several servers: Blink's three phases composed into cluster trees. The trees
 * are checked by the independent plan-file checker, and the rates against cut values worked
 * out here by hand from the fixture's facts (topologies/cluster-4x-dgx1v.topo).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "plan.h"
#include "testutil.h"

/* Each DGX-1V server reaches the network through four NICs, each behind a PCIe Gen3 x16 link
 * (12 GB/s, narrower than the NIC's 12.5 GB/s): 48 GB/s out of and into every server. */
#define SERVER_GBPS 48.0
#define SERVERS 4
#define GPUS 32

/* Every collective, broadcast and reduce from rank 0. */
static void plan_cluster_fixture(const int *gpus, int n, struct topo *t, struct plan_set *ps)
{
    tu_plan_alloc("cluster-4x-dgx1v.topo", gpus, n, (1u << COLL_COUNT) - 1, 0, t, ps);
}

Test(cluster, three_phases_reach_the_server_cuts)
{
    struct topo t;
    struct plan_set ps;
    plan_cluster_fixture(NULL, 0, &t, &ps);
    cr_assert_eq(t.ngpus, GPUS);
    cr_assert_not_null(ps.cluster, "four NVLink servers are planned in phases");
    /* Allreduce: a tree has >= S-1 cross-server edges, each crossing two server cuts in both
     * directions: S * 48 / (2 (S - 1)) = 32. Broadcast: the root's server sends everything
     * out, every other takes it in: 48. Allgather: each server takes in 24/32 of the buffer
     * through 48 GB/s: 32 * 48 / 24 = 64. */
    double want[COLL_COUNT];
    want[COLL_BROADCAST] = want[COLL_REDUCE] = SERVER_GBPS;
    want[COLL_ALLREDUCE] = SERVERS * SERVER_GBPS / (2.0 * (SERVERS - 1));
    want[COLL_ALLGATHER] = want[COLL_REDUCESCATTER] =
        GPUS * SERVER_GBPS / (GPUS - GPUS / SERVERS);
    for (int c = 0; c < COLL_COUNT; c++) {
        const struct plan *p = tu_find_plan(&ps, c, -1);
        tu_check_trees(&t, &p->main, c);
        cr_assert_float_eq(p->main.bound, want[c], 1e-6, "%s bound %g", collective_name(c),
                           p->main.bound);
        cr_assert(p->main.algbw >= 0.999 * want[c], "%s: %g of %g", collective_name(c),
                  p->main.algbw, want[c]);
        cr_assert(strncmp(p->method, "three phases", 12) == 0, "%s", p->method);
    }
    plan_set_free(&ps);
    topo_free(&t);
}

/* Allreduce trees really are the three phases: inside a server a tree uses NVLink only, and
 * between servers it enters and leaves through NICs, so each server holds one connected piece
 * of every tree (its owner is where the cross-server edge lands). */
Test(cluster, allreduce_trees_cross_each_server_boundary_once)
{
    struct topo t;
    struct plan_set ps;
    plan_cluster_fixture(NULL, 0, &t, &ps);
    const struct plan *p = tu_find_plan(&ps, COLL_ALLREDUCE, -1);
    for (int i = 0; i < p->main.trees.n; i++) {
        const struct ptree *tr = &p->main.trees.t[i];
        int crossing = 0;
        for (int v = 0; v < tr->ngpus; v++) {
            if (v == tr->root)
                continue;
            int same = t.nodes[v].server == t.nodes[tr->parent[v]].server;
            crossing += !same;
            for (int k = tr->path_off[v]; same && k < tr->path_off[v + 1]; k++)
                cr_assert_eq(t.links[p->main.g->link[tr->path_arc[k]]].kind, TOPO_NVLINK);
        }
        cr_assert_eq(crossing, SERVERS - 1, "tree %d crosses %d times", i, crossing);
    }
    plan_set_free(&ps);
    topo_free(&t);
}

/* One GPU per server, and uneven servers: still valid trees within their bounds. */
Test(cluster, partial_allocations)
{
    static const int one_each[] = {0, 8, 16, 24}, uneven[] = {0, 1, 2, 9, 17, 25, 26};
    const int *allocs[] = {one_each, uneven};
    int sizes[] = {4, 7};
    for (int a = 0; a < 2; a++) {
        struct topo t;
        struct plan_set ps;
        plan_cluster_fixture(allocs[a], sizes[a], &t, &ps);
        cr_assert_not_null(ps.cluster);
        for (int i = 0; i < ps.n; i++) {
            tu_check_trees(&t, &ps.v[i].main, ps.v[i].coll);
            cr_assert(ps.v[i].main.algbw <= ps.v[i].main.bound * (1 + 1e-6));
            cr_assert(ps.v[i].main.algbw > 0);
        }
        plan_set_free(&ps);
        topo_free(&t);
    }
}

/* A server whose GPUs only meet over PCIe shares those links with the NIC paths: planned flat. */
Test(cluster, pcie_only_server_is_planned_flat)
{
    static const int gpus[] = {3, 4, 9, 30}; /* server 0's GPUs 3 and 4 share no NVLink */
    struct topo t;
    struct plan_set ps;
    plan_cluster_fixture(gpus, 4, &t, &ps);
    cr_assert_null(ps.cluster);
    plan_set_free(&ps);
    topo_free(&t);
}
