/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_ring.c - the ring baseline (ring.c) against the anchors of blink-and-peers 6.1 and 6.2,
 * and against a brute-force Hamiltonian-cycle oracle over every 3..8-GPU subset of DGX-1V and
 * DGX-1P, grouped into the table's isomorphism classes. GPU numbers are nvidia-smi's. Rates in
 * GB/s: one V100/A100 NVLink 25 per direction, one P100 NVLink 20 (dgx1p.topo's header).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "graph/pgraph.h"
#include "ring/ring.h"
#include "testutil.h"

#define NEAR(x, y) (fabs((double)(x) - (y)) <= 1e-6 * (1 + fabs((double)(y))))

static struct ring_result ring_of(const char *fixture, const int *gpus, int n)
{
    struct topo t;
    struct diag d;
    struct ring_result r;
    tu_load_alloc(fixture, gpus, n, &t);
    diag_init(&d);
    cr_assert_eq(ring_best(&t, &r, &d), BK_OK, "%s", fixture);
    topo_free(&t);
    diag_free(&d);
    return r;
}

/* The rings kept: each a permutation of the GPUs starting at GPU 0, their rates summing to B. */
static void expect_rings(const struct ring_result *r, int n)
{
    double sum = 0;
    cr_expect_eq(r->n, n);
    for (int k = 0; k < r->nrings; k++) {
        const int *ord = r->order + (size_t)k * n;
        int seen[128] = {0};
        cr_assert_leq(n, 128, "expect_rings checks up to 128 GPUs");
        cr_expect_eq(ord[0], 0, "ring %d starts at GPU %d", k, ord[0]);
        for (int i = 0; i < n; i++) {
            cr_assert(ord[i] >= 0 && ord[i] < n && !seen[ord[i]], "ring %d: not a permutation", k);
            seen[ord[i]] = 1;
        }
        cr_expect_gt(r->rate[k], 0);
        sum += r->rate[k];
    }
    cr_expect(NEAR(sum, r->gbps), "ring rates sum to %g, B = %g", sum, r->gbps);
}

static void expect(const char *fixture, const int *gpus, int n, double gbps, unsigned kinds)
{
    struct ring_result r = ring_of(fixture, gpus, n);
    cr_expect(NEAR(r.gbps, gbps), "%s (%d GPUs): B = %g, expected %g", fixture, n, r.gbps, gbps);
    cr_expect_eq(r.kinds, kinds, "%s (%d GPUs): kinds %#x", fixture, n, r.kinds);
    cr_expect_gt(r.nrings, 0);
    expect_rings(&r, r.n);
    ring_result_free(&r);
}

/* Table 6.2: every NVLink of the allocation carries ring traffic in both directions. */
Test(ring, dgx1v_anchors)
{
    expect("dgx1v.topo", NULL, 0, 6 * 25.0, PG_NVLINK);
    expect("dgx1v.topo", (const int[]){0, 2, 3}, 3, 2 * 25.0, PG_NVLINK);
    expect("dgx1v.topo", (const int[]){0, 1, 3}, 3, 2 * 25.0, PG_NVLINK);
    expect("dgx1v.topo", (const int[]){0, 1, 2, 3}, 4, 4 * 25.0, PG_NVLINK);
    struct ring_result r = ring_of("dgx1v.topo", NULL, 0);
    cr_expect_eq(r.exhaustive, 1);
    /* Full DGX-1V: every ring kept is a Hamiltonian cycle of NVLink pairs. */
    static const int nv[][2] = {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7},
                                {0, 1}, {0, 2}, {1, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 6}, {5, 7}};
    expect_rings(&r, 8);
    for (int k = 0; k < r.nrings; k++)
        for (int i = 0; i < 8; i++) {
            int a = r.order[k * 8 + i], b = r.order[k * 8 + (i + 1) % 8], linked = 0;
            for (size_t e = 0; e < sizeof nv / sizeof nv[0]; e++)
                linked |= (nv[e][0] == a && nv[e][1] == b) || (nv[e][0] == b && nv[e][1] == a);
            cr_expect(linked, "ring %d hop %d-%d has no NVLink", k, a, b);
        }
    ring_result_free(&r);
}

/*
 * {0,1,2,3,7} (nccl #301): GPU 7's only NVLink into the set is 3-7, so no NVLink ring. Over all
 * links, every directed ring enters and leaves GPU 7 once; at most one of the two hops is the
 * NVLink 3-7, so the other crosses the QPI (GPU 7 sits on socket 1, the rest on socket 0) in one
 * direction: gpu7 -> plx3 -> cpu1 -> cpu0 -> plx0/1 (12, 6, 12 GB/s), or back. Hence B <= 6 + 6
 * (QPI, each direction), reached by 0->1->2->3->7->0 and its reverse at 6 GB/s each.
 */
Test(ring, dgx1v_pcie_fallback)
{
    expect("dgx1v.topo", (const int[]){0, 1, 2, 3, 7}, 5, 2 * 6.0, PG_ALL_KINDS);
}

/*
 * DGX-1P: {0,1,2,3} is a complete K4 of single 20 GB/s links: 12 arcs, 4 per ring, so 3 links'
 * worth (the fractional optimum; integral rings reach 2). {0,1,4}: NVLinks 0-1 and 0-4 only, so
 * every 3-cycle has the hop 1->4 or 4->1, which crosses the QPI (6 GB/s per direction): B = 12.
 */
Test(ring, dgx1p_anchors)
{
    expect("dgx1p.topo", NULL, 0, 4 * 20.0, PG_NVLINK);
    expect("dgx1p.topo", (const int[]){0, 1, 2, 3}, 4, 3 * 20.0, PG_NVLINK);
    expect("dgx1p.topo", (const int[]){0, 1, 4}, 3, 2 * 6.0, PG_ALL_KINDS);
}

/* Behind non-blocking switches a ring reaches every GPU's whole NVLink bandwidth. */
Test(ring, nvswitch_boxes)
{
    expect("dgx-a100.topo", NULL, 0, 12 * 25.0, PG_NVLINK);
    expect("dgx2.topo", NULL, 0, 6 * 25.0, PG_NVLINK);
    expect("dgx2.topo", (const int[]){0, 1, 8, 9}, 4, 6 * 25.0, PG_NVLINK);
    struct ring_result r = ring_of("dgx2.topo", NULL, 0);
    cr_expect_eq(r.exhaustive, 0);
    expect_rings(&r, 16);
    ring_result_free(&r);
}

/* A uniform switch plane: one ring in rank order at every GPU's whole NVLink rate, which no ring
 * set can exceed (18 x 50 GB/s on both), without the heuristic's LP. */
Test(ring, uniform_switch_planes, .timeout = 60)
{
    static const struct {
        const char *fixture;
        int n;
    } planes[] = {{"gb200-nvl72.topo", 72}, {"hgx-b200.topo", 8}, {"dgx-a100.topo", 8}};
    for (size_t i = 0; i < BK_ARRAY_LEN(planes); i++) {
        struct ring_result r = ring_of(planes[i].fixture, NULL, 0);
        double want = i == 2 ? 12 * 25.0 : 18 * 50.0;
        cr_expect(NEAR(r.gbps, want), "%s: %g GB/s", planes[i].fixture, r.gbps);
        cr_expect_eq(r.nrings, 1, "%s", planes[i].fixture);
        cr_expect_eq(r.exhaustive, 1, "%s: the bound is reached", planes[i].fixture);
        expect_rings(&r, planes[i].n);
        for (int v = 0; v < planes[i].n; v++)
            cr_expect_eq(r.order[v], v, "%s: rank order", planes[i].fixture);
        ring_result_free(&r);
    }
}

/*
 * Four DGX-1V behind one InfiniBand switch: no NVLink between servers, so all kinds. Every ring
 * leaves server 1 once, through a NIC; each NIC is fed by one 12 GB/s PCIe link, so B <= 4 x 12.
 * NCCL-style rings reach it: one NVLink path through each server per ring, four rings entering
 * and leaving through different PCIe switches (0->1, 1->0, 2->3, 3->2), each at 12.
 */
Test(ring, cluster)
{
    struct ring_result r = ring_of("cluster-4x-dgx1v.topo", NULL, 0);
    cr_expect_eq(r.kinds, PG_ALL_KINDS);
    cr_expect_eq(r.exhaustive, 0);
    cr_expect(NEAR(r.gbps, 4 * 12.0), "B = %g", r.gbps);
    cr_expect_geq(r.nrings, 4);
    expect_rings(&r, 32);
    ring_result_free(&r);
}

/*
 * The same cluster with server 2's first NIC on a Gen3 x8 link (6 GB/s): that server can send
 * out at most 3 x 12 + 6 = 42, and so can every ring set. The LP is solved once per class of
 * identical servers; server 2 is a class of its own, and keeping it is what holds B there (the
 * other three servers alone would allow 48).
 */
Test(ring, cluster_with_one_narrower_server)
{
    char *path = tu_src_path("topologies/cluster-4x-dgx1v.topo");
    char *text = tu_slurp(path, NULL);
    cr_assert_not_null(text, "%s", path);
    char *at = strstr(text, "link s2.mlx5_0 s2.plx0\n");
    cr_assert_not_null(at);
    struct strbuf sb;
    sb_init(&sb);
    sb_putn(&sb, text, (size_t)(at - text));
    sb_puts(&sb, "link s2.mlx5_0 s2.plx0 width=8\n");
    sb_puts(&sb, at + strlen("link s2.mlx5_0 s2.plx0\n"));
    struct topo t;
    struct diag d;
    struct ring_result r;
    diag_init(&d);
    cr_assert_eq(tu_read_string("narrow", sb.data, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK);
    cr_assert_eq(ring_best(&t, &r, &d), BK_OK);
    cr_expect_gt(r.gbps, 0);
    cr_expect_leq(r.gbps, 42 + 1e-6, "B = %g", r.gbps);
    expect_rings(&r, 32);
    ring_result_free(&r);
    topo_free(&t);
    diag_free(&d);
    sb_free(&sb);
    free(text);
    free(path);
}

Test(ring, algbw)
{
    cr_expect(NEAR(ring_algbw(100, 4, COLL_BROADCAST), 100));
    cr_expect(NEAR(ring_algbw(100, 4, COLL_REDUCE), 100));
    cr_expect(NEAR(ring_algbw(100, 4, COLL_ALLREDUCE), 100.0 * 4 / 6));
    cr_expect(NEAR(ring_algbw(100, 4, COLL_ALLGATHER), 100.0 * 4 / 3));
    cr_expect(NEAR(ring_algbw(100, 4, COLL_REDUCESCATTER), 100.0 * 4 / 3));
    cr_expect(NEAR(ring_algbw(100, 2, COLL_ALLREDUCE), 100));
    cr_expect_eq(ring_algbw(100, 1, COLL_ALLREDUCE), 0);
    struct ring_result r = ring_of("dgx1v.topo", (const int[]){5}, 1);
    cr_expect_eq(r.gbps, 0);
    cr_expect_eq(r.nrings, 0);
    ring_result_free(&r);
}

/* ---- brute force over subsets ---- */

/* NVLink counts between GPUs, written out here from the hardware facts (not from the fixtures). */
static void dgx1v_links(int w[8][8])
{
    static const int dbl[][2] = {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}};
    static const int sgl[][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 6}, {5, 7}};
    memset(w, 0, sizeof(int[8][8]));
    for (int k = 0; k < 8; k++) {
        w[dbl[k][0]][dbl[k][1]] = w[dbl[k][1]][dbl[k][0]] = 2;
        w[sgl[k][0]][sgl[k][1]] = w[sgl[k][1]][sgl[k][0]] = 1;
    }
}

/* DGX-1P: two complete quads {0..3}, {4..7} plus i <-> i+4, all single. */
static void dgx1p_links(int w[8][8])
{
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            w[i][j] = i != j && (i / 4 == j / 4 || i % 4 == j % 4);
}

/* Next permutation in lexicographic order; 0 after the last. */
static int next_perm(int *p, int n)
{
    int i = n - 2;
    while (i >= 0 && p[i] >= p[i + 1])
        i--;
    if (i < 0)
        return 0;
    int j = n - 1;
    while (p[j] <= p[i])
        j--;
    int t = p[i];
    p[i] = p[j];
    p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) {
        t = p[a];
        p[a] = p[b];
        p[b] = t;
    }
    return 1;
}

/* A Hamiltonian cycle of the NVLink graph induced on s[0..n): s[0] first, all orders. */
static int has_cycle(int w[8][8], const int *s, int n)
{
    int p[8];
    for (int k = 0; k < n - 1; k++)
        p[k] = k + 1;
    do {
        int prev = s[0], ok = 1;
        for (int k = 0; k < n - 1 && ok; k++) {
            ok = w[prev][s[p[k]]] > 0;
            prev = s[p[k]];
        }
        if (ok && w[prev][s[0]] > 0)
            return 1;
    } while (next_perm(p, n - 1));
    return 0;
}

/* Canonical form of the induced weighted graph: the least relabelled matrix. */
static void canon(int w[8][8], const int *s, int n, unsigned char key[64])
{
    int p[8];
    unsigned char cur[64];
    for (int k = 0; k < n; k++)
        p[k] = k;
    memset(key, 0xff, 64);
    do {
        memset(cur, 0, 64);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                cur[i * n + j] = (unsigned char)w[s[p[i]]][s[p[j]]];
        if (memcmp(cur, key, 64) < 0)
            memcpy(key, cur, 64);
    } while (next_perm(p, n));
}

/* For each size 3..8: ring_best finds an NVLink ring exactly when the oracle does; the classes
 * (isomorphism of the induced NVLink graph) and those without a ring match table 6.1. */
static void table(const char *fixture, void (*links)(int[8][8]), const int classes[6],
                  const int noring[6])
{
    int w[8][8];
    links(w);
    struct topo whole, t;
    struct diag d;
    tu_load_alloc(fixture, NULL, 0, &whole);
    diag_init(&d);
    static unsigned char keys[70][64];
    for (int n = 3; n <= 8; n++) {
        int nkeys = 0, key_noring = 0, sub_noring = 0;
        for (unsigned mask = 0; mask < 256; mask++) {
            int s[8], m = 0;
            for (int g = 0; g < 8; g++)
                if (mask & (1u << g))
                    s[m++] = g;
            if (m != n)
                continue;
            struct ring_result r;
            cr_assert_eq(topo_restrict(&whole, s, n, &t, &d), BK_OK);
            cr_assert_eq(ring_best(&t, &r, &d), BK_OK);
            topo_free(&t);
            int oracle = has_cycle(w, s, n);
            cr_expect_eq(r.kinds == PG_NVLINK, oracle, "%s mask %#x: kinds %#x", fixture, mask,
                         r.kinds);
            cr_expect_gt(r.gbps, 0, "%s mask %#x", fixture, mask);
            sub_noring += !oracle;
            unsigned char key[64];
            canon(w, s, n, key);
            int k = 0;
            while (k < nkeys && memcmp(keys[k], key, 64) != 0)
                k++;
            if (k == nkeys) {
                memcpy(keys[nkeys++], key, 64);
                key_noring += r.kinds != PG_NVLINK;
            }
            ring_result_free(&r);
        }
        cr_expect_eq(nkeys, classes[n - 3], "%s n=%d classes", fixture, n);
        cr_expect_eq(key_noring, noring[n - 3], "%s n=%d classes without ring", fixture, n);
        if (n >= 6)
            cr_expect_eq(sub_noring, 0);
        if (n == 3)
            cr_expect_gt(sub_noring, 0);
    }
    topo_free(&whole);
    diag_free(&d);
}

Test(ring, dgx1v_table, .timeout = 120)
{
    table("dgx1v.topo", dgx1v_links, (const int[]){7, 19, 14, 10, 2, 1},
          (const int[]){5, 15, 8, 0, 0, 0});
}

Test(ring, dgx1p_table, .timeout = 120)
{
    table("dgx1p.topo", dgx1p_links, (const int[]){3, 6, 3, 3, 1, 1},
          (const int[]){2, 4, 2, 0, 0, 0});
}
