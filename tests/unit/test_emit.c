/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_emit.c - the code generator (emit.h): determinism, the injection property (a topology
 * whose names are hostile gives the same token stream outside string literals and compiles as
 * C), the tables against the plans, -o / --templates through the binary, and the data model's
 * contract: the model and the templates use the keys emit_model_keys lists and no others.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit/emit.h"
#include "tune/plan_tune.h"
#include "testutil.h"

/* A 4-GPU box: an NVLink ring with one diagonal, two PCIe switches under one CPU. name(k)
 * names node k (0-3 GPUs, 4-5 switches, 6 the CPU). */
static char *box_text(const char *topo_name, const char *const names[7])
{
    static const int nv[][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}};
    static const int pci[][2] = {{0, 4}, {1, 4}, {2, 5}, {3, 5}, {4, 6}, {5, 6}};
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "topology %s\ncpu %s\npcie-switch %s\npcie-switch %s\n", topo_name, names[6],
              names[4], names[5]);
    for (int k = 0; k < 4; k++)
        sb_printf(&sb, "gpu %s model=V100\n", names[k]);
    for (size_t i = 0; i < BK_ARRAY_LEN(nv); i++)
        sb_printf(&sb, "link %s %s\n", names[nv[i][0]], names[nv[i][1]]);
    for (size_t i = 0; i < BK_ARRAY_LEN(pci); i++)
        sb_printf(&sb, "link %s %s\n", names[pci[i][0]], names[pci[i][1]]);
    return sb_take(&sb);
}

/* Read, plan and render; returns the source. */
static char *generate(const char *text, const char *template_dir)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("box.topo", text, TOPO_FMT_TEXT, NULL, &t, &d), BK_OK, "%s",
                 diag_first_error(&d) ? diag_first_error(&d) : "");
    struct plan_opts o;
    plan_opts_default(&o);
    struct plan_set ps;
    cr_assert_eq(plan_all(&t, &o, &ps, &d), BK_OK);
    struct strbuf sb;
    sb_init(&sb);
    cr_assert_eq(emit_render(&sb, &(struct emit_alloc){&t, &ps, 0, NULL}, 1, template_dir, &d),
                 BK_OK, "%s", diag_first_error(&d) ? diag_first_error(&d) : "");
    plan_set_free(&ps);
    topo_free(&t);
    diag_free(&d);
    return sb_take(&sb);
}

static const char *const plain_names[7] = {"g0", "g1", "g2", "g3", "sw0", "sw1", "c0"};

Test(emit, output_is_deterministic_and_thin)
{
    char *text = box_text("box", plain_names);
    char *a = generate(text, NULL), *b = generate(text, NULL);
    cr_expect_str_eq(a, b);
    cr_expect(strstr(a, "#include <blink_plan.h>\n"));
    cr_expect(strstr(a, "blinkrtCommInitAllFrom(&blinkgen_library, comms, ndev, devlist)"));
    cr_expect(strstr(a, "\"box\", /* topology */"));
    cr_expect_null(strstr(a, "box.topo"), "the input's file name leaks");
    /* No control flow beyond the one call: generated code holds no logic. */
    const char *logic[] = {"if (", "for (", "while (", "#define", "#line"};
    for (size_t i = 0; i < BK_ARRAY_LEN(logic); i++)
        cr_expect_null(strstr(a, logic[i]), "%s in generated code", logic[i]);
    free(a), free(b), free(text);
}

Test(emit, hostile_names_change_only_string_literals)
{
    struct strbuf big;
    sb_init(&big);
    sb_putc(&big, '"');
    for (int i = 0; i < 10240; i++)
        sb_putc(&big, (char)('a' + i % 26));
    sb_putc(&big, '"');
    /* The .topo grammar: any non-empty text in double quotes, \" and \\ escaped; control bytes
     * and invalid UTF-8 are refused by the reader, so bidi controls are the worst it lets in. */
    const char *const evil[7] = {"\"x\\\"; system(\\\"y\\\"); /*\"", "\"*/ int z; //\"",
                                 "\"?\?/\"", "\"end\\\\\"", "\"\xe2\x80\xae" "cba\"", big.data,
                                 "\"#define X 1\""};
    const char *evil_topo = "\"x\\\"; system(\\\"y\\\"); /* ?\?/ \xe2\x80\xae \\\\\"";
    char *t_plain = box_text("box", plain_names), *t_evil = box_text(evil_topo, evil);
    char *plain = generate(t_plain, NULL), *hostile = generate(t_evil, NULL);
    struct strbuf lp, le;
    sb_init(&lp);
    sb_init(&le);
    char *tp = tu_c_tokens(plain, &lp), *te = tu_c_tokens(hostile, &le);
    cr_expect_str_eq(tp, te, "token streams differ outside string literals");
    /* Only the topology's name differs: node names never reach the code. */
    cr_expect_str_neq(lp.data, le.data);
    cr_expect(strstr(le.data, "\"x\\\"; system(\\\"y\\\"); /* \\?\\?/ \\342\\200\\256 \\\\\""),
              "%s", le.data);
    for (const unsigned char *p = (const unsigned char *)hostile; *p; p++)
        cr_assert((*p >= 0x20 && *p < 0x7f) || *p == '\n', "byte %#x in the output", *p);
    /* And it compiles as C against the runtime headers. */
    char *path = tu_temp_file(".cu", hostile, strlen(hostile));
    char *inc = tu_src_path("runtime/include");
    struct tu_run r;
    tu_run_argv(&r, (const char *const[]){"cc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                                          "-fsyntax-only", "-x", "c", "-I", inc, path, NULL});
    cr_expect_eq(r.status, 0, "cc: %s", r.err);
    tu_run_free(&r);
    unlink(path);
    free(path), free(inc), free(tp), free(te), free(plain), free(hostile), free(t_plain),
        free(t_evil);
    sb_free(&lp), sb_free(&le), sb_free(&big);
}

/* The values of the model's interned table named by m[key] ("a<k>"). */
static const struct tmpl_value *table(const struct tmpl_value *root, const struct tmpl_value *m,
                                      const char *key)
{
    const struct tmpl_value *id = tv_get(m, key), *arrays = tv_get(root, "arrays");
    cr_assert(id && id->kind == TV_STRING && id->s[0] == 'a', "%s names no table", key);
    int k = atoi(id->s + 1);
    cr_assert(arrays && k >= 0 && k < arrays->n, "%s: no table %s", key, id->s);
    struct tmpl_value tmp;
    const struct tmpl_value *item = tv_item(arrays, k, &tmp);
    cr_assert_str_eq(tv_get(item, "id")->s, id->s);
    return tv_get(item, "values");
}

/* The model's trees of schedule s from root r, as the runtime builds them: its own listed
 * ones, or (root_maps) those of the rank its map takes onto r, relabelled; or (relabel) those
 * of another schedule, relabelled. Each is written into parent[k * 4 ..] with its weight. */
static int model_trees(const struct tmpl_value *m, const struct tmpl_value *sch, int s, int r,
                       int *parent, long long *weight)
{
    struct tmpl_value tmp;
    const struct tmpl_value *me = sch->items[s], *from = me;
    int map[4] = {0, 1, 2, 3}, src = r;
    if (tv_get(me, "relabel")->len) {
        int j = (int)tv_get(me, "relabel_of")->i;
        cr_assert(j >= 0 && j < s);
        const struct tmpl_value *mv = table(m, me, "relabel");
        for (int q = 0; q < 4; q++)
            map[q] = (int)tv_item(mv, q, &tmp)->i;
        from = sch->items[j];
        src = -2; /* every tree of that schedule */
    }
    const struct tmpl_value *maps = tv_get(me, "root_maps");
    if (maps->n && tv_item(maps, r, &tmp)->len) {
        struct tmpl_value tmp2;
        const struct tmpl_value *id = tv_item(maps, r, &tmp), *arrays = tv_get(m, "arrays");
        const struct tmpl_value *mv = tv_get(tv_item(arrays, atoi(id->s + 1), &tmp2), "values");
        for (int q = 0; q < 4; q++)
            map[q] = (int)tv_item(mv, q, &tmp2)->i;
        for (src = 0; src < 4 && map[src] != r; src++)
            ;
        cr_assert(src < 4 && !tv_item(maps, src, &tmp2)->len, "rank %d maps from %d", r, src);
    }
    const struct tmpl_value *trees = tv_get(from, "trees");
    int k = 0;
    for (int j = 0; j < trees->n; j++) {
        const struct tmpl_value *tr = trees->items[j];
        int root = (int)tv_get(tr, "root")->i;
        if (src == -2 ? map[root] != r : root != src)
            continue;
        const struct tmpl_value *par = table(m, tr, "parent"), *ord = table(m, tr, "order");
        int order[4], seen[4] = {0};
        for (int q = 0; q < 4; q++) {
            int pq = (int)tv_item(par, q, &tmp)->i;
            parent[k * 4 + map[q]] = pq < 0 ? -1 : map[pq];
            order[q] = map[tv_item(ord, q, &tmp)->i];
        }
        for (int q = 0; q < 4; q++) { /* every rank once, each after its parent */
            seen[order[q]] = 1;
            cr_expect(q > 0 || order[q] == r);
            for (int x = q; x < 4 && order[q] != r; x++)
                cr_expect_neq(order[x], parent[k * 4 + order[q]]);
        }
        cr_expect(seen[0] && seen[1] && seen[2] && seen[3]);
        weight[k++] = tv_get(tr, "weight")->i;
    }
    return k;
}

/* Each schedule's trees are its plan's, from each root in order: weights, parents, and an order
 * that puts each rank after its parent; where the model writes them as another schedule's or
 * another rank's trees relabelled, the maps take those onto the plan's. Returns the schedules
 * written with maps. */
static int expect_tables_follow(const char *text)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("box.topo", text, TOPO_FMT_TEXT, NULL, &t, &d), BK_OK);
    struct plan_opts o;
    plan_opts_default(&o);
    struct plan_set ps;
    cr_assert_eq(plan_all(&t, &o, &ps, &d), BK_OK);
    struct tmpl_value *m;
    cr_assert_eq(emit_model(&(struct emit_alloc){&t, &ps, 0, NULL}, 1, &m, &d), BK_OK);
    cr_assert_eq(tv_get(m, "plans")->n, 1);
    const struct tmpl_value *sch = tv_get(tv_get(m, "plans")->items[0], "schedules");
    cr_assert_eq(sch->n, ps.n);
    int mapped = 0;
    for (int s = 0; s < ps.n; s++) {
        mapped += tv_get(sch->items[s], "relabel")->len > 0 ||
                  tv_get(sch->items[s], "root_maps")->n > 0;
        for (int r = 0; r < 4; r++) {
            int parent[64 * 4];
            long long weight[64];
            int k = model_trees(m, sch, s, r, parent, weight), j = 0;
            for (int i = 0; i < ps.v[s].main.trees.n; i++) {
                const struct ptree *pt = &ps.v[s].main.trees.t[i];
                if (ps.v[s].root < 0 && pt->root != r)
                    continue;
                if (ps.v[s].root >= 0 && r != ps.v[s].root)
                    continue;
                cr_assert_lt(j, k, "schedule %d root %d: fewer trees than planned", s, r);
                cr_expect_eq(weight[j], llround(pt->rate * 1e4));
                for (int q = 0; q < 4; q++)
                    cr_expect_eq(parent[j * 4 + q], pt->parent[q], "schedule %d tree %d", s, i);
                j++;
            }
            if (ps.v[s].root < 0 || r == ps.v[s].root)
                cr_expect_eq(j, k, "schedule %d root %d: %d trees planned, %d written", s, r, j,
                             k);
        }
    }
    tv_free(m);
    plan_set_free(&ps);
    topo_free(&t);
    diag_free(&d);
    return mapped;
}

/* The box's broadcasts and reduces from symmetric roots are written as maps; on four GPUs of
 * one NVSwitch an allgather's trees from ranks 1-3 are rank 0's relabelled too. */
Test(emit, tables_follow_the_plans)
{
    char *text = box_text("box", plain_names);
    cr_expect_gt(expect_tables_follow(text), 0);
    free(text);
    cr_expect_gt(expect_tables_follow("topology sw4\nnvswitch nvs0\n"
                                      "gpu g0 model=V100\ngpu g1 model=V100\n"
                                      "gpu g2 model=V100\ngpu g3 model=V100\n"
                                      "link g0 nvs0 count=2\nlink g1 nvs0 count=2\n"
                                      "link g2 nvs0 count=2\nlink g3 nvs0 count=2\n"),
                 8, "every root but 0, and the rootless collectives");
}

/* ------------------------------------------------------------------ the model's keys */

static int listed(const char *key, size_t n)
{
    for (int i = 0; emit_model_keys[i]; i++)
        if (strlen(emit_model_keys[i]) == n && strncmp(emit_model_keys[i], key, n) == 0)
            return i;
    return -1;
}

/* Every map key under v is listed; seen[i] marks emit_model_keys[i] as used. */
static void walk_keys(const struct tmpl_value *v, unsigned char *seen)
{
    for (int i = 0; v && (v->kind == TV_MAP || v->kind == TV_LIST) && i < v->n; i++) {
        if (v->kind == TV_MAP) {
            int k = listed(v->keys[i], strlen(v->keys[i]));
            cr_expect_geq(k, 0, "the model has key '%s', which emit_model_keys does not list",
                          v->keys[i]);
            if (k >= 0)
                seen[k] = 1;
        }
        struct tmpl_value tmp;
        walk_keys(tv_item(v, i, &tmp), seen);
    }
}

/* The model of one topology's plans (tuned: ranges) into seen. */
static void model_keys(struct topo *t, unsigned char *seen)
{
    struct diag d;
    diag_init(&d);
    struct plan_opts o;
    plan_opts_default(&o);
    struct plan_set ps;
    cr_assert_eq(plan_all(t, &o, &ps, &d), BK_OK);
    struct sim_params sp;
    sim_params_default(&sp);
    if (!ps.cluster)
        cr_assert_eq(plan_tune(&ps, &sp, &d), BK_OK);
    struct tmpl_value *m = NULL;
    cr_assert_eq(emit_model(&(struct emit_alloc){t, &ps, 0, NULL}, 1, &m, &d), BK_OK);
    walk_keys(m, seen);
    tv_free(m);
    plan_set_free(&ps);
    diag_free(&d);
}

/* The names a template looks up: {{name|f}}, {{#each name}}, {{#if name}}. */
static void template_keys(const struct builtin_file *f)
{
    const char *p = f->data, *end = f->data + f->size;
    int names = 0;
    while ((p = strstr(p, "{{")) != NULL && p < end) {
        p += 2;
        const char *close = strstr(p, "}}");
        cr_assert_not_null(close, "%s: unclosed tag", f->name);
        if (*p == '#')
            p = strchr(p, ' ') ? strchr(p, ' ') + 1 : close;
        size_t n = strcspn(p, "|} ");
        int special = *p == '!' || *p == '>' || *p == '/' || *p == '.' || *p == '@' ||
                      (n == 4 && strncmp(p, "else", 4) == 0);
        if (!special && p < close) {
            cr_expect_geq(listed(p, n), 0, "%s uses '%.*s', which emit_model_keys does not list",
                          f->name, (int)n, p);
            names++;
        }
        p = close + 2;
    }
    cr_expect_gt(names, 0, "%s names no key", f->name);
}

Test(emit, model_and_templates_use_only_the_listed_keys)
{
    int nkeys = 0;
    while (emit_model_keys[nkeys])
        nkeys++;
    unsigned char *seen = calloc((size_t)nkeys, 1);
    cr_assert_not_null(seen);
    char *text = box_text("box", plain_names);
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("box.topo", text, TOPO_FMT_TEXT, NULL, &t, &d), BK_OK);
    model_keys(&t, seen);
    topo_free(&t);
    free(text);
    char *path = tu_src_path("topologies/cluster-4x-dgx1v.topo");
    cr_assert_eq(tu_read_file(path, TOPO_FMT_TEXT, NULL, &t, &d), BK_OK);
    model_keys(&t, seen);
    topo_free(&t);
    free(path);
    diag_free(&d);
    for (int i = 0; i < nkeys; i++)
        cr_expect(seen[i], "emit_model_keys lists '%s', which no model has", emit_model_keys[i]);
    free(seen);
    int ntemplates = 0;
    for (const struct builtin_file *f = builtin_templates; f->name; f++, ntemplates++)
        template_keys(f);
    cr_expect_geq(ntemplates, 4, "only %d templates", ntemplates);
}
