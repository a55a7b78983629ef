/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tmpl.h - the template engine behind code generation: a strict mustache subset
 * (conventions.md 9) rendering a small typed data model into memory.
 *
 * Syntax:
 *   {{name|filter}}              a value through a mandatory typed escaper (no bare {{name}})
 *   {{#each list}}..{{/each}}    with {{@index|int}}, {{#if @first}}, {{#if @last}} and {{.|f}}
 *   {{#if x}}..{{else}}..{{/if}} truth: bool, non-zero number, non-empty string or list, any map
 *   {{! comment}}                dropped
 *   {{> name}}                   another template of the same set (never a file path)
 * A block tag or comment alone on its line removes the whole line, as in mustache.
 *
 * Filters are the security boundary of generated code (conventions.md 10):
 *   ident  [A-Za-z_][A-Za-z0-9_]*, no C11/C++17/CUDA keyword, no reserved name
 *   cstr   a C string literal, quotes included; \ " ? tab CR LF escaped, every other byte below
 *          0x20 or from 0x7f up as a 3-digit octal escape (bidi controls and invalid UTF-8 are
 *          neutralised); input longer than TMPL_CSTR_MAX bytes is cut and ends in "..."
 *   int    a signed value within int; u64 and size: non-negative, with a "u" suffix
 *   float  the shortest %.15g..%.17g that reads back exactly, always with a point or exponent;
 *          NaN and infinities are refused
 *   raw    only for keys on the set's whitelist (checked when a template is loaded), and only
 *          values made of [A-Za-z0-9 ._+-]
 * Lookups are strict: a name is searched in the enclosing {{#each}} items (innermost first),
 * then in the root map; an unknown key, filter, or a value of the wrong type is an error reported
 * at the template's LINE:COL. The engine never prints; errors go to a struct diag.
 */
#ifndef BK_TMPL_H
#define BK_TMPL_H

#include <stddef.h>

#include "core/bk.h"
#include "core/diag.h"
#include "core/strbuf.h"

#define TMPL_CSTR_MAX 1024
#define TMPL_MAX_DEPTH 32 /* nested blocks, and partials within partials */
/* The most a render may write by default: nested {{#each}} multiply, so a few hundred bytes of
 * template could otherwise ask for exabytes. */
#define TMPL_MAX_OUTPUT ((size_t)256 << 20)

/* ---- the data model: a tagged tree ---- */

enum tmpl_kind { TV_STRING, TV_INT, TV_FLOAT, TV_BOOL, TV_LIST, TV_MAP };

struct tmpl_value {
    enum tmpl_kind kind;
    char *s;                    /* TV_STRING: bytes (may hold NUL), NUL-terminated */
    size_t len;                 /* TV_STRING: length */
    long long i;                /* TV_INT; TV_BOOL: 0 or 1 */
    double f;                   /* TV_FLOAT */
    struct tmpl_value **items;  /* TV_LIST, TV_MAP: values in insertion order (NULL in a list
                                   of numbers, below) */
    long long *ints;            /* TV_LIST made by tv_int_list: its n numbers, held as numbers
                                   (a tree's parents and order are most of a large model) */
    char **keys;                /* TV_MAP: keys, parallel to items */
    int n, cap;
};

/* Constructors return NULL when out of memory; tv_set and tv_push accept that NULL and then
 * return BK_ENOMEM, so a builder can chain calls and check each status. */
struct tmpl_value *tv_string(const char *s);
struct tmpl_value *tv_stringn(const char *s, size_t n);
struct tmpl_value *tv_int(long long v);
struct tmpl_value *tv_float(double v);
struct tmpl_value *tv_bool(int b);
struct tmpl_value *tv_list(void);
struct tmpl_value *tv_map(void);
/* A list of the n numbers v[] that renders as a list of tv_int values would, in a tenth of
 * the memory; tv_push refuses it (BK_EINTERNAL). */
struct tmpl_value *tv_int_list(const int *v, int n);

/* Append v to a list / set key in a map (a key given twice is replaced). Both take ownership of
 * v, also on failure. Errors: BK_ENOMEM (v or the container is NULL, or allocation failed),
 * BK_EINTERNAL (wrong container kind). */
BK_MUST_USE
enum bk_status tv_push(struct tmpl_value *list, struct tmpl_value *v);
BK_MUST_USE
enum bk_status tv_set(struct tmpl_value *map, const char *key, struct tmpl_value *v);

/* The value under key, or NULL. */
const struct tmpl_value *tv_get(const struct tmpl_value *map, const char *key);
/* Item k of a list or map (0 <= k < n): the item itself, or, in a list of numbers, *tmp made
 * the number (valid while tmp lives). */
const struct tmpl_value *tv_item(const struct tmpl_value *v, int k, struct tmpl_value *tmp);

void tv_free(struct tmpl_value *v);

/* ---- templates ---- */

struct tmpl_set;

/* A new, empty set. raw_ok lists the keys that may use |raw (NULL-terminated; NULL for none);
 * the strings must outlive the set. Returns NULL when out of memory. */
struct tmpl_set *tmpl_set_new(const char *const *raw_ok);
void tmpl_set_free(struct tmpl_set *s);

/* The most a render from s may write (TMPL_MAX_OUTPUT unless set): beyond it, BK_EINPUT. */
void tmpl_set_max_output(struct tmpl_set *s, size_t bytes);

/*
 * Parse one template and add it under `name` (what {{> name}} refers to). `label` names it in
 * diagnostics (a file name); text[len] is copied. Syntax errors: BK_EINPUT with a diagnostic at
 * label:LINE:COL. BK_ENOMEM.
 */
BK_MUST_USE
enum bk_status tmpl_set_add(struct tmpl_set *s, const char *name, const char *label,
                            const char *text, size_t len, struct diag *d);

/* Does the set hold a template called name? */
int tmpl_set_has(const struct tmpl_set *s, const char *name);

/*
 * Render template `name` with root (a TV_MAP) into out. On error (BK_EINPUT, with a diagnostic
 * at the template's LINE:COL) out may hold a partial rendering: the caller discards it.
 */
BK_MUST_USE
enum bk_status tmpl_render(const struct tmpl_set *s, const char *name,
                           const struct tmpl_value *root, struct strbuf *out, struct diag *d);

/* ---- the escapers, also used directly by tests ---- */

enum tmpl_filter { TF_IDENT, TF_CSTR, TF_INT, TF_U64, TF_SIZE, TF_FLOAT, TF_RAW };

/* Parse a filter name; 1 on success. */
int tmpl_filter_parse(const char *s, size_t n, enum tmpl_filter *out);

/* Append v through filter f. Returns NULL on success, or a static message saying why v was
 * refused (nothing is appended then). */
const char *tmpl_filter_apply(enum tmpl_filter f, const struct tmpl_value *v, struct strbuf *out);

/* 1 when s is a safe identifier for C11, C++17 and CUDA (the ident filter's rule). */
int tmpl_ident_ok(const char *s, size_t n);

/* Append s[n] as an escaped C string literal, quotes included (the cstr filter). */
void tmpl_put_cstr(struct strbuf *out, const char *s, size_t n);

#endif
