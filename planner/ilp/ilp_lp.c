/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ilp_lp.c - the exact packing LP by column generation, and the generic LP other stages use.
 *
 * Column generation (Dantzig-Wolfe on the tree-packing LP): the restricted master holds the
 * candidate trees; its optimal duals y_a >= 0 price the arcs, and the oracle returns the tree T
 * of least cost sum_a m_T(a) y_a. LP duality says the master is optimal over *all* trees exactly
 * when no tree costs less than its objective coefficient (1; for allgather, the root row's dual
 * mu_r), so when the oracle finds none the value is the true optimum and y certifies it. Each
 * round adds columns to the same glp_prob and resolves from the previous basis, which stays
 * primal feasible (a new column enters at 0), so a round costs a few pivots.
 *
 * Sits after MWU (mwu.h), which supplies good starting columns, and before ilp_mip.c, which
 * picks the fewest of the columns. Never prints: GLPK runs inside ilp_glpk_run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilp/ilp.h"
#include "ilp/ilp_glpk.h"

/* A tree enters only when it beats its objective coefficient by more than this; GLPK's duals
 * are good to about 1e-9 relative at these sizes (capacities 6..300 GB/s). */
#define PRICE_TOL 1e-9
/* Safety cap: a DGX-sized LP converges in tens of rounds. */
#define CG_MAX_ROUNDS 10000

/* ------------------------------------------------------------ the packing LP model */

enum bk_status ilp_pack_lp_init(struct ilp_pack_lp *m, const struct pack_problem *p)
{
    memset(m, 0, sizeof *m);
    m->p = p;
    m->c0 = p->kind == PACK_ALLGATHER ? 1 : 0;
    size_t narcs = (size_t)p->g->narcs, nent = narcs + (size_t)p->g->ngpus + 1;
    m->mult = malloc((narcs ? narcs : 1) * sizeof *m->mult);
    m->ind = malloc(nent * sizeof *m->ind);
    m->val = malloc(nent * sizeof *m->val);
    if (!m->mult || !m->ind || !m->val) {
        ilp_pack_lp_free(m);
        return BK_ENOMEM;
    }
    return BK_OK;
}

void ilp_pack_lp_free(struct ilp_pack_lp *m)
{
    free(m->mult);
    free(m->ind);
    free(m->val);
    m->mult = NULL;
    m->ind = NULL;
    m->val = NULL;
    m->lp = NULL; /* owned by the GLPK environment, which ilp_glpk_run frees */
}

enum bk_status ilp_pack_lp_create(struct ilp_pack_lp *m, const char *name, struct diag *d)
{
    const struct pgraph *g = m->p->g;
    int nroot = m->c0 ? g->ngpus : 0;
    char nm[32];
    m->lp = glp_create_prob();
    m->ntrees = 0;
    glp_set_prob_name(m->lp, name);
    glp_set_obj_name(m->lp, "rate");
    glp_set_obj_dir(m->lp, GLP_MAX);
    if (g->narcs + nroot > 0) /* GLPK rejects adding zero rows */
        glp_add_rows(m->lp, g->narcs + nroot);
    for (int a = 0; a < g->narcs; a++) {
        snprintf(nm, sizeof nm, "cap_a%d", a);
        BK_CHECK(ilp_glpk_set_row(m->lp, a + 1, nm, GLP_UP, 0, g->cap[a], d));
    }
    for (int r = 0; r < nroot; r++) {
        snprintf(nm, sizeof nm, "root_r%d", r);
        BK_CHECK(ilp_glpk_set_row(m->lp, g->narcs + 1 + r, nm, GLP_LO, 0, 0, d));
    }
    if (m->c0) { /* R: every root row gets -R */
        glp_add_cols(m->lp, 1);
        BK_CHECK(ilp_glpk_set_col(m->lp, 1, "R", GLP_CV, GLP_LO, 0, 0, 1, d));
        for (int r = 0; r < nroot; r++) {
            m->ind[r + 1] = g->narcs + 1 + r;
            m->val[r + 1] = -1;
        }
        BK_CHECK(ilp_glpk_set_mat_col(m->lp, 1, nroot, m->ind, m->val, d));
    }
    return BK_OK;
}

enum bk_status ilp_pack_lp_add_tree(struct ilp_pack_lp *m, const struct ptree *t, struct diag *d)
{
    const struct pgraph *g = m->p->g;
    char nm[32];
    BK_CHECK(ilp_tree_load(m->p, t, m->mult, d));
    int len = 0;
    for (int a = 0; a < g->narcs; a++)
        if (m->mult[a] > 0) {
            len++;
            m->ind[len] = a + 1;
            m->val[len] = m->mult[a];
        }
    if (m->c0) {
        len++;
        m->ind[len] = g->narcs + 1 + t->root;
        m->val[len] = 1;
    }
    int j = glp_add_cols(m->lp, 1);
    snprintf(nm, sizeof nm, "x_t%d", m->ntrees);
    BK_CHECK(ilp_glpk_set_col(m->lp, j, nm, GLP_CV, GLP_LO, 0, 0, m->c0 ? 0 : 1, d));
    BK_CHECK(ilp_glpk_set_mat_col(m->lp, j, len, m->ind, m->val, d));
    m->ntrees++;
    return BK_OK;
}

/* Simplex with one retry from a fresh basis: GLPK can refuse a basis that became singular or
 * ill-conditioned after columns were added. */
static int simplex_status(glp_prob *lp)
{
    glp_smcp parm;
    ilp_glpk_smcp(&parm);
    int ret = glp_simplex(lp, &parm);
    if (ret == GLP_EBADB || ret == GLP_ESING || ret == GLP_ECOND) {
        glp_adv_basis(lp, 0);
        ret = glp_simplex(lp, &parm);
    }
    return ret;
}

BK_MUST_USE
static enum bk_status lp_verdict(glp_prob *lp, int ret, const char *what, struct diag *d)
{
    if (ret != 0) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "%s: GLPK simplex failed (code %d)", what,
                 ret);
        return BK_ESOLVE;
    }
    switch (glp_get_status(lp)) {
    case GLP_OPT: return BK_OK;
    case GLP_NOFEAS:
    case GLP_INFEAS:
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "%s: the LP is infeasible", what);
        return BK_ESOLVE;
    case GLP_UNBND:
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "%s: the LP is unbounded", what);
        return BK_ESOLVE;
    default:
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "%s: GLPK found no optimum (status %d)",
                 what, glp_get_status(lp));
        return BK_ESOLVE;
    }
}

enum bk_status ilp_pack_lp_solve(struct ilp_pack_lp *m, struct diag *d)
{
    return lp_verdict(m->lp, simplex_status(m->lp), "packing LP", d);
}

double ilp_pack_lp_rate(const struct ilp_pack_lp *m, int k)
{
    double x = glp_get_col_prim(m->lp, k + 1 + m->c0);
    return x > 0 && isfinite(x) ? x : 0;
}

void ilp_pack_lp_delete(struct ilp_pack_lp *m)
{
    if (m->lp)
        glp_delete_prob(m->lp);
    m->lp = NULL;
}

/* ------------------------------------------------------------ column generation */

struct cg_ctx {
    const struct pack_problem *p;
    struct oracle *o;
    struct ptree_set *cand;
    struct ilp_pack_lp m;
    double *len;      /* [narcs] arc prices handed to the oracle */
    struct ptree tmp; /* the oracle's latest tree; owned here so a fault cannot leak it */
    double value;
    int rounds;
    struct diag *d;
};

/* Price one root: add the cheapest tree if it beats `thresh`. *added is set when it does. */
BK_MUST_USE
static enum bk_status price_root(struct cg_ctx *c, int root, double thresh, int *added)
{
    double cost = 0;
    enum bk_status st = oracle_min_tree(c->o, c->p->kind, root, c->len, &c->tmp, &cost);
    if (st != BK_OK) {
        diag_add(c->d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "column generation: no spanning tree from GPU %d", root);
        return st;
    }
    if (cost < thresh - PRICE_TOL) {
        int n0 = c->cand->n, idx = -1;
        st = ptree_set_add(c->cand, &c->tmp, &idx);
        /* A tree already in the master cannot price out at an optimal basis; if it seems to,
         * the duals are at the end of their accuracy and the LP is optimal as far as GLPK can
         * tell, so it is not added twice. */
        if (st == BK_OK && idx >= n0)
            st = ilp_pack_lp_add_tree(&c->m, &c->cand->t[idx], c->d);
        if (st == BK_OK && idx >= n0)
            *added = 1;
    }
    ptree_free(&c->tmp);
    return st;
}

BK_MUST_USE
static enum bk_status cg_run(void *ctx)
{
    struct cg_ctx *c = ctx;
    const struct pgraph *g = c->p->g;
    int allgather = c->p->kind == PACK_ALLGATHER;
    /* Pricing roots: every GPU for allgather; the broadcast root; GPU 0 for allreduce, whose
     * trees are undirected (the root only orients them). */
    int r0 = c->p->kind == PACK_BROADCAST ? c->p->root : 0;
    int r1 = allgather ? g->ngpus : r0 + 1;
    if (r0 < 0 || r0 >= g->ngpus) {
        diag_add(c->d, DIAG_ERROR, NULL, DIAG_NOWHERE, "column generation: root %d out of range",
                 r0);
        return BK_EINTERNAL;
    }
    BK_CHECK(ilp_pack_lp_create(&c->m, "blinkc_packing_lp", c->d));
    if (!c->o && c->cand->n == 0) {
        diag_add(c->d, DIAG_ERROR, NULL, DIAG_NOWHERE, "packing LP without candidates or oracle");
        return BK_EINTERNAL;
    }
    if (c->cand->n == 0) { /* seed: one tree per root under zero prices */
        memset(c->len, 0, (size_t)g->narcs * sizeof *c->len);
        for (int r = r0; r < r1; r++) {
            int added = 0;
            BK_CHECK(price_root(c, r, INFINITY, &added));
        }
    } else {
        for (int i = 0; i < c->cand->n; i++)
            BK_CHECK(ilp_pack_lp_add_tree(&c->m, &c->cand->t[i], c->d));
    }
    for (c->rounds = 0;; c->rounds++) {
        if (c->rounds >= CG_MAX_ROUNDS) {
            diag_add(c->d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                     "column generation did not converge in %d rounds", CG_MAX_ROUNDS);
            return BK_ESOLVE;
        }
        BK_CHECK(ilp_pack_lp_solve(&c->m, c->d));
        /* Maximisation with <= rows: GLPK's duals are >= 0 up to rounding; clamp. */
        for (int a = 0; a < g->narcs; a++) {
            double y = glp_get_row_dual(c->m.lp, a + 1);
            c->len[a] = y > 0 && isfinite(y) ? y : 0;
        }
        int added = 0;
        for (int r = r0; c->o && r < r1; r++) {
            /* For allgather the root row is ">= 0" in a maximisation, so GLPK's dual is <= 0;
             * mu_r = -dual is what an r-rooted tree must undercut. */
            double thresh = allgather ? -glp_get_row_dual(c->m.lp, g->narcs + 1 + r) : 1.0;
            if (!isfinite(thresh))
                thresh = 0;
            BK_CHECK(price_root(c, r, thresh, &added));
        }
        if (!added)
            break;
    }
    c->value = glp_get_obj_val(c->m.lp);
    for (int i = 0; i < c->cand->n; i++)
        c->cand->t[i].rate = ilp_pack_lp_rate(&c->m, i);
    ilp_pack_lp_delete(&c->m);
    return BK_OK;
}

enum bk_status ilp_lp_optimum(const struct pack_problem *p, struct oracle *o,
                              struct ptree_set *cand, double *value, struct ilp_report *rep,
                              struct diag *d)
{
    struct cg_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.o = o;
    c.cand = cand;
    c.d = d;
    BK_CHECK(ilp_pack_lp_init(&c.m, p));
    enum bk_status st = BK_ENOMEM;
    c.len = calloc(p->g->narcs ? (size_t)p->g->narcs : 1, sizeof *c.len);
    if (c.len) {
        char why[512];
        st = ilp_glpk_run(cg_run, &c, why, sizeof why);
        if (st == BK_EINTERNAL && why[0])
            diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "GLPK failed in the packing LP: %s", why);
    }
    ptree_free(&c.tmp);
    ilp_pack_lp_free(&c.m);
    free(c.len);
    if (st != BK_OK)
        return st;
    *value = c.value;
    if (rep) {
        rep->lp_columns = cand->n;
        rep->lp_rounds = c.rounds + 1;
        rep->lp_value = c.value;
    }
    return BK_OK;
}

/* ------------------------------------------------------------ the generic LP */

struct glp_ctx {
    const struct lp_model *m;
    double *x;
    double value;
    int *ind;
    double *val;
    struct diag *d;
};

/* Check everything GLPK would abort on, before it sees any of it. */
BK_MUST_USE
static enum bk_status model_check(const struct lp_model *m, struct diag *d)
{
    const char *why = NULL;
    if (m->nrows < 0 || m->ncols < 0)
        why = "negative size";
    else if ((m->nrows && (!m->row_type || !m->rhs)) || (m->ncols && !m->obj) || !m->col_off)
        why = "missing array";
    else if (m->col_off[0] != 0)
        why = "col_off[0] is not 0";
    for (int i = 0; !why && i < m->nrows; i++)
        if ((m->row_type[i] != LP_LE && m->row_type[i] != LP_EQ && m->row_type[i] != LP_GE) ||
            !isfinite(m->rhs[i]))
            why = "bad row type or right-hand side";
    for (int j = 0; !why && j < m->ncols; j++) {
        if (!isfinite(m->obj[j]))
            why = "objective coefficient not finite";
        else if (m->col_off[j + 1] < m->col_off[j] || m->col_off[j + 1] - m->col_off[j] > m->nrows)
            why = "bad column offsets";
        else if (m->col_off[j + 1] > m->col_off[j] && (!m->col_row || !m->col_val))
            why = "missing matrix";
    }
    if (why) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "internal error: bad LP model: %s", why);
        return BK_EINTERNAL;
    }
    return BK_OK; /* entries themselves are checked by ilp_glpk_set_mat_col */
}

BK_MUST_USE
static enum bk_status lp_run(void *ctx)
{
    struct glp_ctx *c = ctx;
    const struct lp_model *m = c->m;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MAX);
    if (m->nrows > 0)
        glp_add_rows(lp, m->nrows);
    if (m->ncols > 0)
        glp_add_cols(lp, m->ncols);
    static const int type[] = {[LP_LE] = GLP_UP, [LP_EQ] = GLP_FX, [LP_GE] = GLP_LO};
    for (int i = 0; i < m->nrows; i++)
        BK_CHECK(ilp_glpk_set_row(lp, i + 1, NULL, type[m->row_type[i]], m->rhs[i], m->rhs[i],
                                  c->d));
    for (int j = 0; j < m->ncols; j++) {
        BK_CHECK(ilp_glpk_set_col(lp, j + 1, NULL, GLP_CV, GLP_LO, 0, 0, m->obj[j], c->d));
        int len = 0;
        for (int k = m->col_off[j]; k < m->col_off[j + 1]; k++) {
            len++;
            c->ind[len] = m->col_row[k] + 1; /* range-checked by the setter */
            c->val[len] = m->col_val[k];
        }
        BK_CHECK(ilp_glpk_set_mat_col(lp, j + 1, len, c->ind, c->val, c->d));
    }
    glp_smcp parm;
    ilp_glpk_smcp(&parm);
    BK_CHECK(lp_verdict(lp, glp_simplex(lp, &parm), "LP", c->d));
    c->value = glp_get_obj_val(lp);
    for (int j = 0; j < m->ncols; j++)
        c->x[j] = glp_get_col_prim(lp, j + 1);
    glp_delete_prob(lp);
    return BK_OK;
}

enum bk_status ilp_solve_lp(const struct lp_model *m, double *x, double *value, struct diag *d)
{
    BK_CHECK(model_check(m, d));
    struct glp_ctx c = {m, x, 0, NULL, NULL, d};
    size_t n = (size_t)m->nrows + 1;
    c.ind = malloc(n * sizeof *c.ind);
    c.val = malloc(n * sizeof *c.val);
    enum bk_status st = BK_ENOMEM;
    if (c.ind && c.val) {
        char why[512];
        st = ilp_glpk_run(lp_run, &c, why, sizeof why);
        if (st == BK_EINTERNAL && why[0])
            diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "GLPK failed in an LP: %s", why);
    }
    free(c.ind);
    free(c.val);
    if (st == BK_OK)
        *value = c.value;
    return st;
}
