/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_topo.c - the model itself: canonical order does not depend on insertion order, validation
 * catches what every reader relies on, and allocations keep exactly the connecting nodes.
 * Topologies are built through the model API, independent of any reader.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "topo/topo_rates.h"

/* A 4-GPU box: two PCIe switches of two GPUs under two CPUs, NVLinks 0-1, 1-2, 2-3, one NIC. */
static void build_box(struct topo *t, int reversed)
{
    topo_init(t);
    struct diag_loc at = DIAG_NOWHERE;
    const char *names[] = {"g0", "g1", "g2", "g3", "sw0", "sw1", "c0", "c1", "nic"};
    enum topo_node_kind kinds[] = {TOPO_GPU,         TOPO_GPU,         TOPO_GPU, TOPO_GPU,
                                   TOPO_PCIE_SWITCH, TOPO_PCIE_SWITCH, TOPO_CPU, TOPO_CPU,
                                   TOPO_NIC};
    int idx[9];
    for (int k = 0; k < 9; k++) {
        int i = reversed ? 8 - k : k;
        cr_assert_eq(topo_add_node(t, kinds[i], names[i], 0, at, &idx[i]), BK_OK);
        if (kinds[i] == TOPO_GPU)
            t->nodes[idx[i]].gpu_order = i;
    }
    int nv[][2] = {{0, 1}, {1, 2}, {2, 3}};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(topo_add_link(t, idx[nv[i][0]], idx[nv[i][1]], TOPO_NVLINK, 1, 25, 25, at),
                     BK_OK);
    int pc[][2] = {{0, 4}, {1, 4}, {2, 5}, {3, 5}, {4, 6}, {5, 7}, {8, 5}};
    for (int i = 0; i < 7; i++)
        cr_assert_eq(topo_add_link(t, idx[pc[i][0]], idx[pc[i][1]], TOPO_PCIE, 1, 12, 12, at),
                     BK_OK);
    cr_assert_eq(topo_add_link(t, idx[6], idx[7], TOPO_SMP, 1, 6, 6, at), BK_OK);
}

Test(topo, canonical_order_ignores_insertion_order)
{
    struct topo a, b;
    struct diag d;
    diag_init(&d);
    build_box(&a, 0);
    build_box(&b, 1);
    cr_assert_eq(topo_finalize(&a, &d), BK_OK);
    cr_assert_eq(topo_finalize(&b, &d), BK_OK);
    cr_assert_eq(a.nnodes, b.nnodes);
    cr_assert_eq(a.nlinks, b.nlinks);
    for (int i = 0; i < a.nnodes; i++) {
        cr_assert_str_eq(a.nodes[i].id, b.nodes[i].id);
        cr_assert_str_eq(a.nodes[i].name, b.nodes[i].name);
    }
    for (int i = 0; i < a.nlinks; i++) {
        cr_assert_eq(a.links[i].src, b.links[i].src);
        cr_assert_eq(a.links[i].dst, b.links[i].dst);
        cr_assert_eq(a.links[i].kind, b.links[i].kind);
    }
    /* GPUs first by input order; the switch holding gpu0 is pcisw0; the NIC's CPU is cpu1. */
    cr_assert_str_eq(a.nodes[0].id, "gpu0");
    cr_assert_str_eq(a.nodes[0].name, "g0");
    cr_assert_eq(a.nodes[3].rank, 3);
    int sw0 = topo_find(&a, "sw0"), sw1 = topo_find(&a, "sw1"), c1 = topo_find(&a, "c1");
    cr_assert_str_eq(a.nodes[sw0].id, "pcisw0");
    cr_assert_str_eq(a.nodes[sw1].id, "pcisw1");
    cr_assert_str_eq(a.nodes[c1].id, "cpu1");
    cr_assert_eq(a.ngpus, 4);
    topo_free(&a);
    topo_free(&b);
    diag_free(&d);
}

Test(topo, gpu_without_links_is_an_error)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    build_box(&t, 0);
    int lonely;
    cr_assert_eq(topo_add_node(&t, TOPO_GPU, "g9", 0, DIAG_AT(12, 1), &lonely), BK_OK);
    t.nodes[lonely].gpu_order = 9;
    cr_assert_eq(topo_finalize(&t, &d), BK_EINPUT);
    cr_assert(diag_contains(&d, DIAG_ERROR, "GPU 'g9' has no links"));
    cr_assert_eq(d.msgs[0].loc.line, 12);
    topo_free(&t);
    diag_free(&d);
}

Test(topo, bad_capacity_and_duplicate_links_are_errors)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    build_box(&t, 0);
    cr_assert_eq(topo_add_link(&t, 0, 3, TOPO_NVLINK, 1, 0.0, 25, DIAG_AT(4, 2)), BK_OK);
    cr_assert_eq(topo_finalize(&t, &d), BK_EINPUT);
    cr_assert(diag_contains(&d, DIAG_ERROR, "must be positive"));
    topo_free(&t);
    diag_free(&d);

    diag_init(&d);
    build_box(&t, 0);
    cr_assert_eq(topo_add_link(&t, 0, 1, TOPO_NVLINK, 1, 25, 25, DIAG_AT(5, 1)), BK_OK);
    cr_assert_eq(topo_finalize(&t, &d), BK_EINPUT);
    cr_assert(diag_contains(&d, DIAG_ERROR, "duplicate nvlink link"));
    topo_free(&t);
    diag_free(&d);
}

Test(topo, restrict_keeps_connecting_nodes_and_ranks)
{
    struct topo t, r;
    struct diag d;
    diag_init(&d);
    build_box(&t, 0);
    cr_assert_eq(topo_finalize(&t, &d), BK_OK);
    int gpus[] = {3, 0};
    cr_assert_eq(topo_restrict(&t, gpus, 2, &r, &d), BK_OK);
    /* gpu3 (rank 0), gpu0 (rank 1), both switches, both CPUs; the leaf NIC is pruned. */
    cr_assert_eq(r.ngpus, 2);
    cr_assert_str_eq(r.nodes[0].id, "gpu3");
    cr_assert_eq(r.nodes[0].rank, 0);
    cr_assert_str_eq(r.nodes[1].id, "gpu0");
    cr_assert_eq(r.nodes[1].rank, 1);
    cr_assert_eq(tu_count_nodes(&r, TOPO_PCIE_SWITCH), 2);
    cr_assert_eq(tu_count_nodes(&r, TOPO_CPU), 2);
    cr_assert_eq(tu_count_nodes(&r, TOPO_NIC), 0);
    cr_assert_eq(tu_count_links(&r, TOPO_NVLINK), 0, "gpu1 and gpu2 are not in the job");
    cr_assert_not_null(tu_link(&r, "gpu3", "pcisw1"));
    cr_assert_eq(topo_find(&r, "nic"), -1);
    topo_free(&r);

    int pair[] = {1, 2};
    cr_assert_eq(topo_restrict(&t, pair, 2, &r, &d), BK_OK);
    cr_assert_eq(tu_count_links(&r, TOPO_NVLINK), 2);
    topo_free(&r);
    topo_free(&t);
    diag_free(&d);
}

Test(topo, restrict_rejects_bad_allocations)
{
    struct topo t, r;
    struct diag d;
    diag_init(&d);
    build_box(&t, 0);
    cr_assert_eq(topo_finalize(&t, &d), BK_OK);
    int out_of_range[] = {0, 4};
    cr_assert_eq(topo_restrict(&t, out_of_range, 2, &r, &d), BK_EUSAGE);
    cr_assert(diag_contains(&d, DIAG_ERROR, "GPU 4 is out of range"));
    int twice[] = {1, 1};
    cr_assert_eq(topo_restrict(&t, twice, 2, &r, &d), BK_EUSAGE);
    cr_assert(diag_contains(&d, DIAG_ERROR, "listed twice"));
    topo_free(&t);
    diag_free(&d);
}

Test(topo, restrict_detects_a_disconnected_allocation)
{
    /* Two GPUs joined only through a third GPU: without it they cannot talk. */
    struct topo t, r;
    struct diag d;
    diag_init(&d);
    topo_init(&t);
    int g[3];
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "g%d", i);
        cr_assert_eq(topo_add_node(&t, TOPO_GPU, name, 0, DIAG_NOWHERE, &g[i]), BK_OK);
        t.nodes[g[i]].gpu_order = i;
    }
    cr_assert_eq(topo_add_link(&t, g[0], g[1], TOPO_NVLINK, 1, 25, 25, DIAG_NOWHERE), BK_OK);
    cr_assert_eq(topo_add_link(&t, g[1], g[2], TOPO_NVLINK, 1, 25, 25, DIAG_NOWHERE), BK_OK);
    cr_assert_eq(topo_finalize(&t, &d), BK_OK);
    int alloc[] = {0, 2};
    cr_assert_eq(topo_restrict(&t, alloc, 2, &r, &d), BK_EINPUT);
    cr_assert(diag_contains(&d, DIAG_ERROR, "the allocation is disconnected"));
    topo_free(&t);
    diag_free(&d);
}

Test(topo, name_index_scales)
{
    /* 100,000 nodes must stay linear: finds are hashed, not scanned. */
    struct topo t;
    topo_init(&t);
    char name[32];
    for (int i = 0; i < 100000; i++) {
        snprintf(name, sizeof name, "n%d", i);
        cr_assert_eq(topo_add_node(&t, TOPO_PCIE_SWITCH, name, 0, DIAG_NOWHERE, NULL), BK_OK);
    }
    cr_assert_eq(topo_find(&t, "n77777"), 77777);
    cr_assert_eq(topo_find(&t, "n100000"), -1);
    topo_free(&t);
}

Test(rates, defaults_follow_nccl_and_hwloc)
{
    struct topo_rates r;
    topo_rates_default(&r);
    cr_assert_float_eq(topo_rate_nvlink(&r, 1, 1), 20.0, 1e-9);
    cr_assert_float_eq(topo_rate_nvlink(&r, 2, 2), 50.0, 1e-9);
    cr_assert_float_eq(topo_rate_nvlink(&r, 4, 18), 450.0, 1e-9);
    cr_assert_float_eq(topo_rate_nvlink(&r, 5, 1), 50.0, 1e-9);
    cr_assert_float_eq(topo_rate_pcie(&r, 3, 16), 12.0, 1e-9);
    cr_assert_float_eq(topo_rate_pcie(&r, 4, 16), 24.0, 1e-9);
    cr_assert_float_eq(topo_rate_pcie(&r, 5, 16), 48.0, 1e-9);
    cr_assert_float_eq(topo_rate_pcie(&r, 3, 8), 6.0, 1e-9);
    cr_assert_float_eq(topo_rate_pcie(&r, 0, 0), 12.0, 1e-9);
    cr_assert_float_eq(topo_rate_smp(&r, topo_cpu_family_of("GenuineIntel", 6, 79, NULL, NULL)),
                       6.0, 1e-9);
    cr_assert_float_eq(topo_rate_smp(&r, topo_cpu_family_of("GenuineIntel", 6, 85, NULL, NULL)),
                       10.0, 1e-9);
    cr_assert_float_eq(topo_rate_smp(&r, topo_cpu_family_of("GenuineIntel", 6, 143, NULL, NULL)),
                       22.0, 1e-9);
    cr_assert_float_eq(topo_rate_smp(&r, topo_cpu_family_of("AuthenticAMD", 23, 49, NULL, NULL)),
                       16.0, 1e-9);
    cr_assert_float_eq(
        topo_rate_smp(&r, topo_cpu_family_of(NULL, -1, -1, "POWER8NVL, altivec supported", NULL)),
        32.0, 1e-9);
}

Test(rates, overrides_and_units)
{
    struct topo_rates r;
    const char *why = NULL;
    topo_rates_default(&r);
    cr_assert(topo_rates_override(&r, "nvlink2=20", &why));
    cr_assert_float_eq(topo_rate_nvlink(&r, 2, 3), 60.0, 1e-9);
    cr_assert(topo_rates_override(&r, "smp=10GB/s", &why));
    cr_assert_float_eq(topo_rate_smp(&r, TOPO_CPU_AMD), 10.0, 1e-9);
    cr_assert_not(topo_rates_override(&r, "warp=3", &why));
    cr_assert_not(topo_rates_override(&r, "net=-1", &why));
    double v;
    cr_assert(topo_parse_bandwidth("100Gb/s", &v, &why));
    cr_assert_float_eq(v, 12.5, 1e-9);
    cr_assert(topo_parse_bandwidth("12500MB/s", &v, &why));
    cr_assert_float_eq(v, 12.5, 1e-9);
    cr_assert_not(topo_parse_bandwidth("0", &v, &why));
    cr_assert_not(topo_parse_bandwidth("nan", &v, &why));
    cr_assert_not(topo_parse_bandwidth("-inf", &v, &why));
    cr_assert_not(topo_parse_bandwidth("1e300", &v, &why));
    cr_assert_not(topo_parse_bandwidth("25 furlongs", &v, &why));
}

Test(rates, gpu_models_and_pcie_speeds)
{
    cr_assert_eq(topo_gpu_model_gen("Tesla P100-SXM2-16GB"), 1);
    cr_assert_eq(topo_gpu_model_gen("Tesla V100-SXM3-32GB-H"), 2);
    cr_assert_eq(topo_gpu_model_gen("NVIDIA A100-SXM4-80GB"), 3);
    cr_assert_eq(topo_gpu_model_gen("NVIDIA H100 80GB HBM3"), 4);
    cr_assert_eq(topo_gpu_model_gen("h200"), 4);
    cr_assert_eq(topo_gpu_model_gen("NVIDIA B200"), 5);
    cr_assert_eq(topo_gpu_model_gen("GH200"), 4);
    cr_assert_eq(topo_gpu_model_gen("NVIDIA GeForce RTX 3090"), 3); /* a GA102 bridge */
    cr_assert_eq(topo_gpu_model_gen("NVIDIA GeForce RTX 4090"), 0);  /* no NVLink */
    int gen, width;
    cr_assert(topo_pcie_from_speed(15.753846, &gen, &width));
    cr_assert_eq(gen, 3);
    cr_assert_eq(width, 16);
    cr_assert(topo_pcie_from_speed(7.876923, &gen, &width));
    cr_assert_eq(gen, 3);
    cr_assert_eq(width, 8);
    cr_assert(topo_pcie_from_speed(31.507692, &gen, &width));
    cr_assert_eq(gen * 100 + width, 416, "Gen4 x16, not some other product of the same order");
    cr_assert_not(topo_pcie_from_speed(0.0, &gen, &width));
}

/* A part by the model string NVML prints: `want` (NULL: none). */
static void expect_part(const char *model, const char *want)
{
    const struct topo_gpu_part *p = topo_gpu_part_find(model);
    if (!want)
        cr_assert_null(p, "%s is %s", model, p ? p->name : "");
    else
        cr_assert(p && strcmp(p->name, want) == 0, "%s: %s, not %s", model, p ? p->name : "none",
                  want);
}

/* Names that contain one another go to the right part, whatever their order in the table. */
Test(parts, model_strings_find_their_part)
{
    expect_part("NVIDIA GH200 480GB", "GH200");
    expect_part("NVIDIA H200", "H200");
    expect_part("NVIDIA H20", "H20");
    expect_part("NVIDIA GB200", "GB200");
    expect_part("NVIDIA B200", "B200");
    expect_part("NVIDIA B300 SXM6 AC", "B300");
    expect_part("NVIDIA GB300", "GB300");
    expect_part("NVIDIA A800-SXM4-80GB", "A800");
    expect_part("NVIDIA A100-SXM4-40GB", "A100");
    expect_part("NVIDIA A100 80GB PCIe", "A100");
    expect_part("NVIDIA H100 80GB HBM3", "H100");
    expect_part("NVIDIA H100 NVL", "H100 NVL");
    expect_part("NVIDIA H100 PCIe", "H100 NVL");
    expect_part("NVIDIA H800", "H800");
    expect_part("NVIDIA GeForce RTX 3090", "RTX 3090");
    expect_part("rtx3090", "RTX 3090");
    expect_part("NVIDIA RTX A6000", "RTX A6000");
    expect_part("a5000", "RTX A5000");
    expect_part("NVIDIA A40", "A40");
    expect_part("NVIDIA A40-48Q", "A40");
    expect_part("NVIDIA RTX A4000", NULL); /* no NVLink, and no A40 */
    expect_part("NVIDIA A30", "A30");
    expect_part("NVIDIA RTX 6000 Ada Generation", NULL);
    expect_part("Quadro RTX 6000", "Quadro RTX 6000");
    expect_part("Tesla V100-SXM2-16GB", "V100");
    expect_part("A100X", NULL);
    expect_part(NULL, NULL);
}

/* Links and rates per part: links x GB/s x 2 directions is NVIDIA's "total" figure. */
Test(parts, links_and_rates_match_the_datasheets)
{
    static const struct {
        const char *name;
        int gen, links;
        double total; /* GB/s, both directions, all links */
    } want[] = {
        {"P100", 1, 4, 160},      {"V100", 2, 6, 300},       {"A100", 3, 12, 600},
        {"A800", 3, 8, 400},      {"A30", 3, 4, 200},        {"H100", 4, 18, 900},
        {"H100 NVL", 4, 12, 600}, {"H800", 4, 8, 400},       {"H200", 4, 18, 900},
        {"H20", 4, 18, 900},      {"GH200", 4, 18, 900},     {"B200", 5, 18, 1800},
        {"B300", 5, 18, 1800},    {"GB200", 5, 18, 1800},    {"GB300", 5, 18, 1800},
        {"RTX 3090", 3, 4, 112.5}, {"RTX A6000", 3, 4, 112.5}, {"RTX A5000", 3, 4, 112.5},
        {"A40", 3, 4, 112.5},     {"TITAN RTX", 2, 2, 100},  {"Quadro RTX 5000", 2, 1, 50},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(want); i++) {
        const struct topo_gpu_part *p = topo_gpu_part_find(want[i].name);
        cr_assert(p && strcmp(p->name, want[i].name) == 0, "%s", want[i].name);
        cr_assert_eq(p->gen, want[i].gen, "%s", p->name);
        cr_assert_eq(p->links, want[i].links, "%s", p->name);
        cr_assert_float_eq(p->links * p->link_gbps * 2, want[i].total, 1e-9, "%s", p->name);
    }
    /* Every row cites its source, and names itself. */
    int n = 0;
    for (const struct topo_gpu_part *p; (p = topo_gpu_part_at(n)); n++) {
        cr_assert(p->source && strlen(p->source) > 10, "%s", p->name);
        cr_assert_eq(topo_gpu_part_find(p->name), p, "%s", p->name);
    }
    cr_assert_geq(n, 21);
    /* blinkc-topology(5) lists every part with its source. */
    char *path = tu_src_path("man/blinkc-topology.5");
    char *page = tu_slurp(path, NULL);
    cr_assert(page, "%s", path);
    for (int i = 0; i < n; i++)
        cr_assert(strstr(page, topo_gpu_part_at(i)->name), "%s: no %s", path,
                  topo_gpu_part_at(i)->name);
    free(page), free(path);
    char names[64];
    cr_assert_str_eq(topo_gpu_part_names(names, 24), "P100, V100, A100, ...");
}

Test(parts, nccl_sm_and_pci_device_id)
{
    cr_assert_str_eq(topo_gpu_part_by_pci(80, 0x20f3)->name, "A800");
    cr_assert_str_eq(topo_gpu_part_by_pci(80, 0x20b7)->name, "A30");
    cr_assert_str_eq(topo_gpu_part_by_pci(80, 0)->name, "A100");
    cr_assert_str_eq(topo_gpu_part_by_pci(86, 0x2230)->name, "RTX A6000");
    cr_assert_str_eq(topo_gpu_part_by_pci(86, 0)->name, "RTX 3090");
    cr_assert_str_eq(topo_gpu_part_by_pci(90, 0x2324)->name, "H800");
    cr_assert_str_eq(topo_gpu_part_by_pci(90, 0x1234)->name, "H100"); /* unknown id: by sm */
    cr_assert_str_eq(topo_gpu_part_by_pci(100, 0)->name, "B200");
    cr_assert_null(topo_gpu_part_by_pci(89, 0)); /* Ada: no NVLink */
}

/* A part's own rate: GA102 bridges run 14.0625 GB/s per link where NVLink3 runs 25. */
Test(parts, rates_route_through_the_part)
{
    struct topo_rates r;
    const char *why;
    topo_rates_default(&r);
    const struct topo_gpu_part *rtx = topo_gpu_part_find("RTX 3090");
    const struct topo_gpu_part *a100 = topo_gpu_part_find("A100");
    const struct topo_gpu_part *v100 = topo_gpu_part_find("V100");
    cr_assert_float_eq(topo_rate_nvlink_parts(&r, rtx, rtx, 3, 4), 56.25, 1e-9);
    cr_assert_float_eq(topo_rate_nvlink_parts(&r, rtx, NULL, 3, 4), 56.25, 1e-9);
    cr_assert_float_eq(topo_rate_nvlink_parts(&r, a100, NULL, 3, 12), 300.0, 1e-9);
    cr_assert_float_eq(topo_rate_nvlink_parts(&r, rtx, a100, 3, 1), 14.0625, 1e-9); /* slower */
    cr_assert_float_eq(topo_rate_nvlink_parts(&r, NULL, NULL, 3, 2), 50.0, 1e-9);
    /* A part of another generation than the link's does not set its rate. */
    cr_assert_float_eq(topo_rate_nvlink_parts(&r, v100, rtx, 2, 1), 25.0, 1e-9);
    /* --link-rate nvlink3 is the user's word for every NVLink3 link. */
    cr_assert(topo_rates_override(&r, "nvlink3=20", &why));
    cr_assert_float_eq(topo_rate_nvlink_parts(&r, rtx, rtx, 3, 4), 80.0, 1e-9);
}
