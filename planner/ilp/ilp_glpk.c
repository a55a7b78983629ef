/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ilp_glpk.c - the boundary between blinkc and GLPK: the guarded run (error hook + longjmp),
 * silenced terminal output, checked setters, tree validation, and the solver version string.
 *
 * GLPK's own fault path (env/error.c) turns terminal output back on, prints its message, calls
 * the error hook and aborts if the hook returns. Our hook never returns: it longjmps into
 * ilp_glpk_run, which frees the environment and reports BK_EINTERNAL. The message GLPK prints is
 * caught by a terminal hook and returned as text, so the library never writes to stdout.
 */
#include "ilp/ilp_glpk.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilp/ilp.h"

/* The active guard. Static (thread-local) rather than automatic: objects changed between
 * setjmp and longjmp must not live in the frame that called setjmp unless volatile. */
struct guard {
    jmp_buf jb;
    char msg[512];
    size_t len;
};
static _Thread_local struct guard guard;
static _Thread_local int guard_active;

static void on_error(void *info)
{
    struct guard *g = info;
    longjmp(g->jb, 1);
}

/* Keep GLPK's text (only its fault message gets here: terminal output is off otherwise) and
 * suppress the printing. Newlines become "; " so the message fits one diagnostic line. */
static int on_term(void *info, const char *s)
{
    struct guard *g = info;
    for (; *s && g->len + 3 < sizeof g->msg; s++) {
        if (*s == '\n') {
            if (s[1] != '\0') {
                g->msg[g->len++] = ';';
                g->msg[g->len++] = ' ';
            }
        } else {
            g->msg[g->len++] = *s;
        }
    }
    g->msg[g->len] = '\0';
    return 1;
}

enum bk_status ilp_glpk_run(enum bk_status (*fn)(void *ctx), void *ctx, char *why, size_t why_cap)
{
    if (why && why_cap)
        why[0] = '\0';
    if (guard_active) {
        if (why && why_cap)
            snprintf(why, why_cap, "nested GLPK run");
        return BK_EINTERNAL;
    }
    guard_active = 1;
    guard.len = 0;
    guard.msg[0] = '\0';
    glp_term_hook(on_term, &guard);
    glp_term_out(GLP_OFF);
    glp_error_hook(on_error, &guard);
    if (setjmp(guard.jb)) {
        /* GLPK is in its error state: everything it allocated goes with the environment. */
        glp_free_env();
        guard_active = 0;
        if (why && why_cap)
            snprintf(why, why_cap, "%s", guard.len ? guard.msg : "GLPK error");
        return BK_EINTERNAL;
    }
    enum bk_status st = fn(ctx);
    glp_error_hook(NULL, NULL);
    glp_term_hook(NULL, NULL);
    glp_free_env();
    guard_active = 0;
    return st;
}

int ilp_glpk_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 255 || (name[0] >= '0' && name[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return 1;
}

BK_MUST_USE
static enum bk_status bug(struct diag *d, const char *what)
{
    diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "internal error: GLPK model: %s", what);
    return BK_EINTERNAL;
}

/* Bounds GLPK accepts for a type: finite where used, lb <= ub for GLP_DB. */
static int bounds_ok(int type, double lb, double ub)
{
    switch (type) {
    case GLP_FR: return 1;
    case GLP_LO: return isfinite(lb);
    case GLP_UP: return isfinite(ub);
    case GLP_DB: return isfinite(lb) && isfinite(ub) && lb <= ub;
    case GLP_FX: return isfinite(lb);
    default: return 0;
    }
}

enum bk_status ilp_glpk_set_row(glp_prob *lp, int i, const char *name, int type, double lb,
                                double ub, struct diag *d)
{
    if (i < 1 || i > glp_get_num_rows(lp))
        return bug(d, "row index out of range");
    if (name && !ilp_glpk_name_ok(name))
        return bug(d, "bad row name");
    if (!bounds_ok(type, lb, ub))
        return bug(d, "bad row bounds");
    if (name)
        glp_set_row_name(lp, i, name);
    glp_set_row_bnds(lp, i, type, lb, ub);
    return BK_OK;
}

enum bk_status ilp_glpk_set_col(glp_prob *lp, int j, const char *name, int kind, int type,
                                double lb, double ub, double obj, struct diag *d)
{
    if (j < 1 || j > glp_get_num_cols(lp))
        return bug(d, "column index out of range");
    if (name && !ilp_glpk_name_ok(name))
        return bug(d, "bad column name");
    if (kind != GLP_CV && kind != GLP_IV && kind != GLP_BV)
        return bug(d, "bad column kind");
    if (kind != GLP_BV && !bounds_ok(type, lb, ub))
        return bug(d, "bad column bounds");
    if (!isfinite(obj))
        return bug(d, "objective coefficient not finite");
    if (name)
        glp_set_col_name(lp, j, name);
    glp_set_col_kind(lp, j, kind); /* GLP_BV sets the bounds [0, 1] itself */
    if (kind != GLP_BV)
        glp_set_col_bnds(lp, j, type, lb, ub);
    glp_set_obj_coef(lp, j, obj);
    return BK_OK;
}

enum bk_status ilp_glpk_set_mat_col(glp_prob *lp, int j, int len, const int *ind,
                                    const double *val, struct diag *d)
{
    int m = glp_get_num_rows(lp);
    if (j < 1 || j > glp_get_num_cols(lp))
        return bug(d, "column index out of range");
    if (len < 0 || len > m)
        return bug(d, "column length out of range");
    /* Distinct rows, checked pairwise: columns here have at most a few dozen entries. */
    for (int k = 1; k <= len; k++) {
        if (ind[k] < 1 || ind[k] > m)
            return bug(d, "matrix row index out of range");
        if (!isfinite(val[k]))
            return bug(d, "matrix coefficient not finite");
        for (int l = 1; l < k; l++)
            if (ind[l] == ind[k])
                return bug(d, "duplicate matrix entry");
    }
    glp_set_mat_col(lp, j, len, ind, val);
    return BK_OK;
}

enum bk_status ilp_tree_load(const struct pack_problem *p, const struct ptree *t, int *mult,
                             struct diag *d)
{
    const struct pgraph *g = p->g;
    memset(mult, 0, (size_t)g->narcs * sizeof *mult);
    if (t->ngpus != g->ngpus || t->root < 0 || t->root >= g->ngpus)
        return bug(d, "candidate tree does not fit the graph");
    if (p->kind == PACK_BROADCAST && t->root != p->root)
        return bug(d, "candidate tree has the wrong root");
    if (t->path_off[0] != 0)
        return bug(d, "candidate tree has bad path offsets");
    for (int v = 0; v < t->ngpus; v++)
        if (t->path_off[v + 1] < t->path_off[v])
            return bug(d, "candidate tree has bad path offsets");
    for (int k = 0; k < t->path_off[t->ngpus]; k++)
        if (t->path_arc[k] < 0 || t->path_arc[k] >= g->narcs)
            return bug(d, "candidate tree uses an arc out of range");
    ptree_add_load(t, g, p->kind, mult);
    return BK_OK;
}

void ilp_glpk_smcp(glp_smcp *parm)
{
    glp_init_smcp(parm);
    parm->msg_lev = GLP_MSG_OFF;
    parm->presolve = GLP_OFF;
}

/* The test hook of ilp.h: misuse GLPK on purpose inside a guarded run. */
struct fault_ctx {
    int unused;
};

BK_MUST_USE
static enum bk_status fault_run(void *ctx)
{
    (void)ctx;
    glp_prob *lp = glp_create_prob();
    glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, 5, GLP_LO, 0, 0); /* column 5 of 1: GLPK's fault path */
    glp_delete_prob(lp);
    return BK_OK;
}

enum bk_status ilp_glpk_selftest_fault(struct diag *d)
{
    struct fault_ctx c = {0};
    char why[512];
    enum bk_status st = ilp_glpk_run(fault_run, &c, why, sizeof why);
    if (st != BK_OK)
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "GLPK failed: %s", why);
    return st;
}

const char *ilp_solver_version(void)
{
    /* glp_version creates a GLPK environment; copy the string and free it again so nothing is
     * left allocated at exit. */
    static _Thread_local char buf[32];
    if (!guard_active) {
        snprintf(buf, sizeof buf, "GLPK %s", glp_version());
        glp_free_env();
    } else {
        snprintf(buf, sizeof buf, "GLPK %s", glp_version());
    }
    return buf;
}
