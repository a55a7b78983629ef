/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ilp_glpk.h - private GLPK plumbing shared by ilp_lp.c and ilp_mip.c (and nothing else).
 *
 * GLPK aborts the process on misuse (an index out of range, a bad name, a duplicate matrix
 * entry). Two defences:
 *  - every call that takes an index goes through a checked wrapper here, so a bug of ours
 *    becomes BK_EINTERNAL with a message before GLPK sees it;
 *  - all GLPK work runs inside ilp_glpk_run, which installs glp_error_hook with a handler that
 *    longjmps back, frees the whole GLPK environment and returns a status.
 * Code inside a guarded run must keep every allocation of its own in the context struct, never in
 * locals only: a longjmp skips the run's cleanup, and the caller frees the context afterwards.
 * GLPK objects need no cleanup after a fault, because glp_free_env releases them all.
 *
 * This header includes glpk.h, so only ilp_*.c may include it.
 */
#ifndef BK_ILP_GLPK_H
#define BK_ILP_GLPK_H

#include <glpk.h>
#include <stddef.h>

#include "core/bk.h"
#include "core/diag.h"
#include "graph/ptree.h"

/*
 * Run fn(ctx) with GLPK guarded: terminal output off, error hook installed, and the GLPK
 * environment freed afterwards (so each run starts clean and nothing leaks). Returns what fn
 * returned, or BK_EINTERNAL after a GLPK fault, with GLPK's own message in why[why_cap] (why may
 * be NULL). Runs do not nest.
 */
BK_MUST_USE
enum bk_status ilp_glpk_run(enum bk_status (*fn)(void *ctx), void *ctx, char *why, size_t why_cap);

/* A name GLPK accepts and glp_write_lp can print: 1..255 of [A-Za-z0-9_], not starting with a
 * digit. We only ever pass synthetic names, so this is a bug check. */
int ilp_glpk_name_ok(const char *name);

/*
 * Checked model setters. Each validates its indices against the problem's current size, its
 * bounds (finite, lb <= ub) and names, then calls GLPK. `name` may be NULL for none. `type` is a
 * GLPK bound type (GLP_FR, GLP_LO, GLP_UP, GLP_DB, GLP_FX); `kind` GLP_CV, GLP_IV or GLP_BV.
 * Failures are BK_EINTERNAL with a diagnostic.
 */
BK_MUST_USE
enum bk_status ilp_glpk_set_row(glp_prob *lp, int i, const char *name, int type, double lb,
                                double ub, struct diag *d);
BK_MUST_USE
enum bk_status ilp_glpk_set_col(glp_prob *lp, int j, const char *name, int kind, int type,
                                double lb, double ub, double obj, struct diag *d);
/* Column j's entries: rows ind[1..len] (distinct, in 1..rows), values val[1..len] (finite). The
 * arrays are 1-based as GLPK wants; element 0 is unused. */
BK_MUST_USE
enum bk_status ilp_glpk_set_mat_col(glp_prob *lp, int j, int len, const int *ind,
                                    const double *val, struct diag *d);

/*
 * The load multiplicities of tree t on p's graph into mult[narcs] (zeroed first), after checking
 * that t fits the problem: same GPU count, root in range (PACK_BROADCAST: the problem's root),
 * consistent path offsets and every arc index in range. Returns BK_EINTERNAL with a diagnostic
 * otherwise, because a tree that does not fit would make ptree_add_load write out of bounds.
 */
BK_MUST_USE
enum bk_status ilp_tree_load(const struct pack_problem *p, const struct ptree *t, int *mult,
                             struct diag *d);

/*
 * The packing LP over a list of trees, shared by column generation (ilp_lp.c) and the final
 * re-maximisation of ilp_fewest_trees (ilp_mip.c). Layout, fixed for determinism:
 *   rows 1..narcs: arc a is row a+1, sum_T m_T(a) x_T <= cap[a] ("cap_a<a>");
 *   PACK_ALLGATHER only: rows narcs+1..narcs+ngpus, root r: sum_{T rooted r} x_T - R >= 0;
 *   PACK_ALLGATHER only: column 1 is R ("rate"), objective max R;
 *   tree k (in the order added) is column k+1+c0 ("x_t<k>"), c0 = 1 for allgather, else 0;
 *   otherwise the objective is max sum_T x_T.
 * All of it must be used inside ilp_glpk_run. The struct owns its scratch arrays; free them with
 * ilp_pack_lp_free outside the guarded run too (glp_prob is only deleted on the normal path).
 */
struct ilp_pack_lp {
    const struct pack_problem *p;
    glp_prob *lp;
    int c0;        /* columns before the first tree */
    int ntrees;    /* tree columns so far */
    int *mult;     /* [narcs] scratch */
    int *ind;      /* [narcs + ngpus + 1] scratch, 1-based */
    double *val;   /* [narcs + ngpus + 1] scratch, 1-based */
};

/* Allocate the scratch arrays (outside or inside a run). */
BK_MUST_USE
enum bk_status ilp_pack_lp_init(struct ilp_pack_lp *m, const struct pack_problem *p);
/* Create the glp_prob with its rows (inside a run). */
BK_MUST_USE
enum bk_status ilp_pack_lp_create(struct ilp_pack_lp *m, const char *name, struct diag *d);
/* Append tree t as the next column. */
BK_MUST_USE
enum bk_status ilp_pack_lp_add_tree(struct ilp_pack_lp *m, const struct ptree *t, struct diag *d);
/* Optimise (warm-started from the current basis when there is one). BK_ESOLVE with a diagnostic
 * unless GLPK reports an optimum. */
BK_MUST_USE
enum bk_status ilp_pack_lp_solve(struct ilp_pack_lp *m, struct diag *d);
/* Value of tree column k after a solve, clamped at 0. */
double ilp_pack_lp_rate(const struct ilp_pack_lp *m, int k);
/* Delete the glp_prob (inside a run, normal path only). */
void ilp_pack_lp_delete(struct ilp_pack_lp *m);
/* Free the scratch arrays (any time). */
void ilp_pack_lp_free(struct ilp_pack_lp *m);

/* The simplex settings every stage uses: messages off, no presolver (it would throw the basis
 * away, and column generation lives on warm starts). */
void ilp_glpk_smcp(glp_smcp *parm);

#endif
