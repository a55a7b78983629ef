/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring_lp.c - the ring baseline's LP: a growable column-major model handed to ilp_solve_lp.
 */
#include "ring/ring_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

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

/* Room for one more row, column (and its end offset) or entry: each pair of arrays grows
 * together. */
BK_MUST_USE
static enum bk_status lpb_reserve(struct lpb *b)
{
    struct bk_array rows[] = {BK_ARRAY(b->type), BK_ARRAY(b->rhs)};
    struct bk_array cols[] = {BK_ARRAY(b->obj), BK_ARRAY(b->off)};
    struct bk_array entries[] = {BK_ARRAY(b->row), BK_ARRAY(b->val)};
    BK_CHECK(bk_grow_int_arrays(rows, 2, &b->rcap, b->nrows));
    /* A new column's end offset goes one past it, in off[ncols + 1]. */
    BK_CHECK(bk_grow_int_arrays(cols, 2, &b->ccap, b->ncols + 1));
    BK_CHECK(bk_grow_int_arrays(entries, 2, &b->zcap, b->nnz));
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
