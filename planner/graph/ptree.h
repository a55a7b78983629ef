/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ptree.h - packed trees: spanning trees over the GPUs whose edges are paths in a pgraph.
 *
 * A tree has a root GPU and, for every other GPU v, a parent GPU and the arcs of the path from
 * the parent to v (relays only in between). A tree of rate w loads every arc of every edge's
 * path by w, once per edge that crosses it (switches copy nothing: each copy crosses the
 * switch's links itself). Which direction is loaded depends on the packing kind:
 *   PACK_BROADCAST, PACK_ALLGATHER: the path arcs (parent to child);
 *   PACK_ALLREDUCE: the path arcs and their reverse arcs (reduce up, broadcast down).
 * Reduce and reduce-scatter are planned as broadcast and allgather on the reversed graph
 * (pgraph_reverse): arc i there is arc i here turned round, so such a tree's arc indices are the
 * original arcs its data crosses (child to parent) and nothing needs translating.
 */
#ifndef BK_PTREE_H
#define BK_PTREE_H

#include "core/bk.h"
#include "graph/pgraph.h"

enum pack_kind {
    PACK_BROADCAST, /* arborescences out of one root */
    PACK_ALLGATHER, /* arborescences out of every GPU, the same total rate per root */
    PACK_ALLREDUCE  /* undirected spanning trees, each edge loaded in both directions */
};

struct pack_problem {
    const struct pgraph *g;
    enum pack_kind kind;
    int root; /* PACK_BROADCAST: the root GPU; otherwise ignored */
};

struct ptree {
    int root;      /* GPU node */
    double rate;   /* GB/s */
    int ngpus;
    int *parent;   /* [ngpus] parent GPU of each GPU, -1 at the root */
    int *path_off; /* [ngpus+1] the path parent(v)->v is path_arc[path_off[v] .. path_off[v+1]) */
    int *path_arc; /* arcs of every path, child by child */
};

struct ptree_set {
    struct ptree *t;
    int n, cap;
};

void ptree_free(struct ptree *t);
BK_MUST_USE
enum bk_status ptree_copy(struct ptree *out, const struct ptree *in);

/*
 * Build a tree from parent[] and per-GPU paths: path_of[v] lists path_len[v] arcs from parent(v)
 * to v (ignored for the root; path_of may be NULL when every length is 0). Copies everything.
 */
BK_MUST_USE
enum bk_status ptree_make(struct ptree *out, int ngpus, int root, const int *parent,
                          const int *const *path_of, const int *path_len);

/* Same edges and paths (rates are not compared). */
int ptree_same_shape(const struct ptree *a, const struct ptree *b);

/* Whether b's root and parents are a's with every GPU rank q renamed map[q] (map a permutation
 * of a's ngpus ranks; rates and paths are not compared). */
int ptree_is_relabelled(const struct ptree *a, const struct ptree *b, const int *map);

/* A total order on shapes (root, then parents, then paths) for deterministic sorting. */
int ptree_shape_cmp(const struct ptree *a, const struct ptree *b);

/* Add the tree's load multiplicity per arc (how many units of its rate each arc carries) into
 * mult[narcs]. */
void ptree_add_load(const struct ptree *t, const struct pgraph *g, enum pack_kind kind, int *mult);

/* Depth: the most edges from the root to any GPU. */
int ptree_depth(const struct ptree *t);

/* Children in rank order, u's in kids[kstart[u] .. kstart[u + 1]) (kstart: ngpus + 1 ints,
 * kids: ngpus), and a breadth-first order from the root in order[ngpus], each rank's children
 * in that order. 0 when the root or a parent (but the root's own) is out of range, or some rank
 * is not reached. O(n): a counting sort by parent. */
int ptree_bfs(const struct ptree *t, int *order, int *kstart, int *kids);

void ptree_set_init(struct ptree_set *s);
void ptree_set_free(struct ptree_set *s);
void ptree_set_clear(struct ptree_set *s); /* free the trees, keep the array */

/* Append a copy of t. If a tree of the same shape is already there, add t's rate to it instead,
 * so a set never holds two trees of one shape. *index (may be NULL) gets its position. */
BK_MUST_USE
enum bk_status ptree_set_add(struct ptree_set *s, const struct ptree *t, int *index);

/* Append a copy of t without looking for a tree of the same shape (the caller knows there is
 * none, or does not mind). */
BK_MUST_USE
enum bk_status ptree_set_add_new(struct ptree_set *s, const struct ptree *t);

/* Sum of rates, and the sum of rates of the trees rooted at `root`. */
double ptree_set_rate(const struct ptree_set *s);
double ptree_set_root_rate(const struct ptree_set *s, int root);

/* Remove trees whose rate is below `min_rate`, keeping order. */
void ptree_set_drop_below(struct ptree_set *s, double min_rate);

/* Sort by (root, rate descending, shape) for output. */
void ptree_set_sort(struct ptree_set *s);

/*
 * Independent feasibility check: every tree spans the GPUs (each non-root GPU has a parent, and
 * parents lead to the root), every path runs from parent to child through relays only, and no
 * arc carries more than its capacity times (1 + tol). Returns 1 if valid; otherwise 0 and a
 * reason in why[why_cap].
 */
int ptree_set_check(const struct ptree_set *s, const struct pgraph *g, enum pack_kind kind,
                    double tol, char *why, int why_cap);

#endif
