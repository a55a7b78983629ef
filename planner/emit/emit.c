/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * emit.c - loading the template set and rendering the generated source (emit.h).
 *
 * The set is always the embedded list of names: --templates DIR can replace a template's text
 * but never add a name, and a path is only ever built from those fixed names, never from input
 * text. A file missing from DIR keeps the built-in text, so a developer can override one file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit/emit.h"
#include "core/input.h"

/* Keys the templates may render with |raw: program constants only. */
static const char *const raw_whitelist[] = {"blinkc_version", NULL};

/* "collectives.cu.tmpl" -> "collectives.cu" */
static char *template_name(const char *file)
{
    size_t n = strlen(file);
    if (n > 5 && strcmp(file + n - 5, ".tmpl") == 0)
        n -= 5;
    return bk_strndup(file, n);
}

BK_MUST_USE
static enum bk_status add_one(struct tmpl_set *set, const struct builtin_file *f, const char *dir,
                              struct diag *d)
{
    char *name = template_name(f->name);
    char *path = dir ? bk_asprintf("%s/%s", dir, f->name) : NULL;
    enum bk_status st = name && (path || !dir) ? BK_OK : BK_ENOMEM;
    if (st == BK_OK && path && access(path, F_OK) == 0) {
        struct input in;
        st = input_read(path, &in, d);
        if (st == BK_OK) {
            st = tmpl_set_add(set, name, path, in.data, in.len, d);
            input_free(&in);
        }
    } else if (st == BK_OK) {
        if (path && errno != ENOENT) {
            diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot access: %s", strerror(errno));
            st = BK_EIO;
        } else {
            st = tmpl_set_add(set, name, f->name, f->data, f->size, d);
        }
    }
    free(name);
    free(path);
    return st;
}

enum bk_status emit_load_templates(const char *dir, struct tmpl_set **out, struct diag *d)
{
    *out = NULL;
    if (dir && access(dir, F_OK) != 0) {
        diag_add(d, DIAG_ERROR, dir, DIAG_NOWHERE, "--templates: no such directory");
        return BK_EIO;
    }
    struct tmpl_set *set = tmpl_set_new(raw_whitelist);
    if (!set)
        return BK_ENOMEM;
    enum bk_status st = BK_OK;
    for (const struct builtin_file *f = builtin_templates; st == BK_OK && f->name; f++)
        st = add_one(set, f, dir, d);
    if (st == BK_OK && !tmpl_set_has(set, EMIT_MAIN_TEMPLATE)) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "no template %s.tmpl is built in",
                 EMIT_MAIN_TEMPLATE);
        st = BK_EINTERNAL;
    }
    if (st != BK_OK) {
        tmpl_set_free(set);
        return st;
    }
    *out = set;
    return BK_OK;
}

enum bk_status emit_render(struct strbuf *out, const struct emit_alloc *allocs, int nallocs,
                           const char *template_dir, struct diag *d)
{
    return emit_render_classes(out, allocs, nallocs, NULL, template_dir, d);
}

enum bk_status emit_render_classes(struct strbuf *out, const struct emit_alloc *allocs,
                                   int nallocs, const struct emit_blocks *blocks,
                                   const char *template_dir, struct diag *d)
{
    struct tmpl_set *set = NULL;
    struct tmpl_value *model = NULL;
    enum bk_status st = emit_load_templates(template_dir, &set, d);
    if (st == BK_OK)
        st = emit_model_classes(allocs, nallocs, blocks, &model, d);
    if (st == BK_OK)
        st = tmpl_render(set, EMIT_MAIN_TEMPLATE, model, out, d);
    tv_free(model);
    tmpl_set_free(set);
    return st;
}
