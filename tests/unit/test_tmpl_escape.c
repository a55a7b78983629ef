/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_tmpl_escape.c - the typed escapers (conventions.md 10): cstr against hostile strings
 * (quotes, comment closers, trigraphs, trailing backslash, newlines, NUL, bidi controls, invalid
 * UTF-8, 10 KB), ident's keyword and reserved-name rules, and the range checks of the numbers.
 * Each rendered literal is also compiled by the C compiler and read back byte for byte. The
 * float filter writes '.' even when the host program has set a decimal-comma locale.
 */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "emit/tmpl.h"

static char *cstr(const char *s, size_t n)
{
    struct strbuf sb;
    sb_init(&sb);
    tmpl_put_cstr(&sb, s, n);
    return sb_take(&sb);
}

/* Only printable ASCII, no trigraph, and the literal's only unescaped quotes at its ends. */
static void expect_inert(const char *lit)
{
    size_t n = strlen(lit);
    cr_assert(n >= 2 && lit[0] == '"' && lit[n - 1] == '"', "%s", lit);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)lit[i];
        cr_assert(c >= 0x20 && c < 0x7f, "byte %#x at %zu", c, i);
        cr_assert(!(c == '?' && lit[i + 1] == '?'), "two ? at %zu", i);
        if (c == '\\') {
            i++; /* an escape: the next byte is taken */
            cr_assert(i < n - 1, "backslash escapes the closing quote");
        } else {
            cr_assert(c != '"' || i == 0 || i == n - 1, "bare quote at %zu", i);
        }
    }
}

static const struct {
    const char *s;
    size_t n;
} hostile[] = {
    {"x\"; system(\"y\"); /*", 19}, {"*/ int evil; /*", 15}, {"?\?/\nx", 5}, {"trail\\", 6},
    {"line1\nline2\r\t", 13},         {"a\0b", 3},           {"\xe2\x80\xae" "abc", 6},
    {"bad \xff\xfe\xc0 utf8", 12},    {"\\x41\\101", 8},      {"1\0012", 3},
};

Test(escape, hostile_strings_become_inert_literals)
{
    for (size_t i = 0; i < BK_ARRAY_LEN(hostile); i++) {
        char *lit = cstr(hostile[i].s, hostile[i].n);
        expect_inert(lit);
        free(lit);
    }
    char *bidi = cstr("\xe2\x80\xae", 3);
    cr_expect_str_eq(bidi, "\"\\342\\200\\256\"");
    char *q = cstr("?\?/", 3);
    cr_expect_str_eq(q, "\"\\?\\?/\"");
    char *nul = cstr("1\0002", 3); /* octal is always 3 digits: \0002 would read as \000 2 */
    cr_expect_str_eq(nul, "\"1\\0002\"");
    free(bidi), free(q), free(nul);
}

Test(escape, long_strings_are_capped)
{
    char *big = malloc(10240);
    memset(big, 'A', 10240);
    char *lit = cstr(big, 10240);
    expect_inert(lit);
    cr_expect_eq(strlen(lit), TMPL_CSTR_MAX + 5); /* quotes and "..." */
    cr_expect(strstr(lit, "...\""));
    free(big), free(lit);
}

/* The compiler reads every literal back to exactly the input bytes. */
Test(escape, literals_compile_back_to_the_input)
{
    struct strbuf src;
    sb_init(&src);
    sb_puts(&src, "#include <stdio.h>\nstatic const struct { const char *s; unsigned n; } v[] = {\n");
    for (size_t i = 0; i < BK_ARRAY_LEN(hostile); i++) {
        char *lit = cstr(hostile[i].s, hostile[i].n);
        sb_printf(&src, "  {%s, %zu},\n", lit, hostile[i].n);
        free(lit);
    }
    sb_puts(&src, "};\nint main(void) {\n  for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++)\n"
                  "    for (unsigned k = 0; k < v[i].n; k++)\n"
                  "      printf(\"%02x\", (unsigned char)v[i].s[k]);\n  return 0;\n}\n");
    char *c = tu_temp_file(".c", src.data, src.len);
    char *exe = bk_asprintf("%s.exe", c);
    struct tu_run r;
    tu_run_argv(&r, (const char *const[]){"cc", "-std=c11", "-Wall", "-Werror", "-trigraphs", "-o",
                                          exe, c, NULL});
    cr_assert_eq(r.status, 0, "cc: %s", r.err);
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){exe, NULL});
    cr_assert_eq(r.status, 0);
    /* The program prints every byte in hex, NULs included. */
    struct strbuf want;
    sb_init(&want);
    for (size_t i = 0; i < BK_ARRAY_LEN(hostile); i++)
        for (size_t k = 0; k < hostile[i].n; k++)
            sb_printf(&want, "%02x", (unsigned char)hostile[i].s[k]);
    cr_expect_str_eq(r.out, want.data);
    sb_free(&want);
    tu_run_free(&r);
    unlink(c), unlink(exe);
    free(c), free(exe);
    sb_free(&src);
}

Test(escape, ident_allows_only_safe_names)
{
    const char *good[] = {"s0t1", "gpu3", "link17", "A_b9", "blinkgen_x"};
    const char *bad[] = {"", "3x", "_x", "a__b", "int", "class", "nullptr", "threadIdx",
                         "and", "x-y", "x y", "a\"", "\xc3\xa9"};
    for (size_t i = 0; i < BK_ARRAY_LEN(good); i++)
        cr_expect(tmpl_ident_ok(good[i], strlen(good[i])), "%s", good[i]);
    for (size_t i = 0; i < BK_ARRAY_LEN(bad); i++)
        cr_expect(!tmpl_ident_ok(bad[i], strlen(bad[i])), "%s", bad[i]);
}

static const char *apply(enum tmpl_filter f, struct tmpl_value *v, char *buf, size_t cap)
{
    struct strbuf sb;
    sb_init(&sb);
    const char *why = tmpl_filter_apply(f, v, &sb);
    snprintf(buf, cap, "%s", why ? "ERR" : sb.data ? sb.data : "");
    sb_free(&sb);
    tv_free(v);
    return buf;
}

Test(escape, numbers_are_range_checked)
{
    char b[64];
    cr_expect_str_eq(apply(TF_INT, tv_int(-1), b, sizeof b), "-1");
    cr_expect_str_eq(apply(TF_INT, tv_int((long long)INT_MAX + 1), b, sizeof b), "ERR");
    cr_expect_str_eq(apply(TF_U64, tv_int(200000), b, sizeof b), "200000u");
    cr_expect_str_eq(apply(TF_U64, tv_int(-5), b, sizeof b), "ERR");
    cr_expect_str_eq(apply(TF_SIZE, tv_int(1048576), b, sizeof b), "1048576u");
    cr_expect_str_eq(apply(TF_SIZE, tv_float(1.0), b, sizeof b), "ERR");
    cr_expect_str_eq(apply(TF_FLOAT, tv_float(24.5), b, sizeof b), "24.5");
    cr_expect_str_eq(apply(TF_FLOAT, tv_float(0.1), b, sizeof b), "0.1");
    cr_expect_str_eq(apply(TF_FLOAT, tv_float(INFINITY), b, sizeof b), "ERR");
    cr_expect_str_eq(apply(TF_FLOAT, tv_float(NAN), b, sizeof b), "ERR");
    cr_expect_str_eq(apply(TF_FLOAT, tv_int(7), b, sizeof b), "7.0");
    cr_expect_str_eq(apply(TF_RAW, tv_string("0.1.0"), b, sizeof b), "0.1.0");
    cr_expect_str_eq(apply(TF_RAW, tv_string("a*/b"), b, sizeof b), "ERR");
    cr_expect_str_eq(apply(TF_IDENT, tv_string("x;y"), b, sizeof b), "ERR");
    cr_expect_str_eq(apply(TF_CSTR, tv_string("a?"), b, sizeof b), "\"a\\?\"");
}

/* A decimal-comma LC_NUMERIC, set in this (forked) test process: de_DE.UTF-8 or fr_FR.UTF-8 if
 * installed, else de_DE compiled by localedef into a temporary LOCPATH. NULL when neither works. */
static const char *set_comma_locale(char *dir)
{
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8"};
    for (size_t i = 0; i < BK_ARRAY_LEN(names); i++)
        if (setlocale(LC_NUMERIC, names[i]))
            return names[i];
    if (!mkdtemp(dir))
        return NULL;
    char *out = bk_asprintf("%s/de_DE.UTF-8", dir);
    struct tu_run r;
    tu_run_argv(&r, (const char *const[]){"localedef", "-i", "de_DE", "-f", "UTF-8", out, NULL});
    int ok = r.status == 0;
    tu_run_free(&r);
    free(out);
    if (!ok || setenv("LOCPATH", dir, 1) != 0)
        return NULL;
    return setlocale(LC_NUMERIC, "de_DE.UTF-8") ? "de_DE.UTF-8" : NULL;
}

Test(escape, float_ignores_a_decimal_comma_locale)
{
    char dir[] = "/tmp/blinkc-locale-XXXXXX", b[64];
    const char *loc = set_comma_locale(dir);
    if (!loc) {
        cr_log_warn("skipped: no decimal-comma locale is installed and localedef could not "
                    "build one (Debian package 'locales')");
        return;
    }
    snprintf(b, sizeof b, "%.2f", 18.75); /* the locale really writes a comma */
    cr_assert_str_eq(b, "18,75", "%s does not write a decimal comma", loc);
    cr_expect_str_eq(apply(TF_FLOAT, tv_float(18.75), b, sizeof b), "18.75");
    cr_expect_str_eq(apply(TF_FLOAT, tv_float(-0.1), b, sizeof b), "-0.1");
    cr_expect_str_eq(apply(TF_FLOAT, tv_float(1234567.25), b, sizeof b), "1234567.25");
    cr_expect_str_eq(apply(TF_FLOAT, tv_int(7), b, sizeof b), "7.0");
    /* Exact: C reads the literal back to the same double. */
    apply(TF_FLOAT, tv_float(1.0 / 3), b, sizeof b);
    cr_expect_null(strchr(b, ','), "%s", b);
    setlocale(LC_NUMERIC, "C");
    cr_expect(strtod(b, NULL) == 1.0 / 3, "%s", b);
    if (strcmp(dir, "/tmp/blinkc-locale-XXXXXX") != 0) { /* localedef's copy */
        struct tu_run r;
        tu_run_argv(&r, (const char *const[]){"rm", "-rf", dir, NULL});
        tu_run_free(&r);
    }
}
