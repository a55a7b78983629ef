/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_hostile_emit.c - the injection property (conventions.md 10) on every fixture: each one is
 * planned once and rendered twice, with its own names and with hostile ones (the topology's name,
 * every node's name and model: quotes, backslashes, trigraphs, comment closers, newlines, U+202E,
 * invalid UTF-8, 10 KB). The two sources must be the same token for token outside string
 * literals (comments included, as emitted), the hostile one must hold only printable ASCII and
 * compile with cc -Werror -Wtrigraphs, and the plan JSON must stay valid UTF-8 without raw
 * control bytes. Table layouts do not matter here: only where input text may appear.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit/emit.h"
#include "hostile_fixtures.h"
#include "out/plan_json.h"
#include "testutil.h"

static const char *const evil[] = {
    "\"; system(\"rm -rf /\"); /*",
    "*/ int evil; /*",
    "?\?/ ?\?= ?\?' ?\?( trigraphs",
    "trailing backslash \\",
    "line\nbreak\r\ttab // comment \\",
    "\xe2\x80\xae" "desrever \xe2\x81\xa6isolate",
    "bad utf8 \xff\xfe\xc0\x80 \xed\xa0\x80",
    "#define X 1\n#include <stdlib.h>",
    "\\x41\\101\\u0041 \x01\x1b[31m\x7f",
};

/* Replace every name of t (a finalized copy) by hostile text; node names stay unique. */
static void make_hostile(struct topo *t)
{
    struct strbuf sb;
    sb_init(&sb);
    for (size_t i = 0; i < BK_ARRAY_LEN(evil); i++)
        sb_puts(&sb, evil[i]);
    for (int i = 0; i < 10240; i++)
        sb_putc(&sb, (char)('a' + i % 26));
    free(t->name);
    t->name = sb_take(&sb);
    for (int i = 0; i < t->nnodes; i++) {
        struct topo_node *n = &t->nodes[i];
        free(n->name);
        n->name = bk_asprintf("%s#%d", evil[(size_t)i % BK_ARRAY_LEN(evil)], i);
        cr_assert_not_null(n->name);
        if (n->model) {
            free(n->model);
            n->model = bk_asprintf("%s", evil[(size_t)(i + 1) % BK_ARRAY_LEN(evil)]);
        }
    }
    cr_assert_eq(topo_reindex(t), BK_OK);
}

static char *render(const struct topo *t, const struct plan_set *ps)
{
    struct strbuf sb;
    struct diag d;
    sb_init(&sb);
    diag_init(&d);
    enum bk_status st = emit_render(&sb, &(struct emit_alloc){t, ps, 0, NULL}, 1, NULL, &d);
    cr_assert_eq(st, BK_OK, "emit: %s", diag_first_error(&d) ? diag_first_error(&d) : "?");
    diag_free(&d);
    return sb_take(&sb);
}

/* Valid UTF-8 with no raw control byte but the newline. */
static void expect_clean_json(const char *s, const char *what)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        cr_assert(*p >= 0x20 || *p == '\n', "%s: raw byte %#x in the JSON", what, *p);
        if (*p < 0x80)
            continue;
        int n = (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
        cr_assert(n > 0 && *p >= 0xc2 && *p <= 0xf4, "%s: invalid UTF-8 lead %#x", what, *p);
        for (int k = 1; k <= n; k++)
            cr_assert_eq(p[k] & 0xc0, 0x80, "%s: invalid UTF-8 continuation", what);
        p += n;
    }
}

static void check_fixture(int i)
{
    const struct hf_fixture *f = &hf_fixtures[i];
    HF_SKIP_HUGE_UNDER_SANITIZERS(f);
    char *path = hf_path(f);
    struct topo t, h;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_file(path, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK, "%s: %s", path,
                 diag_first_error(&d) ? diag_first_error(&d) : "?");
    struct plan_opts o;
    plan_opts_default(&o);
    struct plan_set ps;
    cr_assert_eq(plan_all(&t, &o, &ps, &d), BK_OK, "%s: plan failed", path);
    cr_assert_eq(topo_copy(&t, &h), BK_OK);
    make_hostile(&h);

    char *plain = render(&t, &ps), *hostile = render(&h, &ps);
    struct strbuf lp, lh;
    sb_init(&lp);
    sb_init(&lh);
    char *tp = tu_c_tokens(plain, &lp), *th = tu_c_tokens(hostile, &lh);
    cr_expect_str_eq(tp, th, "%s: the token streams differ outside string literals", f->rel);
    cr_expect_str_neq(lp.data ? lp.data : "", lh.data ? lh.data : "",
                      "%s: the hostile name never reached a literal", f->rel);
    for (const unsigned char *p = (const unsigned char *)hostile; *p; p++)
        cr_assert((*p >= 0x20 && *p < 0x7f) || *p == '\n', "%s: byte %#x in the code", f->rel, *p);

    /* It compiles as C, trigraph warnings as errors (gcc honours ??/ under -std=c11). */
    char *src = tu_temp_file(".c", hostile, strlen(hostile));
    char *inc = tu_src_path("runtime/include");
    struct tu_run r;
    tu_run_argv(&r, (const char *const[]){"cc", "-std=c11", "-Wall", "-Wextra", "-Wtrigraphs",
                                          "-Werror", "-fsyntax-only", "-x", "c", "-I", inc, src,
                                          NULL});
    cr_expect_eq(r.status, 0, "%s: cc: %s", f->rel, r.err);
    tu_run_free(&r);
    unlink(src);

    /* The plan JSON carries the node names too: escaped, valid UTF-8. */
    struct strbuf js;
    sb_init(&js);
    plan_json_render(&js, &h, &ps);
    cr_assert(!js.failed && js.data);
    expect_clean_json(js.data, f->rel);
    cr_expect(strstr(js.data, "\\\"; system(\\\"rm -rf /\\\"); /*"), "%s: a name is missing",
              f->rel);

    sb_free(&js);
    free(src), free(inc), free(tp), free(th), free(plain), free(hostile), free(path);
    sb_free(&lp), sb_free(&lh);
    plan_set_free(&ps);
    topo_free(&h);
    topo_free(&t);
    diag_free(&d);
}

/* One test per fixture, so Criterion runs them side by side. */
#define FIXTURE_TEST(name, k)                                                                      \
    Test(hostile_emit, name, .timeout = 120) { check_fixture(k); }
HF_EACH(FIXTURE_TEST)

Test(hostile_emit, every_fixture_is_covered)
{
    cr_assert_eq(HF_NFIXTURES, HF_EACH_N, "add the new fixture to HF_EACH (hostile_fixtures.h)");
    hf_check_complete();
}
