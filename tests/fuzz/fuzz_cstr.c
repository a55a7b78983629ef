/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_cstr.c - libFuzzer harness for the escapers, the security boundary of generated code
 * (tmpl.h, conventions.md 10).
 *
 * cstr: any bytes must give a literal of printable ASCII whose only unescaped quotes are its
 * ends, with no raw newline, no unescaped '?' (so no trigraph can start) and only the escapes
 * the filter documents; decoding it must give the input back (its first TMPL_CSTR_MAX bytes
 * followed by "..." when it was cut). The same bytes also go through ident and raw (an accepted
 * value contains only their characters) and, as a double, through float (the text reads back
 * as the same number and stays a floating literal).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "core/strbuf.h"
#include "emit/tmpl.h"

static int is_odigit(char c) { return c >= '0' && c <= '7'; }

/* Decode lit[n] (one C string literal) into dec; 0 if it is well formed and inert. */
static int decode_cstr(const char *lit, size_t n, struct strbuf *dec)
{
    if (n < 2 || lit[0] != '"' || lit[n - 1] != '"')
        return 10;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)lit[i];
        if (c < 0x20 || c >= 0x7f)
            return 11; /* raw control byte, newline or non-ASCII */
        if (c == '"' || c == '?')
            return 12; /* bare quote, or a '?' that could start a trigraph */
        if (c != '\\') {
            sb_putc(dec, (char)c);
            continue;
        }
        if (i + 2 >= n)
            return 13; /* the backslash would escape the closing quote */
        char e = lit[++i];
        switch (e) {
        case '\\': sb_putc(dec, '\\'); break;
        case '"': sb_putc(dec, '"'); break;
        case '?': sb_putc(dec, '?'); break;
        case 't': sb_putc(dec, '\t'); break;
        case 'r': sb_putc(dec, '\r'); break;
        case 'n': sb_putc(dec, '\n'); break;
        default:
            /* Exactly three octal digits, or a following digit would join the escape. */
            if (i + 3 >= n || !is_odigit(e) || !is_odigit(lit[i + 1]) || !is_odigit(lit[i + 2]))
                return 14;
            sb_putc(dec, (char)((e - '0') * 64 + (lit[i + 1] - '0') * 8 + (lit[i + 2] - '0')));
            i += 2;
        }
    }
    return 0;
}

static int check_cstr(const char *s, size_t n)
{
    struct strbuf lit, dec;
    sb_init(&lit);
    sb_init(&dec);
    tmpl_put_cstr(&lit, s, n);
    int bad = lit.failed ? 0 : decode_cstr(lit.data, lit.len, &dec);
    if (!bad && !lit.failed && !dec.failed) {
        size_t keep = n > TMPL_CSTR_MAX ? TMPL_CSTR_MAX : n;
        size_t want = keep + (n > keep ? 3 : 0);
        if (dec.len != want || (keep && memcmp(dec.data, s, keep) != 0) ||
            (n > keep && memcmp(dec.data + keep, "...", 3) != 0))
            bad = 15; /* does not round-trip */
    }
    sb_free(&lit);
    sb_free(&dec);
    return bad;
}

static int only_chars(const char *s, size_t n, const char *extra, int digit_first_ok)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 (c != '\0' && strchr(extra, c));
        if (!ok || (i == 0 && !digit_first_ok && c >= '0' && c <= '9'))
            return 0;
    }
    return 1;
}

/* Run filter f on v; check an accepted output with ok(). */
static int check_filter(enum tmpl_filter f, struct tmpl_value *v)
{
    if (!v)
        return 0;
    struct strbuf out;
    sb_init(&out);
    const char *why = tmpl_filter_apply(f, v, &out);
    int bad = 0;
    if (why) {
        if (out.len != 0)
            bad = 20; /* refused, but appended something */
    } else if (!out.failed) {
        const char *o = out.data ? out.data : "";
        if (f == TF_IDENT && (!only_chars(o, out.len, "_", 0) || o[0] == '_'))
            bad = 21;
        if (f == TF_RAW && !only_chars(o, out.len, " ._+-", 1))
            bad = 22;
        if (f == TF_FLOAT) {
            char *end;
            double back = strtod(o, &end);
            if (end != o + out.len || !strpbrk(o, ".e") ||
                (v->kind == TV_FLOAT && back != v->f))
                bad = 23;
        }
    }
    sb_free(&out);
    tv_free(v);
    return bad;
}

int fuzz_cstr_one(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    int bad = check_cstr(s, size);
    if (!bad)
        bad = check_filter(TF_IDENT, tv_stringn(s, size));
    if (!bad)
        bad = check_filter(TF_RAW, tv_stringn(s, size));
    if (!bad && size >= sizeof(double)) {
        double f;
        memcpy(&f, data, sizeof f);
        bad = check_filter(TF_FLOAT, tv_float(f));
    }
    return bad;
}

#ifndef BK_FUZZ_NO_ENTRY
FUZZ_ENTRY(fuzz_cstr_one)
#endif
