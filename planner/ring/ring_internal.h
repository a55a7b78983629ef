/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring_internal.h - what the ring baseline's files share (ring.c): the LP builder (ring_lp.c),
 * relay rules, widest paths and ring orders (ring_paths.c), and the two methods
 * (ring_exhaustive.c, ring_heuristic.c).
 */
#ifndef BK_RING_INTERNAL_H
#define BK_RING_INTERNAL_H

#include "core/bk.h"
#include "core/diag.h"
#include "graph/pgraph.h"
#include "ilp/ilp.h"
#include "ring/ring.h"

#define RING_ENUM_MAX 9       /* (n-1)! <= 40320 columns */
#define RING_ENUM_MAX_RELAY 8 /* relay hops have longer columns: 5040 at most */
#define RING_EPS 1e-9         /* GB/s below this is no capacity */
#define RING_DFS_BUDGET 20000 /* steps per Hamiltonian-cycle search */

/* A growable column-major LP, handed to ilp_solve_lp (ring_lp.c). */
struct lpb {
    int nrows, rcap, ncols, ccap, nnz, zcap;
    enum lp_row_type *type;
    double *rhs, *obj, *val;
    int *off, *row;
};

void lpb_free(struct lpb *b);
BK_MUST_USE
enum bk_status lpb_row(struct lpb *b, enum lp_row_type type, double rhs, int *id);
BK_MUST_USE
enum bk_status lpb_col(struct lpb *b, double obj);
BK_MUST_USE
enum bk_status lpb_entry(struct lpb *b, int row, double v);
BK_MUST_USE
enum bk_status lpb_solve(const struct lpb *b, double *x, double *value, struct diag *d);

/*
 * lpb_solve after dropping repeated server blocks (ring_blocks.c): row_block[i] is row i's
 * block (a server, 0 .. nblocks-1) or -1 for rows of none. The optimum is the same; x gets 0 in
 * the columns of dropped blocks.
 */
BK_MUST_USE
enum bk_status lpb_solve_blocks(const struct lpb *b, const int *row_block, int nblocks,
                                double *x, double *value, struct diag *d);

/* Path searches and ring orders (ring_paths.c). */

/* Scratch for path searches, sized by node count. */
struct scratch {
    const struct topo *t;
    double *bw;
    int *pred, *queue;
    unsigned char *done;
    int *touched, ntouched; /* the nodes widest_from labelled, reset on its next call */
    int *front;             /* labelled nodes not yet done */
};

/* A list of ring orders, n GPUs each. */
struct orders {
    int n, count, cap; /* cap: room for this many orders */
    int *v;            /* [cap * n] */
};

int relay_ok(const struct topo *t, const struct pgraph *g, int v, int si, int sj);
/* qsort's comparison of ints, ascending. */
int ring_cmp_int(const void *a, const void *b);
BK_MUST_USE
enum bk_status scratch_init(struct scratch *s, const struct topo *t, int nnodes);
void scratch_free(struct scratch *s);
void widest_from(const struct pgraph *g, const double *c, int src, int sj, struct scratch *s);
double widest_path(const struct pgraph *g, const double *c, int src, int dst, int *path,
                   int *len, struct scratch *s);
BK_MUST_USE
enum bk_status orders_push(struct orders *o, const int *ord);
BK_MUST_USE
enum bk_status orders_add(struct orders *o, const int *ord);
BK_MUST_USE
enum bk_status keep_rings(struct ring_result *r, const struct orders *o, const int *col,
                          const double *x);

/* The two methods (ring.c says which runs where). */
BK_MUST_USE
enum bk_status ring_exhaustive(const struct topo *t, const struct pgraph *g,
                               struct ring_result *r, struct diag *d);
BK_MUST_USE
enum bk_status ring_heuristic(const struct topo *t, const struct pgraph *g,
                              struct ring_result *r, struct diag *d);

#endif
