/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_msccl.c - --msccl-xml: every export of every one-server fixture up to 16 GPUs (GB200
 * NVL72's 72 would need over RCCL's 64 threadblocks per GPU) and of every DGX-1V
 * allocation of 3 to 8 GPUs runs to the end in the interpreter (msccl_interp.h, which shares
 * nothing with the exporter), gives every rank the collective's result, breaks no executor
 * limit, and loads each GPU pair as the plan's trees do within 1%; ring ranges are written as
 * the ring chains; hostile topology names stay inside one escaped attribute.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "out/msccl_xml.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "tune/plan_tune.h"
#include "msccl_interp.h"
#include "testutil.h"

#define ALL ((1u << COLL_COUNT) - 1)

#ifndef BK_SAN_CFLAGS
#define BK_SAN_CFLAGS ""
#endif
#define SANITIZED (sizeof BK_SAN_CFLAGS > 1)

/* GPU pair loads from the plan's own trees, as fractions of the data: data crosses parent to
 * child (broadcast-like), child to parent (reduce-like) or both (allreduce). */
static void plan_load(const struct ptree_set *s, enum collective c, int n, double *frac)
{
    double w = ptree_set_rate(s);
    memset(frac, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int i = 0; i < s->n; i++)
        for (int v = 0; v < n; v++) {
            int u = s->t[i].parent[v];
            if (u < 0)
                continue;
            if (c != COLL_REDUCE && c != COLL_REDUCESCATTER)
                frac[u * n + v] += s->t[i].rate / w;
            if (c == COLL_REDUCE || c == COLL_REDUCESCATTER || c == COLL_ALLREDUCE)
                frac[v * n + u] += s->t[i].rate / w;
        }
}

/* Export plan k's file j, run it out of place (and in place where offered), check it. */
static void check_file(const struct plan_set *ps, int k, int j, const char *label)
{
    const struct plan *p = &ps->v[k];
    struct strbuf sb;
    sb_init(&sb);
    char name[96];
    cr_assert_eq(msccl_xml_render(&sb, name, sizeof name, ps, k, j), BK_OK);
    char *path = tu_temp_file(".xml", sb.data, sb.len);
    struct mi_result r;
    for (int inplace = 0; inplace < 2; inplace++) {
        if (inplace && !strstr(sb.data, "inplace=\"1\""))
            break;
        mi_run(path, p->root, inplace, &r);
        cr_expect(r.ok, "%s %s%s: %s", label, name, inplace ? " in place" : "", r.why);
        cr_expect_eq(r.limits, 0, "%s %s: %s", label, name, r.limit);
    }
    if (getenv("BLINKC_MSCCL_TABLE"))
        fprintf(stderr, "%-14s %-28s tbs %4d (max %2d/gpu) steps %5d (max %2d/tb) chunks %5d "
                "channels %d %s\n", label, name, r.tbs, r.max_tbs, r.steps, r.max_steps,
                r.nchunks, r.nchannels, r.ok && !r.limits ? "ok" : "FAIL");
    int n = ps->topo->ngpus;
    const struct ptree_set *trees = strstr(name, "-rings") ? &p->ring_chains : &p->main.trees;
    double *frac = calloc((size_t)n * n, sizeof *frac);
    plan_load(trees, p->coll, n, frac);
    for (int u = 0; r.ok && u < n; u++)
        for (int v = 0; v < n; v++) {
            double got = r.load[u][v] / r.nchunks, want = frac[u * n + v];
            cr_expect(got <= want * 1.01 + 1e-9 && got >= want * 0.99 - 1e-9,
                      "%s %s: %d->%d carries %.4f of the data, the plan %.4f", label, name, u,
                      v, got, want);
        }
    free(frac);
    unlink(path);
    free(path);
    sb_free(&sb);
}

static void check_all(const char *fixture, const int *gpus, int ngpus, const char *label)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc(fixture, gpus, ngpus, ALL, -1, &t, &ps);
    for (int k = 0; k < ps.n; k++)
        for (int j = 0; j < msccl_xml_count(&ps, k); j++)
            check_file(&ps, k, j, label);
    plan_set_free(&ps);
    topo_free(&t);
}

#define FIXTURE(name, file)                                                                    \
    Test(msccl, name) { check_all(file, NULL, 0, #name); }
FIXTURE(dgx1p, "dgx1p.topo")
FIXTURE(dgx1v, "dgx1v.topo")
FIXTURE(dgx2, "dgx2.topo")
FIXTURE(dgx_a100, "dgx-a100.topo")
FIXTURE(hgx_h100, "hgx-h100.topo")
FIXTURE(pcie8, "pcie8.topo")
FIXTURE(hgx_h200, "hgx-h200.topo")
FIXTURE(hgx_b200, "hgx-b200.topo")

/* Every DGX-1V allocation of 3..8 GPUs (every 16th under the sanitizers). */
Test(msccl, dgx1v_allocations, .timeout = 600)
{
    int seen = 0;
    for (unsigned mask = 1; mask < 256; mask++) {
        int gpus[8], n = 0;
        for (int g = 0; g < 8; g++)
            if (mask & (1u << g))
                gpus[n++] = g;
        if (n < 3 || (SANITIZED && seen++ % 16))
            continue;
        char label[16];
        snprintf(label, sizeof label, "dgx1v-%02x", mask);
        check_all("dgx1v.topo", gpus, n, label);
    }
}

/* The committed exports (tuned: trees at some sizes, ring chains at others) run right too. */
static void check_dir(const char *rel)
{
    char *dir = tu_src_path(rel);
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp, "%s", dir);
    struct dirent *e;
    int files = 0, rings = 0;
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.')
            continue;
        char *path = bk_asprintf("%s/%s", dir, e->d_name);
        const char *g = strstr(e->d_name, "-gpu");
        int root = g ? atoi(g + 4) : -1;
        struct mi_result r;
        mi_run(path, root, 0, &r);
        cr_expect(r.ok, "%s: %s", e->d_name, r.why);
        cr_expect_eq(r.limits, 0, "%s: %s", e->d_name, r.limit);
        files++;
        rings += strstr(e->d_name, "-rings") != NULL;
        free(path);
    }
    closedir(dp);
    free(dir);
    cr_expect_gt(files, 5, "%s", rel);
    cr_expect_gt(rings, 0, "%s: the tuned plans run rings at some sizes", rel);
}

Test(msccl, committed_exports) { check_dir("generated/msccl/dgx1v"); check_dir("generated/msccl/dgx2"); }

/* The interpreter is no rubber stamp: a lost reduction, a lost dependency flag, a missing
 * minBytes and an oversized step each fail. */
static void expect_broken(const char *text, const char *from, const char *to, int limits,
                          const char *what)
{
    const char *at = strstr(text, from);
    cr_assert_not_null(at, "%s", from);
    struct strbuf sb;
    sb_init(&sb);
    sb_putn(&sb, text, (size_t)(at - text));
    sb_puts(&sb, to);
    sb_puts(&sb, at + strlen(from));
    char *path = tu_temp_file(".xml", sb.data, sb.len);
    struct mi_result r;
    mi_run(path, 0, 0, &r);
    if (limits)
        cr_expect_gt(r.limits, 0, "%s", what);
    else
        cr_expect(!r.ok, "%s", what);
    unlink(path);
    free(path);
    sb_free(&sb);
}

Test(msccl, interpreter_catches_mistakes)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx1v.topo", (int[]){0, 1, 2, 3}, 4, 1u << COLL_ALLREDUCE, -1, &t, &ps);
    struct strbuf sb;
    sb_init(&sb);
    char name[96];
    cr_assert_eq(msccl_xml_render(&sb, name, sizeof name, &ps, 0, 0), BK_OK);
    expect_broken(sb.data, "type=\"rrc\"", "type=\"r\"", 0, "a reduction lost");
    expect_broken(sb.data, "hasdep=\"1\"", "hasdep=\"0\"", 0, "a flag never set: deadlock");
    expect_broken(sb.data, " minBytes=\"0\"", "", 0, "no minBytes");
    expect_broken(sb.data, "cnt=\"", "cnt=\"8", 1, "cnt of 80 and more");
    sb_free(&sb);
    plan_set_free(&ps);
    topo_free(&t);
}

/* The interpreter reads a file as the executors' parser does (msccl_read.c, msccl_interp.c):
 * words it does not know, a newline inside a tag, a declaration before <algo>, a value longer
 * than its 255-byte buffer and a required attribute past the 16 it keeps all fail, where any
 * XML reader would take them. */
Test(msccl, interpreter_reads_as_the_executors_do)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx1v.topo", (int[]){0, 1, 2, 3}, 4, 1u << COLL_ALLREDUCE, -1, &t, &ps);
    struct strbuf sb;
    sb_init(&sb);
    char name[96];
    cr_assert_eq(msccl_xml_render(&sb, name, sizeof name, &ps, 0, 0), BK_OK);
    expect_broken(sb.data, "coll=\"allreduce\"", "coll=\"all_reduce\"", 0, "coll all_reduce");
    expect_broken(sb.data, "coll=\"allreduce\"", "coll=\"reduce_scatter\"", 0,
                  "coll reduce_scatter (SCCL's word, refused by these executors)");
    expect_broken(sb.data, "proto=\"Simple\"", "proto=\"simple\"", 0, "proto simple");
    expect_broken(sb.data, "srcbuf=\"i\"", "srcbuf=\"in\"", 0, "buffer in");
    expect_broken(sb.data, "\" proto=", "\"\n proto=", 0, "a newline inside a tag");
    expect_broken(sb.data, "<algo ", "<?xml version=\"1.0\"?>\n<algo ", 0, "a declaration");
    char *pad = bk_asprintf("<algo name=\"%0300d", 0);
    expect_broken(sb.data, "<algo name=\"", pad, 0, "a 300-byte name");
    free(pad);
    expect_broken(sb.data, "\" proto=", "\" a=\"\" b=\"\" c=\"\" d=\"\" e=\"\" f=\"\" g=\"\" proto=", 0,
                  "maxBytes as the 17th attribute");
    sb_free(&sb);
    plan_set_free(&ps);
    topo_free(&t);
}

/* Hostile topology names change nothing outside the one escaped attribute value, and the file
 * stays well-formed. */
Test(msccl, hostile_name_stays_in_its_attribute)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx1v.topo", (int[]){0, 2, 3}, 3, 1u << COLL_ALLGATHER, -1, &t, &ps);
    struct strbuf plain, evil;
    sb_init(&plain);
    sb_init(&evil);
    char name[96];
    cr_assert_eq(msccl_xml_render(&plain, name, sizeof name, &ps, 0, 0), BK_OK);
    char *keep = t.name;
    t.name = "\"/><algo x=\"&amp;\n<!-- ]]> \xff\xfe\x01 '<tb id=\"9\">";
    cr_assert_eq(msccl_xml_render(&evil, name, sizeof name, &ps, 0, 0), BK_OK);
    t.name = keep;
    /* Past the name attribute, the files are the same. */
    const char *a = strstr(plain.data, "\" proto="), *b = strstr(evil.data, "\" proto=");
    cr_assert(a && b);
    cr_expect_str_eq(a, b);
    cr_expect_eq(strstr(evil.data, "<tb") - evil.data > 0, 1);
    cr_expect_null(strstr(evil.data, "<!--"), "the name is escaped");
    char *path = tu_temp_file(".xml", evil.data, evil.len);
    struct mi_result r;
    cr_expect(mi_run(path, -1, 0, &r), "%s", r.why);
    unlink(path);
    free(path);
    sb_free(&plain);
    sb_free(&evil);
    plan_set_free(&ps);
    topo_free(&t);
}

/* The option: a file per plan in an existing directory; a missing one is an input error. */
Test(msccl, command_line)
{
    char dir[] = "/tmp/blinkc-msccl-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--gpus", "0,1,2", "--msccl-xml",
                                            dir, "builtin:dgx1v", NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    const char *want[] = {"allreduce-trees.xml", "allgather-trees.xml",
                          "reducescatter-trees.xml", "broadcast-gpu1-trees.xml",
                          "reduce-gpu2-trees.xml"};
    for (size_t i = 0; i < BK_ARRAY_LEN(want); i++) {
        char *p = bk_asprintf("%s/%s", dir, want[i]);
        cr_expect_eq(access(p, R_OK), 0, "%s", p);
        unlink(p);
        free(p);
    }
    for (int g = 0; g < 3; g++) {
        char *p = bk_asprintf("%s/broadcast-gpu%d-trees.xml", dir, g);
        char *q = bk_asprintf("%s/reduce-gpu%d-trees.xml", dir, g);
        unlink(p), unlink(q);
        free(p), free(q);
    }
    cr_expect_eq(rmdir(dir), 0, "no other file was written");
    tu_run_blinkc(&r, (const char *const[]){"-q", "--msccl-xml", "/nonexistent/dir",
                                            "builtin:dgx1v", NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strncmp(r.err, "blinkc: ", 8) == 0 && strstr(r.err, "error:"), "%s", r.err);
    tu_run_free(&r);
}
