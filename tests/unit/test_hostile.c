/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_hostile.c - hostile input for every reader (.topo text, hwloc XML, NCCL XML, nvidia-smi
 * topo -m), beyond test_badinput's catalogue: 100,000-node inputs and 100,000-deep XML nesting
 * (read or refused within a few seconds), huge numbers (1e308, 1e400, 20-digit counts), NaN and
 * infinite bandwidths, and names that are not UTF-8 or hold control or bidi characters. Each is
 * refused with a diagnostic that has a line (or names the XML element), or, where accepted,
 * reaches the plan JSON and the generated code only escaped. Inputs are generated here.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emit/emit.h"
#include "out/plan_json.h"
#include "core/strbuf.h"
#include "testutil.h"

/* A reader must answer a 100k-node input within this, in every build: a quadratic reader takes
 * minutes, and sanitizers on busy cores need room (10 s failed once at 10.3 s under ASan). */
#define BIG_SECONDS 30.0
#define BIG 100000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read `text` as `fmt`; returns the status, d holds the diagnostics, *secs the time taken. */
static enum bk_status read_timed(const char *name, const char *text, enum topo_format fmt,
                                 struct topo *t, struct diag *d, double *secs)
{
    diag_init(d);
    double t0 = now();
    enum bk_status st = tu_read_string(name, text, fmt, "V100", t, d);
    *secs = now() - t0;
    return st;
}

/* Refused with an error that carries a line, or names an XML element, and contains `what`. */
static void expect_refused_at(const char *name, const char *text, enum topo_format fmt,
                              const char *what, int need_loc)
{
    struct topo t;
    struct diag d;
    double secs;
    enum bk_status st = read_timed(name, text, fmt, &t, &d, &secs);
    const char *e = diag_first_error(&d);
    cr_assert_neq(st, BK_OK, "%s: accepted, expected an error with '%s'", name, what);
    cr_assert_not_null(e, "%s: refused without a diagnostic", name);
    cr_expect(strstr(e, what), "%s: expected '%s' in: %s", name, what, e);
    int located = 0;
    for (size_t i = 0; i < d.n; i++)
        if (d.msgs[i].level == DIAG_ERROR)
            located |= d.msgs[i].loc.line > 0 || strchr(d.msgs[i].text, '<') != NULL;
    cr_expect(located || !need_loc, "%s: the error gives no line or element: %s", name, e);
    diag_free(&d);
}

static void expect_refused(const char *name, const char *text, enum topo_format fmt,
                           const char *what)
{
    expect_refused_at(name, text, fmt, what, 1);
}

/* ---------------------------------------------------------------- generators */

/* .topo: n GPUs in an NVLink ring (names gN). */
static char *text_ring(int n)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "topology ring\n");
    for (int i = 0; i < n; i++)
        sb_printf(&sb, "gpu g%d model=V100\n", i);
    for (int i = 0; i < n; i++)
        sb_printf(&sb, "link g%d g%d\n", i, (i + 1) % n);
    return sb_take(&sb);
}

/* NCCL XML: one <cpu> with n GPUs, each on its own <pci>, each GPU NVLinked to the next. */
static char *nccl_gpus(int n, const char *sysattr, const char *nvcount)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "<system version=\"1\"%s>\n<cpu numaid=\"0\" arch=\"x86_64\">\n", sysattr);
    for (int i = 0; i < n; i++)
        sb_printf(&sb,
                  "<pci busid=\"%04x:%02x:00.0\" class=\"0x030200\" link_speed=\"8.0 GT/s PCIe\" "
                  "link_width=\"16\"><gpu dev=\"%d\" sm=\"70\"><nvlink target=\"%04x:%02x:00.0\" "
                  "count=\"%s\" tclass=\"0x030200\"/></gpu></pci>\n",
                  i >> 8, i & 255, i, ((i + 1) % n) >> 8, ((i + 1) % n) & 255, nvcount);
    sb_puts(&sb, "</cpu>\n</system>\n");
    return sb_take(&sb);
}

/* nvidia-smi topo -m: n GPUs, every pair PIX, with a NIC legend line for names. */
static char *smi_matrix(int n, const char *cell01, const char *nicname)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "\t");
    for (int i = 0; i < n; i++)
        sb_printf(&sb, "GPU%d\t", i);
    sb_puts(&sb, nicname ? "NIC0\tCPU Affinity\tNUMA Affinity\n" : "CPU Affinity\tNUMA Affinity\n");
    for (int r = 0; r < n + (nicname ? 1 : 0); r++) {
        if (r < n)
            sb_printf(&sb, "GPU%d\t", r);
        else
            sb_puts(&sb, "NIC0\t");
        for (int c = 0; c < n + (nicname ? 1 : 0); c++)
            sb_printf(&sb, "%s\t", r == c ? "X" : (r + c == 1 && r < 2) ? cell01 : "PIX");
        sb_puts(&sb, r < n ? "0-7\t0\n" : "\n");
    }
    if (nicname)
        sb_printf(&sb, "\nNIC Legend:\n\n  NIC0: %s\n", nicname);
    return sb_take(&sb);
}

/* ---------------------------------------------------------------- 100,000 nodes */

Test(hostile, text_hundred_thousand_gpus, .timeout = 120)
{
    char *s = text_ring(BIG);
    struct topo t;
    struct diag d;
    double secs;
    enum bk_status st = read_timed("big.topo", s, TOPO_FMT_TEXT, &t, &d, &secs);
    cr_log_info("100,000-GPU .topo: read in %.2f s", secs);
    cr_expect_lt(secs, BIG_SECONDS, "100,000 GPUs took %.1f s to read", secs);
    cr_assert_eq(st, BK_OK, "%s", diag_first_error(&d));
    cr_expect_eq(t.ngpus, BIG);
    topo_free(&t);
    diag_free(&d);
    free(s);
}

Test(hostile, nccl_hundred_thousand_gpus, .timeout = 120)
{
    char *s = nccl_gpus(BIG, "", "2");
    struct topo t;
    struct diag d;
    double secs;
    enum bk_status st = read_timed("big.xml", s, TOPO_FMT_NCCL, &t, &d, &secs);
    cr_log_info("100,000-GPU NCCL XML (%zu bytes): %s in %.2f s", strlen(s),
                st == BK_OK ? "read" : "refused", secs);
    cr_expect_lt(secs, BIG_SECONDS, "took %.1f s", secs);
    if (st == BK_OK) {
        cr_expect_eq(t.ngpus, BIG);
        topo_free(&t);
    } else {
        cr_expect_not_null(diag_first_error(&d));
    }
    diag_free(&d);
    free(s);
}

/* libhwloc 2.9 inserts each I/O object by walking its siblings: 100,000 PCI devices under one
 * bridge would take about 90 s inside hwloc_topology_load (quadratic); the pre-check refuses
 * more than 16,384 objects before hwloc sees the file. */
#define HWLOC_BIG 100000

Test(hostile, hwloc_many_objects, .timeout = 120)
{
    /* HWLOC_BIG PCI devices under one host bridge: more objects than any machine has. */
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM "
                 "\"hwloc2.dtd\">\n<topology version=\"2.0\">\n<object type=\"Machine\" "
                 "os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" allowed_cpuset=\"0x1\" "
                 "nodeset=\"0x1\" complete_nodeset=\"0x1\" allowed_nodeset=\"0x1\" gp_index=\"1\">\n"
                 "<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" "
                 "nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"2\" local_memory=\"1\"/>\n"
                 "<object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" "
                 "nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"3\"/>\n"
                 "<object type=\"Bridge\" gp_index=\"4\" bridge_type=\"0-1\" depth=\"0\" "
                 "bridge_pci=\"0000:[00-ff]\">\n");
    for (int i = 0; i < HWLOC_BIG; i++)
        sb_printf(&sb, "<object type=\"PCIDev\" gp_index=\"%d\" pci_busid=\"%04x:%02x:%02x.%d\" "
                       "pci_type=\"0200 [8086:1521] [8086:0001] 01\" pci_link_speed=\"1\"/>\n",
                  10 + i, i >> 13, (i >> 5) & 255, i & 31, 0);
    sb_puts(&sb, "</object>\n</object>\n</topology>\n");
    struct topo t;
    struct diag d;
    double secs;
    enum bk_status st = read_timed("big.hwloc.xml", sb.data, TOPO_FMT_HWLOC, &t, &d, &secs);
    cr_log_info("%d-object hwloc XML: %s in %.2f s: %s", HWLOC_BIG, st == BK_OK ? "read" : "refused",
                secs, diag_first_error(&d) ? diag_first_error(&d) : "");
    cr_expect_lt(secs, BIG_SECONDS, "took %.1f s", secs);
    cr_expect_neq(st, BK_OK);
    cr_expect(diag_first_error(&d) && strstr(diag_first_error(&d), "more than 16384 objects"),
              "%s", diag_first_error(&d) ? diag_first_error(&d) : "no message");
    if (st == BK_OK)
        topo_free(&t);
    diag_free(&d);
    sb_free(&sb);
}

Test(hostile, smi_hundred_thousand_columns, .timeout = 60)
{
    /* The header alone: 100,000 GPU columns (a full matrix would be 10^10 cells). */
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "\t");
    for (int i = 0; i < BIG; i++)
        sb_printf(&sb, "GPU%d\t", i);
    sb_puts(&sb, "CPU Affinity\tNUMA Affinity\nGPU0\tX\tNV2\n");
    expect_refused("big.smi.txt", sb.data, TOPO_FMT_SMI, "columns");
    sb_free(&sb);
}

/* ---------------------------------------------------------------- deep nesting */

static char *nested(const char *head, const char *open, const char *close, const char *tail,
                    int depth)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, head);
    for (int i = 0; i < depth; i++)
        sb_puts(&sb, open);
    for (int i = 0; i < depth; i++)
        sb_puts(&sb, close);
    sb_puts(&sb, tail);
    return sb_take(&sb);
}

Test(hostile, deep_xml_nesting_is_refused, .timeout = 60)
{
    char *s = nested("<system version=\"1\">\n<cpu numaid=\"0\">\n",
                     "<pci busid=\"0000:01:00.0\" class=\"0x060400\">", "</pci>",
                     "\n</cpu>\n</system>\n", BIG);
    expect_refused("deep.xml", s, TOPO_FMT_NCCL, "depth");
    free(s);
    s = nested("<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n",
               "<object type=\"Group\">", "</object>", "\n</topology>\n", BIG);
    expect_refused("deep.hwloc.xml", s, TOPO_FMT_HWLOC, "depth");
    free(s);
    /* Unknown elements are skipped with their subtree: deep nesting there too. */
    s = nested("<system version=\"1\">\n", "<x>", "</x>", "\n</system>\n", BIG);
    expect_refused("deep-unknown.xml", s, TOPO_FMT_NCCL, "depth");
    free(s);
}

/* ---------------------------------------------------------------- numbers */

Test(hostile, text_huge_and_non_finite_numbers)
{
    const char *head = "gpu a model=V100\ngpu b model=V100\n";
    static const char *const bad[][2] = {
        {"link a b bw=1e308\n", "absurd"},
        {"link a b bw=1e400\n", ""},
        {"link a b bw=1e400GB/s\n", ""},
        {"link a b bw=-inf\n", ""},
        {"link a b bw=NaN\n", ""},
        {"link a b bw=infinity\n", ""},
        {"link a b bw=0x1p2000\n", ""},
        {"link a b bw=1e-400\n", ""},
        {"link a b count=99999999999999999999\n", ""},
        {"link a b count=1e400\n", ""},
        {"link a b gen=99999999999999999999\n", ""},
        {"link a b kind=pcie gen=99999999999999999999\n", ""},
        {"link a b kind=pcie width=99999999999999999999\n", ""},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(bad); i++) {
        char *text = bk_asprintf("%s%s", head, bad[i][0]);
        expect_refused("num.topo", text, TOPO_FMT_TEXT, bad[i][1]);
        free(text);
    }
#define NIC_FMT "gpu a model=V100\ngpu b model=V100\nlink a b\nnic n speed=%s\nlink a n kind=pcie\n"
    static const char *const speeds[] = {"1e400Gb/s", "nanGb/s", "infGb/s",
                                         "99999999999999999999Gb/s"};
    for (size_t i = 0; i < BK_ARRAY_LEN(speeds); i++) {
        char *text = bk_asprintf(NIC_FMT, speeds[i]);
        expect_refused("nic.topo", text, TOPO_FMT_TEXT, "");
        free(text);
    }
    expect_refused("srv.topo", "gpu a server=99999999999999999999 model=V100\n", TOPO_FMT_TEXT,
                   "");
}

Test(hostile, nccl_huge_and_non_finite_numbers)
{
    /* nvlink count=99999999999999999999 is in test_nccl; the other numeric attributes here. */
    static const char *const attrs[][2] = {
        {"link_speed=\"1e400 GT/s PCIe\"", "link_speed"},
        {"link_speed=\"nan GT/s PCIe\"", "link_speed"},
        {"link_speed=\"inf GT/s PCIe\"", "link_speed"},
        {"link_width=\"99999999999999999999\"", "link_width"},
        {"link_width=\"nan\"", "link_width"},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(attrs); i++) {
        char *s = bk_asprintf("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci "
                              "busid=\"0000:01:00.0\" class=\"0x060400\" %s>\n<pci "
                              "busid=\"0000:02:00.0\" class=\"0x030200\"><gpu dev=\"0\" "
                              "sm=\"70\"/></pci>\n</pci>\n</cpu>\n</system>\n",
                              attrs[i][0]);
        expect_refused("num.xml", s, TOPO_FMT_NCCL, attrs[i][1]);
        free(s);
    }
    static const char *const gpu[] = {"dev=\"99999999999999999999\" sm=\"70\"",
                                      "dev=\"0\" sm=\"99999999999999999999\"",
                                      "dev=\"0\" sm=\"nan\""};
    for (size_t i = 0; i < BK_ARRAY_LEN(gpu); i++) {
        char *s = bk_asprintf("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci "
                              "busid=\"0000:02:00.0\" class=\"0x030200\">\n<gpu %s/></pci>\n"
                              "</cpu>\n</system>\n",
                              gpu[i]);
        expect_refused("gpu.xml", s, TOPO_FMT_NCCL, "");
        free(s);
    }
    static const char *const net[] = {"1e400", "nan", "inf", "-1", "99999999999999999999"};
    for (size_t i = 0; i < BK_ARRAY_LEN(net); i++) {
        char *s = bk_asprintf("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci "
                              "busid=\"0000:02:00.0\" class=\"0x030200\"><gpu dev=\"0\" "
                              "sm=\"70\"/></pci>\n<pci busid=\"0000:03:00.0\" class=\"0x020700\">"
                              "<nic>\n<net name=\"mlx5_0\" dev=\"0\" speed=\"%s\"/></nic></pci>\n"
                              "</cpu>\n</system>\n",
                              net[i]);
        expect_refused("net.xml", s, TOPO_FMT_NCCL, "speed");
        free(s);
    }
    expect_refused("numa.xml",
                   "<system version=\"1\">\n<cpu numaid=\"99999999999999999999\"/>\n</system>\n",
                   TOPO_FMT_NCCL, "numaid");
}

Test(hostile, smi_huge_numbers)
{
    static const char *const cells[] = {"NV99999999999999999999", "NV1e400", "NVnan", "NV-1"};
    for (size_t i = 0; i < BK_ARRAY_LEN(cells); i++) {
        char *s = smi_matrix(2, cells[i], NULL);
        expect_refused("num.smi.txt", s, TOPO_FMT_SMI, "");
        free(s);
    }
}

Test(hostile, hwloc_huge_and_non_finite_matrix_values)
{
    /* The DGX-1V fixture's NVLinkBandwidth matrix starts "1000000 25000 25000 50000 50000". */
    static const char *const vals[] = {"99999999999999999999", "1e308", "1e400", "nan", "inf",
                                       "-25000"};
    char *path = tu_src_path("topologies/dgx1v.hwloc.xml");
    char *orig = tu_slurp(path, NULL);
    cr_assert_not_null(orig);
    const char *from = "\">1000000 25000 25000 50000 50000";
    const char *hit = strstr(orig, from);
    cr_assert_not_null(hit);
    for (size_t i = 0; i < BK_ARRAY_LEN(vals); i++) {
        char *s = bk_asprintf("%.*s\">1000000 %s 25000 50000 50000%s", (int)(hit - orig), orig,
                              vals[i], hit + strlen(from));
        /* Refused inside libhwloc's import, whose failure blinkc cannot place (known gap). */
        expect_refused_at("num.hwloc.xml", s, TOPO_FMT_HWLOC, "", 0);
        free(s);
    }
    free(orig);
    free(path);
}

/* ---------------------------------------------------------------- names */

/* Accepted hostile names: plan the topology and check that the JSON and the generated code hold
 * them only escaped (printable ASCII code that compiles; UTF-8 JSON without raw controls). */
static void expect_escaped_everywhere(const char *name, const char *text, enum topo_format fmt,
                                      const char *needle)
{
    struct topo t;
    struct diag d;
    double secs;
    cr_assert_eq(read_timed(name, text, fmt, &t, &d, &secs), BK_OK, "%s: %s", name,
                 diag_first_error(&d) ? diag_first_error(&d) : "?");
    int seen = strstr(t.name, needle) != NULL;
    for (int i = 0; i < t.nnodes; i++)
        seen |= strstr(t.nodes[i].name, needle) || (t.nodes[i].model && strstr(t.nodes[i].model,
                                                                                  needle));
    cr_assert(seen, "%s: the hostile text did not reach the model", name);
    struct plan_opts o;
    plan_opts_default(&o);
    o.collectives = 1u << COLL_BROADCAST;
    o.root = 0;
    struct plan_set ps;
    cr_assert_eq(plan_all(&t, &o, &ps, &d), BK_OK, "%s: plan", name);
    struct strbuf js, code;
    sb_init(&js), sb_init(&code);
    plan_json_render(&js, &t, &ps);
    cr_assert_eq(emit_render(&code, &(struct emit_alloc){&t, &ps, 0, NULL}, 1, NULL, &d), BK_OK);
    for (const unsigned char *p = (const unsigned char *)js.data; *p; p++)
        cr_assert(*p >= 0x20 || *p == '\n', "%s: raw byte %#x in the JSON", name, *p);
    for (const unsigned char *p = (const unsigned char *)code.data; *p; p++)
        cr_assert((*p >= 0x20 && *p < 0x7f) || *p == '\n', "%s: byte %#x in the code", name, *p);
    char *src = tu_temp_file(".c", code.data, code.len);
    char *inc = tu_src_path("runtime/include");
    struct tu_run r;
    tu_run_argv(&r, (const char *const[]){"cc", "-std=c11", "-Wall", "-Werror", "-Wtrigraphs",
                                          "-fsyntax-only", "-x", "c", "-I", inc, src, NULL});
    cr_expect_eq(r.status, 0, "%s: cc: %s", name, r.err);
    tu_run_free(&r);
    unlink(src);
    free(src), free(inc);
    sb_free(&js), sb_free(&code);
    plan_set_free(&ps);
    topo_free(&t);
    diag_free(&d);
}

static const char *const bad_bytes[][2] = {
    {"\xff\xfe", "UTF-8"},   {"\xc0\x80", "UTF-8"}, {"\xed\xa0\x80", "UTF-8"},
    {"a\x01" "b", "control"}, {"a\x1b[31m", "control"},
};

Test(hostile, text_names)
{
    /* Refused: invalid UTF-8 and control bytes, in names, quoted names and models. */
    for (size_t i = 0; i < BK_ARRAY_LEN(bad_bytes); i++) {
        const char *b = bad_bytes[i][0];
        char *forms[] = {bk_asprintf("topology %s\ngpu a\ngpu b\nlink a b\n", b),
                         bk_asprintf("topology \"x%sy\"\ngpu a\ngpu b\nlink a b\n", b),
                         bk_asprintf("gpu a%s\ngpu b\nlink a%s b\n", b, b),
                         bk_asprintf("gpu a model=\"V100 %s\"\ngpu b\nlink a b\n", b)};
        for (size_t k = 0; k < BK_ARRAY_LEN(forms); k++) {
            expect_refused("names.topo", forms[k], TOPO_FMT_TEXT, "");
            free(forms[k]);
        }
    }
    /* Accepted: quotes, backslashes, trigraphs, comment closers, bidi controls. */
    expect_escaped_everywhere("names.topo",
                              "topology \"HOSTILE \\\" \\\\ ?\?/ */ \xe2\x80\xae\"\n"
                              "gpu \"g\\\"0 */\" model=V100\ngpu \"g ?\?/ \xe2\x81\xa7\" model=V100\n"
                              "link \"g\\\"0 */\" \"g ?\?/ \xe2\x81\xa7\"\n",
                              TOPO_FMT_TEXT, "HOSTILE");
}

#define NCCL_TWO \
    "<system version=\"1\" name=\"%s\">\n<cpu numaid=\"0\">\n"\
           "<pci busid=\"0000:06:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"70\"><nvlink "\
           "target=\"0000:07:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>\n"\
           "<pci busid=\"0000:07:00.0\" class=\"0x030200\"><gpu dev=\"1\" sm=\"70\"><nvlink "\
           "target=\"0000:06:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>\n"\
           "<pci busid=\"0000:05:00.0\" class=\"0x020700\"><nic><net name=\"%s\" dev=\"0\" "\
           "speed=\"100000\"/></nic></pci>\n</cpu>\n</system>\n"

Test(hostile, xml_names)
{
    /* Invalid UTF-8 and raw control bytes are not XML: libxml2 refuses them with a line. */
    for (size_t i = 0; i < BK_ARRAY_LEN(bad_bytes); i++) {
        char *s = bk_asprintf(NCCL_TWO, bad_bytes[i][0], "mlx5_0");
        expect_refused("names.xml", s, TOPO_FMT_NCCL, "");
        free(s);
        s = bk_asprintf(NCCL_TWO, "box", bad_bytes[i][0]);
        expect_refused("names.xml", s, TOPO_FMT_NCCL, "");
        free(s);
    }
    /* Character references are XML: newline, bidi override, quotes, comment closer. */
    const char *evil = "HOSTILE &quot;&#10;*/ ?\?/ \\ &#x202E;&#x2067; &#9;&lt;x&gt;";
    char *s = bk_asprintf(NCCL_TWO, evil, evil);
    expect_escaped_everywhere("names.xml", s, TOPO_FMT_NCCL, "HOSTILE");
    free(s);
    /* A declared Latin-1 file is converted to UTF-8 by libxml2, so its bytes are valid names. */
    char *body = bk_asprintf(NCCL_TWO, "HOSTILE \xe9\xff", "n\xe9");
    s = bk_asprintf("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n%s", body);
    expect_escaped_everywhere("latin1.xml", s, TOPO_FMT_NCCL, "HOSTILE");
    free(s), free(body);

    /* hwloc: the machine's DMIProductName becomes the topology's name. */
    char *path = tu_src_path("topologies/dgx1v.hwloc.xml");
    char *orig = tu_slurp(path, NULL);
    cr_assert_not_null(orig);
    const char *from = "<object type=\"Machine\"";
    const char *hit = strstr(orig, from);
    cr_assert_not_null(hit);
    const char *gt = strchr(hit, '>');
    cr_assert_not_null(gt);
    s = bk_asprintf("%.*s\n<info name=\"DMIProductName\" value=\"%s\"/>%s", (int)(gt + 1 - orig),
                    orig, evil, gt + 1);
    expect_escaped_everywhere("names.hwloc.xml", s, TOPO_FMT_HWLOC, "HOSTILE");
    free(s);
    s = bk_asprintf("%.*s\n<info name=\"DMIProductName\" value=\"\xff\xfe\"/>%s",
                    (int)(gt + 1 - orig), orig, gt + 1);
    expect_refused("bad.hwloc.xml", s, TOPO_FMT_HWLOC, "");
    free(s), free(orig), free(path);
}

Test(hostile, smi_names)
{
    /* NIC legend names: whatever bytes the reader keeps must come out escaped. */
    for (size_t i = 0; i < BK_ARRAY_LEN(bad_bytes); i++) {
        char *nic = bk_asprintf("HOSTILE%s", bad_bytes[i][0]);
        char *s = smi_matrix(2, "NV2", nic);
        expect_escaped_everywhere("names.smi.txt", s, TOPO_FMT_SMI, "HOSTILE");
        free(s), free(nic);
    }
    char *s = smi_matrix(2, "NV2", "HOSTILE\"*/?\?/\\\xe2\x80\xae");
    expect_escaped_everywhere("names.smi.txt", s, TOPO_FMT_SMI, "HOSTILE");
    free(s);
}

Test(hostile, file_name_becomes_an_escaped_topology_name, .timeout = 60)
{
    /* smi has no name of its own: the file's base name is the topology's name, and a file may
     * be called anything. */
    char dir[] = "/tmp/blinkc-hostile-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char *path = bk_asprintf("%s/HOSTILE\"*\\ ?\?\n\xe2\x80\xae\xff.smi.txt", dir);
    char *out = bk_asprintf("%s/out.cu", dir);
    char *s = smi_matrix(2, "NV2", NULL);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(s, f);
    fclose(f);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--collective", "broadcast", "--root", "0",
                                            "--gpu-model", "V100", "-o", out, path, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    char *code = tu_slurp(out, NULL);
    cr_assert_not_null(code);
    cr_expect(strstr(code, "\"HOSTILE\\\"*\\\\ \\?\\?\\n\\342\\200\\256\\377\""), "%.400s", code);
    for (const unsigned char *p = (const unsigned char *)code; *p; p++)
        cr_assert((*p >= 0x20 && *p < 0x7f) || *p == '\n', "byte %#x in the code", *p);
    unlink(path), unlink(out), rmdir(dir);
    free(code), free(s), free(out), free(path);
}
