/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_tmpl.c - the template engine (tmpl.h): blocks, loop variables, partials, standalone
 * lines, and the strict errors (unknown key, unknown or missing filter, bad nesting, |raw off
 * the whitelist, wrong types), each reported at its template LINE:COL.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "emit/tmpl.h"

static const char *const raw_ok[] = {"version", NULL};

/* A model: {name: "gpu", n: 3, list: [1, 2, 3], items: [{id: "a"}, {id: "b"}], yes: true,
 * no: false, empty: [], version: "1.2.3", x: 0.5, nums: [1, 2, 3] held as numbers} */
static struct tmpl_value *model(void)
{
    struct tmpl_value *m = tv_map(), *l = tv_list(), *items = tv_list(), *empty = tv_list();
    for (int i = 1; i <= 3; i++)
        cr_assert_eq(tv_push(l, tv_int(i)), BK_OK);
    for (int i = 0; i < 2; i++) {
        struct tmpl_value *it = tv_map();
        cr_assert_eq(tv_set(it, "id", tv_string(i ? "b" : "a")), BK_OK);
        cr_assert_eq(tv_push(items, it), BK_OK);
    }
    cr_assert_eq(tv_set(m, "name", tv_string("gpu")), BK_OK);
    cr_assert_eq(tv_set(m, "n", tv_int(3)), BK_OK);
    cr_assert_eq(tv_set(m, "list", l), BK_OK);
    cr_assert_eq(tv_set(m, "items", items), BK_OK);
    cr_assert_eq(tv_set(m, "yes", tv_bool(1)), BK_OK);
    cr_assert_eq(tv_set(m, "no", tv_bool(0)), BK_OK);
    cr_assert_eq(tv_set(m, "empty", empty), BK_OK);
    cr_assert_eq(tv_set(m, "version", tv_string("1.2.3")), BK_OK);
    cr_assert_eq(tv_set(m, "x", tv_float(0.5)), BK_OK);
    cr_assert_eq(tv_set(m, "nums", tv_int_list((const int[]){1, 2, 3}, 3)), BK_OK);
    return m;
}

/* Render text (named "t", label "t.tmpl", with partial "p" = ptext if given). */
static enum bk_status render(const char *text, const char *ptext, struct strbuf *out,
                             struct diag *d)
{
    struct tmpl_set *s = tmpl_set_new(raw_ok);
    struct tmpl_value *m = model();
    enum bk_status st = BK_OK;
    if (ptext)
        st = tmpl_set_add(s, "p", "p.tmpl", ptext, strlen(ptext), d);
    if (st == BK_OK)
        st = tmpl_set_add(s, "t", "t.tmpl", text, strlen(text), d);
    if (st == BK_OK)
        st = tmpl_render(s, "t", m, out, d);
    tmpl_set_free(s);
    tv_free(m);
    return st;
}

static void expect_out(const char *text, const char *ptext, const char *want)
{
    struct strbuf out;
    struct diag d;
    sb_init(&out);
    diag_init(&d);
    cr_assert_eq(render(text, ptext, &out, &d), BK_OK, "%s: %s", text,
                 diag_first_error(&d) ? diag_first_error(&d) : "");
    cr_expect_str_eq(out.data ? out.data : "", want, "template %s", text);
    sb_free(&out);
    diag_free(&d);
}

/* Expect an error at file:line:col whose text contains needle. */
static void expect_err(const char *text, const char *file, int line, int col, const char *needle)
{
    struct strbuf out;
    struct diag d;
    sb_init(&out);
    diag_init(&d);
    cr_assert_neq(render(text, "{{nope|int}}", &out, &d), BK_OK, "%s rendered", text);
    cr_assert_gt(d.n, 0);
    cr_expect_str_eq(d.msgs[0].file, file, "%s", text);
    cr_expect_eq(d.msgs[0].loc.line, line, "%s: line %d", text, d.msgs[0].loc.line);
    cr_expect_eq(d.msgs[0].loc.col, col, "%s: col %d", text, d.msgs[0].loc.col);
    cr_expect(strstr(d.msgs[0].text, needle), "%s: '%s' lacks '%s'", text, d.msgs[0].text, needle);
    sb_free(&out);
    diag_free(&d);
}

Test(tmpl, values_blocks_and_loop_variables)
{
    expect_out("n={{n|int}} {{ name | ident }}", NULL, "n=3 gpu");
    expect_out("{{#each list}}{{@index|int}}:{{.|int}}{{#if @last}}.{{else}}, {{/if}}{{/each}}",
               NULL, "0:1, 1:2, 2:3.");
    expect_out("{{#each items}}{{#if @first}}[{{/if}}{{id|ident}}{{n|int}}{{/each}}]", NULL,
               "[a3b3]");
    expect_out("{{#if yes}}Y{{else}}N{{/if}}{{#if no}}Y{{else}}N{{/if}}{{#if empty}}E{{/if}}",
               NULL, "YN");
    expect_out("{{#each empty}}x{{/each}}-{{! a comment }}-", NULL, "--");
    expect_out("v{{version|raw}} {{x|float}} {{n|float}}", NULL, "v1.2.3 0.5 3.0");
}

Test(tmpl, a_list_of_numbers_renders_as_a_list_of_ints)
{
    /* Each loop over "list" (tv_int values) and over "nums" (tv_int_list): the same text. */
    static const char *const loops[][2] = {
        {"{{#each list}}{{@index|int}}:{{.|int}}{{#if @first}}<{{/if}}{{#if @last}}.{{else}}, "
         "{{/if}}{{/each}}",
         "{{#each nums}}{{@index|int}}:{{.|int}}{{#if @first}}<{{/if}}{{#if @last}}.{{else}}, "
         "{{/if}}{{/each}}"},
        {"{{#each list}}{{#each list}}{{.|u64}}{{/each}}/{{/each}}",
         "{{#each nums}}{{#each nums}}{{.|u64}}{{/each}}/{{/each}}"},
        {"{{#if list}}some{{else}}none{{/if}}", "{{#if nums}}some{{else}}none{{/if}}"},
    };
    for (size_t i = 0; i < sizeof loops / sizeof *loops; i++) {
        struct strbuf a, b;
        struct diag d;
        sb_init(&a);
        sb_init(&b);
        diag_init(&d);
        cr_assert_eq(render(loops[i][0], NULL, &a, &d), BK_OK);
        cr_assert_eq(render(loops[i][1], NULL, &b, &d), BK_OK);
        cr_expect_str_eq(b.data, a.data, "%s", loops[i][1]);
        sb_free(&a);
        sb_free(&b);
        diag_free(&d);
    }
    expect_out("{{#each nums}}{{.|int}}{{/each}}", NULL, "123");
    struct tmpl_value *l = tv_int_list((const int[]){7}, 1);
    cr_expect_eq(tv_push(l, tv_int(8)), BK_EINTERNAL, "a list of numbers takes no items");
    cr_expect_eq(l->n, 1);
    tv_free(l);
}

Test(tmpl, standalone_block_lines_vanish)
{
    expect_out("a\n{{#if yes}}\n  b\n{{/if}}\n{{! note }}\nc\n", NULL, "a\n  b\nc\n");
    expect_out("{{#each list}}\n{{.|int}}\n{{/each}}\n", NULL, "1\n2\n3\n");
    /* Not alone on the line: kept as written. */
    expect_out("x {{#if yes}}y{{/if}}\n", NULL, "x y\n");
}

Test(tmpl, partials_come_from_the_set)
{
    expect_out("<{{> p}}>", "{{name|ident}}", "<gpu>");
    expect_out("{{#each items}}{{> p}}{{/each}}", "{{id|ident}}", "ab");
    expect_err("{{> missing}}", "t.tmpl", 1, 1, "no such template");
    expect_err("{{> ../etc/passwd}}", "t.tmpl", 1, 1, "bad partial name");
    expect_err("x{{> p}}", "p.tmpl", 1, 1, "unknown key"); /* the partial's own position */
}

Test(tmpl, strict_errors_name_line_and_column)
{
    expect_err("ok\n  {{name}}", "t.tmpl", 2, 3, "needs a filter");
    expect_err("{{name|html}}", "t.tmpl", 1, 1, "unknown filter 'html'");
    expect_err("\n\n    {{missing|int}}", "t.tmpl", 3, 5, "unknown key");
    expect_err("{{name|raw}}", "t.tmpl", 1, 1, "whitelist");
    expect_err("{{name|int}}", "t.tmpl", 1, 1, "int needs an integer");
    expect_err("{{n|cstr}}", "t.tmpl", 1, 1, "cstr needs a string");
    expect_err("{{#each n}}{{/each}}", "t.tmpl", 1, 1, "needs a list");
    expect_err("a\n{{#each list}}", "t.tmpl", 2, 1, "never closed");
    expect_err("{{#if yes}}{{/each}}", "t.tmpl", 1, 12, "does not belong");
    expect_err("{{/if}}", "t.tmpl", 1, 1, "without a matching");
    expect_err("{{#each list}}{{else}}{{/each}}", "t.tmpl", 1, 15, "does not belong");
    expect_err("{{#while x}}", "t.tmpl", 1, 1, "unknown block tag '#while'");
    expect_err("{{name|int", "t.tmpl", 1, 1, "unterminated");
    expect_err("{{{name|ident}}}", "t.tmpl", 1, 1, "bad key name");
    expect_err("{{@index|int}}", "t.tmpl", 1, 1, "only inside");
}

Test(tmpl, nul_bytes_and_deep_nesting_are_refused)
{
    struct tmpl_set *s = tmpl_set_new(NULL);
    struct diag d;
    diag_init(&d);
    cr_expect_eq(tmpl_set_add(s, "z", "z.tmpl", "a\0b", 3, &d), BK_EINPUT);
    struct strbuf deep;
    sb_init(&deep);
    for (int i = 0; i < TMPL_MAX_DEPTH + 2; i++)
        sb_puts(&deep, "{{#if yes}}");
    cr_expect_eq(tmpl_set_add(s, "deep", "deep.tmpl", deep.data, deep.len, &d), BK_EINPUT);
    cr_expect(diag_contains(&d, DIAG_ERROR, "nested too deeply"));
    /* A partial that includes itself stops at the depth limit instead of recursing forever. */
    cr_assert_eq(tmpl_set_add(s, "r", "r.tmpl", "{{> r}}", 7, &d), BK_OK);
    struct tmpl_value *m = tv_map();
    struct strbuf out;
    sb_init(&out);
    cr_expect_eq(tmpl_render(s, "r", m, &out, &d), BK_EINPUT);
    cr_expect(diag_contains(&d, DIAG_ERROR, "partials nested too deeply"));
    tv_free(m);
    sb_free(&out);
    sb_free(&deep);
    tmpl_set_free(s);
    diag_free(&d);
}

/* Nested loops multiply: a render stops at the set's output limit with an error, and within the
 * limit the same template renders in full. */
Test(tmpl, output_limit_stops_a_blow_up)
{
    /* 8 nested loops over 3 items: 3^8 = 6561 copies of "x", about 6.5 KB. */
    static const char nest[] = "{{#each list}}{{#each list}}{{#each list}}{{#each list}}"
                               "{{#each list}}{{#each list}}{{#each list}}{{#each list}}x"
                               "{{/each}}{{/each}}{{/each}}{{/each}}"
                               "{{/each}}{{/each}}{{/each}}{{/each}}";
    for (int limited = 0; limited < 2; limited++) {
        struct tmpl_set *s = tmpl_set_new(raw_ok);
        struct tmpl_value *m = model();
        struct diag d;
        diag_init(&d);
        struct strbuf out;
        sb_init(&out);
        if (limited)
            tmpl_set_max_output(s, 1000);
        cr_assert_eq(tmpl_set_add(s, "t", "t.tmpl", nest, strlen(nest), &d), BK_OK);
        enum bk_status st = tmpl_render(s, "t", m, &out, &d);
        if (limited) {
            cr_expect_eq(st, BK_EINPUT);
            cr_expect(diag_contains(&d, DIAG_ERROR, "output limit"));
            cr_expect_lt(out.len, 2000);
        } else {
            cr_expect_eq(st, BK_OK);
            cr_expect_eq(out.len, 6561);
        }
        sb_free(&out);
        tmpl_set_free(s);
        tv_free(m);
        diag_free(&d);
    }
}
