/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_hwloc.c - the hwloc 2.x XML reader against the published facts: the DGX-1V fixture gives
 * the reference graph, the real DGX-2H and POWER8 files from hwloc's test suite give their
 * documented NVLink wiring (with the DGX-2 trunks added), both of hwloc's XML parsers agree, the
 * 2.5.0-2.9.0 NVLink3 doubling is undone, and bad files are refused with a useful message.
 * Expected values come from shared/reference/topology-facts.md and fixtures/hwloc/README.md.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/input.h"
#include "core/strbuf.h"
#include "testutil.h"

static enum bk_status read_rel(int shared, const char *rel, struct topo *t, struct diag *d)
{
    char *path = shared ? tu_shared_path(rel) : tu_src_path(rel);
    enum bk_status st = tu_read_file(path, TOPO_FMT_AUTO, NULL, t, d);
    free(path);
    return st;
}

/* `text` with the first `from` replaced by `to`. */
static char *replaced(const char *text, const char *from, const char *to)
{
    const char *hit = strstr(text, from);
    cr_assert(hit, "the text does not contain %s", from);
    return bk_asprintf("%.*s%s%s", (int)(hit - text), text, to, hit + strlen(from));
}

/* A file's text with the first `from` replaced by `to`. */
static char *patched(int shared, const char *rel, const char *from, const char *to)
{
    char *path = shared ? tu_shared_path(rel) : tu_src_path(rel);
    struct input in;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(input_read(path, &in, &d), BK_OK, "cannot read %s", path);
    char *s = replaced(in.data, from, to);
    input_free(&in);
    diag_free(&d);
    free(path);
    return s;
}

static void assert_nvlink(const struct topo *t, const char *a, const char *b, int count,
                          double gbps)
{
    const struct topo_link *ab = tu_link(t, a, b), *ba = tu_link(t, b, a);
    cr_assert(ab && ba, "no link between %s and %s", a, b);
    cr_assert_eq(ab->kind, TOPO_NVLINK, "%s-%s is not NVLink", a, b);
    cr_assert_eq(ab->count, count, "%s-%s: %d links, expected %d", a, b, ab->count, count);
    cr_assert_float_eq(ab->gbps, gbps, 1e-9, "%s-%s: %g GB/s", a, b, ab->gbps);
    cr_assert_float_eq(ba->gbps, gbps, 1e-9);
}

/* -------------------------------------------------------- DGX-1V (topology-facts 4.3/4.4) */

/* The shared checker holds the graph; this adds what an hwloc export records of the real box. */
static void check_dgx1v(void)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(read_rel(0, "topologies/dgx1v.hwloc.xml", &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    cr_assert_eq(d.nwarnings, 0);
    cr_assert_str_eq(t.format, "hwloc");
    cr_assert_str_eq(t.name, "dgx1v");
    tu_expect_dgx1v(&t);

    static const char *const bus[8] = {"0000:06:00.0", "0000:07:00.0", "0000:0a:00.0",
                                       "0000:0b:00.0", "0000:85:00.0", "0000:86:00.0",
                                       "0000:89:00.0", "0000:8a:00.0"};
    for (int g = 0; g < 8; g++) {
        const struct topo_node *n = &t.nodes[topo_gpu_node(&t, g)];
        cr_assert_str_eq(n->busid, bus[g]);
        cr_assert_str_eq(n->model, "Tesla V100-SXM2-16GB");
    }
    /* nicK shares pciswK with GPUs 2K and 2K+1 (checked above), so this puts mlx5_0 beside GPU0
     * and GPU1, and so on, as topology-facts 4.4 has it. */
    static const char *const nic[4] = {"0000:05:00.0", "0000:0c:00.0", "0000:84:00.0",
                                       "0000:8b:00.0"};
    static const char *const nicname[4] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
    char id[16];
    for (int k = 0; k < 4; k++) {
        snprintf(id, sizeof id, "nic%d", k);
        const struct topo_node *n = &t.nodes[tu_node(&t, id)];
        cr_assert_str_eq(n->busid, nic[k], "%s", id);
        cr_assert_str_eq(n->name, nicname[k], "%s", id);
    }
    for (int c = 0; c < 2; c++) {
        snprintf(id, sizeof id, "cpu%d", c);
        cr_assert_str_eq(t.nodes[tu_node(&t, id)].model,
                         "Intel(R) Xeon(R) CPU E5-2698 v4 @ 2.20GHz", "%s", id);
    }
    topo_free(&t);
    diag_free(&d);
}

Test(hwloc, dgx1v_fixture_is_the_reference_graph) { check_dgx1v(); }

/* ---------------------------------------------------------------- DGX-2H (README §nvidiaDGX2) */

static void check_dgx2(void)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(read_rel(1, "fixtures/hwloc/nvidiaDGX2.xml", &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    cr_assert_str_eq(t.name, "NVIDIA DGX-2H");
    cr_assert_eq(tu_count_nodes(&t, TOPO_GPU), 16);
    cr_assert_eq(tu_count_nodes(&t, TOPO_NVSWITCH), 12);
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 2);
    /* 8 leaf PLX switches of two GPUs, two per mid-level switch, two trees per socket. */
    cr_assert_eq(tu_count_nodes(&t, TOPO_PCIE_SWITCH), 12);
    /* 6 links per GPU to its own baseboard's switches, both directions: 16*6*2, plus trunks. */
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 16 * 6 * 2 + 6 * 2);
    char *seen = calloc((size_t)t.nnodes, 1);
    for (int g = 0; g < 16; g++) {
        int node = topo_gpu_node(&t, g), n = 0;
        cr_assert_eq(t.nodes[node].nvlink_gen, 2);
        for (int i = 0; i < t.nlinks; i++) {
            const struct topo_link *l = &t.links[i];
            if (l->src != node || l->kind != TOPO_NVLINK)
                continue;
            cr_assert_eq(t.nodes[l->dst].kind, TOPO_NVSWITCH);
            cr_assert_eq(l->count, 1);
            cr_assert_float_eq(l->gbps, 25.0, 1e-9);
            /* baseboard A switches are 0000:6x:00.0, baseboard B 0000:cx:00.0 */
            cr_assert_eq(t.nodes[l->dst].busid[5], g < 8 ? '6' : 'c');
            seen[l->dst] = 1;
            n++;
        }
        cr_assert_eq(n, 6, "GPU %d has %d NVLinks", g, n);
    }
    int trunks = 0;
    for (int i = 0; i < t.nlinks; i++) {
        const struct topo_link *l = &t.links[i];
        if (t.nodes[l->src].kind == TOPO_NVSWITCH && t.nodes[l->dst].kind == TOPO_NVSWITCH) {
            cr_assert(seen[l->src] && seen[l->dst]);
            cr_assert_eq(l->count, 8);
            cr_assert_float_eq(l->gbps, 200.0, 1e-9);
            cr_assert_neq(t.nodes[l->src].busid[5], t.nodes[l->dst].busid[5]);
            trunks += l->count;
        }
    }
    cr_assert_eq(trunks / 2, 48);
    cr_assert(diag_contains(&d, DIAG_NOTE, "48 NVSwitch trunk NVLinks"));
    /* Connected over NVLink: every GPU reaches gpu0. */
    int *queue = calloc((size_t)t.nnodes, sizeof *queue), head = 0, tail = 0;
    memset(seen, 0, (size_t)t.nnodes);
    queue[tail++] = topo_gpu_node(&t, 0);
    seen[queue[0]] = 1;
    while (head < tail)
        for (int u = queue[head++], i = 0; i < t.nlinks; i++)
            if (t.links[i].src == u && t.links[i].kind == TOPO_NVLINK && !seen[t.links[i].dst])
                seen[queue[tail++] = t.links[i].dst] = 1;
    for (int g = 0; g < 16; g++)
        cr_assert(seen[topo_gpu_node(&t, g)], "GPU %d cut off", g);
    const struct topo_link *smp = tu_link(&t, "cpu0", "cpu1");
    cr_assert(smp);
    cr_assert_float_eq(smp->gbps, 10.0, 1e-9); /* Skylake UPI (Platinum 8174) */
    free(queue);
    free(seen);
    topo_free(&t);
    diag_free(&d);
}

Test(hwloc, dgx2_gets_its_trunks) { check_dgx2(); }

/* ---------------------------------------------------------------- POWER8 Minsky */

static void check_power8(void)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(read_rel(1, "fixtures/hwloc/power8gpudistances.xml", &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    cr_assert_eq(tu_count_nodes(&t, TOPO_GPU), 4); /* cuda, opencl and nvml merged */
    cr_assert_eq(tu_count_nodes(&t, TOPO_CPU), 2);
    static const char *const bus[4] = {"0002:01:00.0", "0003:01:00.0", "000a:01:00.0",
                                       "000b:01:00.0"};
    for (int g = 0; g < 4; g++) {
        const struct topo_node *n = &t.nodes[topo_gpu_node(&t, g)];
        cr_assert_str_eq(n->busid, bus[g]);
        cr_assert_eq(n->nvlink_gen, 1);
        char cpu[8];
        snprintf(cpu, sizeof cpu, "cpu%d", g / 2);
        assert_nvlink(&t, n->id, cpu, 2, 40.0);
        cr_assert_eq(t.nodes[tu_node(&t, cpu)].socket, g / 2);
    }
    assert_nvlink(&t, "gpu0", "gpu1", 2, 40.0);
    assert_nvlink(&t, "gpu2", "gpu3", 2, 40.0);
    cr_assert_null(tu_link(&t, "gpu0", "gpu2"));
    cr_assert_null(tu_link(&t, "gpu1", "gpu3"));
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 2 * (2 + 4));
    const struct topo_link *smp = tu_link(&t, "cpu0", "cpu1");
    cr_assert(smp && smp->kind == TOPO_SMP);
    cr_assert_float_eq(smp->gbps, 32.0, 1e-9); /* POWER */
    topo_free(&t);
    diag_free(&d);
}

Test(hwloc, power8_gpu_cpu_nvlinks) { check_power8(); }

/* hwloc reads HWLOC_LIBXML_IMPORT once per process; Criterion runs each test in its own. */
Test(hwloc, minimal_xml_parser)
{
    cr_assert_eq(setenv("HWLOC_LIBXML_IMPORT", "0", 1), 0);
    check_dgx1v();
    check_dgx2();
    check_power8();
    /* That parser stops at comments; the reader blanks them first. */
    char *s = patched(0, "topologies/dgx1v.hwloc.xml", "<topology version=\"2.0\">",
                      "<topology version=\"2.0\">\n  <!-- <object type=\"Brodge\"/> -->");
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("commented.xml", s, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    cr_assert_eq(tu_count_nodes(&t, TOPO_GPU), 8);
    topo_free(&t);
    diag_free(&d);
    free(s);
}

Test(hwloc, libxml2_parser)
{
    cr_assert_eq(setenv("HWLOC_LIBXML_IMPORT", "1", 1), 0);
    check_dgx1v();
    check_dgx2();
    check_power8();
}

/* ---------------------------------------------------------------- NVLink3 doubling */

/* Two GPUs called `model` and six NVSwitches as on a DGX A100; `mbs` MB/s per GPU-switch
 * pair. */
static char *board(const char *version, unsigned mbs, const char *model)
{
    struct strbuf sb;
    sb_init(&sb);
    const char *set = "cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\" "
                      "complete_nodeset=\"0x1\"";
    sb_printf(&sb,
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM "
              "\"hwloc2.dtd\">\n<topology version=\"2.0\">\n"
              " <object type=\"Machine\" os_index=\"0\" %s allowed_cpuset=\"0x1\" "
              "allowed_nodeset=\"0x1\" gp_index=\"1\">\n"
              "  <info name=\"hwlocVersion\" value=\"%s\"/>\n"
              "  <object type=\"Package\" os_index=\"0\" %s gp_index=\"2\">\n"
              "   <info name=\"CPUVendor\" value=\"AuthenticAMD\"/>\n"
              "   <object type=\"NUMANode\" os_index=\"0\" %s gp_index=\"3\" "
              "local_memory=\"1073741824\"/>\n"
              "   <object type=\"PU\" os_index=\"0\" %s gp_index=\"4\"/>\n"
              "   <object type=\"Bridge\" gp_index=\"5\" bridge_type=\"0-1\" depth=\"0\" "
              "bridge_pci=\"0000:[00-ff]\">\n",
              set, version, set, set, set);
    for (int g = 0; g < 2; g++)
        sb_printf(&sb,
                  "    <object type=\"PCIDev\" gp_index=\"%d\" pci_busid=\"0000:%02x:00.0\" "
                  "pci_type=\"0302 [10de:20b0] [10de:134f] a1\" pci_link_speed=\"31.507692\">\n"
                  "     <object type=\"OSDev\" gp_index=\"%d\" name=\"nvml%d\" subtype=\"NVML\" "
                  "osdev_type=\"1\">\n"
                  "      <info name=\"GPUModel\" value=\"%s\"/>\n"
                  "     </object>\n    </object>\n",
                  10 + g, 7 + 8 * g, 20 + g, g, model);
    for (int s = 0; s < 6; s++)
        sb_printf(&sb,
                  "    <object type=\"PCIDev\" gp_index=\"%d\" subtype=\"NVSwitch\" "
                  "pci_busid=\"0000:%02x:00.0\" pci_type=\"0680 [10de:1af1] [10de:1652] a1\" "
                  "pci_link_speed=\"0.000000\"/>\n",
                  30 + s, 0xc4 + s);
    sb_puts(&sb, "   </object>\n  </object>\n </object>\n"
                 " <distances2hetero nbobjs=\"8\" kind=\"25\" name=\"NVLinkBandwidth\">\n");
    struct strbuf v;
    sb_init(&v);
    sb_puts(&v, "OSDev:20 OSDev:21 ");
    for (int s = 0; s < 6; s++)
        sb_printf(&v, "PCIDev:%d ", 30 + s);
    sb_printf(&sb, "  <indexes length=\"%zu\">%s</indexes>\n", v.len, v.data);
    v.len = 0;
    for (int k = 0; k < 64; k++) {
        int i = k / 8, j = k % 8;
        unsigned x = i == j ? 1000000 : (i < 2) != (j < 2) ? mbs : 0;
        sb_printf(&v, "%u ", x);
        if (k % 10 == 9 || k == 63) { /* hwloc writes at most 10 numbers per element */
            sb_printf(&sb, "  <u64values length=\"%zu\">%s</u64values>\n", v.len, v.data);
            v.len = 0;
        }
    }
    sb_free(&v);
    sb_puts(&sb, " </distances2hetero>\n</topology>\n");
    return sb_take(&sb);
}

static char *a100(const char *version, unsigned mbs)
{
    return board(version, mbs, "NVIDIA A100-SXM4-40GB");
}

static void check_a100(const char *version, unsigned mbs, int links, int warns)
{
    char *s = a100(version, mbs);
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("a100.xml", s, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    cr_assert_eq(tu_count_nodes(&t, TOPO_NVSWITCH), 6);
    cr_assert_eq(tu_count_links(&t, TOPO_NVLINK), 2 * 2 * 6); /* no trunks: one baseboard */
    for (int g = 0; g < 2; g++) {
        char a[8], b[8];
        snprintf(a, sizeof a, "gpu%d", g);
        cr_assert_eq(t.nodes[tu_node(&t, a)].nvlink_gen, 3);
        for (int s6 = 0; s6 < 6; s6++) {
            snprintf(b, sizeof b, "nvs%d", s6);
            assert_nvlink(&t, a, b, links, 25.0 * links);
        }
    }
    cr_assert_eq(diag_contains(&d, DIAG_WARNING, "doubled NVLink3"), warns);
    topo_free(&t);
    diag_free(&d);
    free(s);
}

Test(hwloc, nvlink3_doubling_undone)
{
    check_a100("2.9.0", 100000, 2, 0);   /* Debian 12's hwloc: 50000 per link */
    check_a100("2.9.1", 50000, 2, 0);    /* fixed */
    check_a100("2.9.1", 100000, 4, 0);   /* fixed, so 100000 really is 4 links */
    check_a100("PR-1-20210101", 100000, 2, 1); /* unknown: 24 links > 12 gives it away */
    check_a100("PR-1-20210101", 50000, 2, 0);

    /* An H800 has 8 NVLinks, not NVLink4's 18: 12 links at 25000 MB/s give the doubling away,
       and every link runs at the part's rate. */
    char *s = board("PR-1-20210101", 50000, "NVIDIA H800");
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("h800.xml", s, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    assert_nvlink(&t, "gpu0", "nvs0", 1, 25.0);
    cr_assert(diag_contains(&d, DIAG_WARNING, "but H800 GPUs have 8"));
    cr_assert_str_eq(t.nodes[0].part->name, "H800");
    topo_free(&t), diag_free(&d), free(s);

    /* hwloc writes a GA102 link as 25000 MB/s like any NVLink3 link; its rate is the part's. */
    s = board("2.9.1", 25000, "NVIDIA RTX A6000");
    diag_init(&d);
    cr_assert_eq(tu_read_string("a6000.xml", s, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK, "%s",
                 diag_first_error(&d));
    assert_nvlink(&t, "gpu1", "nvs5", 1, 14.0625);
    topo_free(&t), diag_free(&d), free(s);
}

/* ---------------------------------------------------------------- refused inputs */

static void assert_refused(const char *text, const char *needle, int line)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_neq(tu_read_string("bad.xml", text, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK);
    const char *e = diag_first_error(&d);
    cr_assert(e && strstr(e, needle), "error '%s' lacks '%s'", e ? e : "(none)", needle);
    for (size_t i = 0; line && i < d.n; i++)
        if (d.msgs[i].level == DIAG_ERROR)
            cr_assert_eq(d.msgs[i].loc.line, line, "line %d, expected %d: %s",
                         d.msgs[i].loc.line, line, d.msgs[i].text);
    diag_free(&d);
}

Test(hwloc, version_3_refused)
{
    char *s = patched(1, "fixtures/hwloc/nvidiaDGX2.xml", "version=\"2.0\">", "version=\"3.0\">");
    assert_refused(s, "<topology version=\"3.0\">: hwloc XML version 3.0 is not supported", 3);
    free(s);
}

Test(hwloc, hwloc1_refused)
{
    assert_refused("<?xml version=\"1.0\"?>\n<topology>\n <object type=\"Machine\" "
                   "os_index=\"0\" cpuset=\"0x1\"/>\n</topology>\n",
                   "hwloc 1.x", 2);
}

Test(hwloc, entity_refused)
{
    assert_refused("<?xml version=\"1.0\"?>\n<!DOCTYPE topology [\n<!ENTITY a \"aaaa\">\n]>\n"
                   "<topology version=\"2.0\">&a;</topology>\n",
                   "entity", 3);
}

Test(hwloc, malformed_xml_refused_with_position)
{
    assert_refused("<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n <object type=Machine/>\n"
                   "</topology>\n",
                   "malformed XML", 3);
}

Test(hwloc, non_multiple_nvlink_refused)
{
    char *s = a100("2.9.1", 30000);
    assert_refused(s, "30000 MB/s, not a whole number of NVLink3 links", 0);
    free(s);
    s = patched(0, "topologies/dgx1v.hwloc.xml", "\">1000000 25000 25000 50000 50000",
                "\">1000000 25000 25000 40000 50000");
    assert_refused(s, "not symmetric", 290);
    free(s);
}

Test(hwloc, bad_matrix_and_sizes_refused)
{
    char *s = patched(1, "fixtures/hwloc/power8gpudistances.xml", "OSDev:332", "OSDev:999");
    assert_refused(s, "lists 6 objects but only 5", 215);
    free(s);
    /* hwloc would try to allocate nbobjs^2 values (32 GiB here) before reading them. */
    s = patched(0, "topologies/dgx1v.hwloc.xml", "nbobjs=\"8\" kind=\"9\"",
                "nbobjs=\"65536\" kind=\"9\"");
    assert_refused(s, "/topology/distances2[2]: nbobjs=\"65536\" is not a count the file", 290);
    free(s);
    /* ... or a 512 MiB CPU bitmap for one PU. */
    s = patched(0, "topologies/dgx1v.hwloc.xml", "type=\"PU\" os_index=\"0\"",
                "type=\"PU\" os_index=\"4294967295\"");
    assert_refused(s, "<object type=\"PU\" os_index=\"4294967295\">: no machine", 34);
    free(s);
}

/* Inputs libhwloc 2.9 crashes or leaks on, refused first by hwloc_precheck.c with the element's
 * line (tests/fuzz/regress/hwloc/ holds whole files; docs/hardening.md F1-F7). */
Test(hwloc, libhwloc_traps_refused)
{
    static const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"<info name=\"Inclusive\" value=\"1\"/>", "<inf name=\"Inclusive\" value=\"1\"/>",
         "<inf> inside <object>: hwloc reads only"},
        {"<info name=\"Inclusive\" value=\"1\"/>", "<info name=\"Inclusive\" value=\"1\" x=\"\"/>",
         "<info> has an attribute 'x' hwloc does not read"},
        {"<info name=\"Inclusive\" value=\"1\"/>", "<page_type size=\"4096\" count=\"0\"/>",
         "<page_type> inside <object type=\"L3Cache\">: hwloc accepts page types only"},
        {"<info name=\"Inclusive\" value=\"1\"/>", "<userdata length=\"4\">abc</userdata>",
         "<userdata> holds other text, not the 4 characters"},
        {"<info name=\"Inclusive\" value=\"1\"/>", "<info name=\"Inclusive\" value=\"1\">1</info>",
         "<info> has content"},
        {"cache_type=\"0\">\n        <info name=\"Inclusive\" value=\"1\"/>",
         "cache_type=\"0\">\n        text", "<object> holds text"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = patched(0, "topologies/dgx1v.hwloc.xml", cases[i].from, cases[i].to);
        assert_refused(s, cases[i].needle, 0);
        free(s);
    }
    /* Both crash blinkc without the checks: an assertion (abort) and a NULL dereference. */
    char *s = patched(0, "topologies/dgx1v.hwloc.xml", "complete_cpuset=\"0x30000300,0x00300003\"",
                      "complete_cpuset=\",0x30000300,0x00300003\"");
    assert_refused(s, "complete_cpuset=\",0x30000300,0x00300003\" is not a bitmap", 4);
    free(s);
    s = patched(0, "topologies/dgx1v.hwloc.xml", "allowed_cpuset=\"0x30000300,0x00300003\"",
                "allowed_cpuset=\"0x0\"");
    assert_refused(s, "no <object type=\"PU\"> is in the top-level object's allowed_cpuset", 0);
    free(s);
}

/* blinkc's stderr for `text` holds only its own diagnostics: hwloc must never print. */
static void assert_only_diagnostics(const char *text, int status, const char *needle)
{
    char *path = tu_temp_file(".xml", text, strlen(text));
    cr_assert(path);
    struct tu_run r;
    const char *args[] = {"--print-topology", path, NULL};
    tu_run_blinkc(&r, args);
    cr_assert_eq(r.status, status, "exit %d: %s", r.status, r.err);
    cr_assert(!needle || strstr(r.err, needle), "%s", r.err);
    for (const char *l = r.err; *l; l++) {
        cr_assert_eq(strncmp(l, "blinkc: ", 8), 0, "stray stderr line: %s", l);
        if (!(l = strchr(l, '\n')))
            break;
    }
    tu_run_free(&r);
    unlink(path);
    free(path);
}

Test(hwloc, hwloc_stays_silent)
{
    /* hwloc rejects an unknown object type; it would say why only with HWLOC_XML_VERBOSE. */
    char *s = patched(1, "fixtures/hwloc/power8gpudistances.xml", "type=\"Bridge\"",
                      "type=\"Brodge\"");
    assert_only_diagnostics(s, 1, "hwloc 2.9 could not import");
    free(s);
    /* Two PUs out of order: hwloc loads it but prints a banner unless told to hide errors. */
    static const char *const pu0 = "os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset="
                                   "\"0x00000001\" nodeset=\"0x00000001\" complete_nodeset="
                                   "\"0x00000001\" gp_index=\"108\"";
    static const char *const pu40 = "os_index=\"40\" cpuset=\"0x00000100,0x0\" complete_cpuset="
                                    "\"0x00000100,0x0\" nodeset=\"0x00000001\" complete_nodeset="
                                    "\"0x00000001\" gp_index=\"109\"";
    s = patched(0, "topologies/dgx1v.hwloc.xml", pu40, pu0);
    char *swapped = replaced(s, pu0, pu40); /* PU 40 now comes before PU 0 */
    assert_only_diagnostics(swapped, 0, NULL);
    free(swapped);
    free(s);
}

/* NVIDIA GPUs exported through OpenCL only: no NVLinkBandwidth matrix. The NVLinks are unknown,
 * not absent, and the warning says so and how to get them; with NVML and no matrix the old,
 * milder warning stays. */
Test(hwloc, nvidia_gpus_without_nvml_warn_that_nvlinks_are_unknown)
{
    char *path = tu_src_path("topologies/dgx1v.hwloc.xml");
    char *text = tu_slurp(path, NULL);
    cr_assert_not_null(text);
    struct strbuf sb;
    sb_init(&sb);
    const char *p = text, *hit;
    while ((hit = strstr(p, "name=\"nvml"))) { /* nvmlN (NVML) -> opencl0dN (OpenCL) */
        sb_printf(&sb, "%.*sname=\"opencl0d%c\" subtype=\"OpenCL\"", (int)(hit - p), p, hit[10]);
        p = strstr(hit, "subtype=\"NVML\"") + strlen("subtype=\"NVML\"");
    }
    sb_puts(&sb, p);
    const char *from = strstr(sb.data, "<distances2 type=\"OSDev\"");
    cr_assert_not_null(from);
    const char *to = strstr(from, "</distances2>") + strlen("</distances2>");
    char *ocl = bk_asprintf("%.*s%s", (int)(from - sb.data), sb.data, to);
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("ocl.xml", ocl, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK,
                 "%s", diag_first_error(&d));
    cr_expect_eq(t.ngpus, 8);
    cr_expect(diag_contains(&d, DIAG_WARNING, "NVLinks unknown: these 8 NVIDIA GPUs were "
                                              "exported without NVML"), "no loud warning");
    cr_expect(diag_contains(&d, DIAG_WARNING, "libhwloc-contrib-plugins"));
    for (int i = 0; i < t.nlinks; i++)
        cr_expect_neq(t.links[i].kind, TOPO_NVLINK, "an NVLink out of nowhere");
    topo_free(&t);
    diag_free(&d);
    /* With NVML and no matrix: the PCIe-only warning. */
    char *nvml = bk_asprintf("%.*s%s", (int)(strstr(text, "<distances2 type=\"OSDev\"") - text),
                             text, strstr(strstr(text, "<distances2 type=\"OSDev\""),
                                          "</distances2>") + strlen("</distances2>"));
    diag_init(&d);
    cr_assert_eq(tu_read_string("nvml.xml", nvml, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK);
    cr_expect(diag_contains(&d, DIAG_WARNING, "no NVLinkBandwidth matrix"));
    cr_expect_not(diag_contains(&d, DIAG_WARNING, "NVLinks unknown"));
    topo_free(&t);
    diag_free(&d);
    sb_free(&sb);
    free(path), free(text), free(ocl), free(nvml);
}
