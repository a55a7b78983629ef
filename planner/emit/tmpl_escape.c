/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tmpl_escape.c - the typed escapers of the template engine (tmpl.h, conventions.md 10).
 *
 * These functions are the only way a data-model value reaches generated C/CUDA, so every one of
 * them either proves its output safe in any position of a C11, C++17 or CUDA source or refuses
 * the value. Input text may only travel through cstr; identifiers are built from indices.
 */
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit/tmpl.h"

static const struct {
    const char *name;
    enum tmpl_filter f;
} filters[] = {
    {"ident", TF_IDENT}, {"cstr", TF_CSTR},   {"int", TF_INT}, {"u64", TF_U64},
    {"size", TF_SIZE},   {"float", TF_FLOAT}, {"raw", TF_RAW},
};

int tmpl_filter_parse(const char *s, size_t n, enum tmpl_filter *out)
{
    for (size_t k = 0; k < BK_ARRAY_LEN(filters); k++)
        if (strlen(filters[k].name) == n && memcmp(filters[k].name, s, n) == 0) {
            *out = filters[k].f;
            return 1;
        }
    return 0;
}

/* Keywords of C11, C++17 (and C++20, so a newer host compiler changes nothing), alternative
 * operator spellings, CUDA's built-in variables and the macros every generated file sees.
 * Names with a leading underscore or a double underscore are refused by rule instead. */
static const char *const keywords[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "assert", "auto", "bitand", "bitor",
    "blockDim", "blockIdx", "bool", "break", "case", "catch", "char", "char16_t", "char32_t",
    "char8_t", "class", "co_await", "co_return", "co_yield", "compl", "concept", "const",
    "const_cast", "consteval", "constexpr", "constinit", "continue", "decltype", "default",
    "delete", "do", "double", "dynamic_cast", "else", "enum", "errno", "explicit", "export",
    "extern", "false", "float", "for", "friend", "goto", "gridDim", "if", "inline", "int",
    "long", "main", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
    "NULL", "offsetof", "operator", "or", "or_eq", "private", "protected", "public",
    "register", "reinterpret_cast", "requires", "restrict", "return", "short", "signed",
    "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this",
    "thread_local", "threadIdx", "throw", "true", "try", "typedef", "typeid", "typename",
    "union", "unsigned", "using", "virtual", "void", "volatile", "warpSize", "wchar_t", "while",
    "xor", "xor_eq",
};

int tmpl_ident_ok(const char *s, size_t n)
{
    if (n == 0 || n > 255 || s[0] == '_' || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_';
        if (!ok || (c == '_' && i + 1 < n && s[i + 1] == '_'))
            return 0; /* "__" anywhere is reserved in C++ */
    }
    for (size_t k = 0; k < BK_ARRAY_LEN(keywords); k++)
        if (strlen(keywords[k]) == n && memcmp(keywords[k], s, n) == 0)
            return 0;
    return 1;
}

void tmpl_put_cstr(struct strbuf *out, const char *s, size_t n)
{
    size_t cut = n > TMPL_CSTR_MAX ? TMPL_CSTR_MAX : n;
    sb_putc(out, '"');
    for (size_t i = 0; i < cut; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '\\': sb_puts(out, "\\\\"); break;
        case '"': sb_puts(out, "\\\""); break;
        case '?': sb_puts(out, "\\?"); break; /* no trigraph (??/) can form */
        case '\t': sb_puts(out, "\\t"); break;
        case '\r': sb_puts(out, "\\r"); break;
        case '\n': sb_puts(out, "\\n"); break;
        default:
            /* Octal, always three digits: a \x escape would swallow following hex digits. Bytes
             * from 0x7f up cover every UTF-8 sequence, so no bidi control survives. */
            if (c < 0x20 || c >= 0x7f)
                sb_printf(out, "\\%03o", (unsigned)c);
            else
                sb_putc(out, (char)c);
        }
    }
    if (cut < n)
        sb_puts(out, "...");
    sb_putc(out, '"');
}

/* raw values are program constants such as a version number: plain words only. */
static int raw_ok(const struct tmpl_value *v)
{
    if (v->len == 0 || v->len > 64)
        return 0;
    for (size_t i = 0; i < v->len; i++) {
        char c = v->s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == ' ' || c == '.' || c == '_' || c == '+' || c == '-'))
            return 0;
    }
    return 1;
}

/* snprintf and strtod use the C library's LC_NUMERIC: a host program that called setlocale (a
 * test, or a tool linking the planner) would get "18,75", which C reads as two numbers. blinkc
 * itself never calls setlocale, but the output must not depend on who does: write '.' whatever
 * the locale's decimal point (which may be several bytes). */
static void put_c_number(struct strbuf *out, const char *buf)
{
    const char *dp = localeconv()->decimal_point;
    size_t dl = dp ? strlen(dp) : 0;
    const char *at = dl && strcmp(dp, ".") != 0 ? strstr(buf, dp) : NULL;
    if (!at) {
        sb_puts(out, buf);
        return;
    }
    sb_putn(out, buf, (size_t)(at - buf));
    sb_putc(out, '.');
    sb_puts(out, at + dl);
}

static const char *put_float(double f, struct strbuf *out)
{
    if (!isfinite(f))
        return "NaN and infinities cannot be rendered";
    /* The shortest of %.15g..%.17g that reads back exactly: deterministic and readable. Both
     * sides of the check use the same locale, so it holds under any. */
    char buf[48];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, f);
        if (strtod(buf, NULL) == f)
            break;
    }
    size_t start = out->len;
    put_c_number(out, buf);
    /* Keep it a floating literal: "3" would be an int. */
    int has_point = 0;
    for (size_t i = start; out->data && i < out->len; i++)
        has_point |= out->data[i] == '.' || out->data[i] == 'e';
    if (!has_point)
        sb_puts(out, ".0");
    return NULL;
}

const char *tmpl_filter_apply(enum tmpl_filter f, const struct tmpl_value *v, struct strbuf *out)
{
    switch (f) {
    case TF_IDENT:
        if (v->kind != TV_STRING)
            return "ident needs a string";
        if (!tmpl_ident_ok(v->s, v->len))
            return "not a safe identifier ([A-Za-z_][A-Za-z0-9_]*, no keyword or reserved name)";
        sb_putn(out, v->s, v->len);
        return NULL;
    case TF_CSTR:
        if (v->kind != TV_STRING)
            return "cstr needs a string";
        tmpl_put_cstr(out, v->s, v->len);
        return NULL;
    case TF_INT:
        if (v->kind != TV_INT)
            return "int needs an integer";
        if (v->i < INT_MIN || v->i > INT_MAX)
            return "integer out of the range of int";
        sb_printf(out, "%lld", v->i);
        return NULL;
    case TF_U64:
    case TF_SIZE:
        if (v->kind != TV_INT)
            return f == TF_U64 ? "u64 needs an integer" : "size needs an integer";
        if (v->i < 0)
            return "negative value for an unsigned filter";
        if (f == TF_SIZE && (unsigned long long)v->i > (unsigned long long)SIZE_MAX)
            return "value out of the range of size_t";
        sb_printf(out, "%lluu", (unsigned long long)v->i);
        return NULL;
    case TF_FLOAT:
        if (v->kind == TV_INT)
            return put_float((double)v->i, out);
        if (v->kind != TV_FLOAT)
            return "float needs a number";
        return put_float(v->f, out);
    case TF_RAW:
        if (v->kind != TV_STRING || !raw_ok(v))
            return "raw value is not a plain word ([A-Za-z0-9 ._+-], at most 64 bytes)";
        sb_putn(out, v->s, v->len);
        return NULL;
    }
    return "unknown filter";
}
