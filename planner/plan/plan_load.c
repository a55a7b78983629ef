/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_load.c - reading a plan file back (plan_load.h).
 *
 * While loading, every node is indexed under its id (the name index is the topology's own), so
 * links and trees resolve ids in O(1); the input's labels replace the ids as names at the end.
 */
#include "plan/plan_load.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_read.h"
#include "core/strbuf.h"

struct loader {
    const struct input *in;
    struct diag *d;
    struct topo *t;
    char **labels; /* [t->nnodes] each node's "name", swapped in at the end */
};

BK_MUST_USE
static enum bk_status bad(struct loader *L, const struct json_value *at, const char *fmt, ...)
    BK_PRINTF(3, 4);

static enum bk_status bad(struct loader *L, const struct json_value *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = bk_vasprintf(fmt, ap);
    va_end(ap);
    if (!msg)
        return BK_ENOMEM;
    enum bk_status st = diag_error(L->d, L->in->name, at->loc, "plan file: %s", msg);
    free(msg);
    return st;
}

/* obj's member `key` of type `type`; absent is an error when `required`, else *out = NULL. */
BK_MUST_USE
static enum bk_status member(struct loader *L, const struct json_value *obj, const char *key,
                             enum json_type type, int required, const struct json_value **out)
{
    const struct json_value *v = json_get(obj, key);
    *out = NULL;
    if (!v)
        return required ? bad(L, obj, "\"%s\" is missing here", key) : BK_OK;
    if (v->type != type)
        return bad(L, v, "\"%s\" must be %s, not %s", key, json_type_name(type),
                   json_type_name(v->type));
    *out = v;
    return BK_OK;
}

/* A whole number in [lo, hi]. */
BK_MUST_USE
static enum bk_status whole(struct loader *L, const struct json_value *obj, const char *key,
                            int required, long long lo, long long hi, long long *out)
{
    const struct json_value *v;
    BK_CHECK(member(L, obj, key, JSON_NUMBER, required, &v));
    if (!v)
        return BK_OK;
    if (!v->integral || v->number < (double)lo || v->number > (double)hi)
        return bad(L, v, "\"%s\" must be a whole number from %lld to %lld", key, lo, hi);
    *out = (long long)v->number;
    return BK_OK;
}

/* A finite number in [0, hi]. */
BK_MUST_USE
static enum bk_status amount(struct loader *L, const struct json_value *obj, const char *key,
                             double hi, double *out)
{
    const struct json_value *v;
    BK_CHECK(member(L, obj, key, JSON_NUMBER, 1, &v));
    if (!(v->number >= 0 && v->number <= hi))
        return bad(L, v, "\"%s\" must be from 0 to %g", key, hi);
    *out = v->number;
    return BK_OK;
}

/* The node whose id is obj's string member `key`; must be a GPU when gpu_only (its rank). */
BK_MUST_USE
static enum bk_status node_ref(struct loader *L, const struct json_value *obj, const char *key,
                               int gpu_only, int *out)
{
    const struct json_value *v;
    BK_CHECK(member(L, obj, key, JSON_STRING, 1, &v));
    int k = topo_find(L->t, v->string);
    if (k < 0)
        return bad(L, v, "\"%s\" names no node of the topology", key);
    if (gpu_only && L->t->nodes[k].kind != TOPO_GPU)
        return bad(L, v, "\"%s\" must name a GPU", key);
    *out = k;
    return BK_OK;
}

BK_MUST_USE
static enum bk_status load_node(struct loader *L, const struct json_value *o, int i, int nnodes)
{
    struct topo *t = L->t;
    const struct json_value *id, *kind, *name, *busid, *model, *p2p;
    BK_CHECK(member(L, o, "id", JSON_STRING, 1, &id));
    BK_CHECK(member(L, o, "kind", JSON_STRING, 1, &kind));
    BK_CHECK(member(L, o, "name", JSON_STRING, 0, &name));
    BK_CHECK(member(L, o, "busid", JSON_STRING, 0, &busid));
    BK_CHECK(member(L, o, "model", JSON_STRING, 0, &model));
    enum topo_node_kind k;
    if (!topo_node_kind_parse(kind->string, &k))
        return bad(L, kind, "unknown node kind");
    if (!id->string[0] || topo_find(t, id->string) >= 0)
        return bad(L, id, "node ids must be unique and not empty");
    long long server = 0, rank = -1, local = -1;
    /* Servers are numbered from 0, each holding a node: fewer than the nodes. */
    BK_CHECK(whole(L, o, "server", 1, 0, nnodes - 1, &server));
    if (k == TOPO_GPU) {
        BK_CHECK(whole(L, o, "rank", 1, 0, INT_MAX, &rank));
        if (rank != i || t->ngpus != i)
            return bad(L, o, "GPUs come first, in rank order (this should be rank %d)", i);
        BK_CHECK(whole(L, o, "local_gpu", 0, 0, INT_MAX, &local));
    }
    BK_CHECK(member(L, o, "p2p", JSON_BOOL, 0, &p2p));
    if (p2p && k != TOPO_GPU)
        return bad(L, p2p, "only GPUs have \"p2p\"");
    int node;
    BK_CHECK(topo_add_node(t, k, id->string, (int)server, o->loc, &node));
    struct topo_node *n = &t->nodes[node];
    if (!(n->id = strdup(id->string)) ||
        !(L->labels[node] = strdup(name ? name->string : id->string)))
        return BK_ENOMEM;
    n->rank = (int)rank;
    n->local_gpu = (int)local;
    n->no_p2p = p2p && !p2p->boolean;
    if (k == TOPO_GPU)
        t->ngpus++;
    if (server + 1 > t->nservers)
        t->nservers = (int)server + 1;
    BK_CHECK(topo_node_set_busid(t, node, busid ? busid->string : NULL));
    return topo_node_set_model(t, node, model ? model->string : NULL);
}

BK_MUST_USE
static enum bk_status load_link(struct loader *L, const struct json_value *o)
{
    const struct json_value *kind;
    int src, dst;
    long long count;
    double gbps;
    enum topo_link_kind k;
    BK_CHECK(node_ref(L, o, "src", 0, &src));
    BK_CHECK(node_ref(L, o, "dst", 0, &dst));
    BK_CHECK(member(L, o, "kind", JSON_STRING, 1, &kind));
    if (!topo_link_kind_parse(kind->string, &k))
        return bad(L, kind, "unknown link kind");
    BK_CHECK(whole(L, o, "count", 1, 1, INT_MAX, &count));
    BK_CHECK(amount(L, o, "gbps", TOPO_MAX_GBPS, &gbps));
    if (src == dst || gbps <= 0)
        return bad(L, o, "a link joins two nodes and carries a positive rate");
    return topo_add_arc(L->t, src, dst, k, (int)count, gbps, o->loc);
}

struct place {
    int server, device, rank;
};

static int place_cmp(const void *a, const void *b)
{
    const struct place *x = a, *y = b;
    if (x->server != y->server)
        return x->server < y->server ? -1 : 1;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* No two ranks on one device of one server, as the generated code places them
 * (topo_gpu_device): two GPUs "gpu3" and "gpu03", or equal local_gpu in a cluster. */
BK_MUST_USE
static enum bk_status distinct_devices(struct loader *L, const struct json_value *nodes)
{
    const struct topo *t = L->t;
    int n = t->ngpus;
    struct place *p = malloc((size_t)n * sizeof *p);
    if (!p)
        return BK_ENOMEM;
    for (int r = 0; r < n; r++)
        p[r] = (struct place){t->nodes[topo_gpu_node(t, r)].server, topo_gpu_device(t, r), r};
    qsort(p, (size_t)n, sizeof *p, place_cmp);
    enum bk_status st = BK_OK;
    for (int i = 1; st == BK_OK && i < n; i++)
        if (p[i].server == p[i - 1].server && p[i].device == p[i - 1].device)
            st = bad(L, &nodes->items[p[i].rank],
                     "GPU ranks %d and %d would both run on device %d of server %d", p[i - 1].rank,
                     p[i].rank, p[i].device, p[i].server);
    free(p);
    return st;
}

BK_MUST_USE
static enum bk_status load_topology(struct loader *L, const struct json_value *root)
{
    const struct json_value *topo, *name, *nodes, *links;
    BK_CHECK(member(L, root, "topology", JSON_OBJECT, 1, &topo));
    BK_CHECK(member(L, topo, "name", JSON_STRING, 1, &name));
    BK_CHECK(member(L, topo, "nodes", JSON_ARRAY, 1, &nodes));
    BK_CHECK(member(L, topo, "links", JSON_ARRAY, 1, &links));
    BK_CHECK(topo_set_name(L->t, name->string));
    if (!(L->labels = calloc((size_t)nodes->n + 1, sizeof *L->labels)))
        return BK_ENOMEM;
    for (int i = 0; i < nodes->n; i++) {
        if (nodes->items[i].type != JSON_OBJECT)
            return bad(L, &nodes->items[i], "a node must be an object");
        BK_CHECK(load_node(L, &nodes->items[i], i, nodes->n));
    }
    if (L->t->ngpus < 1)
        return bad(L, nodes, "the topology has no GPU");
    BK_CHECK(distinct_devices(L, nodes));
    for (int i = 0; i < links->n; i++) {
        if (links->items[i].type != JSON_OBJECT)
            return bad(L, &links->items[i], "a link must be an object");
        BK_CHECK(load_link(L, &links->items[i]));
    }
    return BK_OK;
}

/* One tree: its root and every other GPU's parent, which must lead back to the root. */
BK_MUST_USE
static enum bk_status load_tree(struct loader *L, const struct json_value *o, int *parent,
                                struct ptree_set *into)
{
    int n = L->t->ngpus, root;
    const struct json_value *edges;
    double gbps;
    BK_CHECK(node_ref(L, o, "root", 1, &root));
    BK_CHECK(amount(L, o, "gbps", 1e9, &gbps));
    BK_CHECK(member(L, o, "edges", JSON_ARRAY, 1, &edges));
    for (int v = 0; v < n; v++)
        parent[v] = -2; /* not yet seen */
    parent[root] = -1;
    for (int i = 0; i < edges->n; i++) {
        const struct json_value *e = &edges->items[i];
        int p, c;
        if (e->type != JSON_OBJECT)
            return bad(L, e, "an edge must be an object");
        BK_CHECK(node_ref(L, e, "parent", 1, &p));
        BK_CHECK(node_ref(L, e, "child", 1, &c));
        if (parent[c] != -2)
            return bad(L, e, "%s", c == root ? "the root cannot be a child"
                                             : "a GPU is the child of two edges");
        parent[c] = p;
    }
    for (int v = 0; v < n; v++) {
        int steps = 0;
        for (int u = v; u != root && steps <= n; u = parent[u], steps++)
            if (parent[u] == -2)
                return bad(L, edges, "the tree does not reach GPU rank %d", u);
        if (steps > n)
            return bad(L, edges, "the tree has a cycle");
    }
    BK_CHECK(bk_grow_int((void **)&into->t, &into->cap, into->n, sizeof *into->t));
    int *no_paths = calloc((size_t)n, sizeof *no_paths);
    if (!no_paths)
        return BK_ENOMEM;
    enum bk_status st = ptree_make(&into->t[into->n], n, root, parent, NULL, no_paths);
    free(no_paths);
    BK_CHECK(st);
    into->t[into->n++].rate = gbps;
    return BK_OK;
}

/* A list of trees; weights as the runtime counts them (whole 1e-4 GB/s, summing below 2^32,
 * every shard of a sharded collective carried). */
BK_MUST_USE
static enum bk_status load_trees(struct loader *L, const struct json_value *list,
                                 const struct plan *p, struct ptree_set *into)
{
    int n = L->t->ngpus;
    int *parent = malloc((size_t)n * sizeof *parent);
    long long *per_root = calloc((size_t)n, sizeof *per_root), total = 0;
    enum bk_status st = parent && per_root ? BK_OK : BK_ENOMEM;
    for (int i = 0; st == BK_OK && i < list->n; i++) {
        const struct json_value *o = &list->items[i];
        st = o->type == JSON_OBJECT ? load_tree(L, o, parent, into)
                                    : bad(L, o, "a tree must be an object");
        if (st != BK_OK)
            break;
        const struct ptree *tr = &into->t[into->n - 1];
        if (p->root >= 0 && tr->root != p->root)
            st = bad(L, o, "every tree of a %s starts at its root", collective_name(p->coll));
        long long w = llround(tr->rate * 1e4); /* the runtime's weight (emit.h) */
        total += w;
        per_root[tr->root] += w;
    }
    int sharded = p->coll == COLL_ALLGATHER || p->coll == COLL_REDUCESCATTER;
    if (st == BK_OK && list->n > 0 && total <= 0)
        st = bad(L, list, "the trees carry no rate (rates count in units of 0.0001 GB/s)");
    for (int r = 0; st == BK_OK && list->n > 0 && sharded && r < n; r++)
        if (per_root[r] <= 0)
            st = bad(L, list, "no tree carries the shard of GPU rank %d", r);
    if (st == BK_OK && total > (long long)UINT_MAX)
        st = bad(L, list, "the rates sum beyond what the runtime counts (429496.7295 GB/s)");
    free(parent);
    free(per_root);
    return st;
}

BK_MUST_USE
static enum bk_status load_range(struct loader *L, const struct json_value *o, double after,
                                 struct plan_range *r)
{
    const struct json_value *algo, *proto;
    long long min_bytes, chunk;
    BK_CHECK(whole(L, o, "min_bytes", 1, 0, LLONG_MAX / 2, &min_bytes));
    if (after < 0 ? min_bytes != 0 : (double)min_bytes <= after)
        return bad(L, o, "ranges start at 0 bytes and grow");
    BK_CHECK(member(L, o, "algo", JSON_STRING, 1, &algo));
    int rings = strcmp(algo->string, "rings") == 0, hybrid = strcmp(algo->string, "hybrid") == 0;
    if (!rings && !hybrid && strcmp(algo->string, "trees") != 0)
        return bad(L, algo, "\"algo\" is \"trees\", \"rings\" or \"hybrid\"");
    BK_CHECK(whole(L, o, "chunk_bytes", 1, 1, INT_MAX, &chunk));
    /* The protocol: "simple" where absent (files written before ranges had one). */
    BK_CHECK(member(L, o, "proto", JSON_STRING, 0, &proto));
    int ll = proto && strcmp(proto->string, "ll") == 0;
    if (proto && !ll && strcmp(proto->string, "simple") != 0)
        return bad(L, proto, "\"proto\" is \"simple\" or \"ll\"");
    *r = (struct plan_range){(double)min_bytes,
                             rings ? PLAN_ALGO_RINGS : hybrid ? PLAN_ALGO_HYBRID : PLAN_ALGO_TREES,
                             (size_t)chunk, (double)min_bytes, 0, 0,
                             ll ? PLAN_PROTO_LL : PLAN_PROTO_SIMPLE, PLAN_ALGO_TREES};
    BK_CHECK(amount(L, o, "tree_us", 1e15, &r->tree_us));
    BK_CHECK(amount(L, o, "ring_us", 1e15, &r->ring_us));
    r->fallback = r->algo;
    if (!hybrid)
        return BK_OK;
    const struct json_value *fb; /* where the hybrid cannot run */
    BK_CHECK(member(L, o, "fallback", JSON_STRING, 1, &fb));
    if (strcmp(fb->string, "trees") != 0 && strcmp(fb->string, "rings") != 0)
        return bad(L, fb, "\"fallback\" is \"trees\" or \"rings\"");
    r->fallback = fb->string[0] == 't' ? PLAN_ALGO_TREES : PLAN_ALGO_RINGS;
    return BK_OK;
}

/* The hybrid's PCIe trees ("hybrid": {"trees": ...}), which the code runs with the trees as one
 * set: their weights and the trees' must sum below 2^32 together. */
BK_MUST_USE
static enum bk_status load_hybrid(struct loader *L, const struct json_value *o, struct plan *p)
{
    const struct json_value *hy, *trees;
    BK_CHECK(member(L, o, "hybrid", JSON_OBJECT, 0, &hy));
    if (!hy)
        return BK_OK;
    BK_CHECK(member(L, hy, "trees", JSON_ARRAY, 1, &trees));
    if (trees->n == 0)
        return bad(L, trees, "a hybrid needs at least one PCIe tree");
    BK_CHECK(load_trees(L, trees, p, &p->pcie.trees));
    int n = L->t->ngpus, sharded = p->coll == COLL_ALLGATHER || p->coll == COLL_REDUCESCATTER;
    for (int g = 0; g < (sharded ? n : 1); g++) {
        long long w = 0;
        for (int k = 0; k < p->main.trees.n + p->pcie.trees.n; k++) {
            const struct ptree *tr = k < p->main.trees.n ? &p->main.trees.t[k]
                                                         : &p->pcie.trees.t[k - p->main.trees.n];
            w += !sharded || tr->root == g ? llround(tr->rate * 1e4) : 0;
        }
        if (w > (long long)UINT_MAX)
            return bad(L, trees, "the rates of the trees and the PCIe trees sum beyond what the "
                       "runtime counts (429496.7295 GB/s)");
    }
    p->has_hybrid = 1;
    return BK_OK;
}

BK_MUST_USE
static enum bk_status load_plan(struct loader *L, const struct json_value *o, struct plan *p)
{
    const struct json_value *coll, *trees, *chains, *ranges;
    BK_CHECK(member(L, o, "collective", JSON_STRING, 1, &coll));
    if (!collective_parse(coll->string, &p->coll))
        return bad(L, coll, "unknown collective");
    p->root = -1;
    if (collective_has_root(p->coll))
        BK_CHECK(node_ref(L, o, "root", 1, &p->root));
    else if (json_get(o, "root"))
        return bad(L, json_get(o, "root"), "only broadcast and reduce have a root");
    p->method = "from a plan file";
    p->why = "";
    BK_CHECK(member(L, o, "trees", JSON_ARRAY, 1, &trees));
    if (trees->n == 0)
        return bad(L, trees, "a plan needs at least one tree");
    BK_CHECK(load_trees(L, trees, p, &p->main.trees));
    BK_CHECK(member(L, o, "ring_chains", JSON_ARRAY, 0, &chains));
    if (chains)
        BK_CHECK(load_trees(L, chains, p, &p->ring_chains));
    BK_CHECK(load_hybrid(L, o, p));
    BK_CHECK(member(L, o, "ranges", JSON_ARRAY, 0, &ranges));
    if (!ranges || ranges->n == 0)
        return BK_OK;
    if (!(p->tune.r = calloc((size_t)ranges->n, sizeof *p->tune.r)))
        return BK_ENOMEM;
    for (int i = 0; i < ranges->n; i++) {
        const struct json_value *r = &ranges->items[i];
        if (r->type != JSON_OBJECT)
            return bad(L, r, "a range must be an object");
        BK_CHECK(load_range(L, r, i ? p->tune.r[i - 1].min_bytes : -1, &p->tune.r[i]));
        p->tune.n++;
    }
    return BK_OK;
}

/* "relabels" of plan i: an earlier plan of the collective packed for itself, and the GPU each of
 * its GPUs becomes, a permutation under which its trees are plan i's (rates and parents). */
BK_MUST_USE
static enum bk_status load_relabels(struct loader *L, const struct json_value *o,
                                    struct plan_set *ps, int i)
{
    const struct json_value *rel, *gpus;
    BK_CHECK(member(L, o, "relabels", JSON_OBJECT, 0, &rel));
    if (!rel)
        return BK_OK;
    long long j;
    int n = L->t->ngpus;
    BK_CHECK(whole(L, rel, "plan", 1, 0, i - 1 < 0 ? 0 : i - 1, &j));
    const struct plan *src = &ps->v[j], *p = &ps->v[i];
    if (j >= i || src->relabels || src->coll != p->coll)
        return bad(L, json_get(rel, "plan"), "\"relabels\" must name an earlier plan of the "
                   "same collective that relabels none");
    BK_CHECK(member(L, rel, "gpus", JSON_ARRAY, 1, &gpus));
    if (gpus->n != n)
        return bad(L, gpus, "\"gpus\" must list the image of each of the %d GPUs", n);
    struct plan *dst = &ps->v[i];
    if (!(dst->relabel_map = malloc(((size_t)n + 1) * sizeof *dst->relabel_map)))
        return BK_ENOMEM;
    for (int g = 0; g < n; g++) {
        const struct json_value *v = &gpus->items[g];
        int k = v->type == JSON_STRING ? topo_find(L->t, v->string) : -1;
        if (k < 0 || k >= n)
            return bad(L, v, "\"gpus\" must name GPUs of the allocation");
        for (int h = 0; h < g; h++)
            if (dst->relabel_map[h] == k)
                return bad(L, v, "\"gpus\" names GPU \"%s\" twice", v->string);
        dst->relabel_map[g] = k;
    }
    const int *map = dst->relabel_map;
    int same = src->main.trees.n == p->main.trees.n &&
               (src->root < 0 ? p->root < 0 : map[src->root] == p->root);
    for (int k = 0; same && k < p->main.trees.n; k++) {
        const struct ptree *a = &src->main.trees.t[k], *b = &p->main.trees.t[k];
        same = a->rate == b->rate && ptree_is_relabelled(a, b, map);
    }
    same = same && src->pcie.trees.n == p->pcie.trees.n;
    for (int k = 0; same && k < p->pcie.trees.n; k++) {
        const struct ptree *a = &src->pcie.trees.t[k], *b = &p->pcie.trees.t[k];
        same = a->rate == b->rate && ptree_is_relabelled(a, b, map);
    }
    if (!same)
        return bad(L, rel, "the trees of plan %lld, relabelled by \"gpus\", are not this "
                   "plan's (its PCIe trees included)", j);
    dst->relabels = (int)j + 1;
    return BK_OK;
}

BK_MUST_USE
static enum bk_status load_plans(struct loader *L, const struct json_value *root,
                                 struct plan_set *ps)
{
    const struct json_value *plans;
    BK_CHECK(member(L, root, "plans", JSON_ARRAY, 1, &plans));
    if (!(ps->v = calloc((size_t)plans->n + 1, sizeof *ps->v)))
        return BK_ENOMEM;
    for (int i = 0; i < plans->n; i++) {
        if (plans->items[i].type != JSON_OBJECT)
            return bad(L, &plans->items[i], "a plan must be an object");
        ps->n++; /* counted first, so plan_set_free frees what a failure leaves */
        BK_CHECK(load_plan(L, &plans->items[i], &ps->v[i]));
        BK_CHECK(load_relabels(L, &plans->items[i], ps, i));
        /* The runtime picks a schedule by collective and root, and refuses two alike. */
        for (int j = 0; j < i; j++)
            if (ps->v[j].coll == ps->v[i].coll && ps->v[j].root == ps->v[i].root)
                return bad(L, &plans->items[i], "a second %s plan%s (plan %d is the first)",
                           collective_name(ps->v[i].coll),
                           ps->v[i].root >= 0 ? " from this root" : "", j);
    }
    return BK_OK;
}

BK_MUST_USE
static enum bk_status load_document(struct loader *L, const struct json_value *root,
                                    struct plan_set *ps)
{
    const struct json_value *format;
    long long version;
    if (root->type != JSON_OBJECT)
        return bad(L, root, "expected a JSON object (blinkc --plan-json writes one)");
    BK_CHECK(member(L, root, "format", JSON_STRING, 1, &format));
    if (strcmp(format->string, PLAN_FILE_FORMAT) != 0)
        return bad(L, format, "\"format\" is not \"" PLAN_FILE_FORMAT "\": not a blinkc plan");
    BK_CHECK(whole(L, root, "version", 1, 0, INT_MAX, &version));
    if (version != PLAN_FILE_VERSION)
        return bad(L, json_get(root, "version"),
                   "version %lld; this blinkc reads version %d", version, PLAN_FILE_VERSION);
    BK_CHECK(load_topology(L, root));
    BK_CHECK(load_plans(L, root, ps));
    /* Names last: until now the index held the ids. */
    for (int i = 0; i < L->t->nnodes; i++) {
        free(L->t->nodes[i].name);
        L->t->nodes[i].name = L->labels[i];
        L->labels[i] = NULL;
    }
    return topo_reindex(L->t);
}

enum bk_status plan_load(const struct input *in, struct topo *t, struct plan_set *ps,
                         struct diag *d)
{
    struct json_value doc;
    topo_init(t);
    memset(ps, 0, sizeof *ps);
    BK_CHECK(json_parse(in, &doc, d));
    struct loader L = {in, d, t, NULL};
    enum bk_status st = load_document(&L, &doc, ps);
    for (int i = 0; L.labels && i < t->nnodes; i++)
        free(L.labels[i]);
    free(L.labels);
    json_free(&doc);
    if (st == BK_OK && !(t->source = strdup(in->name)))
        st = BK_ENOMEM;
    t->format = "plan";
    ps->topo = t;
    if (st != BK_OK) {
        plan_set_free(ps);
        topo_free(t);
    }
    return st;
}
