/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_links.c - the NCCL topology reader after the walk: device checks, NVLink generations,
 * the collected <nvlink> and <c2c> entries resolved to links, and the links between CPUs.
 */
#include "read/nccl_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "read/xml_safe.h"

/* ---------------------------------------------------------------- after the walk */

/* A sort key: (a, b, c), then document order. */
struct key3 {
    int a, b, c, idx;
};

static int cmp_key3(const void *pa, const void *pb)
{
    const struct key3 *x = pa, *y = pb;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    if (x->c != y->c)
        return x->c < y->c ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Two <gpu> elements with one dev: name both (sorting keeps this n log n). */
BK_MUST_USE
enum bk_status nccl_check_devs(struct ctx *c)
{
    struct key3 *k = malloc(((size_t)c->ngpus + 1) * sizeof *k);
    if (!k)
        return BK_ENOMEM;
    for (int i = 0; i < c->ngpus; i++)
        k[i] = (struct key3){c->gpus[i].dev, 0, 0, i};
    qsort(k, (size_t)c->ngpus, sizeof *k, cmp_key3);
    enum bk_status st = BK_OK;
    for (int i = 1; i < c->ngpus && st == BK_OK; i++)
        if (k[i].a == k[i - 1].a) {
            char *what = bk_asprintf("dev %d is already used by", k[i].a);
            st = what ? nccl_el_error2(c, c->gpus[k[i].idx].el, what, c->gpus[k[i - 1].idx].el)
                      : BK_ENOMEM;
            free(what);
        }
    free(k);
    return st;
}

/* GPUs whose sm= is missing or unknown get one assumed generation for the whole file. */
BK_MUST_USE
enum bk_status nccl_set_gens(struct ctx *c)
{
    int unknown = 0, most = 0;
    for (int g = 0; g < c->ngpus; g++) {
        unknown += c->rd.t->nodes[c->gpus[g].node].nvlink_gen == 0;
        if (c->gpus[g].links > most)
            most = c->gpus[g].links;
    }
    if (!unknown)
        return BK_OK;
    /* The flagship parts' per-GPU link budgets: 4 P100, 6 V100, 12 A100, 18 H100 (or B200). */
    int guess = most == 4 ? 1 : most == 6 ? 2 : most == 12 ? 3 : most == 18 ? 4 : 0;
    char *why = guess ? bk_asprintf("for the GPUs without a known sm= (guessed from %d NVLinks "
                                    "per GPU)",
                                    most)
                      : bk_asprintf("for the GPUs without a known sm=");
    if (!why)
        return BK_ENOMEM;
    int gen = topo_assumed_gen(c->rd.o, guess, why, c->rd.in, c->rd.d);
    free(why);
    if (!gen)
        return BK_EINPUT;
    /* The part too, so that its own link rate applies: --gpu-model's, else the generation's
       flagship, recorded as assumed. */
    const char *model = c->rd.o->gpu_model;
    const struct topo_gpu_part *part =
        model ? topo_gpu_part_find(model) : topo_gpu_part_of_gen(gen);
    for (int g = 0; g < c->ngpus; g++) {
        struct topo_node *n = &c->rd.t->nodes[c->gpus[g].node];
        if (n->nvlink_gen == 0)
            n->nvlink_gen = gen, n->part = part, n->part_assumed = !model;
    }
    return BK_OK;
}

/* No GPU may list more NVLinks than its part has (the sm's most common part has the most links
 * of its sm, so an assumed part is no stricter than the real one): more would plan a bandwidth
 * the GPU cannot have. */
BK_MUST_USE
enum bk_status nccl_check_budgets(struct ctx *c)
{
    for (int g = 0; g < c->ngpus; g++) {
        const struct topo_node *n = &c->rd.t->nodes[c->gpus[g].node];
        if (n->part && c->gpus[g].links > n->part->links)
            return el_error(c, c->gpus[g].el,
                            "its <nvlink> counts add up to %d NVLinks, but %s GPUs have %d "
                            "each%s; check the file's counts, its sm= and <pci device=>, or "
                            "--gpu-model",
                            c->gpus[g].links, n->part->name, n->part->links,
                            n->part_assumed ? " (the part assumed from sm=)" : "");
    }
    return BK_OK;
}

/* The node at the far end of link record r (an NVSwitch is made on first mention). */
BK_MUST_USE
static enum bk_status peer_node(struct ctx *c, const struct link_rec *r, int *out)
{
    struct topo *t = c->rd.t;
    if (r->peer == PEER_CPU || r->peer == PEER_C2C) {
        *out = c->gpus[r->gpu].cpu;
        return BK_OK;
    }
    int p = topo_find(t, r->target);
    if (r->peer == PEER_NVS) {
        if (p >= 0 && t->nodes[p].kind != TOPO_NVSWITCH)
            return el_error(c, r->el, "target %s is a %s in this file, but tclass 0x068000 says "
                                      "an NVSwitch",
                            r->target, topo_node_kind_name(t->nodes[p].kind));
        /* Every distinct switch bus id is one switch (the VM's hidden fffffff:ff:ff.0 too). */
        if (p < 0)
            BK_CHECK(nccl_add_node(c, r->el, TOPO_NVSWITCH, r->target, r->target, &p));
    } else if (p < 0 || t->nodes[p].kind != TOPO_GPU) {
        return el_error(c, r->el, "target %s is not the bus id of a GPU in this file%s", r->target,
                        r->peer == PEER_ANY ? " (and without tclass= it cannot be an NVSwitch or "
                                              "CPU link)"
                                            : "");
    }
    *out = p;
    return BK_OK;
}

/*
 * One full-duplex NVLink per connected pair. NCCL lists GPU-GPU links from both ends, so the two
 * records of a pair merge (the smaller count wins when they disagree: a link only one end sees
 * is not usable); a pair listed by one end only is taken as given. Sorting by (pair, source)
 * groups the two ends and exposes repeats without a quadratic search.
 */
BK_MUST_USE
enum bk_status nccl_resolve_links(struct ctx *c)
{
    int n = c->nlinks;
    struct key3 *k = malloc(((size_t)n + 1) * sizeof *k);
    if (!k)
        return BK_ENOMEM;
    enum bk_status st = BK_OK;
    for (int i = 0; i < n && st == BK_OK; i++) {
        int g = c->gpus[c->links[i].gpu].node, p = -1;
        st = peer_node(c, &c->links[i], &p);
        k[i] = (struct key3){g < p ? g : p, g < p ? p : g, g, i};
    }
    if (st == BK_OK)
        qsort(k, (size_t)n, sizeof *k, cmp_key3);
    for (int i = 0, j; i < n && st == BK_OK; i = j) {
        for (j = i + 1; j < n && k[j].a == k[i].a && k[j].b == k[i].b && st == BK_OK; j++)
            if (k[j].c == k[j - 1].c)
                st = nccl_el_error2(c, c->links[k[j].idx].el,
                               "a second link from this GPU to the same peer; already listed by",
                               c->links[k[j - 1].idx].el);
        if (st != BK_OK)
            break;
        /* Distinct sources within a pair can only be the two GPUs of a GPU-GPU link. */
        const struct link_rec *r = &c->links[k[i].idx];
        int count = r->count;
        if (j - i == 2) {
            const struct link_rec *r2 = &c->links[k[i + 1].idx];
            const struct link_rec *first = k[i].idx < k[i + 1].idx ? r : r2;
            const struct link_rec *second = first == r ? r2 : r;
            if (r2->count != r->count) {
                count = r2->count < r->count ? r2->count : r->count;
                char *where = nccl_el_where(first->el);
                el_warning(c, second->el,
                           "count %d disagrees with count %d in the <nvlink> at %s for the same "
                           "GPU pair; using %d",
                           second->count, first->count, where ? where : "?", count);
                free(where);
            }
            r = first;
        }
        int g = c->gpus[r->gpu].node, p = k[i].a == g ? k[i].b : k[i].a;
        int gen = c->rd.t->nodes[g].nvlink_gen;
        if (c->rd.t->nodes[p].kind == TOPO_GPU && c->rd.t->nodes[p].nvlink_gen < gen)
            gen = c->rd.t->nodes[p].nvlink_gen;
        /* At the parts' own rate: a GA102 bridge runs 14.0625 GB/s per link, not NVLink3's 25. */
        const struct topo_gpu_part *pg = c->rd.t->nodes[g].part;
        const struct topo_gpu_part *pp =
            c->rd.t->nodes[p].kind == TOPO_GPU ? c->rd.t->nodes[p].part : NULL;
        double gbps = r->peer == PEER_C2C ? r->gbps
                                          : topo_rate_nvlink_parts(&c->rd.o->rates, pg, pp, gen,
                                                                   count);
        st = topo_add_link(c->rd.t, g, p, TOPO_NVLINK, count, gbps, gbps, xml_node_loc(r->el));
    }
    free(k);
    return st;
}

/* Every pair of CPUs shares one inter-socket link at the slower family's rate. */
BK_MUST_USE
enum bk_status nccl_add_smp(struct ctx *c)
{
    for (int i = 0; i < c->ncpus; i++)
        for (int j = i + 1; j < c->ncpus; j++) {
            double a = topo_rate_smp(&c->rd.o->rates, c->cpus[i].fam);
            double b = topo_rate_smp(&c->rd.o->rates, c->cpus[j].fam);
            double r = a < b ? a : b;
            BK_CHECK(topo_add_link(c->rd.t, c->cpus[i].node, c->cpus[j].node, TOPO_SMP, 1, r, r,
                                   xml_node_loc(c->cpus[j].el)));
        }
    return BK_OK;
}

