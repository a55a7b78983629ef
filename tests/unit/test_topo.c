/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_topo.c - the model itself: canonical order does not depend on insertion order, validation
 * catches what every reader relies on, and allocations keep exactly the connecting nodes.
 * Topologies are built through the model API, independent of any reader.
 */
#include <criterion/criterion.h>
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
    cr_assert_eq(topo_gpu_model_gen("GeForce RTX 3090"), 0);
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
