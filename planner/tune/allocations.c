/* SPDX-License-Identifier: GPL-3.0-or-later */
/* allocations.c - see allocations.h. */
#include "tune/allocations.h"

#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "core/strbuf.h"
#include "topo/topo_auto.h"
#include "tune/plan_tune.h"

/* The classes of GPU sets under the generators of full's symmetries: first[m] is the lowest
 * set of m's class, and img[m * n + g] the GPU that one product of generators taking first[m]
 * onto m takes GPU g to (each class walked breadth first from its lowest set). */
BK_MUST_USE
static enum bk_status classes(const struct topo *full, int *first, unsigned char *img)
{
    int n = full->ngpus;
    size_t cap = (size_t)1 << n;
    struct topo_orbits grp = {0};
    if (full->nservers <= 1) /* clusters: every set its own class */
        BK_CHECK(topo_gpu_group(full, &grp));
    unsigned *queue = malloc(cap * sizeof *queue);
    if (!queue) {
        topo_orbits_free(&grp);
        return BK_ENOMEM;
    }
    for (size_t m = 0; m < cap; m++)
        first[m] = -1;
    for (unsigned m = 0; m < cap; m++) {
        if (first[m] >= 0)
            continue;
        first[m] = (int)m;
        for (int g = 0; g < n; g++)
            img[(size_t)m * n + g] = (unsigned char)g;
        size_t nq = 0;
        queue[nq++] = m;
        for (size_t i = 0; i < nq; i++) {
            unsigned x = queue[i];
            for (int k = 0; k < grp.ngens; k++) {
                const int *h = grp.gens + (size_t)k * grp.nnodes;
                unsigned y = 0;
                for (int g = 0; g < n; g++)
                    if (x >> g & 1u)
                        y |= 1u << h[g];
                if (first[y] >= 0)
                    continue;
                first[y] = (int)m;
                for (int g = 0; g < n; g++)
                    img[(size_t)y * n + g] = (unsigned char)h[img[(size_t)x * n + g]];
                queue[nq++] = y;
            }
        }
    }
    free(queue);
    topo_orbits_free(&grp);
    return BK_OK;
}

/* One warning for every set without a ring, where planning each would give one per set
 * (thousands on an MI250, whose GCDs have no path but xGMI). */
static void warn_no_rings(const struct topo *full, const struct allocations *a, struct diag *d)
{
    int count = 0, first = -1;
    for (int i = 0; i < a->n; i++)
        if (a->sets[a->same[i]].ring.gbps <= 0 && count++ == 0)
            first = i;
    if (count == 0)
        return;
    const struct topo *t = &a->topos[first];
    struct strbuf names;
    sb_init(&names);
    for (int g = 0; g < t->ngpus; g++)
        sb_printf(&names, "%s%s", g ? ", " : "", t->nodes[g].name);
    diag_warning(d, full->source, DIAG_NOWHERE,
                 "no ring connects all the GPUs of %d of the %d GPU sets (the first: %s); their "
                 "ring baseline is 0 GB/s", count, a->n, names.data ? names.data : "");
    sb_free(&names);
}

/* The classes' plans, tuned once they are all planned: the simulations, most of the time,
 * run on `jobs` threads. */
BK_MUST_USE
static enum bk_status tune_classes(struct allocations *a, const struct sim_params *sim, int jobs,
                                   struct diag *d)
{
    struct plan_set **sets = malloc(((size_t)a->classes + 1) * sizeof *sets);
    if (!sets)
        return BK_ENOMEM;
    int n = 0;
    for (int i = 0; i < a->n; i++)
        if (a->same[i] == i)
            sets[n++] = &a->sets[i];
    progress_context("%d allocation classes: ", n);
    enum bk_status st = plan_tune_sets(sets, n, sim, jobs, d);
    progress_context(NULL);
    free(sets);
    return st;
}

/* The planned classes tuned (unless sim is NULL), and one warning for the sets without a ring;
 * out is freed where this fails. */
BK_MUST_USE
static enum bk_status tune_and_sum_up(const struct topo *full, struct allocations *out,
                                      const struct sim_params *sim, int jobs, struct diag *d)
{
    enum bk_status st = sim ? tune_classes(out, sim, jobs, d) : BK_OK;
    if (st == BK_OK)
        warn_no_rings(full, out, d);
    else
        allocations_free(out);
    return st;
}

enum bk_status plan_allocations(const struct topo *full, const struct plan_opts *opts,
                                const struct sim_params *sim, int jobs,
                                struct allocations *out, struct diag *d)
{
    memset(out, 0, sizeof *out);
    struct plan_opts quiet = *opts, *o = &quiet;
    quiet.quiet_no_ring = 1;
    int n = full->ngpus;
    if (n < 2) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "--all-allocations: the topology has %d GPU%s; a library needs 2 or more", n,
                 n == 1 ? "" : "s");
        return BK_EUSAGE;
    }
    if (n > ALLOCATIONS_MAX_GPUS) {
        enum bk_status st = plan_allocation_classes(full, o, out, d);
        if (st != BK_OK) {
            allocations_free(out);
            return st;
        }
        return tune_and_sum_up(full, out, sim, jobs, d);
    }
    size_t cap = (size_t)1 << n;
    out->topos = calloc(cap, sizeof *out->topos);
    out->sets = calloc(cap, sizeof *out->sets);
    out->same = calloc(cap, sizeof *out->same);
    out->devices = calloc(cap * ALLOCATIONS_MAX_GPUS, sizeof *out->devices);
    int *first = malloc(cap * sizeof *first), *index = malloc(cap * sizeof *index);
    unsigned char *img = malloc(cap * (size_t)n);
    enum bk_status st = out->topos && out->sets && out->same && out->devices && first && index &&
                        img ? classes(full, first, img) : BK_ENOMEM;
    for (unsigned mask = 3; st == BK_OK && mask < cap; mask++) {
        int gpus[ALLOCATIONS_MAX_GPUS], k = 0;
        for (int g = 0; g < n; g++)
            if (mask & (1u << g))
                gpus[k++] = g;
        if (k < 2)
            continue;
        struct topo *t = &out->topos[out->n];
        st = allocation_restrict(full, gpus, k, t);
        if (st == BK_EINPUT) { /* not joined: no allocation */
            st = BK_OK;
            continue;
        }
        index[mask] = out->n;
        int i = out->n;
        if (st == BK_OK && first[mask] != (int)mask) {
            /* The first set's rank q is its q-th GPU; here it runs on that GPU's image. */
            unsigned f = (unsigned)first[mask];
            out->same[i] = index[f];
            for (int g = 0, q = 0; g < n; g++)
                if (f & (1u << g))
                    out->devices[(size_t)i * ALLOCATIONS_MAX_GPUS + q++] =
                        img[(size_t)mask * n + g];
            out->n++;
            continue;
        }
        struct plan_set *ps = &out->sets[i];
        progress_context("allocation %d (%d GPUs; %u of %zu GPU sets looked at): ", i + 1, k,
                         mask, cap - 1);
        if (st == BK_OK)
            st = plan_all(t, o, ps, d); /* frees ps when it fails */
        if (st == BK_OK) {
            out->same[i] = i;
            out->classes++;
            out->n++;
        } else {
            topo_free(t);
        }
    }
    progress_context(NULL);
    free(first);
    free(index);
    free(img);
    if (st != BK_OK) {
        allocations_free(out);
        return st;
    }
    return tune_and_sum_up(full, out, sim, jobs, d);
}

void allocations_free(struct allocations *a)
{
    for (int i = 0; i < a->n; i++) {
        plan_set_free(&a->sets[i]);
        topo_free(&a->topos[i]);
    }
    free(a->topos);
    free(a->sets);
    free(a->same);
    free(a->devices);
    free(a->block);
    memset(a, 0, sizeof *a);
}
