/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_text.c - the .topo reader (blinkc-topology(5)): every fixture in topologies/ against the
 * published server facts (topology-facts.md section 4, with the DGX-1V reference graph of 4.3
 * and 4.4 in testutil), the man page's examples, bandwidth units and defaults, server sections, and
 * each error with its exact LINE:COL. Expected numbers come from the facts, never from the
 * reader's own output.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/builtin.h"
#include "core/input.h"
#include "core/strbuf.h"
#include "testutil.h"

/* Read a fixture (format detected from the content): it must load with no error or warning. */
static void read_fixture(const char *file, struct topo *t)
{
    char *rel = bk_asprintf("topologies/%s", file);
    char *path = tu_src_path(rel);
    struct diag d;
    diag_init(&d);
    enum bk_status st = tu_read_file(path, TOPO_FMT_AUTO, NULL, t, &d);
    if (d.n)
        diag_print(&d, stderr);
    cr_assert_eq(st, BK_OK, "%s: %s", path, diag_first_error(&d));
    cr_assert_eq(d.nwarnings, 0, "%s reads with warnings", path);
    cr_assert_str_eq(t->format, "text");
    diag_free(&d);
    free(path);
    free(rel);
}

/* Read a .topo text that must load; warnings are left in d for the caller. */
static void read_ok(const char *text, const char *gpu_model, struct topo *t, struct diag *d)
{
    diag_init(d);
    enum bk_status st = tu_read_string("t.topo", text, TOPO_FMT_TEXT, gpu_model, t, d);
    cr_assert_eq(st, BK_OK, "'%s': %s", text, diag_first_error(d));
}

/* NVLinks leaving a node: physical link count and total GB/s. */
static void nvlinks_of(const struct topo *t, int node, int *count, double *gbps)
{
    *count = 0;
    *gbps = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == node && t->links[i].kind == TOPO_NVLINK) {
            *count += t->links[i].count;
            *gbps += t->links[i].gbps;
        }
}

/* GPU g has `count` NVLinks of `gbps` GB/s in all. */
static void expect_nvlinks(const struct topo *t, int g, int count, double gbps)
{
    int n;
    double bw;
    nvlinks_of(t, g, &n, &bw);
    cr_assert_eq(n, count, "%s: %d NVLinks, expected %d", t->nodes[g].id, n, count);
    cr_assert_float_eq(bw, gbps, 1e-9, "%s: %g GB/s, expected %g", t->nodes[g].id, bw, gbps);
}

/* The only PCIe neighbour of `node` of kind k (asserting there is exactly one). */
static int pcie_peer(const struct topo *t, int node, enum topo_node_kind k)
{
    int found = -1;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == node && t->links[i].kind == TOPO_PCIE &&
            t->nodes[t->links[i].dst].kind == k) {
            cr_assert_eq(found, -1, "%s has two PCIe %s peers", t->nodes[node].id,
                         topo_node_kind_name(k));
            found = t->links[i].dst;
        }
    cr_assert_neq(found, -1, "%s has no PCIe %s peer", t->nodes[node].id, topo_node_kind_name(k));
    return found;
}

/* Assert the directed link a -> b (canonical ids) with its kind, count and GB/s. */
static void expect_link(const struct topo *t, const char *a, const char *b, enum topo_link_kind k,
                        int count, double gbps)
{
    const struct topo_link *l = tu_link(t, a, b);
    cr_assert_not_null(l, "no link %s -> %s", a, b);
    cr_assert_eq(l->kind, k, "%s -> %s kind", a, b);
    cr_assert_eq(l->count, count, "%s -> %s count %d", a, b, l->count);
    cr_assert_float_eq(l->gbps, gbps, 1e-9, "%s -> %s: %g GB/s, expected %g", a, b, l->gbps, gbps);
}

static void expect_counts(const struct topo *t, int gpu, int nvs, int pcisw, int cpu, int nic,
                          int netsw)
{
    const int want[TOPO_NODE_KINDS] = {gpu, nvs, pcisw, cpu, nic, netsw};
    for (int k = 0; k < TOPO_NODE_KINDS; k++)
        cr_assert_eq(tu_count_nodes(t, (enum topo_node_kind)k), want[k], "%s nodes: %d, want %d",
                     topo_node_kind_name((enum topo_node_kind)k),
                     tu_count_nodes(t, (enum topo_node_kind)k), want[k]);
}

/* The DGX-1V reference graph (topology-facts.md 4.3, 4.4), plus what the .topo file records:
 * bus ids, GPU declaration order and a single server. */
Test(text, dgx1v_is_the_reference_graph)
{
    struct topo t;
    read_fixture("dgx1v.topo", &t);
    tu_expect_dgx1v(&t);
    cr_assert_eq(t.nservers, 1);
    static const char *const gpu_bus[] = {"0000:06:00.0", "0000:07:00.0", "0000:0a:00.0",
                                          "0000:0b:00.0", "0000:85:00.0", "0000:86:00.0",
                                          "0000:89:00.0", "0000:8a:00.0"};
    static const char *const nic_bus[] = {"0000:05:00.0", "0000:0c:00.0", "0000:84:00.0",
                                          "0000:8b:00.0"};
    char id[16];
    for (int i = 0; i < 8; i++) {
        snprintf(id, sizeof id, "gpu%d", i);
        int g = tu_node(&t, id);
        cr_assert_str_eq(t.nodes[g].busid, gpu_bus[i]);
        cr_assert_eq(t.nodes[g].gpu_order, i);
    }
    for (int j = 0; j < 4; j++) {
        snprintf(id, sizeof id, "nic%d", j);
        cr_assert_str_eq(t.nodes[tu_node(&t, id)].busid, nic_bus[j]);
    }
    topo_free(&t);
}

Test(text, builtin_default_is_dgx1v)
{
    const struct builtin_file *f = builtin_topo_find(BUILTIN_DEFAULT);
    cr_assert_not_null(f);
    struct topo t;
    struct diag d;
    read_ok(f->data, NULL, &t, &d);
    cr_assert_eq(d.nwarnings, 0);
    cr_assert_str_eq(t.name, "dgx1v");
    expect_counts(&t, 8, 0, 4, 2, 4, 0);
    expect_link(&t, "gpu0", "gpu3", TOPO_NVLINK, 2, 50);
    topo_free(&t);
    diag_free(&d);
}

/* DGX-1P (4.2): two quads plus i <-> i+4, 16 single NVLink1 links, 4 per GPU = 80 GB/s. */
Test(text, dgx1p)
{
    struct topo t;
    read_fixture("dgx1p.topo", &t);
    expect_counts(&t, 8, 0, 4, 2, 4, 0);
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 32);
    char a[16], b[16];
    for (int i = 0; i < 8; i++) {
        expect_nvlinks(&t, i, 4, 80);
        cr_assert_eq(t.nodes[i].nvlink_gen, 1);
        for (int j = 0; j < 8; j++) {
            snprintf(a, sizeof a, "gpu%d", i);
            snprintf(b, sizeof b, "gpu%d", j);
            int linked = i != j && (i / 4 == j / 4 || j == (i + 4) % 8);
            if (linked)
                expect_link(&t, a, b, TOPO_NVLINK, 1, 20);
            else
                cr_assert_null(tu_link(&t, a, b), "%s -> %s should not exist", a, b);
        }
        cr_assert_eq(pcie_peer(&t, i, TOPO_PCIE_SWITCH), tu_node(&t, i < 2 ? "pcisw0"
                                                                 : i < 4 ? "pcisw1"
                                                                 : i < 6 ? "pcisw2"
                                                                         : "pcisw3"));
    }
    expect_link(&t, "cpu0", "cpu1", TOPO_SMP, 1, 6);
    topo_free(&t);
}

/* DGX-2 (4.5): one link from each GPU to each switch of its baseboard, 48 trunks. */
Test(text, dgx2)
{
    struct topo t;
    read_fixture("dgx2.topo", &t);
    expect_counts(&t, 16, 12, 12, 2, 0, 0);
    int trunks = 0;
    for (int s = 16; s < 28; s++) {
        cr_assert_eq(t.nodes[s].kind, TOPO_NVSWITCH);
        int gpus = 0, peers = 0;
        for (int i = 0; i < t.nlinks; i++) {
            const struct topo_link *l = &t.links[i];
            if (l->src != s)
                continue;
            cr_assert_eq(l->kind, TOPO_NVLINK);
            if (t.nodes[l->dst].kind == TOPO_GPU) {
                gpus += l->count;
                /* Baseboard A switches (nvs0-5) serve GPU0-7, B (nvs6-11) GPU8-15. */
                cr_assert_eq(l->dst / 8, (s - 16) / 6);
            } else {
                peers++;
                trunks += l->count;
                cr_assert_eq(l->count, 8);
                cr_assert_float_eq(l->gbps, 200, 1e-9);
                cr_assert_neq((l->dst - 16) / 6, (s - 16) / 6, "trunk within a baseboard");
            }
        }
        cr_assert_eq(gpus, 8);
        cr_assert_eq(peers, 1);
    }
    cr_assert_eq(trunks / 2, 48);
    for (int g = 0; g < 16; g++) {
        expect_nvlinks(&t, g, 6, 150);
        /* No direct GPU-GPU NVLink: everything goes through the switches. */
        for (int i = 0; i < t.nlinks; i++)
            cr_assert(!(t.links[i].src == g && t.nodes[t.links[i].dst].kind == TOPO_GPU));
    }
    /* PCIe: GPU pairs share a leaf switch, two leaves share an upper switch. */
    for (int g = 0; g < 16; g += 2) {
        int leaf = pcie_peer(&t, g, TOPO_PCIE_SWITCH);
        cr_assert_eq(leaf, pcie_peer(&t, g + 1, TOPO_PCIE_SWITCH));
        if (g % 4 == 0) {
            int other = pcie_peer(&t, g + 2, TOPO_PCIE_SWITCH);
            cr_assert_neq(leaf, other);
            int up = -1, up2 = -1;
            for (int i = 0; i < t.nlinks; i++) {
                if (t.links[i].src == leaf && t.nodes[t.links[i].dst].kind == TOPO_PCIE_SWITCH)
                    up = t.links[i].dst;
                if (t.links[i].src == other && t.nodes[t.links[i].dst].kind == TOPO_PCIE_SWITCH)
                    up2 = t.links[i].dst;
            }
            cr_assert(up >= 0 && up == up2);
        }
    }
    expect_link(&t, "cpu0", "cpu1", TOPO_SMP, 1, 10);
    topo_free(&t);
}

/* DGX A100 (4.6): 2 links from each GPU to each of 6 switches = 12 x 25 = 300 GB/s. */
Test(text, dgx_a100)
{
    struct topo t;
    read_fixture("dgx-a100.topo", &t);
    expect_counts(&t, 8, 6, 4, 2, 8, 0);
    char a[16], b[16];
    for (int g = 0; g < 8; g++) {
        expect_nvlinks(&t, g, 12, 300);
        snprintf(a, sizeof a, "gpu%d", g);
        for (int s = 0; s < 6; s++) {
            snprintf(b, sizeof b, "nvs%d", s);
            expect_link(&t, a, b, TOPO_NVLINK, 2, 50);
        }
    }
    /* Each Gen4 switch holds 2 GPUs and 2 NICs at 24 GB/s. */
    for (int s = 0; s < 4; s++) {
        snprintf(a, sizeof a, "pcisw%d", s);
        int sw = tu_node(&t, a), gpus = 0, nics = 0;
        for (int i = 0; i < t.nlinks; i++)
            if (t.links[i].src == sw) {
                cr_assert_float_eq(t.links[i].gbps, 24, 1e-9);
                gpus += t.nodes[t.links[i].dst].kind == TOPO_GPU;
                nics += t.nodes[t.links[i].dst].kind == TOPO_NIC;
            }
        cr_assert_eq(gpus, 2);
        cr_assert_eq(nics, 2);
    }
    expect_link(&t, "cpu0", "cpu1", TOPO_SMP, 1, 16);
    topo_free(&t);
}

/* HGX H100 (4.7): 18 links per GPU split 4/5/5/4 over the four switches = 450 GB/s. */
Test(text, hgx_h100)
{
    struct topo t;
    read_fixture("hgx-h100.topo", &t);
    expect_counts(&t, 8, 4, 8, 2, 8, 0);
    static const int split[4] = {4, 5, 5, 4};
    char a[16], b[16];
    for (int g = 0; g < 8; g++) {
        expect_nvlinks(&t, g, 18, 450);
        snprintf(a, sizeof a, "gpu%d", g);
        for (int s = 0; s < 4; s++) {
            snprintf(b, sizeof b, "nvs%d", s);
            expect_link(&t, a, b, TOPO_NVLINK, split[s], 25.0 * split[s]);
        }
        /* One GPU and one NIC per Gen5 switch (48 GB/s). */
        int sw = pcie_peer(&t, g, TOPO_PCIE_SWITCH);
        int nics = 0;
        for (int i = 0; i < t.nlinks; i++)
            if (t.links[i].dst == sw && t.nodes[t.links[i].src].kind == TOPO_NIC) {
                nics++;
                cr_assert_float_eq(t.links[i].gbps, 48, 1e-9);
            }
        cr_assert_eq(nics, 1);
    }
    expect_link(&t, "cpu0", "cpu1", TOPO_SMP, 1, 22);
    topo_free(&t);
}

/* HGX H200: the H100 board with H200 parts, named as such (not assumed). */
Test(text, hgx_h200)
{
    struct topo t;
    read_fixture("hgx-h200.topo", &t);
    expect_counts(&t, 8, 4, 8, 2, 8, 0);
    for (int g = 0; g < 8; g++) {
        expect_nvlinks(&t, g, 18, 450);
        cr_assert_str_eq(t.nodes[g].part->name, "H200");
        cr_assert_eq(t.nodes[g].part_assumed, 0);
    }
    topo_free(&t);
}

/* HGX B200: 9 NVLink5 links from every GPU to each of 2 switches, 18 x 50 = 900 GB/s. */
Test(text, hgx_b200)
{
    struct topo t;
    read_fixture("hgx-b200.topo", &t);
    expect_counts(&t, 8, 2, 8, 2, 8, 0);
    char a[16], b[16];
    for (int g = 0; g < 8; g++) {
        expect_nvlinks(&t, g, 18, 900);
        cr_assert_str_eq(t.nodes[g].part->name, "B200");
        snprintf(a, sizeof a, "gpu%d", g);
        for (int s = 0; s < 2; s++) {
            snprintf(b, sizeof b, "nvs%d", s);
            expect_link(&t, a, b, TOPO_NVLINK, 9, 9 * 50.0);
        }
    }
    expect_link(&t, "cpu0", "cpu1", TOPO_SMP, 1, 40); /* Emerald Rapids */
    topo_free(&t);
}

/* GB200 NVL72: 72 GPUs with one NVLink5 link to each of 18 switch chips; each Grace holds two
 * GPUs over C2C, and no link joins the Graces. */
Test(text, gb200_nvl72)
{
    struct topo t;
    read_fixture("gb200-nvl72.topo", &t);
    expect_counts(&t, 72, 18, 0, 36, 0, 0);
    char a[16], b[16];
    for (int g = 0; g < 72; g++) {
        expect_nvlinks(&t, g, 18, 900);
        cr_assert_str_eq(t.nodes[g].part->name, "GB200");
        snprintf(a, sizeof a, "gpu%d", g);
        snprintf(b, sizeof b, "nvs%d", g % 18);
        expect_link(&t, a, b, TOPO_NVLINK, 1, 50);
        snprintf(b, sizeof b, "cpu%d", g / 2); /* CPUs take canonical names by socket */
        expect_link(&t, a, b, TOPO_PCIE, 1, 450);
    }
    cr_assert_eq(tu_count_links(&t, TOPO_SMP), 0);
    topo_free(&t);
}

/* The net link between the nodes named a and b (input names, not canonical ids). */
static const struct topo_link *named_net_link(const struct topo *t, const char *a, const char *b)
{
    int x = topo_find(t, a), y = topo_find(t, b);
    cr_assert(x >= 0 && y >= 0, "no node %s or %s", a, b);
    int i = topo_find_link(t, x, y, TOPO_NET);
    cr_assert_geq(i, 0, "no net link %s -> %s", a, b);
    return &t->links[i];
}

/* Eight HGX H100 servers on rails: NIC k of every server on leaf railk, the leaves on a spine. */
Test(text, cluster_8x_hgx_h100_rails)
{
    struct topo t;
    read_fixture("cluster-8x-hgx-h100.topo", &t);
    expect_counts(&t, 64, 32, 64, 16, 64, 9);
    cr_assert_eq(t.nservers, 8);
    char a[32], b[16];
    for (int s = 0; s < 8; s++)
        for (int k = 0; k < 8; k++) {
            snprintf(a, sizeof a, "s%d.mlx5_%d", s, k);
            snprintf(b, sizeof b, "rail%d", k);
            cr_assert_float_eq(named_net_link(&t, a, b)->gbps, 50, 1e-9);
            cr_assert_eq(t.nodes[topo_find(&t, a)].server, s);
            snprintf(a, sizeof a, "s%d.gpu%d", s, k);
            cr_assert_eq(t.nodes[topo_find(&t, a)].local_gpu, k);
        }
    for (int k = 0; k < 8; k++) {
        snprintf(b, sizeof b, "rail%d", k);
        cr_assert_float_eq(named_net_link(&t, b, "spine")->gbps, 400, 1e-9);
    }
    topo_free(&t);
}

Test(text, pcie8_has_no_nvlink)
{
    struct topo t;
    read_fixture("pcie8.topo", &t);
    expect_counts(&t, 8, 0, 4, 2, 0, 0);
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 0);
    for (int g = 0; g < 8; g++) {
        int sw = pcie_peer(&t, g, TOPO_PCIE_SWITCH);
        cr_assert_eq(sw, pcie_peer(&t, g ^ 1, TOPO_PCIE_SWITCH));
        cr_assert_float_eq(tu_link(&t, t.nodes[g].id, t.nodes[sw].id)->gbps, 24, 1e-9);
    }
    topo_free(&t);
}

/* A published 8 x RTX 4090 box: a switch of four GPUs per socket, none with peer access. */
Test(text, rtx4090x8_has_no_peer_access)
{
    struct topo t;
    read_fixture("rtx4090x8.topo", &t);
    expect_counts(&t, 8, 0, 2, 2, 1, 0);
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 0);
    cr_assert(topo_no_p2p(&t));
    for (int g = 0; g < 8; g++) {
        cr_expect(t.nodes[g].no_p2p, "gpu%d", g);
        cr_expect_eq(pcie_peer(&t, g, TOPO_PCIE_SWITCH), pcie_peer(&t, g ^ 3, TOPO_PCIE_SWITCH));
    }
    topo_free(&t);
    read_fixture("pcie8.topo", &t);
    cr_expect(!topo_no_p2p(&t), "p2p=yes is the default");
    topo_free(&t);
}

Test(text, cluster_of_four_dgx1v)
{
    struct topo t;
    read_fixture("cluster-4x-dgx1v.topo", &t);
    cr_assert_eq(t.nservers, 4);
    expect_counts(&t, 32, 0, 16, 8, 16, 1);
    cr_assert_eq(tu_count_links(&t, TOPO_NET), 32);
    for (int g = 0; g < 32; g++) {
        cr_assert_eq(t.nodes[g].server, g / 8);
        cr_assert_eq(t.nodes[g].local_gpu, g % 8);
        int n;
        double bw;
        nvlinks_of(&t, g, &n, &bw);
        cr_assert_float_eq(bw, 150, 1e-9);
    }
    char a[16];
    for (int j = 0; j < 16; j++) {
        snprintf(a, sizeof a, "nic%d", j);
        cr_assert_eq(t.nodes[tu_node(&t, a)].server, j / 4);
        cr_assert_float_eq(t.nodes[tu_node(&t, a)].nic_gbps, 12.5, 1e-9);
        expect_link(&t, a, "netsw0", TOPO_NET, 1, 12.5);
        expect_link(&t, "netsw0", a, TOPO_NET, 1, 12.5);
    }
    topo_free(&t);
}

/* The man page's examples are complete files ("examples are tests"). */
Test(text, man_page_examples_read)
{
    char *path = tu_src_path("man/blinkc-topology.5");
    struct diag d;
    diag_init(&d);
    struct input in;
    cr_assert_eq(input_read(path, &in, &d), BK_OK);
    const char *p = strstr(in.data, "\n.SH EXAMPLES\n"), *stop = strstr(in.data, "\n.SH SEE ALSO");
    cr_assert(p && stop);
    int nex = 0;
    while ((p = strstr(p, "\n.nf\n")) && p < stop) {
        p += 5;
        const char *e = strstr(p, "\n.fi\n");
        cr_assert_not_null(e);
        if (*p == '.')
            continue; /* a command line, not a file */
        struct strbuf sb; /* undo the roff escapes used in examples: \- and \& */
        sb_init(&sb);
        for (const char *q = p; q <= e; q++) {
            if (q[0] == '\\' && q[1] == '-')
                sb_putc(&sb, '-'), q++;
            else if (q[0] == '\\' && q[1] == '&')
                q++;
            else
                sb_putc(&sb, *q);
        }
        char *text = sb_take(&sb);
        struct topo t;
        struct diag dx;
        read_ok(text, NULL, &t, &dx);
        cr_assert_eq(dx.nwarnings, 0);
        if (nex == 0) {
            cr_assert_str_eq(t.name, "pair");
            expect_counts(&t, 2, 0, 1, 1, 1, 0);
            expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 2, 50);
            expect_link(&t, "gpu0", "pcisw0", TOPO_PCIE, 1, 12);
            expect_link(&t, "pcisw0", "cpu0", TOPO_PCIE, 1, 12);
        } else {
            cr_assert_eq(t.nservers, 2);
            expect_counts(&t, 4, 0, 2, 0, 2, 1);
            expect_link(&t, "gpu2", "gpu3", TOPO_NVLINK, 1, 25);
            expect_link(&t, "nic0", "netsw0", TOPO_NET, 1, 12.5);
            expect_link(&t, "nic1", "netsw0", TOPO_NET, 1, 6.25);
            expect_link(&t, "netsw0", "nic1", TOPO_NET, 1, 5);
        }
        topo_free(&t);
        diag_free(&dx);
        free(text);
        nex++;
    }
    cr_assert_eq(nex, 2);
    input_free(&in);
    diag_free(&d);
    free(path);
}

#define BOX "gpu a\ngpu b\npcie-switch s\ncpu c\ncpu d\nnic n speed=100Gb/s\nnic m\n" \
            "net-switch x\nlink a s\nlink b s\n"

Test(text, bandwidth_units_and_defaults)
{
    static const struct {
        const char *link;
        const char *src, *dst;
        double fwd, rev;
    } cases[] = {
        {"link a b bw=100Gb/s", "gpu0", "gpu1", 12.5, 12.5},
        {"link a b bw=12500MB/s", "gpu0", "gpu1", 12.5, 12.5},
        {"link a b bw=1.2TB/s", "gpu0", "gpu1", 1200, 1200},
        {"link a b bw=40 bw-rev=10GB/s", "gpu0", "gpu1", 40, 10},
        {"link a b count=2 bw-rev=5", "gpu0", "gpu1", 50, 5},   /* V100 assumed: 2 x 25 */
        {"link a b gen=1 count=3", "gpu0", "gpu1", 60, 60},     /* NVLink1: 20 per link */
        {"link a b gen=5", "gpu0", "gpu1", 50, 50},
        {"link s c gen=4 width=8", "pcisw0", "cpu0", 12, 12},   /* 8 x 120 / 80 */
        {"link s c count=2", "pcisw0", "cpu0", 24, 24},         /* Gen3 x16 = 12, twice */
        {"link s c gen=5", "pcisw0", "cpu0", 48, 48},
        {"link c d", "cpu0", "cpu1", 6, 6},                     /* unknown family: QPI */
        {"link n x", "nic0", "netsw0", 12.5, 12.5},             /* the NIC's 100 Gb/s */
        {"link m x", "nic1", "netsw0", 12.5, 12.5},             /* no speed: rates.net */
        {"link n m kind=net", "nic0", "nic1", 12.5, 12.5},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s\n", BOX, cases[i].link);
        struct topo t;
        struct diag d;
        read_ok(text, "V100", &t, &d);
        const struct topo_link *f = tu_link(&t, cases[i].src, cases[i].dst);
        const struct topo_link *r = tu_link(&t, cases[i].dst, cases[i].src);
        cr_assert(f && r, "%s: link missing", cases[i].link);
        cr_expect_float_eq(f->gbps, cases[i].fwd, 1e-9, "%s: %g", cases[i].link, f->gbps);
        cr_expect_float_eq(r->gbps, cases[i].rev, 1e-9, "%s: reverse %g", cases[i].link, r->gbps);
        topo_free(&t);
        diag_free(&d);
    }
}

Test(text, cpu_family_sets_the_smp_rate)
{
    static const struct {
        const char *attrs;
        double gbps;
    } cases[] = {
        {"vendor=GenuineIntel family=6 cpumodel=79", 6},
        {"vendor=GenuineIntel family=6 cpumodel=0x55", 10},
        {"vendor=GenuineIntel family=6 cpumodel=143", 22},
        {"vendor=GenuineIntel family=6 cpumodel=207", 40},
        {"vendor=AuthenticAMD family=23 cpumodel=49", 16},
        {"arch=ppc64 model=POWER9", 32},
        {"arch=aarch64", 6},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++) {
        char text[256];
        snprintf(text, sizeof text, "gpu g\ncpu c0 %s\ncpu c1\nlink g c0\nlink c0 c1\n",
                 cases[i].attrs);
        struct topo t;
        struct diag d;
        read_ok(text, NULL, &t, &d);
        expect_link(&t, "cpu0", "cpu1", TOPO_SMP, 1, cases[i].gbps);
        topo_free(&t);
        diag_free(&d);
    }
}

Test(text, nvlink_generation_sources)
{
    struct topo t;
    struct diag d;
    /* No model: the V100 is assumed, with one warning for the whole file. */
    read_ok("gpu a\ngpu b\ngpu c\nlink a b\nlink b c\nlink a c\n", NULL, &t, &d);
    cr_assert_eq(d.nwarnings, 1);
    cr_assert(diag_contains(&d, DIAG_WARNING, "assuming V100"));
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 1, 25);
    cr_assert_eq(t.nodes[0].nvlink_gen, 2);
    topo_free(&t);
    diag_free(&d);
    /* --gpu-model stands in, silently. */
    read_ok("gpu a\ngpu b\nlink a b count=4\n", "B200", &t, &d);
    cr_assert_eq(d.nwarnings, 0);
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 4, 200);
    topo_free(&t);
    diag_free(&d);
    /* Trunks take the generation of the server's GPUs, declared after them. */
    read_ok("nvswitch s1\nnvswitch s2\nlink s1 s2 count=2\ngpu a model=P100\nlink a s1\n"
            "link a s2\n",
            NULL, &t, &d);
    cr_assert_eq(d.nwarnings, 0);
    expect_link(&t, "nvs0", "nvs1", TOPO_NVLINK, 2, 40);
    topo_free(&t);
    diag_free(&d);
    /* A GA102 bridge runs its part's 14.0625 GB/s per link, whether the model is in the file or
       given by --gpu-model; gen= or --link-rate nvlink3 still say otherwise. */
    read_ok("gpu a model=\"NVIDIA GeForce RTX 3090\"\ngpu b model=\"NVIDIA GeForce RTX 3090\"\n"
            "link a b count=4\n",
            NULL, &t, &d);
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 4, 56.25);
    cr_assert_str_eq(t.nodes[0].part->name, "RTX 3090");
    topo_free(&t);
    diag_free(&d);
    read_ok("gpu a\ngpu b\nlink a b count=4\n", "RTX A6000", &t, &d);
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 4, 56.25);
    topo_free(&t);
    diag_free(&d);
    read_ok("gpu a model=A40\ngpu b model=A40\nlink a b count=4 gen=2\n", NULL, &t, &d);
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 4, 100);
    topo_free(&t);
    diag_free(&d);
}

Test(text, servers_and_quoting)
{
    struct topo t;
    struct diag d;
    /* Nodes before the first `server` line are server 0; that line then starts server 1. */
    read_ok("\xef\xbb\xbfgpu a\r\nnic na\r\nserver \"second box\"  # comment\r\ngpu b\nnic nb\n"
            "server third\nnet-switch sw\nlink a b bw=1\nlink na sw\nlink nb sw\n",
            NULL, &t, &d);
    cr_assert_eq(t.nservers, 3);
    cr_assert_eq(t.nodes[0].server, 0);
    cr_assert_eq(t.nodes[1].server, 1);
    cr_assert_eq(t.nodes[tu_node(&t, "netsw0")].server, 2);
    topo_free(&t);
    diag_free(&d);
    /* A first `server` line with nothing before it names server 0; an empty one warns. */
    read_ok("topology \"my box\"\nserver one\ngpu \"g #1 \\\"x\\\"\\\\\" model=\"Tesla V100\"\n"
            "gpu g2#c\nlink \"g #1 \\\"x\\\"\\\\\" g2\nserver empty\n",
            NULL, &t, &d);
    cr_assert_eq(t.nservers, 1);
    cr_assert_str_eq(t.name, "my box");
    cr_assert_str_eq(t.nodes[0].name, "g #1 \"x\"\\");
    cr_assert_str_eq(t.nodes[0].model, "Tesla V100");
    cr_assert_str_eq(t.nodes[1].name, "g2");
    cr_assert_eq(d.nwarnings, 1);
    cr_assert(diag_contains(&d, DIAG_WARNING, "server 'empty' declares no nodes"));
    topo_free(&t);
    diag_free(&d);
    /* Bus ids are normalised to lowercase dddd:bb:dd.f. */
    read_ok("gpu a bus=00000000:8A:00.0\ngpu b bus=0b:1f.7\nlink a b\n", NULL, &t, &d);
    cr_assert_str_eq(t.nodes[0].busid, "0000:8a:00.0");
    cr_assert_str_eq(t.nodes[1].busid, "0000:0b:1f.7");
    topo_free(&t);
    diag_free(&d);
}

/* Read `len` bytes that must fail; check the first error's LINE:COL and text. */
static void expect_error_n(const char *text, size_t len, int line, int col, const char *needle)
{
    struct input in;
    cr_assert_eq(input_from_memory("bad.topo", text, len, &in), BK_OK);
    struct topo_read_opts o;
    topo_read_opts_default(&o);
    o.format = TOPO_FMT_TEXT;
    struct topo t;
    struct diag d;
    diag_init(&d);
    enum bk_status st = topo_read(&in, &o, &t, &d);
    cr_assert_eq(st, BK_EINPUT, "'%s' was accepted", text);
    const struct diag_msg *m = NULL;
    for (size_t i = 0; i < d.n && !m; i++)
        if (d.msgs[i].level == DIAG_ERROR)
            m = &d.msgs[i];
    cr_assert_not_null(m);
    cr_expect_str_eq(m->file, "bad.topo");
    cr_expect(m->loc.line == line && m->loc.col == col, "'%s': error at %d:%d, expected %d:%d (%s)",
              text, m->loc.line, m->loc.col, line, col, m->text);
    cr_expect(strstr(m->text, needle), "'%s': message '%s' lacks '%s'", text, m->text, needle);
    diag_free(&d);
    input_free(&in);
}

static void expect_error(const char *text, int line, int col, const char *needle)
{
    expect_error_n(text, strlen(text), line, col, needle);
}

Test(text, syntax_errors)
{
    expect_error("gpu", 1, 4, "missing name");
    expect_error("gpu a\n  link a", 2, 9, "missing name");
    expect_error("topology\n", 1, 9, "missing name");
    expect_error("gpu a\nserver\n", 2, 7, "missing name");
    expect_error("gpu bus=0000:06:00.0", 1, 5, "missing name");
    expect_error("gpu \"\"", 1, 5, "empty name");
    expect_error("gpu a\n\n  switch s0", 3, 3, "unknown statement 'switch'");
    expect_error("gpu g0 colour=red", 1, 8,
                 "unknown attribute 'colour' for gpu (known: model, bus, p2p)");
    expect_error("gpu g0 p2p=maybe", 1, 12, "p2p=maybe: expected p2p=yes or p2p=no");
    expect_error("cpu c0 p2p=no", 1, 8, "unknown attribute 'p2p' for cpu");
    expect_error("net-switch x speed=1", 1, 14, "takes no attributes");
    expect_error("gpu g0 extra", 1, 8, "unexpected 'extra'");
    expect_error("topology a b", 1, 12, "unexpected 'b'");
    expect_error("gpu g0 =x", 1, 8, "no name before '='");
    expect_error("gpu g0 bus=", 1, 12, "has no value");
    expect_error("gpu g0 bus=1 bus=2", 1, 14, "given twice");
    expect_error("gpu a model=\"V100", 1, 13, "unterminated quoted string");
    expect_error("gpu \"a\\n\"", 1, 7, "unknown escape");
    expect_error("gpu \"a\"b", 1, 8, "space after the closing quote");
    expect_error("gpu a\ngpu b\x01", 2, 6, "control character 0x01");
    expect_error("gpu a\xff", 1, 6, "invalid UTF-8");
    expect_error("gpu \xc0\x80", 1, 5, "invalid UTF-8"); /* overlong NUL */
    expect_error_n("gpu a\n# x\0y\n", sizeof "gpu a\n# x\0y\n" - 1, 2, 4, "NUL");
    expect_error("topology a\ntopology b", 2, 1, "line 1");
    expect_error("gpu a bus=0000:06:20.0", 1, 11, "bad PCI bus id");
    expect_error("gpu a bus=06:00.0\ngpu b bus=0000:06:00.0", 2, 11, "already used by 'a'");
    expect_error("cpu c socket=-1", 1, 14, "integer from 0 to 65535");
}

Test(text, semantic_errors)
{
    expect_error("gpu a\nlink a b", 2, 8, "link to undeclared node 'b'");
    expect_error("gpu a\ncpu a", 2, 5, "duplicate name 'a': already declared on line 1");
    expect_error("gpu a\ngpu b\nlink a b\n link b a count=2", 4, 2, "duplicate nvlink link");
    expect_error("gpu a\nlink a a", 2, 8, "to itself");
    expect_error("gpu a\nnic n\nlink a n kind=nvlink", 3, 15, "cannot join gpu 'a' and nic 'n'");
    expect_error("gpu a\nnic n\nlink a n", 3, 8, "a pcie link cannot join");
    expect_error("gpu a\ngpu b\nlink a b kind=ib", 3, 15, "unknown link kind 'ib'");
    expect_error("cpu a\nserver s\ncpu b\nlink a b", 4, 8, "cannot join servers");
    expect_error("cpu a\ncpu b\nlink a b gen=2", 3, 10, "gen= applies only");
    expect_error("gpu a\ngpu b\nlink a b width=16", 3, 10, "width= applies only");
    expect_error("gpu a\ncpu c\nlink a c width=3", 3, 16, "PCIe widths");
    expect_error("gpu a\ngpu b\nlink a b gen=6", 3, 14, "integer from 1 to 5");
    expect_error("gpu a\ngpu b\nlink a b count=0", 3, 16, "integer from 1 to 1024");
    expect_error("gpu a\ngpu b\nlink a b count=1025", 3, 16, "integer from 1 to 1024");
    expect_error("gpu a\ngpu b\nlink a b count=99999999999999999999", 3, 16, "from 1 to 1024");
    expect_error("server x\ngpu a\nserver x", 3, 8, "already declared on line 1");
    expect_error("nic n speed=fast", 1, 13, "bad bandwidth 'fast'");
    /* A GPU with no links is topo_finalize's error, at the gpu statement. */
    expect_error("gpu a\ngpu b\n  gpu c model=V100\nlink a b\n", 3, 3, "GPU 'c' has no links");
}

Test(text, bad_bandwidths)
{
    static const char *const bad[][2] = {
        {"0", "positive"},        {"-5", "positive"},     {"abc", "not a number"},
        {"nan", "not a number"},  {"inf", "not a number"}, {"1e12", "absurd"},
        {"1e999", "finite"},      {"10furlongs", "unit"},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(bad); i++) {
        char text[128];
        snprintf(text, sizeof text, "gpu a\ngpu b\nlink a b bw=%s", bad[i][0]);
        expect_error(text, 3, 13, bad[i][1]);
        snprintf(text, sizeof text, "gpu a\ngpu b\nlink a b bw=1 bw-rev=%s", bad[i][0]);
        expect_error(text, 3, 22, bad[i][1]);
    }
}
