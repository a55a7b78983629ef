/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * alloc_util.c - shared benchmark helpers (see alloc_util.h). The isomorphism key is the one
 * bench_plan.c's Figure 5 uses, so both programs count the same classes.
 */
#include "alloc_util.h"

#include <stdio.h>
#include <string.h>

#include "core/builtin.h"
#include "core/diag.h"
#include "core/input.h"

int alloc_read_text(const char *label, const char *text, size_t len,
                    const struct topo_read_opts *o, struct topo *t)
{
    struct input in;
    struct diag d;
    struct topo_read_opts def;
    if (!o) {
        topo_read_opts_default(&def);
        o = &def;
    }
    diag_init(&d);
    int ok = input_from_memory(label, text, len, &in) == BK_OK;
    if (ok) {
        ok = topo_read(&in, o, t, &d) == BK_OK;
        input_free(&in);
    }
    if (!ok)
        diag_print(&d, stderr);
    diag_free(&d);
    return ok;
}

int alloc_read_builtin(const char *name, struct topo *t)
{
    const struct builtin_file *f = builtin_topo_find(name);
    return f && alloc_read_text(name, f->data, f->size, NULL, t);
}

int alloc_restrict_mask(const struct topo *full, unsigned mask, struct topo *t)
{
    int gpus[8], n = 0;
    for (int g = 0; g < 8; g++)
        if (mask & (1u << g))
            gpus[n++] = g;
    struct diag d;
    diag_init(&d);
    int ok = topo_restrict(full, gpus, n, t, &d) == BK_OK;
    diag_free(&d);
    return ok;
}

void alloc_nvlink_key(const struct topo *t, char key[65])
{
    int m[8][8], n = t->ngpus < 8 ? t->ngpus : 8;
    memset(m, 0, sizeof m);
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        if (l->kind == TOPO_NVLINK && l->src < n && l->dst < n)
            m[l->src][l->dst] = l->count;
    }
    int perm[8], c[8] = {0};
    for (int i = 0; i < n; i++)
        perm[i] = i;
    char best[65], cur[65];
    memset(best, 127, sizeof best);
    /* Heap's algorithm over every permutation (8! = 40320 at most). */
    for (int i = 0;;) {
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                cur[a * n + b] = (char)('0' + m[perm[a]][perm[b]]);
        cur[n * n] = '\0';
        if (memcmp(cur, best, (size_t)n * n) < 0)
            memcpy(best, cur, (size_t)n * n + 1);
        while (i < n && c[i] >= i) {
            c[i] = 0;
            i++;
        }
        if (i >= n)
            break;
        int j = i % 2 ? c[i] : 0, tmp = perm[j];
        perm[j] = perm[i];
        perm[i] = tmp;
        c[i]++;
        i = 0;
    }
    memcpy(key, best, (size_t)n * n + 1);
}

void alloc_mask_text(unsigned mask, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int g = 0; g < 8 && used < cap; g++)
        if (mask & (1u << g)) {
            int k = snprintf(buf + used, cap - used, "%s%d", used ? "," : "", g);
            if (k < 0)
                break;
            used += (size_t)k;
        }
}
