/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_cluster.c - composing intra-server trees and NIC paths into cluster trees (see
 * plan_cluster.h), their rates and the cut bounds they are measured against.
 */
#include "plan/plan_cluster.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "graph/cluster.h"
#include "pack/bound.h"
#include "plan/plan_internal.h"
#include "topo/topo_auto.h"

/* Partition boundaries closer than this are one boundary. */
#define SAME_CUT 1e-12

struct plan_cluster {
    struct cluster c;
    struct plan_trees *ar;  /* [nservers] intra allreduce, at class leaders */
    char *have_ar;
    struct plan_trees **bc; /* [nservers][ngpus] intra broadcast per local root, lazily */
    char **have_bc;
    /* Composition scratch: one tree under construction. */
    int *parent, *len, **path, *buf, *seen, *queue;
    double bcast_min; /* min over roots of the exact broadcast bound, < 0 until computed */
    double ag_bound;  /* allgather's (and reduce-scatter's) bound: the cuts' and the exact one's
                         least; < 0 until computed */
    int *twin;        /* [t->nservers] topo_server_twins */
    unsigned char *ag_sinks, *bc_sinks; /* [ngpus] the bounds' max-flow sinks (sinks_by_twins) */
};

static void trees_free(struct plan_trees *pt)
{
    ptree_set_free(&pt->trees);
}

void plan_cluster_free(struct plan_cluster *pc)
{
    if (!pc)
        return;
    for (int s = 0; s < pc->c.nservers; s++) {
        if (pc->have_ar && pc->have_ar[s])
            trees_free(&pc->ar[s]);
        for (int k = 0; pc->bc && pc->bc[s] && k < pc->c.s[s].ngpus; k++)
            if (pc->have_bc[s][k])
                trees_free(&pc->bc[s][k]);
        if (pc->bc)
            free(pc->bc[s]);
        if (pc->have_bc)
            free(pc->have_bc[s]);
    }
    free(pc->ar);
    free(pc->have_ar);
    free(pc->bc);
    free(pc->have_bc);
    free(pc->parent);
    free(pc->len);
    free(pc->path);
    free(pc->buf);
    free(pc->seen);
    free(pc->queue);
    free(pc->twin);
    free(pc->ag_sinks);
    free(pc->bc_sinks);
    cluster_free(&pc->c);
    free(pc);
}

/*
 * Identical servers (topo_server_twins) take each other's GPUs' max-flows over: the allgather
 * bound's source feeds every GPU alike, so one server of each class is enough as sinks; the
 * broadcast minimum's flows run from and to GPU 0, so its own server's GPUs are sinks, and of
 * every class one server besides it (swapping two others fixes GPU 0).
 */
BK_MUST_USE
static enum bk_status sinks_by_twins(struct plan_cluster *pc, const struct topo *t)
{
    int ns = t->nservers > 0 ? t->nservers : 1, n = t->ngpus;
    int *other = malloc((size_t)ns * sizeof *other); /* per class: its first server but GPU 0's */
    pc->twin = malloc((size_t)ns * sizeof *pc->twin);
    pc->ag_sinks = malloc((size_t)n + 1);
    pc->bc_sinks = malloc((size_t)n + 1);
    enum bk_status st = other && pc->twin && pc->ag_sinks && pc->bc_sinks
                            ? topo_server_twins(t, pc->twin) : BK_ENOMEM;
    if (st == BK_OK) {
        int s0 = t->nodes[0].server;
        for (int sv = 0; sv < ns; sv++)
            other[sv] = -1;
        for (int sv = 0; sv < ns; sv++)
            if (sv != s0 && other[pc->twin[sv]] < 0)
                other[pc->twin[sv]] = sv;
        for (int v = 0; v < n; v++) {
            int sv = t->nodes[v].server, in = sv >= 0 && sv < ns;
            pc->ag_sinks[v] = !in || pc->twin[sv] == sv;
            pc->bc_sinks[v] = !in || sv == s0 || other[pc->twin[sv]] == sv;
        }
    }
    free(other);
    return st;
}

const int *plan_cluster_twins(const struct plan_cluster *pc)
{
    return pc->twin;
}

enum bk_status plan_cluster_new(struct plan_cluster **out, const struct topo *t,
                                const struct pgraph *g)
{
    *out = NULL;
    struct plan_cluster *pc = calloc(1, sizeof *pc);
    if (!pc)
        return BK_ENOMEM;
    enum bk_status st = cluster_build(&pc->c, t, g);
    if (st != BK_OK || !pc->c.hierarchical) {
        plan_cluster_free(pc);
        return st;
    }
    int S = pc->c.nservers, n = t->ngpus;
    size_t stride = (size_t)g->nnodes;
    pc->ar = calloc((size_t)S, sizeof *pc->ar);
    pc->have_ar = calloc((size_t)S, 1);
    pc->bc = calloc((size_t)S, sizeof *pc->bc);
    pc->have_bc = calloc((size_t)S, sizeof *pc->have_bc);
    pc->parent = malloc((size_t)n * sizeof *pc->parent);
    pc->len = malloc((size_t)n * sizeof *pc->len);
    pc->path = malloc((size_t)n * sizeof *pc->path);
    pc->buf = malloc((size_t)n * stride * sizeof *pc->buf);
    pc->seen = malloc((size_t)n * sizeof *pc->seen);
    pc->queue = malloc((size_t)n * sizeof *pc->queue);
    pc->bcast_min = -1;
    pc->ag_bound = -1;
    if (!pc->ar || !pc->have_ar || !pc->bc || !pc->have_bc || !pc->parent || !pc->len ||
        !pc->path || !pc->buf || !pc->seen || !pc->queue) {
        plan_cluster_free(pc);
        return BK_ENOMEM;
    }
    for (int v = 0; v < n; v++)
        pc->path[v] = pc->buf + (size_t)v * stride;
    if ((st = sinks_by_twins(pc, t)) != BK_OK) {
        plan_cluster_free(pc);
        return st;
    }
    for (int s = 0; s < S; s++) {
        pc->bc[s] = calloc((size_t)pc->c.s[s].ngpus + 1, sizeof *pc->bc[s]);
        pc->have_bc[s] = calloc((size_t)pc->c.s[s].ngpus + 1, 1);
        if (!pc->bc[s] || !pc->have_bc[s]) {
            plan_cluster_free(pc);
            return BK_ENOMEM;
        }
    }
    *out = pc;
    return BK_OK;
}

/* ---------------------------------------------------------------- intra-server plans */

BK_MUST_USE
static enum bk_status intra_allreduce(struct plan_cluster *pc, int s, const struct plan_opts *o,
                                      const struct plan_trees **out, struct diag *d)
{
    int leader = pc->c.s[s].cls;
    const struct pgraph *g = &pc->c.s[leader].g;
    if (!pc->have_ar[leader] && g->ngpus > 1)
        BK_CHECK(plan_allreduce(g, g->kinds, NULL, o, NULL, NULL, &pc->ar[leader], d));
    pc->have_ar[leader] = 1;
    *out = &pc->ar[leader];
    return BK_OK;
}

BK_MUST_USE
static enum bk_status intra_broadcast(struct plan_cluster *pc, int s, int root,
                                      const struct plan_opts *o, const struct plan_trees **out,
                                      struct diag *d)
{
    int leader = pc->c.s[s].cls;
    const struct pgraph *g = &pc->c.s[leader].g;
    if (!pc->have_bc[leader][root] && g->ngpus > 1)
        BK_CHECK(plan_rooted(g, g->kinds, root, o, NULL, &pc->bc[leader][root], d));
    pc->have_bc[leader][root] = 1;
    *out = &pc->bc[leader][root];
    return BK_OK;
}

/* ---------------------------------------------------------------- partitions */

struct cuts {
    double *v;
    int n, cap;
};

BK_MUST_USE
static enum bk_status cut_add(struct cuts *c, double x)
{
    BK_CHECK(bk_grow_int((void **)&c->v, &c->cap, c->n, sizeof *c->v));
    c->v[c->n++] = x;
    return BK_OK;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static void cut_finish(struct cuts *c)
{
    qsort(c->v, (size_t)c->n, sizeof *c->v, cmp_double);
    int k = 0;
    for (int i = 0; i < c->n; i++)
        if (k == 0 || c->v[i] > c->v[k - 1] + SAME_CUT)
            c->v[k++] = c->v[i];
    c->n = k;
}

/* Add the boundaries of a tree set's shares of [lo, lo + width). */
BK_MUST_USE
static enum bk_status cut_add_shares(struct cuts *c, const struct plan_trees *pt, double lo,
                                     double width)
{
    double total = ptree_set_rate(&pt->trees), sum = 0;
    for (int i = 0; i + 1 < pt->trees.n && total > 0; i++) {
        sum += pt->trees.t[i].rate;
        BK_CHECK(cut_add(c, lo + width * sum / total));
    }
    return BK_OK;
}

/* The tree whose share of [0, 1) holds position m, or NULL for a one-GPU server. */
static const struct ptree *tree_at(const struct plan_trees *pt, double m)
{
    double total = ptree_set_rate(&pt->trees), sum = 0;
    for (int i = 0; i < pt->trees.n; i++) {
        sum += pt->trees.t[i].rate;
        if (m * total < sum || i + 1 == pt->trees.n)
            return &pt->trees.t[i];
    }
    return NULL;
}

/* ---------------------------------------------------------------- composing one tree */

/* Arc of the cluster graph for arc a of server s's own graph, forward or turned round. */
static int cluster_arc(const struct plan_cluster *pc, int s, int a, int reversed)
{
    int ca = pc->c.arc_of_link[pc->c.s[s].g.link[a]];
    return reversed ? pc->c.g->rev[ca] : ca;
}

/*
 * Put intra tree lt (on server s's graph, local ranks) into the cluster tree, rooted at local
 * rank `root`: an undirected tree may be re-rooted anywhere, its paths turned round where an
 * edge is now walked child to parent.
 */
static void place_intra(struct plan_cluster *pc, int s, const struct ptree *lt, int root)
{
    const struct cluster_server *sv = &pc->c.s[s];
    if (!lt)
        return; /* a one-GPU server: its owner is all there is */
    int m = sv->ngpus, head = 0, tail = 0;
    int *seen = pc->seen, *queue = pc->queue;
    for (int v = 0; v < m; v++)
        seen[v] = 0;
    seen[root] = 1;
    queue[tail++] = root;
    while (head < tail) {
        int u = queue[head++];
        for (int v = 0; v < m; v++) {
            int forward = lt->parent[v] == u && !seen[v];
            int backward = v == lt->parent[u] && v >= 0 && !seen[v];
            if (!forward && !backward)
                continue;
            int edge = forward ? v : u; /* the child whose path joins u and v */
            int gv = sv->node[v], *p = pc->path[gv];
            int k0 = lt->path_off[edge], k1 = lt->path_off[edge + 1];
            pc->len[gv] = k1 - k0;
            for (int k = k0; k < k1; k++)
                p[forward ? k - k0 : k1 - 1 - k] = cluster_arc(pc, s, lt->path_arc[k], !forward);
            pc->parent[gv] = sv->node[u];
            seen[v] = 1;
            queue[tail++] = v;
        }
    }
}

/* Join port b of server sb under port a of server sa. */
BK_MUST_USE
static enum bk_status place_cross(struct plan_cluster *pc, int sa, const struct cluster_port *a,
                                  int sb, const struct cluster_port *b)
{
    pc->parent[b->gpu] = a->gpu;
    return cluster_cross_path(&pc->c, a, &pc->c.s[sa], b, &pc->c.s[sb], pc->path[b->gpu],
                              &pc->len[b->gpu]);
}

/* Add the composed tree at rate `share` (scaled later), merged into the previous tree when it
 * has the same shape (neighbouring partitions often do). */
BK_MUST_USE
static enum bk_status emit(struct plan_cluster *pc, int root, double share, struct ptree_set *s)
{
    struct ptree t;
    int n = pc->c.t->ngpus;
    pc->parent[root] = -1;
    BK_CHECK(ptree_make(&t, n, root, pc->parent, (const int *const *)pc->path, pc->len));
    t.rate = share;
    enum bk_status st = BK_OK;
    if (s->n > 0 && ptree_same_shape(&s->t[s->n - 1], &t))
        s->t[s->n - 1].rate += share;
    else
        st = ptree_set_add_new(s, &t);
    ptree_free(&t);
    return st;
}

/* Scale every share by the largest factor the links allow; returns that factor. */
BK_MUST_USE
static enum bk_status scale_to_capacity(const struct pgraph *g, enum pack_kind kind,
                                        struct ptree_set *s, double *factor)
{
    double *load = calloc((size_t)g->narcs + 1, sizeof *load);
    if (!load)
        return BK_ENOMEM;
    for (int i = 0; i < s->n; i++) {
        const struct ptree *t = &s->t[i];
        for (int k = 0; k < t->path_off[t->ngpus]; k++) {
            load[t->path_arc[k]] += t->rate;
            if (kind == PACK_ALLREDUCE)
                load[g->rev[t->path_arc[k]]] += t->rate;
        }
    }
    double x = INFINITY;
    for (int a = 0; a < g->narcs; a++)
        if (load[a] > 0 && g->cap[a] / load[a] < x)
            x = g->cap[a] / load[a];
    free(load);
    if (!isfinite(x))
        x = 0;
    for (int i = 0; i < s->n; i++)
        s->t[i].rate = plan_snap_rate(s->t[i].rate * x);
    ptree_set_drop_below(s, 1e-4);
    *factor = x;
    return BK_OK;
}

/* ---------------------------------------------------------------- cut bounds */

static double gpu_cap(const struct pgraph *g, int v, int in)
{
    double c = 0;
    const int *off = in ? g->in_off : g->out_off, *arc = in ? g->in_arc : g->out_arc;
    for (int i = off[v]; i < off[v + 1]; i++)
        c += g->cap[arc[i]];
    return c;
}

/* Allreduce over trees: a tree has at least S-1 edges between servers, each loading one link
 * out of each of its two servers, and at least one edge at every GPU and every server. */
static double cut_allreduce(const struct plan_cluster *pc)
{
    const struct cluster *c = &pc->c;
    double sum_out = 0, b = INFINITY;
    for (int s = 0; s < c->nservers; s++) {
        sum_out += c->s[s].cap_out;
        b = fmin(b, fmin(c->s[s].cap_out, c->s[s].cap_in));
    }
    b = fmin(b, sum_out / (2.0 * (c->nservers - 1)));
    for (int v = 0; v < c->g->ngpus; v++)
        b = fmin(b, fmin(gpu_cap(c->g, v, 0), gpu_cap(c->g, v, 1)));
    return b;
}

/* Broadcast from root: everything leaves its server and enters every other, and every GPU. */
static double cut_broadcast(const struct plan_cluster *pc, int root)
{
    const struct cluster *c = &pc->c;
    int s0 = c->server_of[root];
    double b = fmin(c->s[s0].cap_out, gpu_cap(c->g, root, 0));
    for (int s = 0; s < c->nservers; s++)
        if (s != s0)
            b = fmin(b, c->s[s].cap_in);
    for (int v = 0; v < c->g->ngpus; v++)
        if (v != root)
            b = fmin(b, gpu_cap(c->g, v, 1));
    return b;
}

/* Allgather: server s receives (n - g_s)/n of the buffer, GPU v receives (n - 1)/n. */
static double cut_allgather(const struct plan_cluster *pc)
{
    const struct cluster *c = &pc->c;
    double n = c->g->ngpus, b = INFINITY;
    for (int s = 0; s < c->nservers; s++)
        b = fmin(b, n * c->s[s].cap_in / (n - c->s[s].ngpus));
    for (int v = 0; v < c->g->ngpus; v++)
        b = fmin(b, n * gpu_cap(c->g, v, 1) / (n - 1));
    return b;
}

/* ---------------------------------------------------------------- the collectives */

static int max_ports(const struct cluster *c)
{
    int p = 1;
    for (int s = 0; s < c->nservers; s++)
        if (c->s[s].nports > p)
            p = c->s[s].nports;
    return p;
}

static const struct cluster_port *port(const struct cluster *c, int s, int j)
{
    return &c->s[s].ports[j % c->s[s].nports];
}

BK_MUST_USE
static enum bk_status compose_allreduce(struct plan_cluster *pc, const struct plan_opts *o,
                                        struct ptree_set *out, struct diag *d)
{
    const struct cluster *c = &pc->c;
    int S = c->nservers, P = max_ports(c);
    struct cuts cuts = {0};
    enum bk_status st = BK_OK;
    for (int u = 0; st == BK_OK && u <= S * P; u++)
        st = cut_add(&cuts, (double)u / (S * P));
    for (int s = 0; st == BK_OK && s < S; s++) {
        const struct plan_trees *ar;
        st = intra_allreduce(pc, s, o, &ar, d);
        if (st == BK_OK && c->s[s].cls == s)
            st = cut_add_shares(&cuts, ar, 0, 1);
    }
    if (st == BK_OK)
        cut_finish(&cuts);
    for (int q = 0; st == BK_OK && q + 1 < cuts.n; q++) {
        double m = (cuts.v[q] + cuts.v[q + 1]) / 2;
        int u = (int)(m * S * P);
        u = u < S * P ? u : S * P - 1;
        int hub = u / P, j = u % P;
        /* The hub server's owner roots the tree; every other server's owner is rotated by the
         * hub so each port leads as many partitions as it follows, and moved on to the next
         * port where the network does not join it to the hub's (separate rails). */
        for (int s = 0; s < S; s++) {
            const struct plan_trees *ar;
            st = intra_allreduce(pc, s, o, &ar, d);
            if (st != BK_OK)
                break;
            const struct cluster_port *p =
                s == hub ? port(c, s, j) : cluster_port_toward(c, port(c, hub, j), s, j + hub);
            if (!p) {
                st = BK_EINTERNAL; /* cluster_build checked that the network joins them */
                break;
            }
            place_intra(pc, s, tree_at(ar, m), c->local_of[p->gpu]);
            if (s != hub)
                st = place_cross(pc, hub, port(c, hub, j), s, p);
        }
        if (st == BK_OK)
            st = emit(pc, port(c, hub, j)->gpu, cuts.v[q + 1] - cuts.v[q], out);
    }
    free(cuts.v);
    return st;
}

/* The tree of pt whose arcs (on server s's graph) are least loaded so far, relative to their
 * capacity: allgather's one tree per root spreads over the intra-server trees this way. */
static const struct ptree *least_loaded(const struct plan_cluster *pc, int s,
                                        const struct plan_trees *pt, const double *load)
{
    const struct pgraph *g = pc->c.g;
    const struct ptree *best = NULL;
    double best_cost = INFINITY;
    for (int i = 0; i < pt->trees.n; i++) {
        const struct ptree *t = &pt->trees.t[i];
        double cost = 0;
        for (int k = 0; k < t->path_off[t->ngpus]; k++) {
            int a = cluster_arc(pc, s, t->path_arc[k], 0);
            cost = fmax(cost, (load[a] + 1) / g->cap[a]);
        }
        if (cost < best_cost) {
            best_cost = cost;
            best = t;
        }
    }
    return best;
}

/*
 * One chain tree: the root's server broadcasts inside, then port j of each server in turn (or
 * the next port the network joins to the previous one) takes the data in over its NIC,
 * broadcasts it inside from there and passes it on. Inside, the tree
 * at position m of each broadcast set is used, or with `load` the least loaded one.
 */
BK_MUST_USE
static enum bk_status compose_chain(struct plan_cluster *pc, int root, int j, double m,
                                    const double *load, const struct plan_opts *o,
                                    struct diag *d)
{
    const struct cluster *c = &pc->c;
    int S = c->nservers, s0 = c->server_of[root];
    const struct plan_trees *bc;
    BK_CHECK(intra_broadcast(pc, s0, c->local_of[root], o, &bc, d));
    place_intra(pc, s0, load ? least_loaded(pc, s0, bc, load) : tree_at(bc, m),
                c->local_of[root]);
    const struct cluster_port *prev = port(c, s0, j);
    int sprev = s0;
    for (int step = 1; step < S; step++) {
        int s = (s0 + step) % S;
        const struct cluster_port *p = cluster_port_toward(c, prev, s, j);
        if (!p)
            return BK_EINTERNAL; /* cluster_build checked that the network joins them */
        int entry = c->local_of[p->gpu];
        BK_CHECK(intra_broadcast(pc, s, entry, o, &bc, d));
        BK_CHECK(place_cross(pc, sprev, prev, s, p));
        place_intra(pc, s, load ? least_loaded(pc, s, bc, load) : tree_at(bc, m), entry);
        prev = p;
        sprev = s;
    }
    return BK_OK;
}

BK_MUST_USE
static enum bk_status compose_broadcast(struct plan_cluster *pc, int root,
                                        const struct plan_opts *o, struct ptree_set *out,
                                        struct diag *d)
{
    const struct cluster *c = &pc->c;
    int S = c->nservers, P = max_ports(c), s0 = c->server_of[root];
    struct cuts cuts = {0};
    const struct plan_trees *bc0;
    enum bk_status st = intra_broadcast(pc, s0, c->local_of[root], o, &bc0, d);
    for (int j = 0; st == BK_OK && j <= P; j++)
        st = cut_add(&cuts, (double)j / P);
    /* Partition j is cut where the root's trees and every entry GPU's trees change; the
     * entries are compose_chain's. */
    for (int j = 0; st == BK_OK && j < P; j++) {
        st = cut_add_shares(&cuts, bc0, (double)j / P, 1.0 / P);
        const struct cluster_port *prev = port(c, s0, j);
        for (int step = 1; st == BK_OK && step < S; step++) {
            const struct plan_trees *bc;
            const struct cluster_port *p = cluster_port_toward(c, prev, (s0 + step) % S, j);
            if (!p)
                st = BK_EINTERNAL; /* cluster_build checked that the network joins them */
            else
                st = intra_broadcast(pc, (s0 + step) % S, c->local_of[p->gpu], o, &bc, d);
            if (st == BK_OK)
                st = cut_add_shares(&cuts, bc, (double)j / P, 1.0 / P);
            prev = p;
        }
    }
    if (st == BK_OK)
        cut_finish(&cuts);
    for (int q = 0; st == BK_OK && q + 1 < cuts.n; q++) {
        double m = (cuts.v[q] + cuts.v[q + 1]) / 2;
        int j = (int)(m * P);
        j = j < P ? j : P - 1;
        double within = m * P - j;
        st = compose_chain(pc, root, j, within, NULL, o, d);
        if (st == BK_OK)
            st = emit(pc, root, cuts.v[q + 1] - cuts.v[q], out);
    }
    free(cuts.v);
    return st;
}

/* Allgather: one chain tree per root, leaving through the root's own port, each server's part
 * the least loaded of its broadcast trees. */
BK_MUST_USE
static enum bk_status compose_allgather(struct plan_cluster *pc, const struct plan_opts *o,
                                        struct ptree_set *out, struct diag *d)
{
    const struct cluster *c = &pc->c;
    int P = max_ports(c);
    double *load = calloc((size_t)c->g->narcs + 1, sizeof *load);
    if (!load)
        return BK_ENOMEM;
    enum bk_status st = BK_OK;
    for (int r = 0; st == BK_OK && r < c->g->ngpus; r++) {
        st = compose_chain(pc, r, c->local_of[r] % P, 0, load, o, d);
        if (st == BK_OK)
            st = emit(pc, r, 1, out);
        for (int v = 0; st == BK_OK && v < c->g->ngpus; v++)
            for (int k = 0; v != r && k < pc->len[v]; k++)
                load[pc->path[v][k]] += 1;
    }
    free(load);
    return st;
}

enum bk_status plan_cluster_tier(struct plan_cluster *pc, struct plan *pl,
                                 const struct pgraph *rg, const struct plan_opts *o,
                                 struct plan_trees *out, struct diag *d)
{
    const struct pgraph *g = pc->c.g;
    struct plan_trees fwd;
    memset(&fwd, 0, sizeof fwd);
    ptree_set_init(&fwd.trees);
    fwd.kinds = g->kinds;
    fwd.g = g;
    enum bk_status st;
    double x, exact;
    switch (pl->coll) {
    case COLL_ALLREDUCE:
        fwd.pack = PACK_ALLREDUCE;
        fwd.bound = cut_allreduce(pc);
        BK_CHECK_GOTO(compose_allreduce(pc, o, &fwd.trees, d), st, fail);
        pl->method = "three phases: intra-server reduce, one-hop allreduce among partition "
                     "owners, intra-server broadcast";
        break;
    case COLL_BROADCAST:
    case COLL_REDUCE:
        fwd.pack = PACK_BROADCAST;
        /* The exact bound (max-flows from the root) is below the cuts where the network is
         * uneven. It lies between the least over every root (2(n-1) max-flows, once) and the
         * cuts: where those meet, it is known without n - 1 max-flows of its own. */
        if (pc->bcast_min < 0)
            BK_CHECK_GOTO(bound_broadcast_min(g, pc->bc_sinks, &pc->bcast_min), st, fail);
        fwd.bound = cut_broadcast(pc, pl->root);
        if (fwd.bound > pc->bcast_min) {
            BK_CHECK_GOTO(bound_broadcast(g, pl->root, &exact), st, fail);
            fwd.bound = fmin(fwd.bound, exact);
        }
        BK_CHECK_GOTO(compose_broadcast(pc, pl->root, o, &fwd.trees, d), st, fail);
        pl->method = "three phases: intra-server trees, a chain of NICs across servers";
        break;
    case COLL_ALLGATHER:
    case COLL_REDUCESCATTER:
        fwd.pack = PACK_ALLGATHER;
        /* One graph for both: reduce-scatter runs its trees reversed. The cut is often the
         * bound; starting from it, the max-flows only prove it. */
        if (pc->ag_bound < 0)
            BK_CHECK_GOTO(bound_allgather_below(g, cut_allgather(pc), pc->ag_sinks,
                                                &pc->ag_bound), st, fail);
        fwd.bound = pc->ag_bound;
        BK_CHECK_GOTO(compose_allgather(pc, o, &fwd.trees, d), st, fail);
        pl->method = "three phases: a chain tree per root across servers";
        break;
    default: return BK_EINTERNAL;
    }
    pl->why = "several servers: Blink's phases, pipelined per partition";
    fwd.stats.partitions = fwd.trees.n;
    fwd.stats.servers = pc->c.nservers;
    BK_CHECK_GOTO(scale_to_capacity(g, fwd.pack, &fwd.trees, &x), st, fail);
    ptree_set_sort(&fwd.trees);
    fwd.algbw = fwd.pack == PACK_ALLGATHER ? plan_snap_rate(x) * g->ngpus
                                            : ptree_set_rate(&fwd.trees);
    if (pl->coll != COLL_REDUCE && pl->coll != COLL_REDUCESCATTER) {
        *out = fwd;
        return BK_OK;
    }
    st = plan_copy_reversed(&fwd, g, rg, out);
fail:
    trees_free(&fwd);
    return st;
}
