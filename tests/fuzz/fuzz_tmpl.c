/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_tmpl.c - libFuzzer harness: any bytes as a template (tmpl.h), parsed and rendered against
 * a fixed small data model that holds every value kind, hostile strings included.
 *
 * The input up to its first NUL byte is the template "main"; what follows is a second template
 * "part", so partials, recursion between templates and the depth limits are reachable. A third,
 * fixed template "fixed" is always there. Checks the engine's contract: a refused template or
 * rendering carries an error, a successful one none.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/diag.h"
#include "fuzz_util.h"
#include "core/strbuf.h"
#include "emit/tmpl.h"

static const char *const raw_ok[] = {"version", NULL};

static const char fixed_tmpl[] = "{{#each items}}{{id|ident}}={{v|int}}{{#if @last}}.{{else}}, "
                                 "{{/if}}{{/each}} {{name|cstr}}\n";

/* {name, hostile, n, big, neg, f, nan, yes, no, empty, version, items: [{id, v, xs: [..]}..],
 * none: [], m: {k: "v"}}. NULL when out of memory (tv_set/tv_push pass that on). */
static struct tmpl_value *model(void)
{
    struct tmpl_value *m = tv_map();
    int err = 0; /* any failed step; the statuses are non-zero */
    static const char hostile[] = "a\"b\\c?\?/ */\n\xe2\x80\xae\xff";
    err |= tv_set(m, "name", tv_string("dgx1v"));
    err |= tv_set(m, "hostile", tv_stringn(hostile, sizeof hostile - 1));
    err |= tv_set(m, "n", tv_int(3));
    err |= tv_set(m, "big", tv_int(INT64_MAX));
    err |= tv_set(m, "neg", tv_int(-1));
    err |= tv_set(m, "f", tv_float(2.5));
    err |= tv_set(m, "nan", tv_float(NAN));
    err |= tv_set(m, "yes", tv_bool(1));
    err |= tv_set(m, "no", tv_bool(0));
    err |= tv_set(m, "empty", tv_string(""));
    err |= tv_set(m, "version", tv_string("0.1.0"));
    struct tmpl_value *items = tv_list();
    for (int i = 0; i < 3; i++) {
        struct tmpl_value *it = tv_map(), *xs = tv_list();
        for (int k = 0; k <= i; k++)
            err |= tv_push(xs, tv_int(k - 1));
        err |= tv_set(it, "id", tv_string(i == 0 ? "p0" : i == 1 ? "p1" : "p2"));
        err |= tv_set(it, "v", tv_int(i));
        err |= tv_set(it, "xs", xs);
        err |= tv_push(items, it);
    }
    err |= tv_set(m, "items", items);
    err |= tv_set(m, "none", tv_list());
    struct tmpl_value *sub = tv_map();
    err |= tv_set(sub, "k", tv_string("v"));
    err |= tv_set(m, "m", sub);
    if (err) {
        tv_free(m);
        return NULL;
    }
    return m;
}

/* 0 when st and the diagnostics agree (see fuzz_util.h). */
static int check(enum bk_status st, const struct diag *d)
{
    if (st == BK_OK)
        return d->nerrors == 0 ? 0 : 1;
    if (st == BK_EINPUT)
        return d->nerrors > 0 && diag_first_error(d) ? 0 : 2;
    return st == BK_ENOMEM ? 0 : 3;
}

int fuzz_tmpl_one(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    size_t main_len = nul ? (size_t)(nul - text) : size;

    struct tmpl_set *s = tmpl_set_new(raw_ok);
    struct tmpl_value *m = model();
    if (!s || !m) {
        tmpl_set_free(s);
        tv_free(m);
        return 0;
    }
    /* A small limit: the blow-up it guards against is found, not waited for. */
    tmpl_set_max_output(s, (size_t)1 << 20);
    struct diag d;
    diag_init(&d);
    struct strbuf out;
    sb_init(&out);
    int bad = 0;
    enum bk_status st =
        tmpl_set_add(s, "fixed", "fixed.tmpl", fixed_tmpl, sizeof fixed_tmpl - 1, &d);
    if (st != BK_OK) {
        bad = 4; /* the fixed template is valid */
        goto done;
    }
    if (nul) {
        st = tmpl_set_add(s, "part", "part.tmpl", nul + 1, size - main_len - 1, &d);
        if ((bad = check(st, &d)) != 0 || st != BK_OK)
            goto done;
    }
    st = tmpl_set_add(s, "main", "main.tmpl", text, main_len, &d);
    if ((bad = check(st, &d)) != 0 || st != BK_OK)
        goto done;
    st = tmpl_render(s, "main", m, &out, &d);
    bad = check(st, &d);
done:
    sb_free(&out);
    diag_free(&d);
    tv_free(m);
    tmpl_set_free(s);
    return bad;
}

#ifndef BK_FUZZ_NO_ENTRY
FUZZ_ENTRY(fuzz_tmpl_one)
#endif
