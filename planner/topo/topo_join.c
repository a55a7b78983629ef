/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_join.c - servers joined into a cluster on the normalised model (see topo_join.h).
 *
 * Everything of a server is copied as its reader left it: kinds, bonded counts, capacities in
 * both directions, bus ids, models, sockets. Only three things are new: the per-server name
 * prefix, the GPU order (server by server, each server's GPUs in their own canonical order, as a
 * hand-written file declares them), and the network. The NICs' PCIe links stay as the server
 * describes them even when the NIC rate is raised: the slot, not the port, is what a faster NIC
 * in the same server would be limited by, and inventing PCIe capacity would hide that.
 */
#include "topo/topo_join.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

int topo_join_unfit(const struct topo *t, char *why, size_t cap)
{
    int nics = 0, net = 0;
    for (int i = 0; i < t->nnodes; i++) {
        nics += t->nodes[i].kind == TOPO_NIC;
        net += t->nodes[i].kind == TOPO_NET_SWITCH;
    }
    for (int i = 0; i < t->nlinks; i++)
        net += t->links[i].kind == TOPO_NET;
    if (t->nservers > 1)
        snprintf(why, cap, "it describes %d servers; give the topology of one server",
                 t->nservers);
    else if (net)
        snprintf(why, cap, "it already has a network (a net-switch or net links); give the "
                           "topology of one server without one");
    else if (!nics)
        snprintf(why, cap, "it has no NIC, so nothing could join its servers");
    else
        return 0;
    return 1;
}

/* bsearch order of a finalized topology's links: (src, dst, kind), which is unique there. */
static int arc_cmp(const void *pa, const void *pb)
{
    const struct topo_link *a = pa, *b = pb;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    return (int)a->kind - (int)b->kind;
}

/* One server's nodes and links, its nodes from index `base` and its GPUs from `gpu_base`. */
BK_MUST_USE
static enum bk_status add_server(struct topo *out, const struct topo_join_server *s, int server,
                                 int gpu_base)
{
    const struct topo *t = s->t;
    int base = out->nnodes;
    for (int i = 0; i < t->nnodes; i++) {
        const struct topo_node *src = &t->nodes[i];
        char *name = bk_asprintf("%s.%s", s->prefix, src->name);
        if (!name)
            return BK_ENOMEM;
        int k;
        enum bk_status st =
            topo_add_node(out, src->kind, name, server, s->at ? *s->at : src->loc, &k);
        free(name);
        BK_CHECK(st);
        struct topo_node *n = &out->nodes[k];
        /* A finalized server lists its GPUs first, in its canonical order. */
        n->gpu_order = src->kind == TOPO_GPU ? gpu_base + i : -1;
        n->socket = src->socket;
        n->nvlink_gen = src->nvlink_gen;
        n->nic_gbps = src->nic_gbps;
        n->no_p2p = src->no_p2p;
        BK_CHECK(topo_node_set_busid(out, k, src->busid));
        BK_CHECK(topo_node_set_model(out, k, src->model));
        n->part = src->part; /* as read or assumed in the server's own file */
        n->part_assumed = src->part_assumed;
    }
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        if (l->src > l->dst)
            continue; /* added with its reverse */
        struct topo_link key = {.src = l->dst, .dst = l->src, .kind = l->kind};
        const struct topo_link *rev =
            bsearch(&key, t->links, (size_t)t->nlinks, sizeof *t->links, arc_cmp);
        if (!rev)
            return BK_EINTERNAL; /* readers add every link in both directions */
        BK_CHECK(topo_add_link(out, base + l->src, base + l->dst, l->kind, l->count, l->gbps,
                               rev->gbps, s->at ? *s->at : l->loc));
    }
    return BK_OK;
}

/* PCIe capacity out of NIC `nic` of t (0 when it has no PCIe link). */
static double nic_pcie(const struct topo *t, int nic)
{
    double sum = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == nic && t->links[i].kind == TOPO_PCIE)
            sum += t->links[i].gbps;
    return sum;
}

/* A set rate above what a NIC's PCIe link carries runs at the link's rate: say so once. */
static void note_capped(const struct topo_join_server *s, int n, const struct topo_join_opts *o,
                        struct diag *d)
{
    int nics = 0, capped = 0;
    double least = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < s[k].t->nnodes; i++) {
            if (s[k].t->nodes[i].kind != TOPO_NIC)
                continue;
            nics++;
            double pcie = nic_pcie(s[k].t, i);
            if (pcie > 0 && pcie < o->nic_gbps)
                least = capped++ == 0 || pcie < least ? pcie : least;
        }
    if (capped)
        diag_note(d, o->rate_file, o->rate_loc,
                  "%s (%g GB/s per direction) is faster than the PCIe links of %d of the %d "
                  "NICs (down to %g GB/s); the servers' PCIe links are kept as given, so those "
                  "NICs are limited to them",
                  o->rate_what ? o->rate_what : "the NIC rate", o->nic_gbps, capped, nics, least);
}

enum bk_status topo_join(const struct topo_join_server *s, int n, const struct topo_join_opts *o,
                         struct topo *out, struct diag *d)
{
    long nodes = 1;
    for (int k = 0; k < n; k++)
        nodes += s[k].t->nnodes;
    if (n < 1 || n > TOPO_JOIN_MAX_SERVERS || nodes > TOPO_JOIN_MAX_NODES)
        return diag_error(d, o->file, o->loc,
                          "a cluster of %d servers and %ld nodes is larger than blinkc reads "
                          "(at most %d servers and %d nodes)",
                          n, nodes, TOPO_JOIN_MAX_SERVERS, TOPO_JOIN_MAX_NODES);
    int gpu_base = 0;
    int *first = malloc((size_t)n * sizeof *first);
    if (!first)
        return BK_ENOMEM;
    enum bk_status st = BK_OK;
    for (int k = 0; k < n && st == BK_OK; k++) {
        first[k] = out->nnodes;
        st = add_server(out, &s[k], k, gpu_base);
        gpu_base += s[k].t->ngpus;
    }
    /* The switch belongs to no server in reality; like a hand-written file, put it in server 0. */
    int sw = -1;
    if (st == BK_OK)
        st = topo_add_node(out, TOPO_NET_SWITCH, TOPO_JOIN_SWITCH, 0,
                           s[0].at ? *s[0].at : DIAG_NOWHERE, &sw);
    for (int k = 0; k < n && st == BK_OK; k++)
        for (int i = 0; i < s[k].t->nnodes && st == BK_OK; i++) {
            struct topo_node *nic = &out->nodes[first[k] + i];
            if (nic->kind != TOPO_NIC)
                continue;
            if (o->nic_gbps > 0)
                nic->nic_gbps = o->nic_gbps;
            /* The text format's rule for a net link: the NIC's speed, else the default. */
            double rate = nic->nic_gbps > 0 ? nic->nic_gbps : o->rates->net;
            st = topo_add_link(out, first[k] + i, sw, TOPO_NET, 1, rate, rate,
                               s[k].at ? *s[k].at : nic->loc);
        }
    free(first);
    if (st == BK_OK && o->nic_gbps > 0)
        note_capped(s, n, o, d);
    return st;
}

enum bk_status topo_replicate(const struct topo *server, int n, const struct topo_join_opts *o,
                              struct topo *out, struct diag *d)
{
    topo_init(out);
    char why[160];
    if (n < 2 || n > TOPO_JOIN_MAX_SERVERS) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "--servers %d: give 2 to %d servers", n,
                 TOPO_JOIN_MAX_SERVERS);
        return BK_EUSAGE;
    }
    if (topo_join_unfit(server, why, sizeof why)) {
        diag_add(d, DIAG_ERROR, server->source, DIAG_NOWHERE,
                 "--servers: cannot replicate '%s': %s", server->name ? server->name : "", why);
        return BK_EUSAGE;
    }
    struct topo_join_server *s = calloc((size_t)n, sizeof *s);
    char (*prefix)[16] = calloc((size_t)n, sizeof *prefix);
    enum bk_status st = s && prefix ? BK_OK : BK_ENOMEM;
    for (int k = 0; k < n && st == BK_OK; k++) {
        snprintf(prefix[k], sizeof prefix[k], "s%d", k);
        s[k] = (struct topo_join_server){server, prefix[k], NULL};
    }
    out->format = server->format;
    if (st == BK_OK && server->source && !(out->source = strdup(server->source)))
        st = BK_ENOMEM;
    if (st == BK_OK && !(out->name = bk_asprintf("cluster-%dx-%s", n,
                                                 server->name ? server->name : "server")))
        st = BK_ENOMEM;
    if (st == BK_OK)
        st = topo_join(s, n, o, out, d);
    if (st == BK_OK)
        st = topo_finalize(out, d);
    free(s);
    free(prefix);
    if (st != BK_OK)
        topo_free(out);
    return st;
}
