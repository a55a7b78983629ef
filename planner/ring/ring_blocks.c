/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring_blocks.c - solving the ring LP once per class of identical servers.
 *
 * On a cluster of identical servers most of the heuristic's LP repeats: every server's arcs and
 * flow rows constrain the order rates t_o the same way, through flow columns of their own. A
 * block (the rows of one server) whose rows equal an earlier kept block's, its own columns
 * renamed, is implied by it: any solution of the kept rows extends to it by copying the kept
 * block's own columns. So it is dropped before the solve, and the optimum is exact.
 */
#include "ring/ring_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One block's rows in a form that compares equal exactly when the rows are equal up to a
 * renaming of the block's own columns: per row its type and right-hand side, then per entry a
 * tag (shared column c: 2c; own column: 2k+1, k its first appearance in the block) and value. */
struct sig {
    int64_t *tag;
    double *val;
    int n, cap;
    uint64_t hash;
};

BK_MUST_USE
static enum bk_status sig_put(struct sig *s, int64_t tag, double val)
{
    struct bk_array arrays[] = {BK_ARRAY(s->tag), BK_ARRAY(s->val)};
    BK_CHECK(bk_grow_int_arrays(arrays, 2, &s->cap, s->n));
    s->tag[s->n] = tag;
    s->val[s->n++] = val;
    uint64_t bits;
    memcpy(&bits, &val, sizeof bits);
    s->hash = (s->hash ^ (uint64_t)tag) * 1099511628211u;
    s->hash = (s->hash ^ bits) * 1099511628211u;
    return BK_OK;
}

static int sig_equal(const struct sig *a, const struct sig *b)
{
    return a->hash == b->hash && a->n == b->n &&
           memcmp(a->tag, b->tag, (size_t)a->n * sizeof *a->tag) == 0 &&
           memcmp(a->val, b->val, (size_t)a->n * sizeof *a->val) == 0;
}

/* The LP's rows, row by row (entries in column order). */
struct by_row {
    int *off, *col;
    double *val;
};

BK_MUST_USE
static enum bk_status transpose(const struct lpb *b, struct by_row *r)
{
    r->off = calloc((size_t)b->nrows + 2, sizeof *r->off);
    r->col = malloc(((size_t)b->nnz + 1) * sizeof *r->col);
    r->val = malloc(((size_t)b->nnz + 1) * sizeof *r->val);
    if (!r->off || !r->col || !r->val)
        return BK_ENOMEM;
    for (int k = 0; k < b->nnz; k++)
        r->off[b->row[k] + 2]++;
    for (int i = 0; i < b->nrows; i++)
        r->off[i + 2] += r->off[i + 1];
    for (int c = 0; c < b->ncols; c++)
        for (int k = b->off[c]; k < b->off[c + 1]; k++) {
            int at = r->off[b->row[k] + 1]++;
            r->col[at] = c;
            r->val[at] = b->val[k];
        }
    return BK_OK;
}

/* own[c]: the block whose rows alone hold column c, or -1 (rows of several blocks, a shared
 * row, or a column in the objective). */
static void column_owners(const struct lpb *b, const int *row_block, int *own)
{
    for (int c = 0; c < b->ncols; c++) {
        int k = b->off[c] < b->off[c + 1] && b->obj[c] == 0 ? row_block[b->row[b->off[c]]] : -1;
        for (int e = b->off[c]; e < b->off[c + 1] && k >= 0; e++)
            if (row_block[b->row[e]] != k)
                k = -1;
        own[c] = k;
    }
}

BK_MUST_USE
static enum bk_status block_sig(const struct lpb *b, const struct by_row *r, const int *own,
                                const int *rows, int nrows, int blk, int *local, struct sig *s)
{
    int nlocal = 0;
    s->n = 0;
    s->hash = 14695981039346656037u;
    for (int q = 0; q < nrows; q++) {
        int i = rows[q];
        BK_CHECK(sig_put(s, -1 - (int64_t)b->type[i], b->rhs[i]));
        for (int e = r->off[i]; e < r->off[i + 1]; e++) {
            int c = r->col[e];
            if (own[c] == blk && local[c] < 0)
                local[c] = nlocal++;
            BK_CHECK(sig_put(s, own[c] == blk ? 2 * (int64_t)local[c] + 1 : 2 * (int64_t)c,
                             r->val[e]));
        }
    }
    for (int q = 0; q < nrows; q++) /* leave local[] all -1 again */
        for (int e = r->off[rows[q]]; e < r->off[rows[q] + 1]; e++)
            local[r->col[e]] = -1;
    return BK_OK;
}

/* The LP without the rows and columns marked dropped (*out shares nothing with b). */
BK_MUST_USE
static enum bk_status reduced(const struct lpb *b, const unsigned char *row_drop,
                              const unsigned char *col_drop, int *new_row, struct lpb *out)
{
    for (int i = 0; i < b->nrows; i++) {
        new_row[i] = -1;
        if (!row_drop[i])
            BK_CHECK(lpb_row(out, b->type[i], b->rhs[i], &new_row[i]));
    }
    for (int c = 0; c < b->ncols; c++) {
        if (col_drop[c])
            continue;
        BK_CHECK(lpb_col(out, b->obj[c]));
        for (int e = b->off[c]; e < b->off[c + 1]; e++)
            if (new_row[b->row[e]] >= 0)
                BK_CHECK(lpb_entry(out, new_row[b->row[e]], b->val[e]));
    }
    return BK_OK;
}

enum bk_status lpb_solve_blocks(const struct lpb *b, const int *row_block, int nblocks,
                                double *x, double *value, struct diag *d)
{
    struct by_row r = {0};
    struct lpb red = {0};
    struct sig *sigs = calloc((size_t)nblocks + 1, sizeof *sigs);
    int *own = malloc(((size_t)b->ncols + 1) * sizeof *own);
    int *local = malloc(((size_t)b->ncols + 1) * sizeof *local);
    int *rows = malloc(((size_t)b->nrows + 1) * sizeof *rows);
    int *start = calloc((size_t)nblocks + 2, sizeof *start);
    int *kept = malloc(((size_t)nblocks + 1) * sizeof *kept), nkept = 0, ndropped = 0;
    unsigned char *drop = calloc((size_t)nblocks + 1, 1);
    unsigned char *row_drop = calloc((size_t)b->nrows + 1, 1);
    unsigned char *col_drop = calloc((size_t)b->ncols + 1, 1);
    double *xr = NULL;
    enum bk_status st = BK_ENOMEM;
    if (!sigs || !own || !local || !rows || !start || !kept || !drop || !row_drop ||
        !col_drop)
        goto out;
    BK_CHECK_GOTO(transpose(b, &r), st, out);
    column_owners(b, row_block, own);
    for (int c = 0; c < b->ncols; c++)
        local[c] = -1;
    /* rows[start[k] .. start[k + 1]): block k's rows, in order. */
    for (int i = 0; i < b->nrows; i++)
        if (row_block[i] >= 0)
            start[row_block[i] + 2]++;
    for (int k = 0; k < nblocks; k++)
        start[k + 2] += start[k + 1];
    for (int i = 0; i < b->nrows; i++)
        if (row_block[i] >= 0)
            rows[start[row_block[i] + 1]++] = i;
    for (int k = 0; k < nblocks; k++) {
        BK_CHECK_GOTO(block_sig(b, &r, own, rows + start[k], start[k + 1] - start[k], k, local,
                                &sigs[k]),
                      st, out);
        for (int q = 0; q < nkept && !drop[k]; q++)
            drop[k] = sig_equal(&sigs[kept[q]], &sigs[k]);
        if (!drop[k])
            kept[nkept++] = k;
        ndropped += drop[k];
    }
    if (ndropped == 0) {
        st = lpb_solve(b, x, value, d);
        goto out;
    }
    for (int i = 0; i < b->nrows; i++)
        row_drop[i] = row_block[i] >= 0 && drop[row_block[i]];
    for (int c = 0; c < b->ncols; c++)
        col_drop[c] = own[c] >= 0 && drop[own[c]];
    BK_CHECK_GOTO(reduced(b, row_drop, col_drop, rows, &red), st, out);
    st = BK_ENOMEM;
    xr = malloc(((size_t)red.ncols + 1) * sizeof *xr);
    if (!xr)
        goto out;
    BK_CHECK_GOTO(lpb_solve(&red, xr, value, d), st, out);
    /* A dropped block's own columns stay 0: the callers read the order rates only. */
    for (int c = 0, k = 0; c < b->ncols; c++)
        x[c] = col_drop[c] ? 0 : xr[k++];
out:
    for (int k = 0; sigs && k < nblocks; k++) {
        free(sigs[k].tag);
        free(sigs[k].val);
    }
    free(sigs);
    free(r.off);
    free(r.col);
    free(r.val);
    lpb_free(&red);
    free(own);
    free(local);
    free(rows);
    free(start);
    free(kept);
    free(drop);
    free(row_drop);
    free(col_drop);
    free(xr);
    return st;
}
