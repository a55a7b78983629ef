/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_plan.c - libFuzzer harness: any bytes as a saved plan file (plan_load.c, json_read.c),
 * then, when accepted, the code blinkc --from-plan would generate from it (emit_model and the
 * embedded templates, loaded once).
 *
 * The contract checked (plan_load.h): a refused file has an error at FILE:LINE:COL of the plan
 * file; an accepted one has no error, and what it loaded is consistent by this file's own
 * reckoning (GPUs first in rank order, no more servers than nodes, every tree spanning the GPUs
 * from its root without a cycle, a rooted collective's trees at its root, ranges from 0 bytes
 * up, no two plans of one collective and root: the runtime's plan_check.c rules); code
 * generation, which checks the runtime's rules again, takes it without an error, and its model
 * puts no two ranks on one device of one server.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "core/input.h"
#include "core/strbuf.h"
#include "emit/emit.h"
#include "emit/tmpl.h"
#include "plan/plan_load.h"

static const char name[] = "fuzz-plan";

/* 0 when the first error names the plan file at a line. */
static int error_placed(const struct diag *d)
{
    for (size_t i = 0; i < d->n; i++) {
        const struct diag_msg *m = &d->msgs[i];
        if (m->level == DIAG_ERROR)
            return m->file && strcmp(m->file, name) == 0 && m->loc.line > 0 ? 0 : 1;
    }
    return 1;
}

/* 0 when every tree of s spans the n GPUs from its root (and starts at root, if >= 0). */
static int trees_ok(const struct ptree_set *s, int n, int root)
{
    for (int j = 0; j < s->n; j++) {
        const struct ptree *tr = &s->t[j];
        if (tr->ngpus != n || tr->root < 0 || tr->root >= n || tr->parent[tr->root] != -1 ||
            (root >= 0 && tr->root != root) || !(tr->rate >= 0))
            return 1;
        for (int v = 0; v < n; v++) {
            int u = v, steps = 0;
            while (u != tr->root && steps++ < n) {
                if (tr->parent[u] < 0 || tr->parent[u] >= n)
                    return 1;
                u = tr->parent[u];
            }
            if (u != tr->root)
                return 1; /* a cycle */
        }
    }
    return 0;
}

static int loaded_ok(const struct topo *t, const struct plan_set *ps)
{
    int n = t->ngpus;
    if (n < 1 || n > t->nnodes || ps->topo != t || t->nservers < 1 || t->nservers > t->nnodes)
        return 1; /* each server holds a node */
    for (int k = 0; k < t->nnodes; k++)
        if ((t->nodes[k].kind == TOPO_GPU) != (k < n) || (k < n && t->nodes[k].rank != k))
            return 1;
    for (int i = 0; i < ps->n; i++) {
        const struct plan *p = &ps->v[i];
        if (p->main.trees.n < 1 || p->root >= n || trees_ok(&p->main.trees, n, p->root) ||
            trees_ok(&p->ring_chains, n, p->root))
            return 1;
        for (int j = 0; j < i; j++)
            if (ps->v[j].coll == p->coll && ps->v[j].root == p->root)
                return 1; /* the runtime refuses a second schedule alike */
        for (int r = 0; r < p->tune.n; r++)
            if (r ? !(p->tune.r[r].min_bytes > p->tune.r[r - 1].min_bytes)
                  : p->tune.r[0].min_bytes != 0)
                return 1;
    }
    return 0;
}

/* 0 when no two ranks of the model run on one device of one server (emit.h's "devices" and
 * "servers", the latter empty on one server). */
static int places_ok(const struct tmpl_value *model)
{
    const struct tmpl_value *plans = tv_get(model, "plans");
    if (!plans || plans->kind != TV_LIST || plans->n != 1)
        return 1;
    const struct tmpl_value *dev = tv_get(plans->items[0], "devices"),
                            *srv = tv_get(plans->items[0], "servers");
    if (!dev || !srv || dev->kind != TV_LIST || srv->kind != TV_LIST ||
        (srv->n != 0 && srv->n != dev->n))
        return 1;
    struct tmpl_value x, y; /* tv_item's numbers (the model holds these lists as numbers) */
    for (int a = 0; a < dev->n; a++)
        for (int b = a + 1; b < dev->n; b++)
            if (tv_item(dev, a, &x)->i == tv_item(dev, b, &y)->i &&
                (srv->n == 0 || tv_item(srv, a, &x)->i == tv_item(srv, b, &y)->i))
                return 1;
    return 0;
}

/* The generated code: the model, then the embedded templates (parsed on the first call). */
static int generate(const struct topo *t, const struct plan_set *ps)
{
    static struct tmpl_set *set;
    struct diag d;
    diag_init(&d);
    enum bk_status st = set ? BK_OK : emit_load_templates(NULL, &set, &d);
    struct tmpl_value *model = NULL;
    if (st == BK_OK)
        st = emit_model(&(struct emit_alloc){t, ps}, 1, &model, &d);
    struct strbuf code;
    sb_init(&code);
    int bad = st == BK_OK && places_ok(model) ? 8 : 0;
    if (st == BK_OK && !bad)
        st = tmpl_render(set, EMIT_MAIN_TEMPLATE, model, &code, &d);
    sb_free(&code);
    tv_free(model);
    if (!bad)
        bad = st == BK_OK && d.nerrors == 0 ? 0 : st == BK_ENOMEM ? 0 : 7;
    diag_free(&d);
    return bad;
}

int fuzz_plan_one(const uint8_t *data, size_t size)
{
    struct input in;
    if (input_from_memory(name, (const char *)data, size, &in) != BK_OK)
        return 0; /* out of memory: nothing to test */
    struct diag d;
    diag_init(&d);
    struct topo t;
    struct plan_set ps;
    enum bk_status st = plan_load(&in, &t, &ps, &d);
    int bad = 0;
    if (st == BK_OK) {
        bad = d.nerrors != 0 ? 1 : loaded_ok(&t, &ps) ? 5 : generate(&t, &ps);
        plan_set_free(&ps);
        topo_free(&t);
    } else if (st == BK_EINPUT) {
        bad = d.nerrors == 0 ? 2 : error_placed(&d) ? 6 : 0;
    } else if (st != BK_ENOMEM) {
        bad = 3;
    }
    diag_free(&d);
    input_free(&in);
    return bad;
}

#ifndef BK_FUZZ_NO_ENTRY
FUZZ_ENTRY(fuzz_plan_one)
#endif
