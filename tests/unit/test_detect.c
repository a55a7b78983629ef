/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_detect.c - format detection looks at content only: XML roots, smi headers in their
 * dialects, .topo keywords, the cluster file's; and refuses what is none of them.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/input.h"
#include "testutil.h"

static enum topo_format detect(const char *text, struct diag *d)
{
    struct input in;
    cr_assert_eq(input_from_memory("t", text, strlen(text), &in), BK_OK);
    enum topo_format f = topo_detect_format(&in, d);
    input_free(&in);
    return f;
}

Test(detect, xml_roots)
{
    struct diag d;
    diag_init(&d);
    cr_assert_eq(detect("<?xml version=\"1.0\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
                        "<topology version=\"2.0\"/>",
                        &d),
                 TOPO_FMT_HWLOC);
    cr_assert_eq(detect("<!-- dumped by NCCL -->\n<system version=\"1\">\n</system>", &d),
                 TOPO_FMT_NCCL);
    cr_assert_eq(detect("\xef\xbb\xbf<system version=\"1\"/>", &d), TOPO_FMT_NCCL);
    cr_assert_eq(detect("<!DOCTYPE system [ <!ENTITY a \"b\"> ]>\n<system/>", &d), TOPO_FMT_NCCL,
                 "an internal subset is skipped so the reader can refuse the entity");
    cr_assert_eq(d.nerrors, 0);
    cr_assert_eq(detect("<graphs><graph/></graphs>", &d), TOPO_FMT_AUTO);
    cr_assert(diag_contains(&d, DIAG_ERROR, "root element <graphs>"));
    diag_free(&d);
}

Test(detect, smi_dialects)
{
    struct diag d;
    diag_init(&d);
    cr_assert_eq(detect("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV1\t0-11\n", &d), TOPO_FMT_SMI);
    cr_assert_eq(detect("        GPU0    GPU1    mlx5_0  CPU Affinity\n", &d), TOPO_FMT_SMI);
    cr_assert_eq(detect("$ nvidia-smi topo -m\n\x1b[4mGPU0\tGPU1\x1b[0m\n", &d), TOPO_FMT_SMI);
    cr_assert_eq(detect("GPU0GPU1GPU2NIC0CPU Affinity\n", &d), TOPO_FMT_SMI);
    cr_assert_eq(detect("user@dgx:~$ nvidia-smi topo -m\n\tGPU0\tGPU1\n", &d), TOPO_FMT_SMI);
    cr_assert_eq(d.nerrors, 0);
    diag_free(&d);
}

Test(detect, topo_text)
{
    struct diag d;
    diag_init(&d);
    cr_assert_eq(detect("# a box\n\ntopology demo\ngpu g0\n", &d), TOPO_FMT_TEXT);
    cr_assert_eq(detect("link a b\n", &d), TOPO_FMT_TEXT);
    /* A cluster file's first statement is its own keyword; "server" alone is a .topo one. */
    cr_assert_eq(detect("# lab\ncluster lab\nserver a a.topo\n", &d), TOPO_FMT_CLUSTER);
    cr_assert_eq(detect("server a\ngpu g\n", &d), TOPO_FMT_TEXT);
    cr_assert_eq(d.nerrors, 0);
    diag_free(&d);
}

Test(detect, refusals)
{
    struct diag d;
    diag_init(&d);
    cr_assert_eq(detect("", &d), TOPO_FMT_AUTO);
    cr_assert(diag_contains(&d, DIAG_ERROR, "empty file"));
    cr_assert_eq(detect("{\"json\": true}\n", &d), TOPO_FMT_AUTO);
    cr_assert(diag_contains(&d, DIAG_ERROR, "unknown format"));
    cr_assert_eq(detect("# only a comment\n", &d), TOPO_FMT_AUTO);
    diag_free(&d);
}

Test(detect, format_names_round_trip)
{
    const char *names[] = {"text", "hwloc", "nccl", "smi", "cluster"};
    for (int i = 0; i < 5; i++) {
        enum topo_format f;
        cr_assert(topo_format_parse(names[i], &f));
        cr_assert_str_eq(topo_format_name(f), names[i]);
    }
    enum topo_format f;
    cr_assert_not(topo_format_parse("yaml", &f));
}
