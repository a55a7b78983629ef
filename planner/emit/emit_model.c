/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * emit_model.c - plans -> the code generator's data model (emit.h).
 *
 * This is where blink_plan.h's rules are enforced before any code exists: every tree spans the
 * ranks from its root, weights are whole units of 1e-4 GB/s that sum below 2^32, and every data
 * group (the whole count, or each rank's shard for allgather and reduce-scatter) has a positive
 * total weight, so the runtime's integer split never divides by zero.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "emit/emit.h"
#include "emit/emit_intern.h"
#include "core/json.h"
#include "topo/topo_auto.h"

/* blink_plan.h's enum blink_plan_coll, indexed by enum collective (the same order). */
const char *const emit_model_keys[] = {
    "blinkc_version", "topology", "nplans", "plans", "arrays", "values", "ndevices", "blocks",
    /* a plan */
    "id", "fingerprint", "nranks", "devices", "nservers", "servers", "chunk_bytes", "nschedules",
    "schedules", "schedules_of", "host_staged",
    /* a schedule */
    "collective", "coll", "rooted", "root", "ntrees", "trees", "nring_trees", "ring_trees",
    "nranges", "ranges", "ranges_of", "relabel", "relabel_of", "root_maps", "npcie_trees",
    "pcie_trees",
    /* a tree */
    "gbps", "weight", "parent", "order",
    /* a range */
    "min_bytes", "algo", "proto", "tree_us", "ring_us", "fallback", NULL};

static const char *const coll_enum[COLL_COUNT] = {
    "BLINK_PLAN_BROADCAST", "BLINK_PLAN_REDUCE", "BLINK_PLAN_ALLREDUCE",
    "BLINK_PLAN_ALLGATHER", "BLINK_PLAN_REDUCESCATTER",
};

void emit_fingerprint(const struct topo *t, char out[17])
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "blink-fingerprint 1\n");
    for (int i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        sb_printf(&sb, "node %s %s %d %d%s\n", n->id, topo_node_kind_name(n->kind), n->server,
                  n->rank, n->no_p2p ? " no-p2p" : "");
    }
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        sb_printf(&sb, "link %s %s %s %d ", t->nodes[l->src].id, t->nodes[l->dst].id,
                  topo_link_kind_name(l->kind), l->count);
        json_put_number(&sb, l->gbps);
        sb_putc(&sb, '\n');
    }
    unsigned long long h = 0xcbf29ce484222325ull; /* FNV-1a 64 offset basis and prime */
    for (size_t i = 0; i < sb.len; i++) {
        h ^= (unsigned char)sb.data[i];
        h *= 0x100000001b3ull;
    }
    sb_free(&sb);
    snprintf(out, 17, "%016llx", h);
}

/*
 * Where each rank runs: dev[r] its device and srv[r] its server, servers numbered 0.. in the
 * topology's order among those with GPUs of the allocation. On one server a device is its
 * ordinal; in a cluster it is its number within its server (what a rank there sees as
 * BLINK_DEVICE or CUDA's ordinal). Returns the number of servers.
 */
static int rank_places(const struct topo *t, int *dev, int *srv)
{
    int n = t->ngpus, nservers = 0;
    for (int r = 0; r < n; r++) {
        int k = topo_gpu_node(t, r);
        dev[r] = topo_gpu_device(t, r);
        srv[r] = k >= 0 ? t->nodes[k].server : 0;
    }
    for (int s = 0; s < t->nservers; s++) {
        int used = 0;
        for (int r = 0; r < n; r++)
            if (srv[r] == s) {
                srv[r] = -1 - nservers; /* renumbered, told apart from the indices left */
                used = 1;
            }
        nservers += used;
    }
    for (int r = 0; r < n; r++)
        srv[r] = -1 - srv[r];
    return nservers;
}

BK_MUST_USE
static enum bk_status bad_plan(struct diag *d, const struct plan *p, const char *why)
{
    diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "code generation: the %s plan (root %d) %s",
             collective_name(p->coll), p->root, why);
    return BK_EINTERNAL;
}

/* m[key] = the name of the table v[0..n) among the source's interned ones. */
BK_MUST_USE
static enum bk_status set_table(struct emit_intern *in, struct tmpl_value *m, const char *key,
                                const int *v, int n)
{
    int k = emit_intern_add(in, v, n);
    if (k < 0)
        return BK_ENOMEM;
    char id[24];
    snprintf(id, sizeof id, "a%d", k);
    return tv_set(m, key, tv_string(id));
}

/* Breadth-first order from the root, children in rank order (ptree_bfs; scratch: 2n + 1 ints);
 * 0 when some rank is unreachable or a parent is out of range. */
static int bfs_order(const struct ptree *tr, int n, int *order, int *scratch)
{
    return tr->ngpus == n && tr->root >= 0 && tr->root < n && tr->parent[tr->root] == -1 &&
           ptree_bfs(tr, order, scratch, scratch + n + 1);
}

BK_MUST_USE
static enum bk_status tree_model(struct emit_intern *in, const struct ptree *tr,
                                 const char *sid, int j, int n, int *order, long long weight,
                                 struct tmpl_value *trees)
{
    struct tmpl_value *m = tv_map();
    char id[64];
    snprintf(id, sizeof id, "%st%d", sid, j);
    enum bk_status st = tv_set(m, "id", tv_string(id));
    if (st == BK_OK)
        st = tv_set(m, "root", tv_int(tr->root));
    if (st == BK_OK)
        st = tv_set(m, "weight", tv_int(weight));
    if (st == BK_OK)
        st = tv_set(m, "gbps", tv_float((double)weight / 1e4));
    if (st == BK_OK)
        st = set_table(in, m, "parent", tr->parent, n);
    if (st == BK_OK)
        st = set_table(in, m, "order", order, n);
    if (st != BK_OK) {
        tv_free(m);
        return st;
    }
    return tv_push(trees, m);
}

/* Weights: whole units of 1e-4 GB/s (the planner snaps rates to them). */
BK_MUST_USE
static enum bk_status check_weights(const struct plan *p, const struct ptree_set *ts, int n,
                                    const long long *w, struct diag *d)
{
    long long total = 0;
    long long *per_root = calloc((size_t)n, sizeof *per_root);
    if (!per_root)
        return BK_ENOMEM;
    for (int j = 0; j < ts->n; j++) {
        total += w[j];
        per_root[ts->t[j].root] += w[j];
    }
    int sharded = p->coll == COLL_ALLGATHER || p->coll == COLL_REDUCESCATTER, starved = 0;
    for (int r = 0; r < n; r++)
        starved |= sharded && per_root[r] <= 0;
    free(per_root);
    if (ts->n == 0)
        return bad_plan(d, p, "has no trees");
    if (total > (long long)UINT_MAX)
        return bad_plan(d, p, "has weights summing beyond 2^32 units of 1e-4 GB/s");
    if (total <= 0 || starved)
        return bad_plan(d, p, "leaves a share of the data without a tree of positive rate");
    return BK_OK;
}

/* One tree set (the plan's trees, or its ring trees) as the list `key` of sched; its trees
 * are named after sid. */
BK_MUST_USE
static enum bk_status tree_set_model(struct emit_intern *in, const struct plan *p,
                                     const struct ptree_set *ts, int n, const char *sid,
                                     const char *key, const unsigned char *unlisted,
                                     struct tmpl_value *sched, struct diag *d)
{
    struct tmpl_value *trees = tv_list();
    int *order = malloc((3 * (size_t)n + 2) * sizeof *order); /* and 2n + 1 of scratch */
    long long *w = calloc((size_t)ts->n + 1, sizeof *w);
    enum bk_status st = trees && order && w ? BK_OK : BK_ENOMEM;
    for (int j = 0; st == BK_OK && j < ts->n; j++) {
        double r = ts->t[j].rate * 1e4;
        if (!(r >= 0 && r < 1e15))
            st = bad_plan(d, p, "has a tree without a finite, non-negative rate");
        else if (!bfs_order(&ts->t[j], n, order, order + n + 1))
            st = bad_plan(d, p, "has a tree that does not span the ranks from its root");
        else
            w[j] = llround(r);
    }
    if (st == BK_OK && ts->n > 0)
        st = check_weights(p, ts, n, w, d);
    for (int j = 0; st == BK_OK && j < ts->n; j++) {
        if (unlisted && unlisted[ts->t[j].root])
            continue;
        bfs_order(&ts->t[j], n, order, order + n + 1);
        st = tree_model(in, &ts->t[j], sid, j, n, order, w[j], trees);
    }
    free(order);
    free(w);
    if (st != BK_OK) {
        tv_free(trees);
        return st;
    }
    return tv_set(sched, key, trees);
}

/* A collective without a root whose trees from each rank r outside its orbit's representative
 * are, in order, those of the representative relabelled by the orbit's map (orb): unlisted[r]
 * is set for those ranks, which the source writes as maps (blink_plan_schedule.root_relabel).
 * Returns the ranks unlisted; 0 where some rank's trees are not such an image. */
static int roots_by_orbit(const struct ptree_set *ts, const struct topo_orbits *orb, int n,
                          unsigned char *unlisted)
{
    int count = 0;
    memset(unlisted, 0, (size_t)n);
    for (int r = 0; orb->rep && r < n; r++) {
        int rep = orb->rep[r];
        if (rep == r)
            continue;
        const int *map = orb->perm + (size_t)r * (size_t)orb->nnodes;
        int i = 0, j = 0, ok = 1;
        for (;;) { /* the k-th tree from rep against the k-th from r */
            while (i < ts->n && ts->t[i].root != rep)
                i++;
            while (j < ts->n && ts->t[j].root != r)
                j++;
            if (i >= ts->n || j >= ts->n) {
                ok = i >= ts->n && j >= ts->n;
                break;
            }
            const struct ptree *a = &ts->t[i], *b = &ts->t[j];
            ok = llround(a->rate * 1e4) == llround(b->rate * 1e4) && a->ngpus == n &&
                 ptree_is_relabelled(a, b, map);
            if (!ok)
                break;
            i++, j++;
        }
        if (!ok)
            return 0;
        unlisted[r] = 1;
        count++;
    }
    return count;
}

/* The plan's ranges (plan_tune.h): what runs from which message size, its chunk and protocol. */
static struct tmpl_value *ranges_model(const struct plan *p)
{
    struct tmpl_value *l = tv_list();
    for (int i = 0; l && i < p->tune.n; i++) {
        const struct plan_range *r = &p->tune.r[i];
        struct tmpl_value *m = tv_map();
        enum bk_status st = m ? BK_OK : BK_ENOMEM;
        if (st == BK_OK)
            st = tv_set(m, "min_bytes", tv_int((long long)r->min_bytes));
        if (st == BK_OK)
            st = tv_set(m, "algo", tv_string(r->algo == PLAN_ALGO_RINGS    ? "BLINK_PLAN_RINGS"
                                             : r->algo == PLAN_ALGO_HYBRID ? "BLINK_PLAN_HYBRID"
                                                                           : "BLINK_PLAN_TREES"));
        if (st == BK_OK)
            st = tv_set(m, "fallback", tv_string(r->fallback == PLAN_ALGO_RINGS
                                                     ? "BLINK_PLAN_RINGS" : "BLINK_PLAN_TREES"));
        if (st == BK_OK)
            st = tv_set(m, "chunk_bytes", tv_int((long long)r->chunk_bytes));
        if (st == BK_OK)
            st = tv_set(m, "proto", tv_string(r->proto == PLAN_PROTO_LL ? "BLINK_PLAN_LL"
                                                                       : "BLINK_PLAN_SIMPLE"));
        if (st == BK_OK)
            st = tv_set(m, "tree_us", tv_float(round(r->tree_us * 10) / 10));
        if (st == BK_OK)
            st = tv_set(m, "ring_us", tv_float(round(r->ring_us * 10) / 10));
        if (st == BK_OK)
            st = tv_push(l, m);
        else
            tv_free(m);
        if (st != BK_OK) {
            tv_free(l);
            return NULL;
        }
    }
    return l;
}

/* Whether two tunings run the same ranges (what the source writes of them). */
static int same_ranges(const struct plan_tuning *a, const struct plan_tuning *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++) {
        const struct plan_range *x = &a->r[i], *y = &b->r[i];
        if (x->min_bytes != y->min_bytes || x->algo != y->algo ||
            x->chunk_bytes != y->chunk_bytes || x->proto != y->proto ||
            x->tree_us != y->tree_us || x->ring_us != y->ring_us || x->fallback != y->fallback)
            return 0;
    }
    return 1;
}

/* The plan that p is a relabelled copy of, where the source can say so: a plan of the same set
 * packed for itself, p's map a permutation of the ranks that takes its root onto p's, and the
 * same tuning (plan_tune copies it). NULL: p is written with trees of its own. */
static const struct plan *copy_source(const struct plan_set *ps, const struct plan *p, int n)
{
    if (p->relabels < 1 || p->relabels > ps->n || !p->relabel_map)
        return NULL;
    const struct plan *src = &ps->v[p->relabels - 1];
    if (src->relabels || src->coll != p->coll || src->main.trees.n == 0 ||
        !same_ranges(&src->tune, &p->tune))
        return NULL;
    unsigned char *seen = calloc((size_t)n, 1);
    int ok = seen != NULL;
    for (int q = 0; ok && q < n; q++) {
        int v = p->relabel_map[q];
        ok = v >= 0 && v < n && !seen[v];
        if (ok)
            seen[v] = 1;
    }
    free(seen);
    ok = ok && (src->root < 0 ? p->root < 0 : p->relabel_map[src->root] == p->root);
    return ok ? src : NULL;
}

/* sched's root_maps: for each rank, "" where its trees are listed, else the name of the map
 * (the orbit's, GPU ranks only) that takes its representative's trees onto its own. */
BK_MUST_USE
static enum bk_status root_maps_model(struct emit_intern *in, const struct topo_orbits *orb,
                                      int n, const unsigned char *unlisted,
                                      struct tmpl_value *sched)
{
    struct tmpl_value *l = tv_list();
    enum bk_status st = l ? BK_OK : BK_ENOMEM;
    for (int r = 0; st == BK_OK && unlisted && r < n; r++) {
        if (!unlisted[r]) {
            st = tv_push(l, tv_string(""));
            continue;
        }
        int id = emit_intern_add(in, orb->perm + (size_t)r * (size_t)orb->nnodes, n);
        char name[24];
        snprintf(name, sizeof name, "a%d", id);
        st = id < 0 ? BK_ENOMEM : tv_push(l, tv_string(name));
    }
    if (st != BK_OK) {
        tv_free(l);
        return st;
    }
    return tv_set(sched, "root_maps", l);
}

BK_MUST_USE
static enum bk_status schedule_model(struct emit_intern *in, const struct plan_set *ps,
                                     const struct topo_orbits *orb, const struct plan *p, int k,
                                     int s, struct tmpl_value *sched, struct diag *d)
{
    const struct topo *t = ps->topo;
    int n = t->ngpus;
    if ((unsigned)p->coll >= COLL_COUNT)
        return bad_plan(d, p, "has an unknown collective");
    if (p->root >= n)
        return bad_plan(d, p, "has a root outside the allocation");
    const struct plan *src = copy_source(ps, p, n);
    if (!src && p->main.trees.n == 0)
        return bad_plan(d, p, "has no trees");
    unsigned char *unlisted = p->root < 0 ? malloc((size_t)n) : NULL;
    if (p->root < 0 && !unlisted)
        return BK_ENOMEM;
    if (unlisted && !roots_by_orbit(&p->main.trees, orb, n, unlisted)) {
        free(unlisted);
        unlisted = NULL;
    }
    int listed = 0;
    for (int j = 0; !src && j < p->main.trees.n; j++)
        listed += !unlisted || !unlisted[p->main.trees.t[j].root];
    char id[48], rid[52], pid[52], of[48];
    snprintf(id, sizeof id, "p%ds%d", k, s);
    snprintf(rid, sizeof rid, "%sr", id);
    snprintf(pid, sizeof pid, "%sh", id);
    snprintf(of, sizeof of, "p%ds%d", k, src ? (int)(src - ps->v) : s);
    const struct ptree_set *rings = &p->ring_chains; /* planned with the plan (plan.h) */
    struct ptree_set none;
    ptree_set_init(&none);
    /* A copy's PCIe trees are its source's relabelled, as its trees are. */
    const struct ptree_set *pcie = !src && p->has_hybrid ? &p->pcie.trees : &none;
    enum bk_status st = tv_set(sched, "id", tv_string(id));
    if (st == BK_OK)
        st = tv_set(sched, "collective", tv_string(collective_name(p->coll)));
    if (st == BK_OK)
        st = tv_set(sched, "coll", tv_string(coll_enum[p->coll]));
    if (st == BK_OK)
        st = tv_set(sched, "rooted", tv_bool(p->root >= 0));
    if (st == BK_OK)
        st = tv_set(sched, "root", tv_int(p->root >= 0 ? p->root : -1));
    if (st == BK_OK)
        st = tv_set(sched, "ntrees", tv_int(listed));
    if (st == BK_OK)
        st = tv_set(sched, "nring_trees", tv_int(rings->n));
    if (st == BK_OK)
        st = tv_set(sched, "npcie_trees", tv_int(pcie->n));
    if (st == BK_OK)
        st = tv_set(sched, "nranges", tv_int(p->tune.n));
    if (st == BK_OK)
        st = tv_set(sched, "ranges_of", tv_string(of));
    if (st == BK_OK)
        st = src ? set_table(in, sched, "relabel", p->relabel_map, n)
                 : tv_set(sched, "relabel", tv_string(""));
    if (st == BK_OK)
        st = tv_set(sched, "relabel_of", tv_int(src ? (int)(src - ps->v) : -1));
    if (st == BK_OK)
        st = root_maps_model(in, orb, n, unlisted, sched);
    if (st == BK_OK)
        st = tree_set_model(in, p, src ? &none : &p->main.trees, n, id, "trees", unlisted,
                            sched, d);
    if (st == BK_OK)
        st = tree_set_model(in, p, rings, n, rid, "ring_trees", NULL, sched, d);
    if (st == BK_OK)
        st = tree_set_model(in, p, pcie, n, pid, "pcie_trees", NULL, sched, d);
    if (st == BK_OK) { /* a copy's ranges are its source's table */
        struct tmpl_value *r = src ? tv_list() : ranges_model(p);
        st = r ? tv_set(sched, "ranges", r) : BK_ENOMEM;
    }
    free(unlisted);
    return st;
}

/* Whether the plan's trees run over PCIe between GPUs without peer access, so that every edge
 * is host-staged: some GPU has none (topo_no_p2p) and NVLink does not join them all (the planner
 * then plans over every link kind, plan.c). */
BK_MUST_USE
static enum bk_status host_staged(const struct topo *t, int *staged)
{
    *staged = 0;
    if (!topo_no_p2p(t))
        return BK_OK;
    struct pgraph g;
    BK_CHECK(pgraph_build(&g, t, PG_NVLINK));
    *staged = !pgraph_gpus_connected(&g);
    pgraph_free(&g);
    return BK_OK;
}

/* One allocation's plan: the map of emit.h's plans list, for allocation k. */
BK_MUST_USE
static enum bk_status plan_model(struct emit_intern *in, const struct emit_alloc *allocs, int k,
                                 struct tmpl_value *root, struct diag *d)
{
    const struct emit_alloc *a = &allocs[k];
    const struct topo *t = a->topo;
    const struct plan_set *ps = a->plans;
    char of[32] = "";
    if (a->shares) { /* an earlier allocation's schedules: none of its own */
        snprintf(of, sizeof of, "p%d", a->shares - 1);
        ps = allocs[a->shares - 1].plans;
    }
    int n = t->ngpus;
    if (n < 1) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "code generation: no GPU to generate for");
        return BK_EINPUT;
    }
    char fp[17], id[32];
    emit_fingerprint(t, fp);
    snprintf(id, sizeof id, "p%d", k);
    int *dev = malloc((size_t)n * sizeof *dev), *srv = malloc((size_t)n * sizeof *srv);
    enum bk_status st = dev && srv ? BK_OK : BK_ENOMEM;
    int nservers = st == BK_OK ? rank_places(t, dev, srv) : 0;
    for (int r = 0; st == BK_OK && a->shares && r < n; r++)
        dev[r] = a->devices[r];
    if (st == BK_OK)
        st = tv_set(root, "schedules_of", tv_string(of));
    if (st == BK_OK)
        st = tv_set(root, "id", tv_string(id));
    if (st == BK_OK)
        st = tv_set(root, "fingerprint", tv_string(fp));
    if (st == BK_OK)
        st = tv_set(root, "nranks", tv_int(n));
    if (st == BK_OK)
        st = tv_set(root, "devices", tv_int_list(dev, n));
    if (st == BK_OK)
        st = tv_set(root, "nservers", tv_int(nservers));
    int staged = 0;
    if (st == BK_OK)
        st = host_staged(t, &staged);
    if (st == BK_OK)
        st = tv_set(root, "host_staged", tv_bool(staged));
    if (st == BK_OK) /* empty on one server: the template then names no table */
        st = tv_set(root, "servers", tv_int_list(srv, nservers > 1 ? n : 0));
    if (st == BK_OK)
        st = tv_set(root, "chunk_bytes", tv_int(EMIT_CHUNK_BYTES));
    int nplans = ps ? ps->n : 0;
    if (st == BK_OK)
        st = tv_set(root, "nschedules", tv_int(nplans));
    struct tmpl_value *scheds = tv_list();
    struct topo_orbits orb = {0}; /* one server: whose trees a symmetry copies (roots_by_orbit) */
    if (st == BK_OK && !a->shares && nplans > 0 && t->nservers <= 1)
        st = topo_gpu_orbits(t, &orb);
    for (int s = 0; st == BK_OK && !a->shares && s < nplans; s++) {
        struct tmpl_value *m = tv_map();
        st = m ? schedule_model(in, ps, &orb, &ps->v[s], k, s, m, d) : BK_ENOMEM;
        if (st == BK_OK)
            st = tv_push(scheds, m);
        else
            tv_free(m);
    }
    topo_orbits_free(&orb);
    if (st == BK_OK)
        st = tv_set(root, "schedules", scheds);
    else
        tv_free(scheds);
    free(dev);
    free(srv);
    return st;
}

/* The interned tables as the model's arrays list. */
static struct tmpl_value *arrays_model(const struct emit_intern *in)
{
    struct tmpl_value *l = tv_list();
    for (int k = 0; l && k < in->n; k++) {
        struct tmpl_value *m = tv_map();
        char id[24];
        snprintf(id, sizeof id, "a%d", k);
        enum bk_status st = tv_set(m, "id", tv_string(id));
        if (st == BK_OK)
            st = tv_set(m, "values", tv_int_list(in->v[k], in->len[k]));
        if (st == BK_OK)
            st = tv_push(l, m);
        else
            tv_free(m);
        if (st != BK_OK) {
            tv_free(l);
            return NULL;
        }
    }
    return l;
}

enum bk_status emit_model_classes(const struct emit_alloc *allocs, int nallocs,
                                  const struct emit_blocks *blocks, struct tmpl_value **out,
                                  struct diag *d)
{
    *out = NULL;
    if (nallocs < 1) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "code generation: no allocation to plan");
        return BK_EINPUT;
    }
    const struct topo *t0 = allocs[0].topo;
    struct emit_intern in;
    emit_intern_init(&in);
    struct tmpl_value *root = tv_map(), *plans = tv_list();
    enum bk_status st = root && plans ? BK_OK : BK_ENOMEM;
    if (st == BK_OK)
        st = tv_set(root, "blinkc_version", tv_string(PACKAGE_VERSION));
    if (st == BK_OK)
        st = tv_set(root, "topology", tv_string(t0->name ? t0->name : ""));
    if (st == BK_OK)
        st = tv_set(root, "nplans", tv_int(nallocs));
    if (st == BK_OK)
        st = tv_set(root, "ndevices", tv_int(blocks ? blocks->ndevices : 0));
    if (st == BK_OK) /* empty for a library that lists its sets */
        st = tv_set(root, "blocks", tv_int_list(blocks ? blocks->block : NULL,
                                                blocks ? blocks->ndevices : 0));
    for (int k = 0; st == BK_OK && k < nallocs; k++) {
        struct tmpl_value *m = tv_map();
        st = m ? plan_model(&in, allocs, k, m, d) : BK_ENOMEM;
        if (st == BK_OK)
            st = tv_push(plans, m);
        else
            tv_free(m);
    }
    if (st == BK_OK) {
        st = tv_set(root, "plans", plans);
        plans = NULL;
    }
    if (st == BK_OK) {
        struct tmpl_value *arrays = arrays_model(&in);
        st = arrays ? tv_set(root, "arrays", arrays) : BK_ENOMEM;
    }
    tv_free(plans);
    emit_intern_free(&in);
    if (st != BK_OK) {
        tv_free(root);
        return st;
    }
    *out = root;
    return BK_OK;
}

enum bk_status emit_model(const struct emit_alloc *allocs, int nallocs, struct tmpl_value **out,
                          struct diag *d)
{
    return emit_model_classes(allocs, nallocs, NULL, out, d);
}
