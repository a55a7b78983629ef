/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * json_read.c - the strict JSON parser of json_read.h.
 *
 * Recursive descent over the NUL-terminated input. Raw newlines can only appear between tokens,
 * so the line and column are kept up to date there and every value's position costs nothing.
 */
#include "core/json_read.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

struct parser {
    const struct input *in;
    const char *s; /* in->data */
    size_t off, len;
    int line;
    size_t line_start;
    struct diag *d;
};

static struct diag_loc here(const struct parser *p)
{
    return (struct diag_loc){p->line, (int)(p->off - p->line_start) + 1};
}

BK_MUST_USE
static enum bk_status fail(struct parser *p, const char *what)
{
    return diag_error(p->d, p->in->name, here(p), "JSON: %s", what);
}

static void skip_ws(struct parser *p)
{
    for (; p->off < p->len; p->off++) {
        char c = p->s[p->off];
        if (c == '\n') {
            p->line++;
            p->line_start = p->off + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return;
        }
    }
}

static int peek(const struct parser *p)
{
    return p->off < p->len ? (unsigned char)p->s[p->off] : -1;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (x < 0)
            return 0;
        v = v * 16 + (unsigned)x;
    }
    *out = v;
    return 1;
}

static void put_utf8(struct strbuf *sb, unsigned cp)
{
    if (cp < 0x80) {
        sb_putc(sb, (char)cp);
    } else if (cp < 0x800) {
        sb_putc(sb, (char)(0xc0 | cp >> 6));
        sb_putc(sb, (char)(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        sb_putc(sb, (char)(0xe0 | cp >> 12));
        sb_putc(sb, (char)(0x80 | (cp >> 6 & 0x3f)));
        sb_putc(sb, (char)(0x80 | (cp & 0x3f)));
    } else {
        sb_putc(sb, (char)(0xf0 | cp >> 18));
        sb_putc(sb, (char)(0x80 | (cp >> 12 & 0x3f)));
        sb_putc(sb, (char)(0x80 | (cp >> 6 & 0x3f)));
        sb_putc(sb, (char)(0x80 | (cp & 0x3f)));
    }
}

/* One escape after the backslash at p->off - 1; the code point goes into sb. */
BK_MUST_USE
static enum bk_status escape(struct parser *p, struct strbuf *sb)
{
    static const char plain[] = "\"\\/bfnrt", value[] = "\"\\/\b\f\n\r\t";
    int c = peek(p);
    const char *e = c > 0 ? strchr(plain, c) : NULL;
    if (e) {
        sb_putc(sb, value[e - plain]);
        p->off++;
        return BK_OK;
    }
    unsigned cp, lo;
    if (c != 'u' || p->len - p->off < 5 || !hex4(p->s + p->off + 1, &cp))
        return fail(p, "invalid escape in a string");
    p->off += 5;
    if (cp >= 0xd800 && cp < 0xdc00) {
        if (p->len - p->off < 6 || p->s[p->off] != '\\' || p->s[p->off + 1] != 'u' ||
            !hex4(p->s + p->off + 2, &lo) || lo < 0xdc00 || lo >= 0xe000)
            return fail(p, "unpaired UTF-16 surrogate in a string");
        p->off += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    } else if (cp >= 0xdc00 && cp < 0xe000) {
        return fail(p, "unpaired UTF-16 surrogate in a string");
    }
    if (cp == 0)
        return fail(p, "\\u0000 in a string (not supported)");
    put_utf8(sb, cp);
    return BK_OK;
}

/* A string starting at the quote; *out is malloc'd. */
BK_MUST_USE
static enum bk_status string(struct parser *p, char **out)
{
    struct strbuf sb;
    sb_init(&sb);
    p->off++;
    enum bk_status st = BK_OK;
    for (;;) {
        int c = peek(p);
        if (c < 0 || c == '\n') {
            st = fail(p, "unterminated string");
            break;
        }
        if (c < 0x20) {
            st = fail(p, "control character in a string (escape it)");
            break;
        }
        p->off++;
        if (c == '"')
            break;
        if (c == '\\') {
            if ((st = escape(p, &sb)) != BK_OK)
                break;
        } else {
            sb_putc(&sb, (char)c);
        }
    }
    if (st == BK_OK && sb.failed)
        st = BK_ENOMEM;
    if (st == BK_OK && !(*out = sb.data ? sb_take(&sb) : strdup("")))
        st = BK_ENOMEM;
    sb_free(&sb);
    return st;
}

static size_t digits(const struct parser *p, size_t i)
{
    while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
        i++;
    return i;
}

BK_MUST_USE
static enum bk_status number(struct parser *p, struct json_value *v)
{
    size_t i = p->off;
    if (p->s[i] == '-')
        i++;
    size_t int_end = digits(p, i);
    if (int_end == i || (p->s[i] == '0' && int_end > i + 1))
        return fail(p, "invalid number");
    i = int_end;
    v->integral = 1;
    if (i < p->len && p->s[i] == '.') {
        size_t e = digits(p, i + 1);
        if (e == i + 1)
            return fail(p, "invalid number (no digit after the point)");
        i = e;
        v->integral = 0;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        size_t e = digits(p, i);
        if (e == i)
            return fail(p, "invalid number (no digit in the exponent)");
        i = e;
        v->integral = 0;
    }
    v->type = JSON_NUMBER;
    v->number = strtod(p->s + p->off, NULL); /* the grammar above already holds */
    if (!isfinite(v->number))
        return fail(p, "number out of range");
    p->off = i;
    return BK_OK;
}

BK_MUST_USE
static enum bk_status value(struct parser *p, struct json_value *v, int depth);

BK_MUST_USE
static enum bk_status members(struct parser *p, struct json_value *v, int depth)
{
    int object = v->type == JSON_OBJECT;
    char close = object ? '}' : ']';
    p->off++;
    skip_ws(p);
    if (peek(p) == close) {
        p->off++;
        return BK_OK;
    }
    for (;;) {
        char *key = NULL;
        if (object) {
            if (peek(p) != '"')
                return fail(p, "expected a string key");
            struct diag_loc at = here(p);
            BK_CHECK(string(p, &key));
            if (json_get(v, key)) {
                free(key);
                return diag_error(p->d, p->in->name, at, "JSON: duplicate key in an object");
            }
            skip_ws(p);
            if (peek(p) != ':') {
                free(key);
                return fail(p, "expected ':' after a key");
            }
            p->off++;
            skip_ws(p);
        }
        enum bk_status st = bk_grow_int((void **)&v->items, &v->cap, v->n, sizeof *v->items);
        if (st != BK_OK) {
            free(key);
            return st;
        }
        struct json_value *m = &v->items[v->n++]; /* counted now, so json_free sees it */
        memset(m, 0, sizeof *m);
        m->key = key;
        BK_CHECK(value(p, m, depth + 1));
        skip_ws(p);
        int c = peek(p);
        if (c == close) {
            p->off++;
            return BK_OK;
        }
        if (c != ',')
            return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
        p->off++;
        skip_ws(p);
    }
}

static int literal(struct parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->off < n || memcmp(p->s + p->off, word, n) != 0)
        return 0;
    p->off += n;
    return 1;
}

static enum bk_status value(struct parser *p, struct json_value *v, int depth)
{
    if (depth >= JSON_MAX_DEPTH) /* depth counts the containers around this value */
        return fail(p, "nested deeper than 64 levels");
    skip_ws(p);
    v->loc = here(p);
    int c = peek(p);
    if (c == '{' || c == '[') {
        v->type = c == '{' ? JSON_OBJECT : JSON_ARRAY;
        return members(p, v, depth);
    }
    if (c == '"') {
        v->type = JSON_STRING;
        return string(p, &v->string);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return number(p, v);
    if (literal(p, "true") || literal(p, "false")) {
        v->type = JSON_BOOL;
        v->boolean = c == 't';
        return BK_OK;
    }
    if (literal(p, "null")) {
        v->type = JSON_NULL;
        return BK_OK;
    }
    return fail(p, c < 0 ? "unexpected end of input" : "expected a value");
}

enum bk_status json_parse(const struct input *in, struct json_value *out, struct diag *d)
{
    memset(out, 0, sizeof *out);
    struct parser p = {in, in->data, 0, in->len, 1, 0, d};
    if (p.len >= 3 && memcmp(p.s, "\xef\xbb\xbf", 3) == 0)
        p.off = p.line_start = 3; /* a UTF-8 byte order mark */
    enum bk_status st = value(&p, out, 0);
    if (st == BK_OK) {
        skip_ws(&p);
        if (p.off < p.len)
            st = fail(&p, "text after the JSON value");
    }
    if (st != BK_OK)
        json_free(out);
    return st;
}

void json_free(struct json_value *v)
{
    for (int i = 0; i < v->n; i++)
        json_free(&v->items[i]);
    free(v->items);
    free(v->key);
    free(v->string);
    memset(v, 0, sizeof *v);
}

const struct json_value *json_get(const struct json_value *v, const char *key)
{
    if (!v || v->type != JSON_OBJECT)
        return NULL;
    for (int i = 0; i < v->n; i++)
        if (v->items[i].key && strcmp(v->items[i].key, key) == 0)
            return &v->items[i];
    return NULL;
}

const char *json_type_name(enum json_type t)
{
    static const char *const names[] = {"null",     "a boolean", "a number",
                                        "a string", "an array",  "an object"};
    return names[t];
}
