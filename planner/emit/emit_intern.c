/* SPDX-License-Identifier: GPL-3.0-or-later */
/* emit_intern.c - see emit_intern.h. Open addressing, the slots at most half full. */
#include "emit/emit_intern.h"

#include <stdlib.h>
#include <string.h>

void emit_intern_init(struct emit_intern *in)
{
    memset(in, 0, sizeof *in);
}

void emit_intern_free(struct emit_intern *in)
{
    for (int i = 0; i < in->n; i++)
        free(in->v[i]);
    free(in->v);
    free(in->len);
    free(in->slot);
    memset(in, 0, sizeof *in);
}

static unsigned hash(const int *v, int n)
{
    unsigned h = 2166136261u; /* FNV-1a 32 over the values' bytes, length first */
    h = (h ^ (unsigned)n) * 16777619u;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 4; b++)
            h = (h ^ (((unsigned)v[i] >> (8 * b)) & 0xffu)) * 16777619u;
    return h;
}

/* The slot that holds v, or the empty one where it would go. */
static int find(const struct emit_intern *in, const int *v, int n, unsigned h)
{
    int mask = in->nslots - 1, at = (int)(h & (unsigned)mask);
    for (;;) {
        int k = in->slot[at] - 1;
        if (k < 0 || (in->len[k] == n && !memcmp(in->v[k], v, (size_t)n * sizeof *v)))
            return at;
        at = (at + 1) & mask;
    }
}

BK_MUST_USE
static enum bk_status grow(struct emit_intern *in)
{
    int nslots = in->nslots ? 2 * in->nslots : 64;
    int *slot = calloc((size_t)nslots, sizeof *slot);
    int **v = realloc(in->v, (size_t)nslots / 2 * sizeof *v);
    if (v)
        in->v = v;
    int *len = realloc(in->len, (size_t)nslots / 2 * sizeof *len);
    if (len)
        in->len = len;
    if (!slot || !v || !len) {
        free(slot);
        return BK_ENOMEM;
    }
    free(in->slot);
    in->slot = slot;
    in->nslots = nslots;
    in->cap = nslots / 2;
    for (int k = 0; k < in->n; k++)
        in->slot[find(in, in->v[k], in->len[k], hash(in->v[k], in->len[k]))] = k + 1;
    return BK_OK;
}

int emit_intern_add(struct emit_intern *in, const int *v, int n)
{
    if (in->n + 1 > in->cap && grow(in) != BK_OK)
        return -1;
    unsigned h = hash(v, n);
    int at = find(in, v, n, h);
    if (in->slot[at])
        return in->slot[at] - 1;
    int *copy = malloc(((size_t)n + 1) * sizeof *copy);
    if (!copy)
        return -1;
    if (n > 0)
        memcpy(copy, v, (size_t)n * sizeof *v);
    in->v[in->n] = copy;
    in->len[in->n] = n;
    in->slot[at] = ++in->n;
    return in->n - 1;
}
