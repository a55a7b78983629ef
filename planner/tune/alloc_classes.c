/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * alloc_classes.c - --all-allocations on a server too large to list its sets (allocations.h):
 * one plan per class of sets under the symmetries of its GPU blocks (topo_gpu_blocks). A class
 * is how many GPUs a set holds of each block, sorted; its plan is that of the set that takes
 * the first GPUs of the first blocks, and the runtime takes any set of the class onto it
 * (blink_plan.h).
 */
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "topo/topo_auto.h"
#include "tune/allocations.h"

struct vectors {
    int m;      /* blocks */
    int n, cap; /* vectors */
    int *c;     /* [n * m] each a non-increasing count per block */
};

BK_MUST_USE
static enum bk_status push(struct vectors *v, const int *c)
{
    if (v->n >= ALLOCATIONS_MAX_CLASSES)
        return BK_EUSAGE;
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 64;
        int *grown = realloc(v->c, (size_t)cap * (size_t)v->m * sizeof *grown);
        if (!grown)
            return BK_ENOMEM;
        v->c = grown;
        v->cap = cap;
    }
    memcpy(v->c + (size_t)v->n++ * (size_t)v->m, c, (size_t)v->m * sizeof *c);
    return BK_OK;
}

/* Every non-increasing c[at..m), each at most `most`, that holds `left` GPUs more; in
 * descending order, so the fullest blocks come first. */
BK_MUST_USE
static enum bk_status enumerate(struct vectors *v, int *c, int at, int most, int left)
{
    if (at == v->m)
        return left == 0 ? push(v, c) : BK_OK;
    for (int k = most < left ? most : left; k >= 0; k--) {
        if ((long)k * (v->m - at) < left)
            break; /* the blocks left cannot hold the rest */
        c[at] = k;
        BK_CHECK(enumerate(v, c, at + 1, k, left - k));
    }
    return BK_OK;
}

/* block_of_device[d]: the block of the GPU that runs as device d, every device 0..n-1 once. */
static int blocks_by_device(const struct topo *full, const int *block, int *block_of_device)
{
    int n = full->ngpus;
    for (int d = 0; d < n; d++)
        block_of_device[d] = -1;
    for (int g = 0; g < n; g++) {
        int d = topo_gpu_device(full, g);
        if (d < 0 || d >= n || block_of_device[d] >= 0)
            return 0;
        block_of_device[d] = block[g];
    }
    return 1;
}

BK_MUST_USE
static enum bk_status no_classes(const struct topo *full, struct diag *d, const char *why)
{
    diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
             "--all-allocations: the topology has %d GPUs; above %d a library holds one plan "
             "per class of GPU sets, and %s (plan the sets a job is given with --gpus)",
             full->ngpus, ALLOCATIONS_MAX_GPUS, why);
    return BK_EUSAGE;
}

enum bk_status plan_allocation_classes(const struct topo *full, const struct plan_opts *opts,
                                       struct allocations *out, struct diag *d)
{
    /* A root's plan that a symmetry copies is written as its relabelling (emit.h), so only its
     * numbers are kept: 701 classes of up to 72 GPUs with every root's trees would not fit. */
    struct plan_opts numbers = *opts, *o = &numbers;
    numbers.numbers_only_copies = 1;
    int n = full->ngpus, nblocks = 0;
    int *block = malloc((size_t)n * sizeof *block), *gpus = malloc((size_t)n * sizeof *gpus);
    int *c = calloc((size_t)n, sizeof *c), *size = calloc((size_t)n, sizeof *size);
    out->block = malloc((size_t)n * sizeof *out->block);
    struct vectors v = {0};
    enum bk_status st = block && gpus && c && size && out->block ? BK_OK : BK_ENOMEM;
    if (st == BK_OK)
        st = topo_gpu_blocks(full, block, &nblocks);
    if (st == BK_OK && nblocks == 0)
        st = no_classes(full, d, "that needs GPUs in blocks that a symmetry of the server "
                                 "permutes, blocks and the GPUs within each (as the Grace "
                                 "pairs of a GB200 NVL72); this server has none");
    if (st == BK_OK && !blocks_by_device(full, block, out->block))
        st = no_classes(full, d, "that needs its GPUs to run as devices 0 to N-1");
    for (int g = 0; st == BK_OK && g < n; g++)
        size[block[g]]++;
    v.m = nblocks;
    for (int k = 2; st == BK_OK && k <= n; k++) /* smaller sets first */
        st = enumerate(&v, c, 0, size[0], k);
    if (st == BK_EUSAGE)
        st = no_classes(full, d, "this one has more classes than a library holds");
    if (st == BK_OK) {
        out->ndevices = n;
        out->topos = calloc((size_t)v.n + 1, sizeof *out->topos);
        out->sets = calloc((size_t)v.n + 1, sizeof *out->sets);
        out->same = calloc((size_t)v.n + 1, sizeof *out->same);
        st = out->topos && out->sets && out->same ? BK_OK : BK_ENOMEM;
    }
    for (int i = 0; st == BK_OK && i < v.n; i++) {
        const int *want = v.c + (size_t)i * (size_t)nblocks;
        int k = 0;
        memset(c, 0, (size_t)nblocks * sizeof *c);
        for (int g = 0; g < n; g++)
            if (c[block[g]] < want[block[g]]) {
                c[block[g]]++;
                gpus[k++] = g;
            }
        struct topo *t = &out->topos[out->n];
        st = allocation_restrict(full, gpus, k, t);
        if (st == BK_EINPUT) { /* not joined: no allocation */
            st = BK_OK;
            continue;
        }
        progress_context("allocation class %d of %d (%d GPUs): ", i + 1, v.n, k);
        if (st == BK_OK && (st = plan_all(t, o, &out->sets[out->n], d)) != BK_OK)
            topo_free(t);
        if (st == BK_OK) {
            out->same[out->n] = out->n;
            out->n++;
            out->classes++;
        }
    }
    progress_context(NULL);
    free(block), free(gpus), free(c), free(size), free(v.c);
    return st;
}

enum bk_status allocation_restrict(const struct topo *full, const int *gpus, int k,
                                   struct topo *t)
{
    struct diag unjoined;
    diag_init(&unjoined);
    enum bk_status st = topo_restrict(full, gpus, k, t, &unjoined);
    diag_free(&unjoined);
    return st;
}
