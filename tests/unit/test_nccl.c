/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_nccl.c - the NCCL topology XML reader: the DGX-1V fixture against the reference graph in
 * topology-facts.md 4.3/4.4, the NVSwitch, VM and PCIe-only inputs under tests/data/nccl, GPU
 * parts from sm and the PCI device id, and every error path with its message and line.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/input.h"
#include "core/strbuf.h"
#include "testutil.h"

static enum bk_status read_fixture(const char *rel, const char *model, struct topo *t,
                                   struct diag *d)
{
    char *path = tu_src_path(rel);
    enum bk_status st = tu_read_file(path, TOPO_FMT_AUTO, model, t, d);
    free(path);
    return st;
}

static const struct diag_msg *first_msg(const struct diag *d, enum diag_level level)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->msgs[i].level == level)
            return &d->msgs[i];
    return NULL;
}

/* Sum of a GPU's NVLink counts and capacities, and its number of distinct NVLink peers. */
static void nvlink_total(const struct topo *t, int gpu, int *count, double *gbps, int *peers)
{
    *count = 0, *gbps = 0, *peers = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == gpu && t->links[i].kind == TOPO_NVLINK) {
            *count += t->links[i].count;
            *gbps += t->links[i].gbps;
            (*peers)++;
        }
}

static void expect_link(const struct topo *t, const char *a, const char *b,
                        enum topo_link_kind kind, int count, double gbps)
{
    const struct topo_link *l = tu_link(t, a, b), *r = tu_link(t, b, a);
    cr_assert(l && r, "no link %s - %s", a, b);
    cr_expect_eq(l->kind, kind, "%s - %s kind", a, b);
    cr_expect_eq(l->count, count, "%s - %s count %d", a, b, l->count);
    cr_expect_float_eq(l->gbps, gbps, 1e-9, "%s - %s %g GB/s", a, b, l->gbps);
    cr_expect_float_eq(r->gbps, gbps, 1e-9, "%s - %s reverse", a, b);
}

static const char *node_name(const struct topo *t, const char *id)
{
    for (int i = 0; i < t->nnodes; i++)
        if (strcmp(t->nodes[i].id, id) == 0)
            return t->nodes[i].name;
    return "";
}

/* The shared checker holds the graph; this adds what the dump records: bus ids and NIC names. */
Test(nccl, dgx1v_reference_graph)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(read_fixture("topologies/dgx1v.nccl.xml", NULL, &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    cr_expect_eq(d.nwarnings, 0, "sm=70 names the generation: no assumption needed");
    cr_assert_str_eq(t.format, "nccl");
    tu_expect_dgx1v(&t);
    static const char *const bus[8] = {"0000:06:00.0", "0000:07:00.0", "0000:0a:00.0",
                                       "0000:0b:00.0", "0000:85:00.0", "0000:86:00.0",
                                       "0000:89:00.0", "0000:8a:00.0"};
    for (int g = 0; g < 8; g++)
        cr_expect_str_eq(t.nodes[g].busid, bus[g]);
    /* nicK sits on pciswK beside GPUs 2K and 2K+1 (checked above), and is mlx5_K. */
    static const char *const nic_bus[4] = {"0000:05:00.0", "0000:0c:00.0", "0000:84:00.0",
                                           "0000:8b:00.0"};
    for (int k = 0; k < 4; k++) {
        char nic[16], name[16];
        snprintf(nic, sizeof nic, "nic%d", k), snprintf(name, sizeof name, "mlx5_%d", k);
        cr_expect_str_eq(node_name(&t, nic), name);
        cr_expect_str_eq(t.nodes[topo_find(&t, name)].busid, nic_bus[k]);
        /* <net speed="100000">: NCCL writes Mb/s; the model keeps the line rate in GB/s. */
        cr_expect_float_eq(t.nodes[topo_find(&t, name)].nic_gbps, 12.5, 1e-9);
    }
    topo_free(&t);
    diag_free(&d);
}

/* Every GPU: `links` NVLinks worth `gbps`, spread over `peers` switches. */
static void expect_switched(const char *rel, int nvs, int links, double gbps, int peers)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(read_fixture(rel, NULL, &t, &d), BK_OK, "%s: %s", rel, diag_first_error(&d));
    cr_expect_eq(tu_count_nodes(&t, TOPO_NVSWITCH), nvs, "%s switches", rel);
    cr_assert_eq(t.ngpus, 8, "%s GPUs", rel);
    for (int g = 0; g < 8; g++) {
        int count, np;
        double sum;
        nvlink_total(&t, g, &count, &sum, &np);
        cr_expect_eq(count, links, "%s gpu%d: %d links", rel, g, count);
        cr_expect_float_eq(sum, gbps, 1e-9, "%s gpu%d: %g GB/s", rel, g, sum);
        cr_expect_eq(np, peers, "%s gpu%d peers", rel, g);
    }
    cr_expect_eq(tu_count_links(&t, TOPO_NVLINK), 2 * 8 * peers);
    topo_free(&t);
    diag_free(&d);
}

Test(nccl, hgx_a100_six_switches)
{
    expect_switched("tests/data/nccl/hgx-a100.xml", 6, 12, 300, 6);
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(read_fixture("tests/data/nccl/hgx-a100.xml", NULL, &t, &d), BK_OK);
    cr_expect_str_eq(t.name, "hgx-a100", "<system name=> names the topology");
    /* The dual-port NIC gives two NICs; the unknown element's GPU (dev 9) is skipped. */
    cr_expect_eq(tu_count_nodes(&t, TOPO_NIC), 5);
    cr_expect_str_eq(node_name(&t, "nic1"), "mlx5_1");
    expect_link(&t, "gpu0", "pcisw0", TOPO_PCIE, 1, 24); /* 16 GT/s x16 */
    expect_link(&t, "cpu0", "cpu1", TOPO_SMP, 1, 16);    /* AMD */
    cr_expect(diag_contains(&d, DIAG_NOTE, "<pcilink>"));
    topo_free(&t);
    diag_free(&d);
}

Test(nccl, hgx_h100_four_switches)
{
    expect_switched("tests/data/nccl/hgx-h100.xml", 4, 18, 450, 4);
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(read_fixture("tests/data/nccl/hgx-h100.xml", NULL, &t, &d), BK_OK);
    int five = 0, four = 0;
    for (int i = 0; i < t.nlinks; i++)
        if (t.links[i].src == 0 && t.links[i].kind == TOPO_NVLINK)
            five += t.links[i].count == 5, four += t.links[i].count == 4;
    cr_expect(five == 2 && four == 2, "counts 5/5/4/4");
    expect_link(&t, "gpu3", "pcisw3", TOPO_PCIE, 1, 48);
    expect_link(&t, "cpu0", "cpu1", TOPO_SMP, 1, 22); /* modelid 0x8f: Sapphire Rapids */
    topo_free(&t);
    diag_free(&d);
}

Test(nccl, vm_hidden_switch)
{
    expect_switched("tests/data/nccl/vm-hidden-switch.xml", 1, 18, 450, 1);
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(read_fixture("tests/data/nccl/vm-hidden-switch.xml", NULL, &t, &d), BK_OK);
    cr_expect_str_eq(node_name(&t, "nvs0"), "fffffff:ff:ff.0");
    /* Single-child virtual root ports (x1) are not switches: each GPU hangs off the CPU at its
     * own Gen5 x16 rate; the NIC without PCI placement gets the unknown-link default. */
    cr_expect_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 0);
    expect_link(&t, "gpu5", "cpu0", TOPO_PCIE, 1, 48);
    expect_link(&t, "nic0", "cpu0", TOPO_PCIE, 1, 12);
    cr_expect_eq(t.nodes[topo_find(&t, "cpu0")].socket, 0, "numaid -1: numbered by position");
    topo_free(&t);
    diag_free(&d);
}

Test(nccl, azure_pcie_only)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(read_fixture("tests/data/nccl/azure-pcie-only.xml", NULL, &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    cr_expect_eq(t.ngpus, 4);
    cr_expect_eq(tu_count_links(&t, TOPO_NVLINK), 0);
    cr_expect_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 4);
    cr_expect_str_eq(node_name(&t, "pcisw2"), "ffff:ff:03.0");
    expect_link(&t, "gpu2", "pcisw2", TOPO_PCIE, 1, 12); /* empty link_speed: Gen3 x16 */
    expect_link(&t, "nic2", "pcisw2", TOPO_PCIE, 1, 12);
    topo_free(&t);
    diag_free(&d);
}

/* ---------------------------------------------------------------- small inputs */

/*
 * Two V100s on one CPU. Line 5 is GPU 0's <nvlink> (path /system/cpu/pci[1]/gpu/nvlink), line 8
 * the second <pci>, line 9 GPU 1's <gpu>, line 10 its <nvlink>.
 */
static char *pair_xml(const char *busid1, const char *dev1, const char *link0, const char *link1)
{
    return bk_asprintf("<system version=\"1\">\n"
                       " <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" "
                       "modelid=\"79\">\n"
                       "  <pci busid=\"0000:06:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" "
                       "link_width=\"16\">\n"
                       "   <gpu dev=\"0\" sm=\"70\" rank=\"0\" gdr=\"1\">\n"
                       "    %s\n"
                       "   </gpu>\n"
                       "  </pci>\n"
                       "  <pci busid=\"%s\" class=\"0x030200\" link_speed=\"8 GT/s\" "
                       "link_width=\"16\">\n"
                       "   <gpu dev=\"%s\" sm=\"70\" rank=\"1\" gdr=\"1\">\n"
                       "    %s\n"
                       "   </gpu>\n"
                       "  </pci>\n"
                       " </cpu>\n"
                       "</system>\n",
                       link0, busid1, dev1, link1);
}

#define LINK0 "<nvlink target=\"0000:07:00.0\" count=\"2\" tclass=\"0x030200\"/>"
#define LINK1 "<nvlink target=\"0000:06:00.0\" count=\"2\" tclass=\"0x030200\"/>"

static enum bk_status read_text(const char *xml, const char *model, struct topo *t,
                                struct diag *d)
{
    diag_init(d);
    return tu_read_string("in.xml", xml, TOPO_FMT_AUTO, model, t, d);
}

/* The first error contains `needle` and points at `line` of in.xml. */
static void expect_error(char *xml, const char *needle, int line)
{
    struct topo t;
    struct diag d;
    cr_assert(xml);
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_EINPUT, "accepted: %s", xml);
    const struct diag_msg *m = first_msg(&d, DIAG_ERROR);
    cr_assert(m && m->text);
    cr_expect(strstr(m->text, needle), "message '%s' lacks '%s'", m->text, needle);
    cr_expect_str_eq(m->file, "in.xml");
    cr_expect_eq(m->loc.line, line, "'%s' at line %d, expected %d", m->text, m->loc.line, line);
    diag_free(&d);
    free(xml);
}

Test(nccl, pair_merges_directions)
{
    struct topo t;
    struct diag d;
    char *xml = pair_xml("0000:07:00.0", "1", LINK0, LINK1);
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 2, 50);
    cr_expect_eq(tu_count_links(&t, TOPO_NVLINK), 2, "one full-duplex link, not two");
    cr_expect_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 0);
    expect_link(&t, "gpu1", "cpu0", TOPO_PCIE, 1, 12);
    topo_free(&t), diag_free(&d), free(xml);

    /* One side only: accepted as given. */
    xml = pair_xml("0000:07:00.0", "1", LINK0, "");
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 2, 50);
    cr_expect_eq(d.nwarnings, 0);
    topo_free(&t), diag_free(&d), free(xml);

    /* The sides disagree: the smaller count, and a warning at the later entry. */
    xml = pair_xml("0000:07:00.0", "1", LINK0,
                   "<nvlink target=\"0000:06:00.0\" count=\"1\" tclass=\"0x030200\"/>");
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 1, 25);
    const struct diag_msg *w = first_msg(&d, DIAG_WARNING);
    cr_assert(w);
    cr_expect(strstr(w->text, "disagrees") && strstr(w->text, "using 1"), "%s", w->text);
    cr_expect_eq(w->loc.line, 10);
    topo_free(&t), diag_free(&d), free(xml);

    /* No tclass: the target is a GPU of the file, so it is a GPU link. */
    xml = pair_xml("0000:07:00.0", "1", "<nvlink target=\"0000:07:00.0\" count=\"2\"/>", "");
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 2, 50);
    topo_free(&t), diag_free(&d), free(xml);
}

Test(nccl, nvlink_errors)
{
    expect_error(pair_xml("0000:07:00.0", "1",
                          "<nvlink target=\"0000:99:00.0\" count=\"2\" tclass=\"0x030200\"/>",
                          LINK1),
                 "<nvlink> at /system/cpu/pci[1]/gpu/nvlink: target 0000:99:00.0 is not the bus "
                 "id of a GPU in this file",
                 5);
    /* A self-link is dropped with a warning: cloud_image_templates. */
    static const char *const bad[] = {"two", "0", "-2", "65", "", "2.5", "99999999999999999999"};
    for (size_t i = 0; i < BK_ARRAY_LEN(bad); i++) {
        char *link = bk_asprintf("<nvlink target=\"0000:06:00.0\" count=\"%s\" "
                                 "tclass=\"0x030200\"/>",
                                 bad[i]);
        char *want = bk_asprintf("<nvlink> at /system/cpu/pci[2]/gpu/nvlink: count=\"%s\"", bad[i]);
        expect_error(pair_xml("0000:07:00.0", "1", LINK0, link), want, 10);
        free(link), free(want);
    }
    expect_error(pair_xml("0000:07:00.0", "1", "<nvlink target=\"0000:07:00.0\" tclass=\"0x030200\"/>",
                          LINK1),
                 "missing count= attribute", 5);
    expect_error(pair_xml("0000:07:00.0", "1",
                          "<nvlink target=\"0000:07:00.0\" count=\"2\" tclass=\"0x123456\"/>", LINK1),
                 "tclass=\"0x123456\" is not a GPU", 5);
    expect_error(pair_xml("0000:07:00.0", "1",
                          "<nvlink target=\"0000:07:00.0\" count=\"2\" tclass=\"0x068000\"/>", LINK1),
                 "target 0000:07:00.0 is a gpu in this file, but tclass 0x068000 says an NVSwitch",
                 5);
    expect_error(pair_xml("0000:07:00.0", "1", LINK0 LINK0, LINK1),
                 "a second link from this GPU to the same peer", 5);
    expect_error(pair_xml("0000:07:00.0", "1",
                          "<nvlink target=\"06:00\" count=\"2\" tclass=\"0x030200\"/>", LINK1),
                 "target=\"06:00\" is not a PCI bus id", 5);
    /* More NVLinks than the part has (sm 70: a V100, 6 links) would plan bandwidth that
       does not exist. */
    expect_error(pair_xml("0000:07:00.0", "1",
                          "<nvlink target=\"0000:07:00.0\" count=\"8\" tclass=\"0x030200\"/>",
                          "<nvlink target=\"0000:06:00.0\" count=\"8\" tclass=\"0x030200\"/>"),
                 "<gpu> at /system/cpu/pci[1]/gpu: its <nvlink> counts add up to 8 NVLinks, but "
                 "V100 GPUs have 6 each (the part assumed from sm=)",
                 4);
}

Test(nccl, element_errors)
{
    expect_error(pair_xml("0000:07:00.0", "0", LINK0, LINK1),
                 "<gpu> at /system/cpu/pci[2]/gpu: dev 0 is already used by the <gpu> at "
                 "/system/cpu/pci[1]/gpu (line 4)",
                 9);
    expect_error(pair_xml("0000:06:00.0", "1", LINK0, LINK1),
                 "<pci> at /system/cpu/pci[2]: bus id 0000:06:00.0 is already used by the <pci> at "
                 "/system/cpu/pci[1] (line 3)",
                 8);
    expect_error(pair_xml("0000:7:00.0", "1", LINK0, LINK1),
                 "<pci> at /system/cpu/pci[2]: busid=\"0000:7:00.0\" is not a PCI bus id", 8);
    expect_error(pair_xml("0000:07:00.0", "x1", LINK0, LINK1),
                 "<gpu> at /system/cpu/pci[2]/gpu: dev=\"x1\" is not an integer", 9);
    expect_error(pair_xml("0000:07:00.0", "-1", LINK0, LINK1), "dev=\"-1\" is out of range", 9);
    expect_error(bk_asprintf("<system version=\"1\">\n<cpu>\n<pci class=\"0x030200\">\n"
                             "<gpu dev=\"0\"/></pci></cpu></system>\n"),
                 "<pci> at /system/cpu/pci: missing busid= attribute", 3);
    expect_error(bk_asprintf("<system version=\"1\">\n<cpu>\n<pci busid=\"0000:01:00.0\" "
                             "link_speed=\"fast\"/></cpu></system>\n"),
                 "link_speed=\"fast\" is not a PCIe speed", 3);
    expect_error(bk_asprintf("<system version=\"1\">\n<cpu numaid=\"0\"/>\n<cpu numaid=\"0\"/>\n"
                             "</system>\n"),
                 "<cpu> at /system/cpu[2]: NUMA node 0 is already declared", 3);
    expect_error(bk_asprintf("<system version=\"2\">\n</system>\n"), "version 2 is not supported",
                 1);
}

Test(nccl, xml_level_errors)
{
    /* An entity declaration is refused before libxml2 sees it (line 3). */
    expect_error(bk_asprintf("<?xml version=\"1.0\"?>\n<!DOCTYPE system [\n"
                             "<!ENTITY a \"aaaaaaaaaa\">\n]>\n<system version=\"1\">&a;</system>\n"),
                 "XML entity declarations are not allowed", 3);
    /* An unquoted attribute: libxml2's message and the line it stopped at. */
    expect_error(bk_asprintf("<system version=\"1\">\n <cpu numaid=\"0\">\n\n"
                             "  <pci busid=0000:01:00.0/>\n </cpu>\n</system>\n"),
                 "malformed XML: AttValue: \" or ' expected", 4);
    /* No <gpu> at all, the GPU a bare 3D controller (a placement-only file): refused at it. */
    expect_error(bk_asprintf("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"ffff:ff:01.0\" "
                             "class=\"0x060400\"><pci busid=\"0001:00:00.0\" class=\"0x030200\"/>"
                             "<pci busid=\"0101:00:00.0\" class=\"0x020700\"/></pci>\n</cpu>\n"
                             "</system>\n"),
                 "GPU 0001:00:00.0 is a <pci> of class 0x030200 without its <gpu> element", 3);
    /* No GPU and no 3D controller: the reader accepts it, finalize refuses it. */
    expect_error(bk_asprintf("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"ffff:ff:01.0\" "
                             "class=\"0x060400\"><pci busid=\"0101:00:00.0\" class=\"0x020700\"/>"
                             "</pci>\n</cpu>\n</system>\n"),
                 "the topology has no GPUs", 0);
}

Test(nccl, cpu_links_power_and_c2c)
{
    /* POWER9 NPU: NVLink from each GPU to its own CPU (tclass 0x068001), P100 at 20 GB/s/link. */
    struct topo t;
    struct diag d;
    char *xml = bk_asprintf(
        "<system version=\"1\">\n"
        "\t<cpu numaid=\"0\" arch=\"ppc64\" vendor=\"IBM\">\n"
        "\t\t<pci busid=\"0004:04:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"60\">\n"
        "\t\t\t<nvlink target=\"0004:05:00.0\" count=\"2\" tclass=\"0x030200\"/>\n"
        "\t\t\t<nvlink target=\"0007:00:00.0\" count=\"2\" tclass=\"0x068001\"/>\n"
        "\t\t</gpu></pci>\n"
        "\t\t<pci busid=\"0004:05:00.0\" class=\"0x030200\"><gpu dev=\"1\" sm=\"60\">\n"
        "\t\t\t<nvlink target=\"0004:04:00.0\" count=\"2\" tclass=\"0x030200\"/>\n"
        "\t\t\t<nvlink target=\"0007:00:01.0\" count=\"2\" tclass=\"0x068001\"/>\n"
        "\t\t</gpu></pci>\n"
        "\t</cpu>\n"
        "</system>\n");
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    expect_link(&t, "gpu0", "cpu0", TOPO_NVLINK, 2, 40);
    expect_link(&t, "gpu1", "cpu0", TOPO_NVLINK, 2, 40);
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 2, 40);
    topo_free(&t), diag_free(&d), free(xml);

    /* GH200: C2C to Grace, bw (MB/s per link) x count. */
    xml = bk_asprintf("<system version=\"1\">\n<cpu numaid=\"0\" arch=\"arm64\" vendor=\"ARM\">\n"
                      "<pci busid=\"0009:01:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"90\">"
                      "<c2c bw=\"45000\" count=\"10\"/></gpu></pci>\n</cpu>\n</system>\n");
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    expect_link(&t, "gpu0", "cpu0", TOPO_NVLINK, 10, 450);
    topo_free(&t), diag_free(&d), free(xml);
}

Test(nccl, unknown_sm)
{
    /* No sm=: assumed V100 with a warning, or what --gpu-model says. */
    struct topo t;
    struct diag d;
    char *xml = pair_xml("0000:07:00.0", "1", LINK0, LINK1);
    char *p;
    while ((p = strstr(xml, " sm=\"70\"")))
        memmove(p, p + 8, strlen(p + 8) + 1);
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    cr_expect(diag_contains(&d, DIAG_WARNING, "assuming V100"));
    cr_expect_eq(d.nwarnings, 1, "one warning per file, not per GPU");
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 2, 50);
    topo_free(&t), diag_free(&d);
    cr_assert_eq(read_text(xml, "B200", &t, &d), BK_OK, "%s", diag_first_error(&d));
    cr_expect_eq(d.nwarnings, 0);
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 2, 100);
    topo_free(&t), diag_free(&d), free(xml);

    /* Without sm=, the PCI device id 0x20b0 names the A100: no warning. */
    char *path = tu_src_path("tests/data/nccl/hgx-a100.xml");
    struct input in;
    diag_init(&d);
    cr_assert_eq(input_read(path, &in, &d), BK_OK);
    while ((p = strstr(in.data, " sm=\"80\"")))
        memmove(p, p + 8, strlen(p + 8) + 1);
    cr_assert_eq(read_text(in.data, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    cr_expect_eq(d.nwarnings, 0);
    cr_assert_str_eq(t.nodes[0].part->name, "A100");
    topo_free(&t), diag_free(&d);

    /* Without sm= and device ids, 12 NVLinks per GPU point at an A100. */
    while ((p = strstr(in.data, " device=\"0x20b0\"")))
        memmove(p, p + 16, strlen(p + 16) + 1);
    cr_assert_eq(read_text(in.data, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    cr_expect_eq(t.nodes[0].part_assumed, 1);
    cr_expect(diag_contains(&d, DIAG_WARNING, "assuming A100"));
    cr_expect(diag_contains(&d, DIAG_WARNING, "guessed from 12 NVLinks per GPU"));
    int count, peers;
    double gbps;
    nvlink_total(&t, 0, &count, &gbps, &peers);
    cr_expect_float_eq(gbps, 300, 1e-9);
    topo_free(&t), diag_free(&d), input_free(&in), free(path);
}

/* Two bridged workstation cards as NCCL dumps them: sm 86 with the PCI device id of an RTX
 * A6000, 4 NVLinks between them at GA102's 14.0625 GB/s, not NVLink3's 25. */
static char *bridge_xml(const char *device)
{
    char *xml = bk_asprintf("<system version=\"1\">\n"
                            " <cpu numaid=\"0\" affinity=\"00000000,ffffffff\" arch=\"x86_64\" "
                            "vendor=\"AuthenticAMD\" familyid=\"25\" modelid=\"1\">\n"
                            "  <pci busid=\"0000:41:00.0\" class=\"0x030000\" vendor=\"0x10de\" "
                            "%s subsystem_vendor=\"0x10de\" subsystem_device=\"0x1459\" "
                            "link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">\n"
                            "   <gpu dev=\"0\" sm=\"86\" rank=\"0\" gdr=\"1\">\n"
                            "    <nvlink target=\"0000:61:00.0\" count=\"4\" "
                            "tclass=\"0x030000\"/>\n"
                            "   </gpu>\n"
                            "  </pci>\n"
                            "  <pci busid=\"0000:61:00.0\" class=\"0x030000\" vendor=\"0x10de\" "
                            "%s subsystem_vendor=\"0x10de\" subsystem_device=\"0x1459\" "
                            "link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">\n"
                            "   <gpu dev=\"1\" sm=\"86\" rank=\"1\" gdr=\"1\">\n"
                            "    <nvlink target=\"0000:41:00.0\" count=\"4\" "
                            "tclass=\"0x030000\"/>\n"
                            "   </gpu>\n"
                            "  </pci>\n"
                            " </cpu>\n"
                            "</system>\n",
                            device, device);
    cr_assert(xml);
    return xml;
}

Test(nccl, parts_from_sm_and_device_id)
{
    struct topo t;
    struct diag d;
    char *xml = bridge_xml("device=\"0x2230\"");
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 4, 56.25);
    cr_assert_str_eq(t.nodes[0].part->name, "RTX A6000");
    cr_expect_eq(t.nodes[0].part_assumed, 0);
    cr_expect_eq(t.nodes[0].nvlink_gen, 3);
    cr_expect_eq(d.nwarnings, 0);
    topo_free(&t), diag_free(&d), free(xml);

    /* No device id: sm 86 alone is an NVLink GA102 part, the same rate; recorded as assumed. */
    xml = bridge_xml("device=\"junk\"");
    cr_assert_eq(read_text(xml, NULL, &t, &d), BK_OK, "%s", diag_first_error(&d));
    expect_link(&t, "gpu0", "gpu1", TOPO_NVLINK, 4, 56.25);
    cr_assert_str_eq(t.nodes[1].part->name, "RTX 3090");
    cr_expect_eq(t.nodes[1].part_assumed, 1);
    topo_free(&t), diag_free(&d), free(xml);

    /* An HGX A100 dump names its parts by device id 0x20b0. */
    cr_assert_eq(read_fixture("tests/data/nccl/hgx-a100.xml", NULL, &t, &d), BK_OK);
    for (int g = 0; g < 8; g++) {
        cr_assert_str_eq(t.nodes[g].part->name, "A100");
        cr_expect_eq(t.nodes[g].part_assumed, 0);
    }
    topo_free(&t), diag_free(&d);
}

/* Files cloud images ship for NCCL_TOPO_FILE (issue 18, item 5): a GPU listed only as a PCI
 * device of class 0x0302 is refused with what to do instead; an NVLink to the GPU's own bus id
 * is dropped with a warning and the rest is read. */
Test(nccl, cloud_image_templates)
{
    char *xml = pair_xml("0000:07:00.0", "1", LINK0, LINK1);
    const char *gpu1 = strstr(xml, "  <pci busid=\"0000:07:00.0\"");
    cr_assert_not_null(gpu1);
    char *bare = bk_asprintf("%.*s  <pci busid=\"0000:07:00.0\" class=\"0x030200\" "
                             "link_speed=\"8 GT/s\" link_width=\"16\"/>\n </cpu>\n</system>\n",
                             (int)(gpu1 - xml), xml);
    struct topo t;
    struct diag d;
    cr_assert_eq(read_text(bare, NULL, &t, &d), BK_EINPUT);
    const char *e = diag_first_error(&d);
    cr_expect(e && strstr(e, "GPU 0000:07:00.0 is a <pci> of class 0x030200 without its <gpu> "
                             "element") && strstr(e, "NCCL_TOPO_DUMP_FILE"), "%s", e);
    diag_free(&d);
    char *self = pair_xml("0000:07:00.0", "1",
                          "<nvlink target=\"0000:06:00.0\" count=\"1\" tclass=\"0x030200\"/>\n"
                          "    " LINK0, LINK1);
    cr_assert_eq(read_text(self, "V100", &t, &d), BK_OK, "%s", diag_first_error(&d));
    cr_expect(diag_contains(&d, DIAG_WARNING, "this GPU's own bus id"));
    int count = 0, peers = 0;
    double gbps = 0;
    nvlink_total(&t, 0, &count, &gbps, &peers);
    cr_expect_eq(count, 2, "the two real links remain, the self-link is gone");
    topo_free(&t);
    diag_free(&d);
    free(xml), free(bare), free(self);
}
