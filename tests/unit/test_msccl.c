/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_msccl.c - --msccl-xml: every export of every one-server fixture up to 16 GPUs (GB200
 * NVL72's 72 would need over RCCL's 64 threadblocks per GPU) and of every DGX-1V
 * allocation of 3 to 8 GPUs runs to the end in the interpreter (msccl_interp.h, which shares
 * nothing with the exporter), gives every rank the collective's result, breaks no executor
 * limit, and loads each GPU pair as the plan's trees do within 1%; sizes where the per-size
 * choice runs NCCL get no file; the files name the allocation in rank order; DIR may hold only
 * the export; hostile topology names stay inside one escaped attribute.
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
#include "msccl_read.h"
#include "testutil.h"

#define ALL ((1u << COLL_COUNT) - 1)

#include "sanitized.h"

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
    char name[MSCCL_XML_NAME_MAX];
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
    const struct ptree_set *trees = &p->main.trees;
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
        if (n < 3 || (TU_SANITIZED && seen++ % 16))
            continue;
        char label[16];
        snprintf(label, sizeof label, "dgx1v-%02x", mask);
        check_all("dgx1v.topo", gpus, n, label);
    }
}

/* The committed exports (tuned: the trees' sizes only) run right too. */
static void check_dir(const char *rel)
{
    char *dir = tu_src_path(rel);
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp, "%s", dir);
    struct dirent *e;
    int files = 0;
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
        cr_expect_null(strstr(e->d_name, "-rings"), "%s: NCCL's sizes get no file", e->d_name);
        files++;
        free(path);
    }
    closedir(dp);
    free(dir);
    cr_expect_geq(files, 3, "%s", rel);
}

Test(msccl, committed_exports) { check_dir("generated/msccl/dgx2"); }

/* Sizes where the per-size choice runs NCCL get no file, so the executors fall back to NCCL's
 * own algorithms there: the files cover exactly the trees' ranges (set here by hand), and a
 * plan that runs NCCL at every size gets none. */
Test(msccl, nccl_sizes_get_no_file)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx1v.topo", (int[]){0, 1, 2, 3}, 4, 1u << COLL_ALLREDUCE, -1, &t, &ps);
    struct plan *p = &ps.v[0];
    static const double from[] = {0, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
    static const enum plan_algo algo[] = {PLAN_ALGO_RINGS, PLAN_ALGO_TREES, PLAN_ALGO_RINGS,
                                          PLAN_ALGO_RINGS, PLAN_ALGO_TREES};
    p->tune.r = calloc(5, sizeof *p->tune.r);
    cr_assert_not_null(p->tune.r);
    p->tune.n = 5;
    for (int i = 0; i < 5; i++)
        p->tune.r[i] = (struct plan_range){.min_bytes = from[i], .algo = algo[i]};
    /* [minBytes, maxBytes] of each file; maxBytes 0 is no limit */
    static const long long want[][2] = {{1 << 20, (4 << 20) - 1}, {64 << 20, 0}};
    cr_assert_eq(msccl_xml_count(&ps, 0), 2);
    for (int j = 0; j < 2; j++) {
        struct strbuf sb;
        sb_init(&sb);
        char name[MSCCL_XML_NAME_MAX];
        cr_assert_eq(msccl_xml_render(&sb, name, sizeof name, &ps, 0, j), BK_OK);
        char *path = tu_temp_file(".xml", sb.data, sb.len);
        char why[256];
        struct mr_node *a = mr_read(path, why, sizeof why);
        cr_assert_not_null(a, "%s", why);
        int ok = 1;
        cr_expect_eq(mr_int64(a, "minBytes", &ok), want[j][0], "%s", name);
        cr_expect_eq(mr_int64(a, "maxBytes", &ok), want[j][1], "%s", name);
        mr_free(a);
        unlink(path);
        free(path);
        sb_free(&sb);
    }
    for (int i = 0; i < 5; i++)
        p->tune.r[i].algo = PLAN_ALGO_RINGS;
    cr_expect_eq(msccl_xml_count(&ps, 0), 0, "NCCL at every size: no file");
    struct strbuf none;
    sb_init(&none);
    msccl_xml_none(&none, &ps);
    cr_expect_str_eq(none.data ? none.data : "", "allreduce");
    sb_free(&none);
    plan_set_free(&ps);
    topo_free(&t);
}

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
    char name[MSCCL_XML_NAME_MAX];
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
    char name[MSCCL_XML_NAME_MAX];
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
    expect_broken(sb.data, "\" proto=",
                  "\" a=\"\" b=\"\" c=\"\" d=\"\" e=\"\" f=\"\" g=\"\" proto=", 0,
                  "maxBytes as the 17th attribute");
    sb_free(&sb);
    plan_set_free(&ps);
    topo_free(&t);
}

/* Hostile topology names change nothing outside the one escaped attribute value, and the file
 * stays well-formed and within the executors' 255-byte values. */
Test(msccl, hostile_name_stays_in_its_attribute)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx1v.topo", (int[]){0, 2, 3}, 3, 1u << COLL_ALLGATHER, -1, &t, &ps);
    struct strbuf plain, evil;
    sb_init(&plain);
    sb_init(&evil);
    char name[MSCCL_XML_NAME_MAX];
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
    /* A long name of entities still fits the executors' 255-byte value. */
    char quotes[201];
    memset(quotes, '"', 200);
    quotes[200] = '\0';
    t.name = quotes;
    sb_free(&evil);
    sb_init(&evil);
    cr_assert_eq(msccl_xml_render(&evil, name, sizeof name, &ps, 0, 0), BK_OK);
    t.name = keep;
    path = tu_temp_file(".xml", evil.data, evil.len);
    cr_expect(mi_run(path, -1, 0, &r), "%s", r.why);
    unlink(path);
    free(path);
    sb_free(&plain);
    sb_free(&evil);
    plan_set_free(&ps);
    topo_free(&t);
}

/* Every file in dir, sorted, one per line ("" for none); the files are removed. */
static char *take_dir(const char *dir)
{
    struct dirent **v;
    int n = scandir(dir, &v, NULL, alphasort);
    cr_assert_geq(n, 0, "%s", dir);
    struct strbuf sb;
    sb_init(&sb);
    for (int i = 0; i < n; i++) {
        if (v[i]->d_name[0] != '.') {
            sb_printf(&sb, "%s\n", v[i]->d_name);
            char *p = bk_asprintf("%s/%s", dir, v[i]->d_name);
            unlink(p);
            free(p);
        }
        free(v[i]);
    }
    free(v);
    return sb.data ? sb.data : strdup("");
}

/* The option: a file per plan, named with the allocation in rank order, in an existing
 * directory that holds nothing else; a missing one is an input error. */
Test(msccl, command_line)
{
    char dir[] = "/tmp/blinkc-msccl-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--gpus", "5,4,7", "--msccl-xml",
                                            dir, "builtin:dgx1v", NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    char *p = bk_asprintf("%s/allreduce-trees.gpu5.4.7.xml", dir);
    size_t len;
    char *text = tu_slurp(p, &len);
    cr_assert_not_null(text, "%s", p);
    cr_expect(strstr(text, "<algo name=\"blinkc allreduce trees, ranks 0-2 on gpu5.4.7 of dgx1v\""),
              "%.120s", text);
    free(text), free(p);
    char *got = take_dir(dir);
    cr_expect_str_eq(got, "allgather-trees.gpu5.4.7.xml\nallreduce-trees.gpu5.4.7.xml\n"
                          "broadcast-gpu4-trees.gpu5.4.7.xml\nbroadcast-gpu5-trees.gpu5.4.7.xml\n"
                          "broadcast-gpu7-trees.gpu5.4.7.xml\nreduce-gpu4-trees.gpu5.4.7.xml\n"
                          "reduce-gpu5-trees.gpu5.4.7.xml\nreduce-gpu7-trees.gpu5.4.7.xml\n"
                          "reducescatter-trees.gpu5.4.7.xml\n");
    free(got);
    /* Another allocation of three GPUs: its own names. */
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--gpus", "0,1,2", "--collective",
                                            "allreduce", "--msccl-xml", dir, "builtin:dgx1v",
                                            NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    /* Run again into the same directory: its files are this export's, so it is taken. */
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--gpus", "0,1,2", "--collective",
                                            "allreduce", "--msccl-xml", dir, "builtin:dgx1v",
                                            NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    /* A file named for this allocation that this run does not write (an earlier run's, with
     * other plans) passes the check before planning and is refused by the one after it. */
    char *stale = bk_asprintf("%s/reduce-gpu0-trees.gpu0-2.xml", dir);
    FILE *f = fopen(stale, "w");
    cr_assert_not_null(f);
    fclose(f);
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--gpus", "0,1,2", "--collective",
                                            "allreduce", "--msccl-xml", dir, "builtin:dgx1v",
                                            NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "error: holds reduce-gpu0-trees.gpu0-2.xml,"), "%s", r.err);
    tu_run_free(&r);
    cr_expect_eq(unlink(stale), 0);
    free(stale);
    /* Another allocation's export there is refused before planning, and nothing is written. */
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-tune", "--gpus", "4,5,6", "--collective",
                                            "allreduce", "--msccl-xml", dir, "builtin:dgx1v",
                                            NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "error: holds allreduce-trees.gpu0-2.xml,") && strstr(r.err, "rm "),
              "%s", r.err);
    tu_run_free(&r);
    got = take_dir(dir);
    cr_expect_str_eq(got, "allreduce-trees.gpu0-2.xml\n");
    free(got);
    /* A plan that runs NCCL at every size gets no file, and a note says so. */
    tu_run_blinkc(&r, (const char *const[]){"--gpus", "0,1,2,3", "--collective", "allgather",
                                            "--msccl-xml", dir, "builtin:dgx1v", NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "note: no MSCCL file for allgather: NCCL runs at every size"), "%s",
              r.err);
    tu_run_free(&r);
    got = take_dir(dir);
    cr_expect_str_eq(got, "");
    free(got);
    cr_expect_eq(rmdir(dir), 0, "no other file was written");
    tu_run_blinkc(&r, (const char *const[]){"-q", "--msccl-xml", "/nonexistent/dir",
                                            "builtin:dgx1v", NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strncmp(r.err, "blinkc: ", 8) == 0 && strstr(r.err, "error:"), "%s", r.err);
    tu_run_free(&r);
}
