/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tmpl_parse.c - parsing a template (tmpl.h) into a tree of text, values, blocks and partials.
 *
 * Everything that can be checked without data is checked here, when the template is loaded:
 * tag syntax, block nesting, filter names, and the |raw whitelist. So a template that loads can
 * fail at render time only on the data (unknown key, wrong type, value out of range).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "emit/tmpl_internal.h"

enum tag_kind {
    TAG_VAR, TAG_EACH, TAG_IF, TAG_ELSE, TAG_END_EACH, TAG_END_IF, TAG_COMMENT, TAG_PARTIAL,
    TAG_EOF
};

struct tag {
    enum tag_kind kind;
    int line, col;
    char *name;
    enum tmpl_filter filter;
};

struct parser {
    const char *src;
    size_t len, pos;
    int line, col; /* of pos, 1-based */
    const char *label;
    const char *const *raw_ok;
    struct diag *d;
};

BK_MUST_USE
static enum bk_status fail(struct parser *p, int line, int col, const char *fmt, ...)
    BK_PRINTF(4, 5);
BK_MUST_USE
static enum bk_status fail(struct parser *p, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = bk_vasprintf(fmt, ap);
    va_end(ap);
    if (!msg)
        return BK_ENOMEM;
    diag_add(p->d, DIAG_ERROR, p->label, DIAG_AT(line, col), "%s", msg);
    free(msg);
    return BK_EINPUT;
}

static void advance_to(struct parser *p, size_t to)
{
    for (; p->pos < to; p->pos++) {
        if (p->src[p->pos] == '\n') {
            p->line++;
            p->col = 1;
        } else {
            p->col++;
        }
    }
}

static const char *find(const char *s, size_t from, size_t len, const char *pat)
{
    for (size_t i = from; i + 1 < len; i++)
        if (s[i] == pat[0] && s[i + 1] == pat[1])
            return s + i;
    return NULL;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

static int valid_name(const char *s, size_t n)
{
    if ((n == 1 && s[0] == '.') || (n == 6 && memcmp(s, "@index", 6) == 0) ||
        (n == 6 && memcmp(s, "@first", 6) == 0) || (n == 5 && memcmp(s, "@last", 5) == 0))
        return 1;
    if (n == 0 || n > 64 || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    return 1;
}

static int valid_partial(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return 0;
    return 1;
}

/* Trim spaces and tabs from both ends of [*a, *b). */
static void trim(const char *s, size_t *a, size_t *b)
{
    while (*a < *b && is_space(s[*a]))
        (*a)++;
    while (*b > *a && is_space(s[*b - 1]))
        (*b)--;
}

static int word_is(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(s, w, n) == 0;
}

static int on_whitelist(const char *const *raw_ok, const char *name)
{
    for (; raw_ok && *raw_ok; raw_ok++)
        if (strcmp(*raw_ok, name) == 0)
            return 1;
    return 0;
}

/* Parse the inside of a tag, src[a, b), into t (t->line/col already set). */
BK_MUST_USE
static enum bk_status parse_tag(struct parser *p, size_t a, size_t b, struct tag *t)
{
    const char *s = p->src;
    trim(s, &a, &b);
    if (a < b && s[a] == '!') {
        t->kind = TAG_COMMENT;
        return BK_OK;
    }
    /* Block tags carry a keyword; the rest of the tag is the name. */
    size_t na = a, nb = b;
    char sigil = a < b ? s[a] : '\0';
    if (sigil == '#' || sigil == '/' || sigil == '>') {
        na = a + 1;
        trim(s, &na, &nb);
    }
    if (sigil == '#' || sigil == '/') {
        size_t kw = na;
        while (kw < nb && !is_space(s[kw]))
            kw++;
        int each = word_is(s + na, kw - na, "each"), iff = word_is(s + na, kw - na, "if");
        if (!each && !iff)
            return fail(p, t->line, t->col, "unknown block tag '%c%.*s' (#each, #if, /each, /if)",
                        sigil, (int)(kw - na > 32 ? 32 : kw - na), s + na);
        if (sigil == '/') {
            if (kw != nb)
                return fail(p, t->line, t->col, "a closing tag takes no name");
            t->kind = each ? TAG_END_EACH : TAG_END_IF;
            return BK_OK;
        }
        t->kind = each ? TAG_EACH : TAG_IF;
        na = kw;
        trim(s, &na, &nb);
    } else if (sigil == '>') {
        if (!valid_partial(s + na, nb - na))
            return fail(p, t->line, t->col, "bad partial name");
        t->kind = TAG_PARTIAL;
    } else if (word_is(s + a, b - a, "else")) {
        t->kind = TAG_ELSE;
        return BK_OK;
    } else {
        t->kind = TAG_VAR;
        const char *bar = memchr(s + a, '|', b - a);
        if (!bar)
            return fail(p, t->line, t->col,
                        "a value needs a filter: {{name|filter}} with ident, cstr, int, u64, "
                        "size, float or raw");
        nb = (size_t)(bar - s);
        size_t fa = nb + 1, fb = b;
        trim(s, &na, &nb);
        trim(s, &fa, &fb);
        if (!tmpl_filter_parse(s + fa, fb - fa, &t->filter)) {
            char *f = bk_strndup(s + fa, fb - fa > 32 ? 32 : fb - fa);
            enum bk_status st = f ? fail(p, t->line, t->col, "unknown filter '%s'", f) : BK_ENOMEM;
            free(f);
            return st;
        }
    }
    if (t->kind != TAG_PARTIAL && !valid_name(s + na, nb - na))
        return fail(p, t->line, t->col, "bad key name in tag");
    t->name = bk_strndup(s + na, nb - na);
    if (!t->name)
        return BK_ENOMEM;
    if (t->kind == TAG_VAR && t->filter == TF_RAW && !on_whitelist(p->raw_ok, t->name))
        return fail(p, t->line, t->col, "'%s' may not use |raw (not on the whitelist)", t->name);
    return BK_OK;
}

BK_MUST_USE
static enum bk_status push(struct tnode_list *l, const struct tnode *n)
{
    BK_CHECK(bk_grow_int((void **)&l->v, &l->cap, l->n, sizeof *l->v));
    l->v[l->n++] = *n;
    return BK_OK;
}

/* Read the next tag: text before it goes into out. A block tag, comment or partial alone on its
 * line takes the whole line with it. */
BK_MUST_USE
static enum bk_status next_tag(struct parser *p, struct tnode_list *out, struct tag *t)
{
    memset(t, 0, sizeof *t);
    size_t seg = p->pos;
    const char *open = find(p->src, seg, p->len, "{{");
    size_t s = open ? (size_t)(open - p->src) : p->len, text_end = s, next = s;
    advance_to(p, s);
    t->line = p->line;
    t->col = p->col;
    if (!open) {
        t->kind = TAG_EOF;
    } else {
        const char *close = find(p->src, s + 2, p->len, "}}");
        if (!close)
            return fail(p, t->line, t->col, "unterminated tag: no closing }}");
        size_t e = (size_t)(close - p->src) + 2;
        BK_CHECK(parse_tag(p, s + 2, e - 2, t));
        next = e;
        if (t->kind != TAG_VAR) {
            size_t ls = s, a = e;
            while (ls > seg && is_space(p->src[ls - 1]))
                ls--;
            while (a < p->len && is_space(p->src[a]))
                a++;
            int alone_before = ls == 0 || p->src[ls - 1] == '\n';
            int crlf = a + 1 < p->len && p->src[a] == '\r' && p->src[a + 1] == '\n';
            if (alone_before && (a == p->len || p->src[a] == '\n' || crlf)) {
                text_end = ls;
                next = a == p->len ? a : a + (crlf ? 2 : 1);
            }
        }
    }
    if (text_end > seg) {
        struct tnode n = {.kind = TN_TEXT, .text = p->src + seg, .len = text_end - seg};
        BK_CHECK(push(out, &n));
    }
    advance_to(p, next);
    return BK_OK;
}

static const char *tag_text(enum tag_kind k)
{
    switch (k) {
    case TAG_ELSE: return "{{else}}";
    case TAG_END_EACH: return "{{/each}}";
    case TAG_END_IF: return "{{/if}}";
    default: return "end of template";
    }
}

/* Parse nodes into out until a tag that ends a block (or the end); *stop gets that tag. */
BK_MUST_USE
static enum bk_status parse_list(struct parser *p, struct tnode_list *out, int depth,
                                 struct tag *stop)
{
    if (depth > TMPL_MAX_DEPTH)
        return fail(p, p->line, p->col, "blocks nested too deeply");
    for (;;) {
        struct tag t;
        enum bk_status st = next_tag(p, out, &t);
        if (st != BK_OK) {
            free(t.name);
            return st;
        }
        struct tnode n = {.line = t.line, .col = t.col, .name = t.name, .filter = t.filter};
        switch (t.kind) {
        case TAG_COMMENT: continue;
        case TAG_VAR: n.kind = TN_VAR; break;
        case TAG_PARTIAL: n.kind = TN_PARTIAL; break;
        case TAG_EACH:
        case TAG_IF: {
            n.kind = t.kind == TAG_EACH ? TN_EACH : TN_IF;
            struct tag end;
            st = parse_list(p, &n.body, depth + 1, &end);
            if (st == BK_OK && end.kind == TAG_ELSE && t.kind == TAG_IF)
                st = parse_list(p, &n.alt, depth + 1, &end);
            enum tag_kind want = t.kind == TAG_EACH ? TAG_END_EACH : TAG_END_IF;
            if (st == BK_OK && end.kind != want) {
                const char *open = t.kind == TAG_EACH ? "{{#each}}" : "{{#if}}";
                if (end.kind == TAG_EOF)
                    st = fail(p, t.line, t.col, "%s is never closed", open);
                else
                    st = fail(p, end.line, end.col, "%s does not belong here", tag_text(end.kind));
            }
            break;
        }
        default:
            *stop = t;
            return BK_OK;
        }
        if (st == BK_OK)
            st = push(out, &n);
        if (st != BK_OK) {
            tnode_list_free(&n.body);
            tnode_list_free(&n.alt);
            free(n.name);
            return st;
        }
    }
}

enum bk_status tmpl_parse(struct tmpl *t, const char *const *raw_ok, struct diag *d)
{
    struct parser p = {t->src, strlen(t->src), 0, 1, 1, t->label, raw_ok, d};
    struct tag end;
    enum bk_status st = parse_list(&p, &t->nodes, 0, &end);
    if (st == BK_OK && end.kind != TAG_EOF)
        st = fail(&p, end.line, end.col, "%s without a matching opening tag", tag_text(end.kind));
    return st;
}

void tnode_list_free(struct tnode_list *l)
{
    for (int i = 0; i < l->n; i++) {
        tnode_list_free(&l->v[i].body);
        tnode_list_free(&l->v[i].alt);
        free(l->v[i].name);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}
