/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_smi.c - the `nvidia-smi topo -m` reader: the DGX-1V fixture against the reference graph,
 * the dialects (old SOC, tabs, escapes, collapsed and wrapped headers), NVSwitch planes, PCIe and
 * CPU inference (bad and odd input: test_smi_input.c). Expectations come from
 * topology-facts.md (sections 3 and 4; the reference graph is 4.3 and 4.4). The NV# rule by the
 * part's link budget (topo_smi.c): an A800 board's NV8 plane, an H100 NV6 mesh, an RTX 3090
 * bridge at its own rate, A100's 12 links, and the cells no reading fits.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/input.h"
#include "core/strbuf.h"
#include "smi_util.h"
#include "testutil.h"

static int node(const struct topo *t, const char *name)
{
    int i = topo_find(t, name);
    cr_assert_geq(i, 0, "no node named %s", name);
    return i;
}

static const struct topo_link *link_of(const struct topo *t, int a, int b, enum topo_link_kind k)
{
    int i = topo_find_link(t, a, b, k);
    return i < 0 ? NULL : &t->links[i];
}

static int count_from(const struct topo *t, int n, enum topo_link_kind k)
{
    int c = 0;
    for (int i = 0; i < t->nlinks; i++)
        c += t->links[i].src == n && t->links[i].kind == k;
    return c;
}

/* Every PCIe link runs at unknown gen/width: NCCL's Gen3 x16, 12 GB/s. */
static void assert_pcie_12(const struct topo *t)
{
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].kind == TOPO_PCIE)
            cr_assert_float_eq(t->links[i].gbps, 12.0, 1e-9);
}

/* GPU g's NVLink capacity: the sum over its NVLinks, in GB/s one way. */
static double nvlink_gbps(const struct topo *t, int g)
{
    double sum = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == g && t->links[i].kind == TOPO_NVLINK)
            sum += t->links[i].gbps;
    return sum;
}

static void assert_part(const struct topo *t, int ngpus, const char *part, int assumed)
{
    for (int g = 0; g < ngpus; g++) {
        cr_assert(t->nodes[g].part, "gpu%d has no part", g);
        cr_assert_str_eq(t->nodes[g].part->name, part);
        cr_assert_eq(t->nodes[g].part_assumed, assumed);
        cr_assert_eq(t->nodes[g].nvlink_gen, t->nodes[g].part->gen);
    }
}

/* The shared checker holds the graph; the capture adds the model it was given and NIC names. */
Test(smi, dgx1v_reference_graph)
{
    struct topo t;
    struct diag d;
    read_ok("topologies/dgx1v.smi.txt", "V100", &t, &d);
    cr_assert_str_eq(t.format, "smi");
    tu_expect_dgx1v(&t);
    cr_assert_eq(d.nwarnings, 0);
    cr_assert_str_eq(t.nodes[0].model, "V100");
    /* nicK sits on pciswK beside GPUs 2K and 2K+1 (checked above): mlx5_K must be nicK. */
    for (int k = 0; k < 4; k++) {
        char name[16], id[16];
        snprintf(name, sizeof name, "mlx5_%d", k), snprintf(id, sizeof id, "nic%d", k);
        cr_assert_str_eq(t.nodes[node(&t, name)].id, id, "%s", name);
    }
    topo_free(&t);
    diag_free(&d);
}

Test(smi, dgx1v_without_model_guesses_v100)
{
    struct topo t, ref;
    struct diag d, dr;
    read_ok("topologies/dgx1v.smi.txt", NULL, &t, &d);
    read_ok("topologies/dgx1v.smi.txt", "V100", &ref, &dr);
    assert_same_graph(&t, &ref);
    cr_assert_eq(d.nwarnings, 1);
    cr_assert(diag_contains(&d, DIAG_WARNING, "V100"));
    cr_assert(diag_contains(&d, DIAG_WARNING, "6 NVLinks per GPU"));
    topo_free(&t), topo_free(&ref);
    diag_free(&d), diag_free(&dr);
}

/* Same graph as the plain fixture: escapes, BOM, CRLF, prompt; collapsed header. */
Test(smi, dialect_twins)
{
    static const char *const twins[] = {"tests/data/smi/dgx1v-escapes.smi.txt",
                                        "tests/data/smi/dgx1v-collapsed.smi.txt"};
    struct topo ref;
    struct diag dr;
    read_ok("topologies/dgx1v.smi.txt", "V100", &ref, &dr);
    for (size_t i = 0; i < BK_ARRAY_LEN(twins); i++) {
        struct topo t;
        struct diag d;
        read_ok(twins[i], "V100", &t, &d);
        assert_same_graph(&t, &ref);
        cr_assert_eq(d.nwarnings, 0, "%s", twins[i]);
        topo_free(&t);
        diag_free(&d);
    }
    topo_free(&ref);
    diag_free(&dr);
}

Test(smi, dgx1p_old_soc_dialect_with_tabs)
{
    struct topo t, twin;
    struct diag d, d2;
    read_ok("tests/data/smi/dgx1p-soc-tabs.smi.txt", NULL, &t, &d);
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 32); /* 16 pairs, both directions */
    for (int g = 0; g < 8; g++) {
        cr_assert_eq(count_from(&t, g, TOPO_NVLINK), 4);
        cr_assert_eq(t.nodes[g].nvlink_gen, 1);
    }
    for (int i = 0; i < t.nlinks; i++)
        if (t.links[i].kind == TOPO_NVLINK) {
            cr_assert_eq(t.links[i].count, 1);
            cr_assert_float_eq(t.links[i].gbps, 20.0, 1e-9);
        }
    cr_assert(link_of(&t, 0, 4, TOPO_NVLINK) && !link_of(&t, 0, 5, TOPO_NVLINK));
    cr_assert(diag_contains(&d, DIAG_WARNING, "P100"));
    cr_assert_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 4);
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 2);
    cr_assert_eq(up(&t, node(&t, "mlx5_0")), up(&t, 1));
    cr_assert_neq(up(&t, node(&t, "mlx5_0")), up(&t, 2)); /* PHB: another switch */
    assert_pcie_12(&t);

    /* The same text with the tabs turned into runs of spaces. */
    char *path = tu_src_path("tests/data/smi/dgx1p-soc-tabs.smi.txt");
    struct input in;
    diag_init(&d2);
    cr_assert_eq(input_read(path, &in, &d2), BK_OK);
    struct strbuf sb;
    sb_init(&sb);
    for (size_t i = 0; i < in.len; i++)
        in.data[i] == '\t' ? sb_puts(&sb, "   ") : sb_putc(&sb, in.data[i]);
    char *spaced = sb_take(&sb);
    cr_assert_eq(tu_read_string("spaced", spaced, TOPO_FMT_AUTO, NULL, &twin, &d2), BK_OK);
    assert_same_graph(&t, &twin);
    free(spaced), free(path);
    input_free(&in);
    topo_free(&t), topo_free(&twin);
    diag_free(&d), diag_free(&d2);
}

/* Every GPU has `links` links to one NVSwitch at `gbps`, and no GPU-GPU NVLink. */
static void assert_plane(const struct topo *t, int ngpus, int links, double gbps)
{
    cr_assert_eq(tu_count_nodes(t, TOPO_GPU), ngpus);
    cr_assert_eq(tu_count_nodes(t, TOPO_NVSWITCH), 1);
    int nvs = ngpus; /* the switch follows the GPUs in canonical order */
    cr_assert_eq(t->nodes[nvs].kind, TOPO_NVSWITCH);
    cr_assert_eq(tu_count_links(t, TOPO_NVLINK), 2 * ngpus);
    for (int g = 0; g < ngpus; g++) {
        const struct topo_link *l = link_of(t, g, nvs, TOPO_NVLINK);
        cr_assert(l, "GPU %d is not on the plane", g);
        cr_assert_eq(l->count, links);
        cr_assert_float_eq(l->gbps, gbps, 1e-9);
        cr_assert_eq(count_from(t, g, TOPO_NVLINK), 1);
    }
}

Test(smi, dgx2_nv6_is_one_nvswitch_plane)
{
    struct topo t;
    struct diag d;
    read_ok("tests/data/smi/dgx2-nv6.smi.txt", NULL, &t, &d);
    assert_plane(&t, 16, 6, 150.0);
    cr_assert(diag_contains(&d, DIAG_WARNING, "V100"));
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 2); /* by CPU Affinity */
    cr_assert_eq(up(&t, 0), up(&t, 7));
    cr_assert_neq(up(&t, 7), up(&t, 8));
    cr_assert_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 0);
    topo_free(&t);
    diag_free(&d);
}

Test(smi, dgxa100_nv12_plane_and_pxb_switches)
{
    struct topo t;
    struct diag d;
    read_ok("tests/data/smi/dgxa100-nv12.smi.txt", NULL, &t, &d);
    assert_plane(&t, 8, 12, 300.0);
    cr_assert(diag_contains(&d, DIAG_WARNING, "A100"));
    cr_assert_eq(tu_count_nodes(&t, TOPO_NIC), 8);
    cr_assert_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 4);
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 4);     /* NUMA nodes 3, 1, 7, 5 */
    cr_assert_eq(tu_count_links(&t, TOPO_SMP), 2 * 6); /* every pair of 4 */
    for (int p = 0; p < 4; p++) {
        char a[16], b[16];
        snprintf(a, sizeof a, "mlx5_%d", 2 * p);
        snprintf(b, sizeof b, "mlx5_%d", 2 * p + 1);
        int sw = up(&t, 2 * p);
        cr_assert_eq(t.nodes[sw].kind, TOPO_PCIE_SWITCH);
        cr_assert_eq(up(&t, 2 * p + 1), sw);
        cr_assert_eq(up(&t, node(&t, a)), sw);
        cr_assert_eq(up(&t, node(&t, b)), sw);
    }
    assert_pcie_12(&t);
    topo_free(&t);
    diag_free(&d);
}

Test(smi, h100_nv18_plane_and_h200_model)
{
    struct topo t;
    struct diag d;
    read_ok("tests/data/smi/h100-nv18.smi.txt", NULL, &t, &d);
    assert_plane(&t, 8, 18, 450.0);
    cr_assert(diag_contains(&d, DIAG_WARNING, "H100"));
    cr_assert_eq(t.nodes[0].nvlink_gen, 4);
    cr_assert_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 8);
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 2);
    for (int g = 0; g < 8; g++) {
        char nic[16];
        snprintf(nic, sizeof nic, "mlx5_%d", g);
        cr_assert_eq(up(&t, g), up(&t, node(&t, nic)));
    }
    topo_free(&t);
    diag_free(&d);

    read_ok("tests/data/smi/h100-nv18.smi.txt", "H200", &t, &d);
    assert_plane(&t, 8, 18, 18 * 25.0);
    cr_assert_eq(d.nwarnings, 0);
    cr_assert_str_eq(t.nodes[0].model, "H200");
    topo_free(&t);
    diag_free(&d);
}

Test(smi, pcie_only_box)
{
    struct topo t;
    struct diag d;
    read_ok("tests/data/smi/pcie8-noaff.smi.txt", NULL, &t, &d);
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 0);
    cr_assert_eq(d.nwarnings, 0);
    cr_assert_eq(t.nodes[0].nvlink_gen, 0);
    cr_assert_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 4);
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 2); /* from the SYS cells alone */
    cr_assert_eq(up(&t, 0), up(&t, 1));
    cr_assert_neq(up(&t, 1), up(&t, 2));
    cr_assert_eq(tu_count_links(&t, TOPO_PCIE), 2 * (8 + 4));
    topo_free(&t);
    diag_free(&d);
}

/* Two PIX pairs that are PXB to each other: two leaf switches under one parent. */
Test(smi, pxb_gives_a_parent_switch)
{
    struct topo t;
    struct diag d;
    read_str_ok("\tGPU0\tGPU1\tGPU2\tGPU3\n"
                "GPU0\t X \tPIX\tPXB\tPXB\n"
                "GPU1\tPIX\t X \tPXB\tPXB\n"
                "GPU2\tPXB\tPXB\t X \tPIX\n"
                "GPU3\tPXB\tPXB\tPIX\t X \n",
                NULL, &t, &d);
    cr_assert_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 3);
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 1);
    int leaf0 = up(&t, 0), leaf1 = up(&t, 2);
    cr_assert_neq(leaf0, leaf1);
    cr_assert_eq(up(&t, 1), leaf0);
    cr_assert_eq(up(&t, 3), leaf1);
    int parent = -1;
    for (int i = 0; i < t.nnodes; i++)
        if (t.nodes[i].kind == TOPO_PCIE_SWITCH && i != leaf0 && i != leaf1)
            parent = i;
    cr_assert(link_of(&t, leaf0, parent, TOPO_PCIE) && link_of(&t, leaf1, parent, TOPO_PCIE));
    cr_assert_eq(count_from(&t, parent, TOPO_PCIE), 3); /* two leaves and the CPU */
    cr_assert_eq(count_from(&t, leaf0, TOPO_PCIE), 3);  /* two GPUs and the parent */
    cr_assert(link_of(&t, parent, topo_find(&t, "CPU0"), TOPO_PCIE));
    topo_free(&t);
    diag_free(&d);
}

/* A header wrapped onto a second line, a prompt before it, a NIC legend. */
Test(smi, wrapped_header_and_nic_legend)
{
    struct topo t;
    struct diag d;
    read_str_ok("$ nvidia-smi -L; nvidia-smi topo -m\n"
                "GPU0: Tesla P100-SXM2-16GB (UUID: GPU-1)\n"
                "        GPU0    GPU1    GPU2    NIC0\n"
                "        CPU Affinity    NUMA Affinity\n"
                "GPU0     X      NV2     NV2     PIX     0-7     N/A\n"
                "GPU1    NV2      X      NV2     NODE    0-7     N/A\n"
                "GPU2    NV2     NV2      X      NODE    0-7     N/A\n"
                "NIC0    PIX     NODE    NODE     X\n\nNIC Legend:\n\n  NIC0: mlx5_4\n",
                NULL, &t, &d);
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 6); /* NV2 is no plane: direct bonds */
    cr_assert_eq(link_of(&t, 0, 1, TOPO_NVLINK)->count, 2);
    assert_part(&t, 3, "P100", 0); /* named by the nvidia-smi -L line */
    cr_assert_eq(d.nwarnings, 0);
    cr_assert_eq(up(&t, node(&t, "mlx5_4")), up(&t, 0));
    cr_assert_eq(t.nodes[up(&t, 1)].kind, TOPO_CPU);
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 1);
    topo_free(&t);
    diag_free(&d);
}

/* NIC rows may be missing; an asymmetric PCIe cell warns and takes the farther relation. */
Test(smi, lenient_nic_rows_and_pcie_asymmetry)
{
    struct topo t;
    struct diag d;
    read_str_ok("\tGPU0\tGPU1\tGPU2\tmlx5_0\n"
                "GPU0\t X \tPIX\tSYS\tPIX\n"
                "GPU1\tPXB\t X \tSYS\tPIX\n"
                "GPU2\tSYS\tSYS\t X \tSYS\n",
                NULL, &t, &d);
    cr_assert(diag_contains(&d, DIAG_WARNING, "asymmetric cells: row GPU0, column GPU1 is PIX"));
    cr_assert_eq(d.nwarnings, 1);
    int sw = up(&t, node(&t, "mlx5_0"));
    cr_assert_eq(up(&t, 0), sw); /* still joined through the NIC */
    cr_assert_eq(up(&t, 1), sw);
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 2);
    int g2 = up(&t, 2); /* SYS to everything: alone under the other CPU */
    cr_assert_eq(t.nodes[g2].kind, TOPO_CPU);
    cr_assert(!link_of(&t, sw, g2, TOPO_PCIE));
    topo_free(&t);
    diag_free(&d);
}

/* NV8 everywhere on an 8-GPU A800 or H800 board is the per-GPU switch count: 8 NVLinks to one
 * NVSwitch plane, 200 GB/s per GPU, never a mesh of 56 links per GPU. */
Test(smi, a800_nv8_is_a_plane_of_8_links)
{
    static const char *const models[] = {NULL, "A800", "NVIDIA H800", "H100"};
    for (size_t m = 0; m < BK_ARRAY_LEN(models); m++) {
        struct topo t;
        struct diag d;
        read_ok("tests/data/smi/a800-nv8.smi.txt", models[m], &t, &d);
        assert_plane(&t, 8, 8, 8 * 25.0);
        for (int g = 0; g < 8; g++)
            cr_assert_float_eq(nvlink_gbps(&t, g), 200.0, 1e-9);
        cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 2);
        cr_assert_eq(up(&t, node(&t, "mlx5_3")), up(&t, 7)); /* PXB: one switch */
        if (!models[m]) {
            assert_part(&t, 8, "A800", 1);
            cr_assert_eq(d.nwarnings, 1);
            cr_assert(diag_contains(&d, DIAG_WARNING, "assuming A800 (NVLink3, 8 NVLinks per "
                                                      "GPU of 25 GB/s each)"));
            cr_assert(diag_contains(&d, DIAG_WARNING, "H800"));
        } else {
            cr_assert_eq(d.nwarnings, 0, "%s", models[m]);
            cr_assert_eq(t.nodes[0].part_assumed, 0);
        }
        if (models[m] && strcmp(models[m], "H100") == 0) /* 18 links: NV8 is no switch total */
            cr_assert(diag_contains(&d, DIAG_NOTE, "but H100 GPUs have 18 each"));
        if (models[m] && strstr(models[m], "H800"))
            assert_part(&t, 8, "H800", 0);
        topo_free(&t);
        diag_free(&d);
    }
}

#define H100_MESH                                                                                  \
    "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"                       \
    "GPU0\t X \tNV6\tNV6\tNV6\t0-47\t0\tN/A\n"                                                   \
    "GPU1\tNV6\t X \tNV6\tNV6\t0-47\t0\tN/A\n"                                                   \
    "GPU2\tNV6\tNV6\t X \tNV6\t48-95\t1\tN/A\n"                                                  \
    "GPU3\tNV6\tNV6\tNV6\t X \t48-95\t1\tN/A\n"

/* An HGX H100 4-GPU board: 6 direct NVLinks per pair, 18 per GPU at NVLink4 rates. Without the
 * model the same print is a DGX-2 slice's V100 plane, and the warning says both. */
Test(smi, h100_nv6_mesh_with_model)
{
    struct topo t;
    struct diag d;
    read_str_ok(H100_MESH, "H100", &t, &d);
    cr_assert_eq(tu_count_nodes(&t, TOPO_NVSWITCH), 0);
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 2 * 6);
    for (int g = 0; g < 4; g++) {
        cr_assert_eq(count_from(&t, g, TOPO_NVLINK), 3);
        cr_assert_float_eq(nvlink_gbps(&t, g), 18 * 25.0, 1e-9);
    }
    cr_assert_eq(link_of(&t, 0, 3, TOPO_NVLINK)->count, 6);
    assert_part(&t, 4, "H100", 0);
    cr_assert_eq(d.nwarnings, 0);
    topo_free(&t);
    diag_free(&d);

    read_str_ok(H100_MESH, NULL, &t, &d);
    assert_plane(&t, 4, 6, 6 * 25.0);
    assert_part(&t, 4, "V100", 1);
    cr_assert(diag_contains(&d, DIAG_WARNING, "assuming V100"));
    cr_assert(diag_contains(&d, DIAG_WARNING, "--gpu-model H100"));
    topo_free(&t);
    diag_free(&d);
}

#define H100_LIST(g3)                                                                              \
    "$ nvidia-smi -L\r\n"                                                                          \
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-0000-4e5f-8a9b-000000000000)\n"             \
    "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-0001-4e5f-8a9b-000000000001)\n"             \
    "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-0002-4e5f-8a9b-000000000002)\n"             \
    "GPU " g3 " (UUID: GPU-0a1b2c3d-0003-4e5f-8a9b-000000000003)\n"                              \
    "  MIG 1g.10gb     Device  0: (UUID: MIG-5e6f7a8b-0000-5c6d-9e0f-000000000000)\n"            \
    "$ nvidia-smi topo -m\n"

/* `nvidia-smi -L` pasted above the matrix names the part: the H100 NV6 mesh needs no
 * --gpu-model. Lines that disagree, name an unknown GPU or one the matrix lacks are warned
 * about, and the shape decides as before. */
Test(smi, nvidia_smi_list_names_the_part)
{
    struct topo t;
    struct diag d;
    read_str_ok(H100_LIST("3: NVIDIA H100 80GB HBM3") H100_MESH, NULL, &t, &d);
    cr_assert_eq(tu_count_nodes(&t, TOPO_NVSWITCH), 0);
    cr_assert_eq(link_of(&t, 0, 3, TOPO_NVLINK)->count, 6);
    assert_part(&t, 4, "H100", 0);
    cr_assert_str_eq(t.nodes[3].model, "NVIDIA H100 80GB HBM3");
    cr_assert_eq(d.nwarnings, 0);
    topo_free(&t);
    diag_free(&d);

    static const struct {
        const char *line, *why;
    } bad[] = {
        {"3: NVIDIA A100-SXM4-80GB", "another part than the lines above it"},
        {"3: Tesla K80", "a GPU the parts table does not know"},
        {"9: NVIDIA H100 80GB HBM3", "the matrix has no such GPU"},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(bad); i++) {
        char text[2048];
        snprintf(text, sizeof text, H100_LIST("%s") H100_MESH, bad[i].line);
        read_str_ok(text, NULL, &t, &d);
        assert_plane(&t, 4, 6, 6 * 25.0); /* the shape's guess, as without the list */
        cr_assert(diag_contains(&d, DIAG_WARNING, bad[i].why), "%s", bad[i].line);
        cr_assert(diag_contains(&d, DIAG_WARNING, "assuming V100"), "%s", bad[i].line);
        topo_free(&t);
        diag_free(&d);
    }
}

/* A bridged RTX 3090 pair: NV4 at GA102's 14.0625 GB/s per link, not NVLink3's 25. */
Test(smi, rtx3090_bridge_pair)
{
    static const char *const text = "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
                                    "GPU0     X      NV4     0-23            N/A\n"
                                    "GPU1    NV4      X      0-23            N/A\n";
    static const char *const models[] = {"NVIDIA GeForce RTX 3090", NULL, "RTX A6000", "A30"};
    static const double gbps[] = {56.25, 56.25, 56.25, 100.0};
    for (size_t m = 0; m < BK_ARRAY_LEN(models); m++) {
        struct topo t;
        struct diag d;
        read_str_ok(text, models[m], &t, &d);
        const struct topo_link *l = link_of(&t, 0, 1, TOPO_NVLINK);
        cr_assert(l && l->count == 4);
        cr_assert_float_eq(l->gbps, gbps[m], 1e-9, "%s", models[m] ? models[m] : "no model");
        cr_assert_eq(tu_count_nodes(&t, TOPO_NVSWITCH), 0);
        cr_assert_eq(t.nodes[0].part_assumed, models[m] == NULL);
        if (!models[m]) {
            cr_assert(diag_contains(&d, DIAG_WARNING, "assuming RTX 3090 (NVLink3, 4 NVLinks per "
                                                      "GPU of 14.0625 GB/s each)"));
            cr_assert(diag_contains(&d, DIAG_WARNING, "--gpu-model A30"));
        }
        topo_free(&t);
        diag_free(&d);
    }
}

/* `nvidia-smi topo -p2p r` pasted below the matrix and its legend: both GPUs of each pair it
 * shows without peer access (NS, CNS, GNS, TNS, DR, U) lose it; OK keeps it. The planner then
 * takes every PCIe path between them through a CPU. */
Test(smi, p2p_matrix_marks_gpus_without_peer_access)
{
    static const char *const matrix = "        GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity\n"
                                      "GPU0     X      PIX     SYS     0-15    0\n"
                                      "GPU1    PIX      X      SYS     0-15    0\n"
                                      "GPU2    SYS     SYS      X      16-31   1\n"
                                      "\nLegend:\n\n  X    = Self\n  PIX  = Connection traversing "
                                      "at most a single PCIe bridge\n\n";
    static const char *const p2p[] = {
        "        GPU0    GPU1    GPU2\n GPU0   X       NS      OK\n GPU1   NS      X       OK\n"
        " GPU2   OK      OK      X\n\nLegend:\n\n  X    = Self\n  OK   = Status Ok\n"
        "  NS   = Not supported\n",
        "\tGPU0\tGPU1\tGPU2\nGPU0\tX\tOK\tOK\nGPU1\tOK\tX\tCNS\nGPU2\tOK\tCNS\tX\n",
        "",
    };
    static const int want[][3] = {{1, 1, 0}, {0, 1, 1}, {0, 0, 0}};
    for (size_t k = 0; k < BK_ARRAY_LEN(p2p); k++) {
        char *text = bk_asprintf("%s%s", matrix, p2p[k]);
        struct topo t;
        struct diag d;
        read_str_ok(text, NULL, &t, &d);
        for (int g = 0; g < 3; g++) {
            char id[8];
            snprintf(id, sizeof id, "gpu%d", g);
            cr_expect_eq(t.nodes[tu_node(&t, id)].no_p2p, want[k][g], "case %zu gpu%d", k, g);
        }
        cr_expect_eq(topo_no_p2p(&t), k < 2);
        topo_free(&t);
        diag_free(&d);
        free(text);
    }
}

/* A100 has 12 NVLinks: as an HGX A100 4-GPU mesh (NV4 per pair), as bridged PCIe pairs (NV12),
 * and as the 8-GPU board's plane with the model given. */
Test(smi, a100_twelve_links)
{
    struct topo t;
    struct diag d;
    read_str_ok("\tGPU0\tGPU1\tGPU2\tGPU3\n"
                "GPU0\t X \tNV4\tNV4\tNV4\n"
                "GPU1\tNV4\t X \tNV4\tNV4\n"
                "GPU2\tNV4\tNV4\t X \tNV4\n"
                "GPU3\tNV4\tNV4\tNV4\t X \n",
                NULL, &t, &d);
    cr_assert_eq(tu_count_nodes(&t, TOPO_NVSWITCH), 0);
    for (int g = 0; g < 4; g++)
        cr_assert_float_eq(nvlink_gbps(&t, g), 300.0, 1e-9);
    assert_part(&t, 4, "A100", 1);
    cr_assert(diag_contains(&d, DIAG_WARNING, "12 NVLinks per GPU"));
    cr_assert_not(diag_contains(&d, DIAG_WARNING, "no known board"));
    topo_free(&t);
    diag_free(&d);

    read_str_ok("\tGPU0\tGPU1\tGPU2\tGPU3\n"
                "GPU0\t X \tNV12\tSYS\tSYS\n"
                "GPU1\tNV12\t X \tSYS\tSYS\n"
                "GPU2\tSYS\tSYS\t X \tNV12\n"
                "GPU3\tSYS\tSYS\tNV12\t X \n",
                NULL, &t, &d);
    cr_assert_eq(link_of(&t, 2, 3, TOPO_NVLINK)->count, 12);
    cr_assert_null(link_of(&t, 1, 2, TOPO_NVLINK));
    cr_assert_float_eq(nvlink_gbps(&t, 0), 300.0, 1e-9);
    assert_part(&t, 4, "A100", 1);
    topo_free(&t);
    diag_free(&d);

    read_ok("tests/data/smi/dgxa100-nv12.smi.txt", "NVIDIA A100-SXM4-80GB", &t, &d);
    assert_plane(&t, 8, 12, 300.0);
    assert_part(&t, 8, "A100", 0);
    cr_assert_eq(d.nwarnings, 0);
    topo_free(&t);
    diag_free(&d);
}

/* NVLink5 parts: an HGX B200 board's NV18 and a GB200 NVL72 compute tray (4 of the rack's 72
 * GPUs, NV18 between them through the NVLink switch trays) are planes of 18 links of 50 GB/s. */
Test(smi, b200_and_gb200_tray_planes)
{
    struct topo t;
    struct diag d;
    read_ok("tests/data/smi/h100-nv18.smi.txt", "NVIDIA B200", &t, &d);
    assert_plane(&t, 8, 18, 18 * 50.0);
    assert_part(&t, 8, "B200", 0);
    topo_free(&t);
    diag_free(&d);

    read_str_ok("\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                "GPU0\t X \tNV18\tNV18\tNV18\tNODE\tSYS\t0-71\t0\t2\n"
                "GPU1\tNV18\t X \tNV18\tNV18\tNODE\tSYS\t0-71\t0\t10\n"
                "GPU2\tNV18\tNV18\t X \tNV18\tSYS\tNODE\t72-143\t1\t18\n"
                "GPU3\tNV18\tNV18\tNV18\t X \tSYS\tNODE\t72-143\t1\t26\n"
                "NIC0\tNODE\tNODE\tSYS\tSYS\t X \tSYS\n"
                "NIC1\tSYS\tSYS\tNODE\tNODE\tSYS\t X \n",
                "GB200", &t, &d);
    assert_plane(&t, 4, 18, 900.0);
    assert_part(&t, 4, "GB200", 0);
    cr_assert_eq(d.nwarnings, 0);
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 2);
    topo_free(&t);
    diag_free(&d);
}
