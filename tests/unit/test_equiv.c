/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_equiv.c - one machine, four formats, one graph: the DGX-1V fixture written as a .topo
 * file, an hwloc export, an NCCL topology dump and an `nvidia-smi topo -m` capture must normalise
 * to the same nodes and the same links (kinds, counts, GB/s), and so to the same plan-file links.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out/plan_json.h"
#include "core/strbuf.h"
#include "testutil.h"

static const struct {
    const char *file;
    enum topo_format fmt;
} dgx1v[] = {
    {"topologies/dgx1v.topo", TOPO_FMT_TEXT},
    {"topologies/dgx1v.hwloc.xml", TOPO_FMT_HWLOC},
    {"topologies/dgx1v.nccl.xml", TOPO_FMT_NCCL},
    {"topologies/dgx1v.smi.txt", TOPO_FMT_SMI},
};

static void load(int i, struct topo *t)
{
    struct diag d;
    diag_init(&d);
    char *path = tu_src_path(dgx1v[i].file);
    /* smi names no GPU; say what the box is, as a user would. */
    enum bk_status st = tu_read_file(path, TOPO_FMT_AUTO, "V100", t, &d);
    cr_assert_eq(st, BK_OK, "%s: %s", path, diag_first_error(&d) ? diag_first_error(&d) : "");
    cr_assert_str_eq(t->format, topo_format_name(dgx1v[i].fmt), "%s detected as %s", path,
                     t->format);
    free(path);
    diag_free(&d);
}

/* The links section of the plan file: canonical ids, kinds, counts, GB/s. */
static char *links_json(const struct topo *t)
{
    struct strbuf sb;
    sb_init(&sb);
    plan_json_topology(&sb, t, 0);
    char *all = sb_take(&sb);
    char *links = strstr(all, "\"links\"");
    char *out = strdup(links ? links : "");
    free(all);
    return out;
}

Test(equiv, four_formats_give_one_graph)
{
    struct topo ref;
    load(0, &ref);
    char *ref_links = links_json(&ref);
    for (int i = 1; i < 4; i++) {
        struct topo t;
        load(i, &t);
        const char *f = dgx1v[i].file;
        cr_assert_eq(t.nnodes, ref.nnodes, "%s: %d nodes, .topo has %d", f, t.nnodes, ref.nnodes);
        for (int k = 0; k < ref.nnodes; k++) {
            cr_assert_str_eq(t.nodes[k].id, ref.nodes[k].id, "%s node %d", f, k);
            cr_assert_eq(t.nodes[k].kind, ref.nodes[k].kind, "%s %s", f, ref.nodes[k].id);
            cr_assert_eq(t.nodes[k].server, ref.nodes[k].server, "%s %s", f, ref.nodes[k].id);
            cr_assert_eq(t.nodes[k].nvlink_gen, ref.nodes[k].nvlink_gen, "%s %s", f,
                         ref.nodes[k].id);
        }
        cr_assert_eq(t.nlinks, ref.nlinks, "%s: %d links, .topo has %d", f, t.nlinks, ref.nlinks);
        for (int k = 0; k < ref.nlinks; k++) {
            const struct topo_link *a = &t.links[k], *b = &ref.links[k];
            const char *what = ref.nodes[b->src].id, *to = ref.nodes[b->dst].id;
            cr_assert_eq(a->src, b->src, "%s link %d (%s->%s)", f, k, what, to);
            cr_assert_eq(a->dst, b->dst, "%s link %d (%s->%s)", f, k, what, to);
            cr_assert_eq(a->kind, b->kind, "%s %s->%s", f, what, to);
            cr_assert_eq(a->count, b->count, "%s %s->%s", f, what, to);
            cr_assert(fabs(a->gbps - b->gbps) < 1e-9, "%s %s->%s: %g vs %g GB/s", f, what, to,
                      a->gbps, b->gbps);
        }
        char *links = links_json(&t);
        cr_assert_str_eq(links, ref_links, "%s: plan-file links differ", f);
        free(links);
        topo_free(&t);
    }
    free(ref_links);
    topo_free(&ref);
}

/* topology-facts.md 4.3/4.4, independent of any reader: the .topo graph, and so (by the test
 * above) every format's, is the published DGX-1V and not merely the same mistake four times. */
Test(equiv, the_graph_is_the_published_dgx1v)
{
    struct topo t;
    load(0, &t);
    tu_expect_dgx1v(&t);
    topo_free(&t);
}
