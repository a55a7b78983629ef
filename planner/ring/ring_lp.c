/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring_lp.c - the ring baseline's LP: a growable column-major model handed to ilp_solve_lp.
 */
#include "ring/ring_internal.h"

#include <stdlib.h>
#include <string.h>

void lpb_free(struct lpb *b)
{
    free(b->type);
    free(b->rhs);
    free(b->obj);
    free(b->val);
    free(b->off);
    free(b->row);
    memset(b, 0, sizeof *b);
}

/* Room for one more row, column (and its end offset) or entry: capacities double together. */
BK_MUST_USE
static enum bk_status lpb_reserve(struct lpb *b)
{
    if (b->nrows == b->rcap) {
        int nc = b->rcap ? 2 * b->rcap : 64;
        enum lp_row_type *t = realloc(b->type, (size_t)nc * sizeof *t);
        b->type = t ? t : b->type;
        double *r = realloc(b->rhs, (size_t)nc * sizeof *r);
        b->rhs = r ? r : b->rhs;
        if (!t || !r)
            return BK_ENOMEM;
        b->rcap = nc;
    }
    if (b->ncols + 1 >= b->ccap) {
        int nc = b->ccap ? 2 * b->ccap : 64;
        double *o = realloc(b->obj, (size_t)nc * sizeof *o);
        b->obj = o ? o : b->obj;
        int *f = realloc(b->off, (size_t)nc * sizeof *f);
        b->off = f ? f : b->off;
        if (!o || !f)
            return BK_ENOMEM;
        b->ccap = nc;
    }
    if (b->nnz == b->zcap) {
        int nc = b->zcap ? 2 * b->zcap : 256;
        int *w = realloc(b->row, (size_t)nc * sizeof *w);
        b->row = w ? w : b->row;
        double *v = realloc(b->val, (size_t)nc * sizeof *v);
        b->val = v ? v : b->val;
        if (!w || !v)
            return BK_ENOMEM;
        b->zcap = nc;
    }
    return BK_OK;
}

BK_MUST_USE
enum bk_status lpb_row(struct lpb *b, enum lp_row_type type, double rhs, int *id)
{
    BK_CHECK(lpb_reserve(b));
    b->type[b->nrows] = type;
    b->rhs[b->nrows] = rhs;
    *id = b->nrows++;
    return BK_OK;
}

/* Start a new column; its entries follow with lpb_entry. */
BK_MUST_USE
enum bk_status lpb_col(struct lpb *b, double obj)
{
    BK_CHECK(lpb_reserve(b));
    b->off[b->ncols] = b->nnz;
    b->obj[b->ncols++] = obj;
    b->off[b->ncols] = b->nnz;
    return BK_OK;
}

BK_MUST_USE
enum bk_status lpb_entry(struct lpb *b, int row, double v)
{
    BK_CHECK(lpb_reserve(b));
    b->row[b->nnz] = row;
    b->val[b->nnz++] = v;
    b->off[b->ncols] = b->nnz;
    return BK_OK;
}

BK_MUST_USE
enum bk_status lpb_solve(const struct lpb *b, double *x, double *value, struct diag *d)
{
    struct lp_model m = {b->nrows, b->ncols, b->type, b->rhs, b->obj, b->off, b->row, b->val};
    return ilp_solve_lp(&m, x, value, d);
}
