/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_cluster.c - several servers: Blink's three phases composed into cluster trees. The trees
 * are checked by the independent plan-file checker, and the rates against cut values worked
 * out here by hand from the fixture's facts (topologies/cluster-4x-dgx1v.topo). The same
 * cluster built by --servers and by a cluster file must give that fixture's plan file.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/builtin.h"
#include "core/strbuf.h"
#include "pack/bound.h"
#include "plan/plan.h"
#include "read/topo_read.h"
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

/* One GPU per server, uneven servers, and half of two servers: every collective reaches its
 * bound. Where Blink's phases fall short (half servers: a NIC per GPU pair left idle; the
 * uneven allreduce: 8 of 12 GB/s), trees over the whole cluster graph take over. */
Test(cluster, partial_allocations)
{
    static const int one_each[] = {0, 8, 16, 24}, uneven[] = {0, 1, 2, 9, 17, 25, 26},
                     halves[] = {0, 1, 2, 3, 8, 9, 10, 11};
    const int *allocs[] = {one_each, uneven, halves};
    int sizes[] = {4, 7, 8};
    for (int a = 0; a < 3; a++) {
        struct topo t;
        struct plan_set ps;
        plan_cluster_fixture(allocs[a], sizes[a], &t, &ps);
        cr_assert_not_null(ps.cluster);
        for (int i = 0; i < ps.n; i++) {
            const struct plan *p = &ps.v[i];
            tu_check_trees(&t, &p->main, p->coll);
            cr_assert(p->main.algbw <= p->main.bound * (1 + 1e-6));
            cr_expect(p->main.algbw >= 0.999 * p->main.bound, "%d GPUs, %s: %g of %g (%s)",
                      sizes[a], collective_name(p->coll), p->main.algbw, p->main.bound,
                      p->method);
        }
        if (a == 2) { /* the phases: 48 GB/s allgather, 24 allreduce */
            const struct plan *ag = tu_find_plan(&ps, COLL_ALLGATHER, -1);
            cr_expect_float_eq(ag->main.algbw, 60, 1e-6);
            cr_expect_float_eq(ag->alt_algbw, 48, 1e-6);
            cr_expect(strncmp(ag->method, "trees over the whole cluster graph", 34) == 0, "%s",
                      ag->method);
            cr_expect_float_eq(tu_find_plan(&ps, COLL_ALLREDUCE, -1)->main.algbw, 30, 1e-6);
        }
        if (a == 1)
            cr_expect_float_eq(tu_find_plan(&ps, COLL_ALLREDUCE, -1)->main.algbw, 12, 1e-6);
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

/* The plan file of blinkc's run on `topology` with args (broadcast and reduce from rank 0
 * only, which keeps every collective but a thirtieth of the work); caller frees. */
static char *plan_json(const char *topology, const char *const *args)
{
    char *path = tu_src_path(topology);
    const char *argv[16] = {"-q", "--root", "0", "--plan-json", "-"};
    int n = 5;
    while (*args)
        argv[n++] = *args++;
    argv[n++] = path;
    argv[n] = NULL;
    struct tu_run r;
    tu_run_blinkc(&r, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *out = r.out;
    r.out = NULL;
    tu_run_free(&r);
    free(path);
    return out;
}

/* The model of the cluster file says where every GPU is: server by server, gpuN being GPU
 * N % 8 of server N / 8, and an allocation keeps both numbers. */
static void expect_places(const char *path)
{
    struct topo t, alloc;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_file(path, TOPO_FMT_AUTO, "V100", &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    cr_assert_str_eq(t.format, "cluster");
    cr_assert_str_eq(t.name, "cluster-4x-dgx1v");
    cr_assert_eq(t.nservers, SERVERS);
    cr_assert_eq(t.ngpus, GPUS);
    for (int g = 0; g < GPUS; g++) {
        char prefix[8];
        snprintf(prefix, sizeof prefix, "s%d.", g / 8);
        cr_assert_eq(t.nodes[g].server, g / 8);
        cr_assert_eq(t.nodes[g].local_gpu, g % 8);
        cr_assert(strncmp(t.nodes[g].name, prefix, 3) == 0, "%s", t.nodes[g].name);
    }
    cr_assert_eq(tu_count_nodes(&t, TOPO_NET_SWITCH), 1);
    cr_assert_eq(tu_count_links(&t, TOPO_NET), 2 * 16);
    for (int i = 0; i < t.nlinks; i++)
        if (t.links[i].kind == TOPO_NET)
            cr_assert_float_eq(t.links[i].gbps, 12.5, 1e-9);
    static const int gpus[] = {10, 9, 27};
    cr_assert_eq(topo_restrict(&t, gpus, 3, &alloc, &d), BK_OK);
    cr_assert_str_eq(alloc.nodes[0].id, "gpu10");
    cr_assert_eq(alloc.nodes[0].server, 1);
    cr_assert_eq(alloc.nodes[0].local_gpu, 2);
    cr_assert_eq(alloc.nodes[2].server, 3);
    cr_assert_eq(alloc.nodes[2].local_gpu, 3);
    topo_free(&alloc);
    topo_free(&t);
    diag_free(&d);
}

/*
 * The hand-written cluster, made two other ways, gives the same plan file:
 *  - --servers 4 of the one-server file: the whole file (ids, servers, bus ids, every link's
 *    rate, every tree, bound and ring rate) but for the network switch's name (ib0 by hand);
 *  - the cluster file naming one DGX-1V in each of the four formats: the same links and
 *    broadcast plan (node lines differ by what each format records: names, bus ids, models).
 *    It is joined by the same code as --servers, so its links are what this checks; one cheap
 *    plan shows they plan alike without a third full planning run (slow under valgrind).
 */
Test(cluster, servers_option_and_cluster_file_give_the_hand_written_plan)
{
    char *hand = plan_json("topologies/cluster-4x-dgx1v.topo", (const char *const[]){NULL});
    char *made = plan_json("topologies/dgx1v.topo",
                           (const char *const[]){"--servers", "4", "--nic-gbps", "100", NULL});
    const char *ib = "\"name\": \"ib0\"";
    char *sw = strstr(hand, ib);
    cr_assert_not_null(sw);
    struct strbuf want;
    sb_init(&want);
    sb_printf(&want, "%.*s\"name\": \"net0\"%s", (int)(sw - hand), hand, sw + strlen(ib));
    cr_assert_str_eq(made, want.data);
    /* and it is the plan of the cut values above: allreduce bounded by 32 GB/s */
    cr_assert(strstr(made, "\"bound_gbps\": 32.0,"));
    sb_free(&want);
    free(made), free(hand);

    hand = plan_json("topologies/cluster-4x-dgx1v.topo",
                     (const char *const[]){"--collective", "broadcast", NULL});
    made = plan_json("tests/data/cluster/4x-dgx1v.cluster",
                     (const char *const[]){"--gpu-model", "V100", "--collective", "broadcast",
                                           NULL});
    const char *a = strstr(made, "\"links\": ["), *b = strstr(hand, "\"links\": [");
    cr_assert(a && b);
    cr_assert_str_eq(a, b);
    cr_assert(strstr(a, "\"collective\": \"broadcast\""));
    free(made), free(hand);
    char *path = tu_src_path("tests/data/cluster/4x-dgx1v.cluster");
    expect_places(path);
    free(path);
}

/* The server files are opened through the read options' open_file (the fuzz harness reads
 * them from memory): each distinct path once, resolved against the cluster file's directory. */
struct opened {
    char paths[4][64];
    int n;
};

static enum bk_status open_builtin(void *ctx, const char *path, struct input *in,
                                   struct diag *d)
{
    struct opened *o = ctx;
    if (o->n < 4)
        snprintf(o->paths[o->n], sizeof o->paths[0], "%s", path);
    o->n++;
    const char *base = strrchr(path, '/');
    const struct builtin_file *f = builtin_topo_find(base ? base + 1 : path);
    if (!f)
        return diag_error(d, path, DIAG_NOWHERE, "no such built-in file"), BK_EIO;
    return input_from_memory(path, f->data, f->size, in);
}

Test(cluster, server_files_are_opened_through_the_read_options)
{
    static const char text[] = "cluster pair\nserver a dgx1v.topo\nserver b ./dgx-a100.topo\n"
                               "server c dgx1v.topo\n";
    struct input in;
    cr_assert_eq(input_from_memory("dir/c.cluster", text, sizeof text - 1, &in), BK_OK);
    struct opened o = {.n = 0};
    struct topo_read_opts opts;
    topo_read_opts_default(&opts);
    cr_assert_eq(opts.open_file, topo_open_file, "the file system by default");
    opts.open_file = open_builtin;
    opts.open_ctx = &o;
    struct diag d;
    diag_init(&d);
    struct topo t;
    enum bk_status st = topo_read(&in, &opts, &t, &d);
    cr_assert_eq(st, BK_OK, "%s", diag_first_error(&d) ? diag_first_error(&d) : "");
    cr_expect_eq(t.ngpus, 24, "two DGX-1V and a DGX A100: %d GPUs", t.ngpus);
    cr_expect_eq(t.nservers, 3);
    cr_assert_eq(o.n, 2, "dgx1v.topo is opened once for servers a and c");
    cr_expect_str_eq(o.paths[0], "dir/dgx1v.topo");
    cr_expect_str_eq(o.paths[1], "dir/./dgx-a100.topo");
    topo_free(&t);
    diag_free(&d);
    input_free(&in);
}

/* Four servers of two GPUs and a NIC; a and b on one switch, c and d on another, the two
 * switches joined by one link narrower than a NIC (2.5 GB/s): the exact bounds are below the
 * servers' cuts, and only a and b, c and d are alike. */
static void read_split_cluster(struct topo *t)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "topology split\n");
    for (const char *s = "abcd"; *s; s++) {
        sb_printf(&sb, "server %c\n", *s);
        if (*s == 'a')
            sb_puts(&sb, "net-switch swA\nnet-switch swB\n");
        sb_printf(&sb,
                  "gpu %c.g0 model=V100\ngpu %c.g1 model=V100\npcie-switch %c.sw\n"
                  "nic %c.nic speed=100Gb/s\nlink %c.g0 %c.g1\nlink %c.g0 %c.sw\n"
                  "link %c.g1 %c.sw\nlink %c.nic %c.sw\nlink %c.nic sw%c\n",
                  *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s < 'c' ? 'A' : 'B');
    }
    sb_puts(&sb, "link swA swB bw=20Gb/s\n");
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("split.topo", sb.data, TOPO_FMT_TEXT, NULL, t, &d), BK_OK);
    diag_free(&d);
    sb_free(&sb);
}

/* A cluster's bounds take their max-flows to one server of each class of identical servers
 * only (plan_cluster.c, sinks_by_twins): the values are those of every GPU a sink, computed
 * here on the same graph, where the cuts are the bound and where they are not ("split"). */
Test(cluster, bounds_from_one_server_per_class, .timeout = 120)
{
    const char *fixtures[] = {"split", "cluster-4x-dgx1v.topo",
                              "cluster-4x-a100-forestcoll.topo", "cluster-8x-hgx-h100.topo"};
    unsigned colls = (1u << COLL_BROADCAST) | (1u << COLL_ALLGATHER);
    for (size_t i = 0; i < BK_ARRAY_LEN(fixtures); i++) {
        struct topo t;
        struct plan_set ps;
        if (i == 0) {
            read_split_cluster(&t);
            struct plan_opts o;
            plan_opts_default(&o);
            o.collectives = colls;
            o.root = 0;
            struct diag d;
            diag_init(&d);
            cr_assert_eq(plan_all(&t, &o, &ps, &d), BK_OK);
            diag_free(&d);
            cr_expect_lt(tu_find_plan(&ps, COLL_BROADCAST, 0)->main.bound, 2.6);
        } else {
            tu_plan_alloc(fixtures[i], NULL, 0, colls, 0, &t, &ps);
        }
        cr_assert_not_null(ps.cluster, "%s", fixtures[i]);
        double ag = -1, bc = -1;
        cr_assert_eq(bound_allgather(&ps.tier, &ag), BK_OK);
        cr_assert_eq(bound_broadcast(&ps.tier, 0, &bc), BK_OK);
        const struct plan *pa = tu_find_plan(&ps, COLL_ALLGATHER, -1);
        const struct plan *pb = tu_find_plan(&ps, COLL_BROADCAST, 0);
        cr_expect(fabs(pa->main.bound - ag) <= 1e-9 * ag, "%s: allgather %g, not %g",
                  fixtures[i], pa->main.bound, ag);
        cr_expect(fabs(pb->main.bound - bc) <= 1e-9 * bc, "%s: broadcast %g, not %g",
                  fixtures[i], pb->main.bound, bc);
        plan_set_free(&ps);
        topo_free(&t);
    }
}
