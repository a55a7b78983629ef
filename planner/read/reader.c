/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * reader.c - what every topology read shares (reader.h): an empty topology before the reader,
 * after it the format, the source, the default name and topo_finalize; and the GPU generation a
 * reader assumes where its input names no model.
 */
#include "read/reader.h"

#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

void reader_begin(struct reader *r, const struct input *in, const struct topo_read_opts *o,
                  struct topo *t, struct diag *d)
{
    topo_init(t);
    *r = (struct reader){in, o, t, d, NULL};
}

/* The topology's default name: the file's base name without its extension. */
BK_MUST_USE
static enum bk_status default_name(struct topo *t, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strcspn(base, ".");
    if (n == 0)
        n = strlen(base);
    char *s = bk_strndup(base, n);
    if (!s)
        return BK_ENOMEM;
    free(t->name);
    t->name = s;
    return BK_OK;
}

enum bk_status reader_finish(const struct reader *r, enum topo_format f, enum bk_status st)
{
    struct topo *t = r->t;
    t->format = topo_format_name(f);
    if (st == BK_OK && !(t->source = strdup(r->in->name)))
        st = BK_ENOMEM;
    if (st == BK_OK && !t->name)
        st = default_name(t, r->in->name);
    if (st == BK_OK)
        st = topo_finalize(t, r->d);
    if (st != BK_OK)
        topo_free(t);
    return st;
}

int topo_assumed_gen(const struct topo_read_opts *o, int guess_gen, const char *why,
                     const struct input *in, struct diag *d)
{
    if (o->gpu_model) {
        int gen = topo_gpu_model_gen(o->gpu_model);
        char names[200];
        if (!gen)
            diag_error(d, NULL, DIAG_NOWHERE, "--gpu-model %.40s: unknown GPU model (%s)",
                       o->gpu_model, topo_gpu_part_names(names, sizeof names));
        return gen;
    }
    int gen = guess_gen ? guess_gen : 2;
    diag_warning(d, in->name, DIAG_NOWHERE,
                 "the input does not name the GPU model; assuming %s (NVLink%d, %g GB/s per "
                 "link)%s%s; use --gpu-model to say otherwise",
                 topo_gen_model(gen), gen, o->rates.nvlink[gen], why ? " " : "", why ? why : "");
    return gen;
}
