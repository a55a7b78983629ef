/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo.c - building the topology model: nodes, links and the name index.
 *
 * Names are looked up through an open-addressing hash so that readers stay linear on inputs of
 * 100,000 nodes. Canonical order lives in topo_canon.c and allocations in topo_alloc.c.
 */
#include "topo/topo.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "topo/topo_rates.h"

struct topo_name_index {
    int *slots; /* node index + 1; 0 = empty */
    size_t cap; /* power of two */
};

void topo_init(struct topo *t) { memset(t, 0, sizeof *t); }

void topo_node_free(struct topo_node *n)
{
    free(n->name);
    free(n->id);
    free(n->busid);
    free(n->model);
}

void topo_free(struct topo *t)
{
    for (int i = 0; i < t->nnodes; i++)
        topo_node_free(&t->nodes[i]);
    free(t->nodes);
    free(t->links);
    free(t->name);
    free(t->source);
    if (t->index) {
        free(t->index->slots);
        free(t->index);
    }
    memset(t, 0, sizeof *t);
}

enum bk_status topo_set_name(struct topo *t, const char *name)
{
    char *s = strdup(name);
    if (!s)
        return BK_ENOMEM;
    free(t->name);
    t->name = s;
    return BK_OK;
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void index_put(struct topo_name_index *ix, const char *name, int node)
{
    size_t mask = ix->cap - 1;
    for (size_t i = hash_name(name) & mask;; i = (i + 1) & mask)
        if (!ix->slots[i]) {
            ix->slots[i] = node + 1;
            return;
        }
}

/* Keep the load factor under 1/2; rebuild from the node array when growing. */
BK_MUST_USE
static enum bk_status index_reserve(struct topo *t, int nnodes)
{
    if (t->index && (size_t)nnodes * 2 < t->index->cap)
        return BK_OK;
    size_t cap = 64;
    while (cap <= (size_t)nnodes * 2)
        cap *= 2;
    struct topo_name_index *ix = t->index;
    if (!ix && !(ix = calloc(1, sizeof *ix)))
        return BK_ENOMEM;
    t->index = ix;
    int *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return BK_ENOMEM;
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    for (int i = 0; i < t->nnodes; i++)
        index_put(ix, t->nodes[i].name, i);
    return BK_OK;
}

int topo_find(const struct topo *t, const char *name)
{
    if (!t->index)
        return -1;
    size_t mask = t->index->cap - 1;
    for (size_t i = hash_name(name) & mask; t->index->slots[i]; i = (i + 1) & mask) {
        int n = t->index->slots[i] - 1;
        if (strcmp(t->nodes[n].name, name) == 0)
            return n;
    }
    return -1;
}

enum bk_status topo_reindex(struct topo *t)
{
    if (t->index) {
        free(t->index->slots);
        free(t->index);
        t->index = NULL;
    }
    return index_reserve(t, t->nnodes);
}

enum bk_status topo_add_node(struct topo *t, enum topo_node_kind kind, const char *name, int server,
                             struct diag_loc loc, int *out)
{
    BK_CHECK(bk_grow_int((void **)&t->nodes, &t->nodes_cap, t->nnodes, sizeof *t->nodes));
    BK_CHECK(index_reserve(t, t->nnodes + 1));
    struct topo_node *n = &t->nodes[t->nnodes];
    memset(n, 0, sizeof *n);
    if (!(n->name = strdup(name)))
        return BK_ENOMEM;
    n->kind = kind;
    n->server = server;
    n->local_gpu = -1;
    n->gpu_order = -1;
    n->rank = -1;
    n->socket = -1;
    n->loc = loc;
    index_put(t->index, n->name, t->nnodes);
    if (out)
        *out = t->nnodes;
    t->nnodes++;
    return BK_OK;
}

BK_MUST_USE
static enum bk_status set_text(char **field, const char *value)
{
    char *s = NULL;
    if (value && !(s = strdup(value)))
        return BK_ENOMEM;
    free(*field);
    *field = s;
    return BK_OK;
}

enum bk_status topo_node_set_busid(struct topo *t, int node, const char *busid)
{
    return set_text(&t->nodes[node].busid, busid);
}

enum bk_status topo_node_set_model(struct topo *t, int node, const char *model)
{
    struct topo_node *n = &t->nodes[node];
    /* A GPU's model names its part; one the table does not know leaves the part to the reader. */
    if (n->kind == TOPO_GPU) {
        n->part = topo_gpu_part_find(model);
        n->part_assumed = 0;
    }
    return set_text(&n->model, model);
}

enum bk_status topo_add_arc(struct topo *t, int src, int dst, enum topo_link_kind kind,
                            int count, double gbps, struct diag_loc loc)
{
    if (src == dst || src < 0 || dst < 0 || src >= t->nnodes || dst >= t->nnodes)
        return BK_EINTERNAL;
    BK_CHECK(bk_grow_int((void **)&t->links, &t->links_cap, t->nlinks, sizeof *t->links));
    t->links[t->nlinks++] = (struct topo_link){src, dst, kind, count, gbps, loc};
    return BK_OK;
}

enum bk_status topo_add_link(struct topo *t, int a, int b, enum topo_link_kind kind, int count,
                             double gbps_ab, double gbps_ba, struct diag_loc loc)
{
    if (a == b || a < 0 || b < 0 || a >= t->nnodes || b >= t->nnodes)
        return BK_EINTERNAL;
    BK_CHECK(topo_add_arc(t, a, b, kind, count, gbps_ab, loc));
    return topo_add_arc(t, b, a, kind, count, gbps_ba, loc);
}

int topo_find_link(const struct topo *t, int src, int dst, enum topo_link_kind kind)
{
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == src && t->links[i].dst == dst && t->links[i].kind == kind)
            return i;
    return -1;
}

int topo_node_server(const struct topo *t, int v)
{
    int sv = t->nodes[v].server, ns = t->nservers > 0 ? t->nservers : 1;
    return t->nodes[v].kind != TOPO_NET_SWITCH && sv >= 0 && sv < ns ? sv : -1;
}

int topo_link_cmp(const void *pa, const void *pb)
{
    const struct topo_link *a = pa, *b = pb;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    /* Only duplicates get here: order them by input position so the error names the later. */
    if (a->loc.line != b->loc.line)
        return a->loc.line < b->loc.line ? -1 : 1;
    return a->loc.col - b->loc.col;
}

int topo_gpu_node(const struct topo *t, int k)
{
    /* After topo_finalize the GPUs come first, in canonical order. */
    if (k < 0 || k >= t->ngpus)
        return -1;
    return k;
}

int topo_no_p2p(const struct topo *t)
{
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == TOPO_GPU && t->nodes[i].no_p2p)
            return 1;
    return 0;
}

int topo_gpu_number(const char *id)
{
    if (!id || strncmp(id, "gpu", 3) != 0 || id[3] < '0' || id[3] > '9')
        return -1;
    char *end;
    errno = 0;
    long v = strtol(id + 3, &end, 10);
    return *end || errno || v > INT_MAX ? -1 : (int)v;
}

int topo_gpu_device(const struct topo *t, int k)
{
    int node = topo_gpu_node(t, k);
    if (node < 0)
        return k;
    const struct topo_node *g = &t->nodes[node];
    if (t->nservers > 1 && g->local_gpu >= 0)
        return g->local_gpu;
    int v = topo_gpu_number(g->id);
    return v >= 0 ? v : node;
}

enum bk_status topo_copy(const struct topo *in, struct topo *out)
{
    topo_init(out);
    enum bk_status st = BK_ENOMEM;
    out->format = in->format;
    out->nservers = in->nservers;
    out->ngpus = in->ngpus;
    if ((in->name && !(out->name = strdup(in->name))) ||
        (in->source && !(out->source = strdup(in->source))))
        goto fail;
    for (int i = 0; i < in->nnodes; i++) {
        const struct topo_node *s = &in->nodes[i];
        int k;
        BK_CHECK_GOTO(topo_add_node(out, s->kind, s->name, s->server, s->loc, &k), st, fail);
        struct topo_node *n = &out->nodes[k];
        n->gpu_order = s->gpu_order;
        n->rank = s->rank;
        n->socket = s->socket;
        n->nvlink_gen = s->nvlink_gen;
        n->part = s->part;
        n->part_assumed = s->part_assumed;
        n->local_gpu = s->local_gpu;
        n->nic_gbps = s->nic_gbps;
        n->no_p2p = s->no_p2p;
        if ((s->id && !(n->id = strdup(s->id))) ||
            (s->busid && !(n->busid = strdup(s->busid))) ||
            (s->model && !(n->model = strdup(s->model))))
            goto fail;
    }
    for (int i = 0; i < in->nlinks; i++) {
        const struct topo_link *l = &in->links[i];
        BK_CHECK_GOTO(topo_add_arc(out, l->src, l->dst, l->kind, l->count, l->gbps, l->loc), st, fail);
    }
    return BK_OK;
fail:
    topo_free(out);
    return st;
}

static const char *const node_kind_names[TOPO_NODE_KINDS] = {
    "gpu", "nvswitch", "pcie-switch", "cpu", "nic", "net-switch"};
static const char *const link_kind_names[TOPO_LINK_KINDS] = {"nvlink", "pcie", "smp", "net"};

const char *topo_node_kind_name(enum topo_node_kind k) { return node_kind_names[k]; }
const char *topo_link_kind_name(enum topo_link_kind k) { return link_kind_names[k]; }

int topo_node_kind_parse(const char *s, enum topo_node_kind *out)
{
    for (int k = 0; k < TOPO_NODE_KINDS; k++)
        if (strcmp(s, node_kind_names[k]) == 0) {
            *out = (enum topo_node_kind)k;
            return 1;
        }
    return 0;
}

int topo_link_kind_parse(const char *s, enum topo_link_kind *out)
{
    for (int k = 0; k < TOPO_LINK_KINDS; k++)
        if (strcmp(s, link_kind_names[k]) == 0) {
            *out = (enum topo_link_kind)k;
            return 1;
        }
    return 0;
}
