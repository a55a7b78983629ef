/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tmpl.c - template sets and rendering (tmpl.h).
 *
 * Rendering walks the parsed tree with a stack of {{#each}} frames. Lookups are strict: a key
 * that no enclosing item and not the root map holds is an error, never an empty string, so a
 * typo in a template cannot silently drop a table from generated code.
 */
#include <stdlib.h>
#include <string.h>

#include "emit/tmpl_internal.h"

struct tmpl_set {
    const char *const *raw_ok;
    struct tmpl *v;
    int n, cap;
    size_t max_output; /* bytes a render may write */
};

struct tmpl_set *tmpl_set_new(const char *const *raw_ok)
{
    struct tmpl_set *s = calloc(1, sizeof *s);
    if (s) {
        s->raw_ok = raw_ok;
        s->max_output = TMPL_MAX_OUTPUT;
    }
    return s;
}

void tmpl_set_max_output(struct tmpl_set *s, size_t bytes)
{
    s->max_output = bytes;
}

static void tmpl_free(struct tmpl *t)
{
    tnode_list_free(&t->nodes);
    free(t->name);
    free(t->label);
    free(t->src);
}

void tmpl_set_free(struct tmpl_set *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        tmpl_free(&s->v[i]);
    free(s->v);
    free(s);
}

static const struct tmpl *find_tmpl(const struct tmpl_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0)
            return &s->v[i];
    return NULL;
}

int tmpl_set_has(const struct tmpl_set *s, const char *name)
{
    return find_tmpl(s, name) != NULL;
}

enum bk_status tmpl_set_add(struct tmpl_set *s, const char *name, const char *label,
                            const char *text, size_t len, struct diag *d)
{
    if (memchr(text, '\0', len)) {
        diag_add(d, DIAG_ERROR, label, DIAG_NOWHERE, "a template may not contain NUL bytes");
        return BK_EINPUT;
    }
    if (find_tmpl(s, name)) {
        diag_add(d, DIAG_ERROR, label, DIAG_NOWHERE, "template '%s' is loaded twice", name);
        return BK_EINPUT;
    }
    struct tmpl t = {0};
    t.name = bk_strndup(name, strlen(name));
    t.label = bk_strndup(label, strlen(label));
    t.src = bk_strndup(text, len);
    enum bk_status st = t.name && t.label && t.src ? BK_OK : BK_ENOMEM;
    if (st == BK_OK)
        st = tmpl_parse(&t, s->raw_ok, d);
    if (st == BK_OK)
        st = bk_grow_int((void **)&s->v, &s->cap, s->n, sizeof *s->v);
    if (st != BK_OK) {
        tmpl_free(&t);
        return st;
    }
    s->v[s->n++] = t;
    return BK_OK;
}

/* ---- rendering ---- */

struct frame {
    const struct tmpl_value *item;
    int index, count;
};

struct render {
    const struct tmpl_set *set;
    const struct tmpl_value *root;
    struct frame frames[TMPL_MAX_DEPTH + 1];
    int nframes, depth;
    struct strbuf *out;
    size_t start;   /* out->len when the render began */
    struct diag *d;
};

BK_MUST_USE
static enum bk_status rfail(struct render *r, const struct tmpl *t, const struct tnode *n,
                            const char *what, const char *why)
{
    diag_add(r->d, DIAG_ERROR, t->label, DIAG_AT(n->line, n->col), "'%s': %s", what, why);
    return BK_EINPUT;
}

/* Resolve n->name. Loop variables are synthesised into *tmp. */
BK_MUST_USE
static enum bk_status lookup(struct render *r, const struct tmpl *t, const struct tnode *n,
                             struct tmpl_value *tmp, const struct tmpl_value **out)
{
    const char *name = n->name;
    if (name[0] == '@' || name[0] == '.') {
        if (r->nframes == 0)
            return rfail(r, t, n, name, "only inside {{#each}}");
        const struct frame *f = &r->frames[r->nframes - 1];
        memset(tmp, 0, sizeof *tmp);
        if (name[0] == '.') {
            *out = f->item;
            return BK_OK;
        }
        tmp->kind = strcmp(name, "@index") == 0 ? TV_INT : TV_BOOL;
        tmp->i = strcmp(name, "@index") == 0  ? f->index
                 : strcmp(name, "@first") == 0 ? f->index == 0
                                                 : f->index + 1 == f->count;
        *out = tmp;
        return BK_OK;
    }
    for (int i = r->nframes - 1; i >= 0; i--) {
        const struct tmpl_value *v = tv_get(r->frames[i].item, name);
        if (v) {
            *out = v;
            return BK_OK;
        }
    }
    *out = tv_get(r->root, name);
    return *out ? BK_OK : rfail(r, t, n, name, "unknown key");
}

static int truthy(const struct tmpl_value *v)
{
    switch (v->kind) {
    case TV_STRING: return v->len > 0;
    case TV_INT:
    case TV_BOOL: return v->i != 0;
    case TV_FLOAT: return v->f != 0;
    case TV_LIST: return v->n > 0;
    case TV_MAP: return 1;
    }
    return 0;
}

BK_MUST_USE
static enum bk_status render_list(struct render *r, const struct tmpl *t,
                                  const struct tnode_list *l);

BK_MUST_USE
static enum bk_status render_node(struct render *r, const struct tmpl *t, const struct tnode *n)
{
    struct tmpl_value tmp;
    const struct tmpl_value *v = NULL;
    switch (n->kind) {
    case TN_TEXT: sb_putn(r->out, n->text, n->len); return BK_OK;
    case TN_VAR: {
        BK_CHECK(lookup(r, t, n, &tmp, &v));
        const char *why = tmpl_filter_apply(n->filter, v, r->out);
        return why ? rfail(r, t, n, n->name, why) : BK_OK;
    }
    case TN_IF:
        BK_CHECK(lookup(r, t, n, &tmp, &v));
        return render_list(r, t, truthy(v) ? &n->body : &n->alt);
    case TN_EACH:
        BK_CHECK(lookup(r, t, n, &tmp, &v));
        if (v->kind != TV_LIST)
            return rfail(r, t, n, n->name, "{{#each}} needs a list");
        if (r->nframes > TMPL_MAX_DEPTH)
            return rfail(r, t, n, n->name, "{{#each}} nested too deeply");
        for (int i = 0; i < v->n; i++) {
            struct tmpl_value number;
            r->frames[r->nframes++] = (struct frame){tv_item(v, i, &number), i, v->n};
            enum bk_status st = render_list(r, t, &n->body);
            r->nframes--;
            BK_CHECK(st);
        }
        return BK_OK;
    case TN_PARTIAL: {
        const struct tmpl *p = find_tmpl(r->set, n->name);
        if (!p)
            return rfail(r, t, n, n->name, "no such template in the set");
        if (r->depth >= TMPL_MAX_DEPTH)
            return rfail(r, t, n, n->name, "partials nested too deeply (recursion?)");
        r->depth++;
        enum bk_status st = render_list(r, p, &p->nodes);
        r->depth--;
        return st;
    }
    }
    return BK_EINTERNAL;
}

BK_MUST_USE
static enum bk_status render_list(struct render *r, const struct tmpl *t,
                                  const struct tnode_list *l)
{
    for (int i = 0; i < l->n; i++) {
        BK_CHECK(render_node(r, t, &l->v[i]));
        if (r->out->len - r->start > r->set->max_output)
            return rfail(r, t, &l->v[i], "output", "the rendered text passes the output limit");
    }
    return BK_OK;
}

enum bk_status tmpl_render(const struct tmpl_set *s, const char *name,
                           const struct tmpl_value *root, struct strbuf *out, struct diag *d)
{
    const struct tmpl *t = find_tmpl(s, name);
    if (!t) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "no template called '%s'", name);
        return BK_EINTERNAL;
    }
    if (!root || root->kind != TV_MAP) {
        diag_add(d, DIAG_ERROR, t->label, DIAG_NOWHERE, "the data model's root is not a map");
        return BK_EINTERNAL;
    }
    struct render r = {.set = s, .root = root, .out = out, .start = out->len, .d = d};
    BK_CHECK(render_list(&r, t, &t->nodes));
    return out->failed ? BK_ENOMEM : BK_OK;
}
