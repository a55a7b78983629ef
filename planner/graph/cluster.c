/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cluster.c - servers, identical-server classes, ports and network paths of a cluster.
 */
#include "graph/cluster.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/maxflow.h"

void cluster_free(struct cluster *c)
{
    for (int i = 0; i < c->nservers; i++) {
        free(c->s[i].node);
        pgraph_free(&c->s[i].g);
        free(c->s[i].ports);
        free(c->s[i].port_arc);
    }
    free(c->s);
    free(c->server_of);
    free(c->local_of);
    free(c->arc_of_link);
    if (c->net_pred)
        for (int v = 0; v < c->t->nnodes; v++)
            free(c->net_pred[v]);
    free(c->net_pred);
    free(c->net_comp);
    memset(c, 0, sizeof *c);
}

static int same_graph(const struct pgraph *a, const struct pgraph *b)
{
    size_t n = (size_t)a->narcs;
    return a->nnodes == b->nnodes && a->ngpus == b->ngpus && a->narcs == b->narcs &&
           a->kinds == b->kinds && memcmp(a->src, b->src, n * sizeof *a->src) == 0 &&
           memcmp(a->dst, b->dst, n * sizeof *a->dst) == 0 &&
           memcmp(a->cap, b->cap, n * sizeof *a->cap) == 0;
}

/* Local nodes of server si: its GPUs in rank order, then its other nodes in topology order. */
BK_MUST_USE
static enum bk_status server_nodes(struct cluster *c, int si)
{
    const struct topo *t = c->t;
    struct cluster_server *sv = &c->s[si];
    sv->node = malloc((size_t)t->nnodes * sizeof *sv->node);
    if (!sv->node)
        return BK_ENOMEM;
    for (int pass = 0; pass < 2; pass++)
        for (int v = 0; v < t->nnodes; v++)
            if (topo_node_server(t, v) == sv->id && (t->nodes[v].kind == TOPO_GPU) == (pass == 0)) {
                if (pass == 0)
                    c->local_of[v] = sv->ngpus++;
                sv->node[sv->nnodes++] = v;
            }
    return BK_OK;
}

BK_MUST_USE
static enum bk_status server_graph(struct cluster *c, int si)
{
    struct cluster_server *sv = &c->s[si];
    BK_CHECK(pgraph_build_part(&sv->g, c->t, PG_NVLINK, sv->node, sv->nnodes, sv->ngpus));
    if (!pgraph_gpus_connected(&sv->g)) {
        pgraph_free(&sv->g);
        BK_CHECK(pgraph_build_part(&sv->g, c->t, PG_ALL_KINDS & ~PG_KIND(TOPO_NET), sv->node,
                                   sv->nnodes, sv->ngpus));
    }
    sv->cls = si;
    for (int k = 0; k < si; k++)
        if (c->s[k].cls == k && same_graph(&c->s[k].g, &sv->g)) {
            sv->cls = k;
            break;
        }
    return BK_OK;
}

/*
 * Ports: from each GPU, a BFS inside its server that never crosses NVLink (the intra-server
 * trees use it) nor another GPU finds the nearest NICs; each GPU becomes a port of the first of
 * them that no earlier GPU took, else of the first. Ports are listed by NIC, then GPU, so consecutive ports use different NICs only through
 * the caller's rotation.
 */
BK_MUST_USE
static enum bk_status server_ports(struct cluster *c, int si, int *pred, int *queue)
{
    const struct topo *t = c->t;
    const struct pgraph *g = c->g;
    struct cluster_server *sv = &c->s[si];
    sv->ports = calloc((size_t)sv->ngpus + 1, sizeof *sv->ports);
    sv->port_arc = malloc(((size_t)sv->ngpus * (size_t)g->nnodes + 1) * sizeof *sv->port_arc);
    if (!sv->ports || !sv->port_arc)
        return BK_ENOMEM;
    int used = 0;
    int *depth = malloc(((size_t)g->nnodes + 1) * sizeof *depth);
    if (!depth)
        return BK_ENOMEM;
    for (int k = 0; k < sv->ngpus; k++) {
        int src = sv->node[k];
        for (int v = 0; v < g->nnodes; v++)
            pred[v] = -2;
        pred[src] = -1;
        depth[src] = 0;
        int head = 0, tail = 0, nic = -1;
        queue[tail++] = src;
        while (head < tail) {
            int u = queue[head++];
            if (t->nodes[u].kind == TOPO_NIC)
                continue; /* a port ends at its NIC */
            for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++) {
                int a = g->out_arc[i], v = g->dst[a];
                enum topo_link_kind kind = t->links[g->link[a]].kind;
                if (pred[v] != -2 || kind == TOPO_NVLINK || kind == TOPO_NET ||
                    topo_node_server(t, v) != sv->id || t->nodes[v].kind == TOPO_GPU)
                    continue;
                pred[v] = a;
                depth[v] = depth[u] + 1;
                queue[tail++] = v;
            }
        }
        /* The nearest NICs; of them the first no earlier GPU took, so that GPUs sharing a
           PCIe switch with as many NICs (DGX A100: two and two) use them all. */
        int first = -1;
        for (int q = 0; q < tail && nic < 0; q++) { /* the queue is in rising depth */
            int v = queue[q], taken = 0;
            if (t->nodes[v].kind != TOPO_NIC)
                continue;
            if (first >= 0 && depth[v] > depth[first])
                break;
            first = first < 0 ? v : first;
            for (int j = 0; j < sv->nports && !taken; j++)
                taken = sv->ports[j].nic == v;
            nic = taken ? -1 : v;
        }
        nic = nic < 0 ? first : nic;
        if (nic < 0)
            continue;
        struct cluster_port *p = &sv->ports[sv->nports++];
        p->gpu = t->nodes[src].rank;
        p->nic = nic;
        p->up_off = used;
        for (int v = nic; pred[v] >= 0; v = g->src[pred[v]])
            p->up_len++;
        for (int v = nic, i = p->up_len; pred[v] >= 0; v = g->src[pred[v]])
            sv->port_arc[used + --i] = pred[v];
        used += p->up_len;
    }
    free(depth);
    return BK_OK;
}

static int port_cmp(const void *pa, const void *pb)
{
    const struct cluster_port *a = pa, *b = pb;
    if (a->nic != b->nic)
        return a->nic < b->nic ? -1 : 1;
    return (a->gpu > b->gpu) - (a->gpu < b->gpu);
}

/*
 * What can leave and enter each server: the max-flow from its GPUs to everything outside it and
 * back (the NICs' PCIe links may be narrower than their network links). One workspace serves
 * every server: extra arcs source -> v and v -> sink, switched on per server and direction.
 */
BK_MUST_USE
static enum bk_status server_caps(struct cluster *c)
{
    const struct topo *t = c->t;
    int n = t->nnodes, src = n, snk = n + 1;
    struct maxflow *m;
    BK_CHECK(maxflow_new(&m, c->g, 2, 2 * n));
    for (int v = 0; v < n; v++) {
        maxflow_add_arc(m, src, v, 0);
        maxflow_add_arc(m, v, snk, 0);
    }
    for (int si = 0; si < c->nservers; si++)
        for (int dir = 0; dir < 2; dir++) {
            for (int v = 0; v < n; v++) {
                int inside = topo_node_server(t, v) == c->s[si].id;
                int from = dir == 0 ? inside && t->nodes[v].kind == TOPO_GPU : !inside;
                int to = dir == 0 ? !inside : inside && t->nodes[v].kind == TOPO_GPU;
                maxflow_set_extra_cap(m, 2 * v, from ? INFINITY : 0);
                maxflow_set_extra_cap(m, 2 * v + 1, to ? INFINITY : 0);
            }
            double f = maxflow_run(m, src, snk, INFINITY, NULL);
            if (dir == 0)
                c->s[si].cap_out = f;
            else
                c->s[si].cap_in = f;
        }
    maxflow_free(m);
    return BK_OK;
}

/* Components of the network switches among themselves (cluster_nics_joined). */
BK_MUST_USE
static enum bk_status net_components(struct cluster *c, int *queue)
{
    const struct topo *t = c->t;
    const struct pgraph *g = c->g;
    c->net_comp = malloc(((size_t)t->nnodes + 1) * sizeof *c->net_comp);
    if (!c->net_comp)
        return BK_ENOMEM;
    for (int v = 0; v < t->nnodes; v++)
        c->net_comp[v] = -1;
    int ncomp = 0;
    for (int v = 0; v < t->nnodes; v++) {
        if (t->nodes[v].kind != TOPO_NET_SWITCH || c->net_comp[v] >= 0)
            continue;
        int head = 0, tail = 0;
        c->net_comp[v] = ncomp;
        queue[tail++] = v;
        while (head < tail) {
            int u = queue[head++];
            for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++) {
                int w = g->dst[g->out_arc[i]];
                if (t->nodes[w].kind == TOPO_NET_SWITCH && c->net_comp[w] < 0) {
                    c->net_comp[w] = ncomp;
                    queue[tail++] = w;
                }
            }
        }
        ncomp++;
    }
    return BK_OK;
}

int cluster_nics_joined(const struct cluster *c, int a, int b)
{
    const struct pgraph *g = c->g;
    for (int i = g->out_off[a]; i < g->out_off[a + 1]; i++) {
        int u = g->dst[g->out_arc[i]];
        if (u == b && c->t->nodes[u].kind == TOPO_NIC)
            return 1;
        if (c->net_comp[u] < 0)
            continue;
        for (int k = g->in_off[b]; k < g->in_off[b + 1]; k++)
            if (c->net_comp[g->src[g->in_arc[k]]] == c->net_comp[u])
                return 1;
    }
    return 0;
}

const struct cluster_port *cluster_port_toward(const struct cluster *c,
                                               const struct cluster_port *from, int s, int want)
{
    const struct cluster_server *sv = &c->s[s];
    for (int i = 0; i < sv->nports; i++) {
        const struct cluster_port *p = &sv->ports[(want + i) % sv->nports];
        if (cluster_nics_joined(c, from->nic, p->nic))
            return p;
    }
    return NULL;
}

/* 1 when every port can hand data to some port of every other server over the network. */
static int ports_joined(const struct cluster *c)
{
    for (int si = 0; si < c->nservers; si++)
        for (int k = 0; k < c->s[si].nports; k++)
            for (int sj = 0; sj < c->nservers; sj++)
                if (sj != si && !cluster_port_toward(c, &c->s[si].ports[k], sj, 0))
                    return 0;
    return 1;
}

enum bk_status cluster_build(struct cluster *c, const struct topo *t, const struct pgraph *g)
{
    memset(c, 0, sizeof *c);
    c->t = t;
    c->g = g;
    /* Servers are numbered by their first GPU; servers with no GPU of the allocation are left
     * out (they can only relay, and the network paths go round them). */
    int top = 0;
    for (int v = 0; v < t->nnodes; v++)
        top = t->nodes[v].server + 1 > top ? t->nodes[v].server + 1 : top;
    c->s = calloc((size_t)top + 1, sizeof *c->s);
    if (!c->s)
        return BK_ENOMEM;
    for (int v = 0; v < t->ngpus; v++) {
        int k = 0;
        while (k < c->nservers && c->s[k].id != t->nodes[v].server)
            k++;
        if (k == c->nservers)
            c->s[c->nservers++].id = t->nodes[v].server;
    }
    if (c->nservers < 2 || !pgraph_is_symmetric(g))
        return BK_OK;
    c->server_of = malloc((size_t)t->ngpus * sizeof *c->server_of);
    c->local_of = malloc((size_t)t->ngpus * sizeof *c->local_of);
    c->arc_of_link = malloc(((size_t)t->nlinks + 1) * sizeof *c->arc_of_link);
    c->net_pred = calloc((size_t)t->nnodes, sizeof *c->net_pred);
    int *pred = malloc((size_t)t->nnodes * sizeof *pred);
    int *queue = malloc((size_t)t->nnodes * sizeof *queue);
    enum bk_status st = BK_ENOMEM;
    if (!c->server_of || !c->local_of || !c->arc_of_link || !c->net_pred || !pred ||
        !queue)
        goto out;
    for (int v = 0; v < t->ngpus; v++)
        for (int k = 0; k < c->nservers; k++)
            if (c->s[k].id == t->nodes[v].server)
                c->server_of[v] = k;
    for (int i = 0; i < t->nlinks; i++)
        c->arc_of_link[i] = -1;
    for (int a = 0; a < g->narcs; a++)
        c->arc_of_link[g->link[a]] = a;
    int ok = 1;
    for (int si = 0; si < c->nservers; si++) {
        BK_CHECK_GOTO(server_nodes(c, si), st, out);
        BK_CHECK_GOTO(server_graph(c, si), st, out);
        BK_CHECK_GOTO(server_ports(c, si, pred, queue), st, out);
        qsort(c->s[si].ports, (size_t)c->s[si].nports, sizeof *c->s[si].ports, port_cmp);
        /* Phases pay off when the intra-server trees and the NIC paths use different links;
         * a server joined only over PCIe shares them, and the flat planner does better. */
        ok = ok && c->s[si].nports > 0 &&
             (c->s[si].ngpus == 1 || c->s[si].g.kinds == PG_NVLINK);
    }
    if (ok)
        BK_CHECK_GOTO(net_components(c, queue), st, out);
    c->hierarchical = ok && ports_joined(c);
    st = c->hierarchical ? server_caps(c) : BK_OK;
out:
    free(pred);
    free(queue);
    return st;
}

/* BFS over the network from NIC `nic`: through network switches only, to any NIC. */
BK_MUST_USE
static enum bk_status net_bfs(struct cluster *c, int nic)
{
    const struct topo *t = c->t;
    const struct pgraph *g = c->g;
    int *pred = malloc((size_t)g->nnodes * sizeof *pred);
    int *queue = malloc((size_t)g->nnodes * sizeof *queue);
    if (!pred || !queue) {
        free(pred);
        free(queue);
        return BK_ENOMEM;
    }
    for (int v = 0; v < g->nnodes; v++)
        pred[v] = -2;
    pred[nic] = -1;
    int head = 0, tail = 0;
    queue[tail++] = nic;
    while (head < tail) {
        int u = queue[head++];
        if (u != nic && t->nodes[u].kind != TOPO_NET_SWITCH)
            continue; /* reached a NIC: paths end there */
        for (int i = g->out_off[u]; i < g->out_off[u + 1]; i++) {
            int a = g->out_arc[i], v = g->dst[a];
            enum topo_node_kind k = t->nodes[v].kind;
            if (pred[v] == -2 && (k == TOPO_NET_SWITCH || k == TOPO_NIC)) {
                pred[v] = a;
                queue[tail++] = v;
            }
        }
    }
    free(queue);
    c->net_pred[nic] = pred;
    return BK_OK;
}

enum bk_status cluster_cross_path(struct cluster *c, const struct cluster_port *a,
                                  const struct cluster_server *sa, const struct cluster_port *b,
                                  const struct cluster_server *sb, int *arcs, int *len)
{
    const struct pgraph *g = c->g;
    if (!c->net_pred[a->nic])
        BK_CHECK(net_bfs(c, a->nic));
    const int *pred = c->net_pred[a->nic];
    if (pred[b->nic] == -2)
        return BK_EINTERNAL; /* the caller checked that every NIC pair is joined */
    int n = 0;
    for (int i = 0; i < a->up_len; i++)
        arcs[n++] = sa->port_arc[a->up_off + i];
    int net = 0;
    for (int v = b->nic; pred[v] >= 0; v = g->src[pred[v]])
        net++;
    int k = n + net;
    for (int v = b->nic; pred[v] >= 0; v = g->src[pred[v]])
        arcs[--k] = pred[v];
    n += net;
    for (int i = b->up_len - 1; i >= 0; i--)
        arcs[n++] = g->rev[sb->port_arc[b->up_off + i]];
    *len = n;
    return BK_OK;
}
