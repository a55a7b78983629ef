/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ilp.h - the exact stages of tree packing, solved with GLPK through its C API.
 *
 * 1. ilp_lp_optimum: the packing LP (maximise the rate subject to arc capacities) over a growing
 *    candidate set, by column generation: GLPK's simplex gives arc prices, the oracle finds the
 *    cheapest tree under them, and a tree that costs less than its value enters, until none does.
 *    With exact pricing this is the true optimum over path trees; the final duals certify it.
 * 2. ilp_fewest_trees: Blink's step. Binary y_T per candidate, x_T <= cap_T * y_T, the rate kept
 *    at >= (1 - slack) * target, minimise sum y_T. Under a deterministic work budget; when it
 *    ends with no solution, on an error or an infeasible model it falls back to the LP solution and says so in the report.
 *
 * Only ilp_*.c include glpk.h. GLPK's error hook longjmps back here, so a GLPK fault is a status,
 * never an abort. Rows and columns are added in a fixed order, so models are deterministic.
 * Every function here needs a non-NULL struct diag; none prints.
 */
#ifndef BK_ILP_H
#define BK_ILP_H

#include "core/bk.h"
#include "core/diag.h"
#include "pack/oracle.h"
#include "graph/ptree.h"
#include "core/strbuf.h"

#define ILP_DEFAULT_TIME_LIMIT_MS 200
#define ILP_DEFAULT_SLACK 1e-4

struct ilp_opts {
    int time_limit_ms; /* the MIP's budget: counted work worth about this many ms (ilp_mip.c);
                          > 0 */
    double slack;      /* allowed relative rate loss, in [0, 0.5) */
    struct strbuf *dump; /* if not NULL, the MIP in CPLEX LP format (glpsol --lp) is put here */
};

/* ilp_lp_optimum fills the lp_* fields, ilp_fewest_trees the others; neither touches the rest. */
struct ilp_report {
    int lp_columns;       /* candidates in the final LP */
    int lp_rounds;        /* column-generation rounds (LP solves; the last one prices out) */
    double lp_value;      /* optimal LP value */
    int mip_candidates;   /* candidates that entered the MIP (0 if it was never built) */
    int mip_status;       /* 0 solved to optimality; 1 budget spent (best incumbent kept);
                             2 fell back to the LP solution */
    double mip_gap;       /* relative gap of the incumbent when mip_status == 1, in (0, 1];
                             1 when GLPK had no bound yet; 0 otherwise */
    int trees_before;     /* trees with positive rate in the LP solution */
    int trees_after;      /* trees in the result */
};

/*
 * Solve the packing LP exactly. `cand` holds starting candidates (rates ignored) and receives the
 * columns generated; on return cand->t[i].rate is the LP solution (0 for unused candidates) and
 * *value is the optimum (sum of rates; PACK_ALLGATHER: the common rate per root).
 * An empty `cand` is seeded with the oracle's tree per pricing root under zero lengths. Pricing
 * roots: p->root (broadcast), GPU 0 (allreduce: undirected trees), every GPU (allgather).
 * Candidates must fit p (GPU count, arcs in range; broadcast: rooted at p->root), else
 * BK_EINTERNAL. BK_ESOLVE if the oracle finds no spanning tree, GLPK finds no optimum, or the
 * generation exceeds 10000 rounds; BK_EINTERNAL after a GLPK fault; all with a diagnostic.
 * `rep` may be NULL. With o == NULL no columns are generated: the LP over `cand` alone (which
 * must not be empty) is solved.
 */
BK_MUST_USE
enum bk_status ilp_lp_optimum(const struct pack_problem *p, struct oracle *o,
                              struct ptree_set *cand, double *value, struct ilp_report *rep,
                              struct diag *d);

/*
 * Choose the fewest candidates reaching (1 - slack) * target and give them rates; the result,
 * feasible and merged by shape, goes to *out. `cand` rates must hold a feasible solution of value
 * >= target (the LP's), which is the fallback. Fallbacks add a warning to d.
 * With more than 250 candidates the MIP takes only the LP solution's trees and the zero-rate
 * trees of zero reduced cost (at most 1000; see ilp_mip.c), which keeps GLPK's root relaxation
 * fast. The MIP's LP point is GLPK's first incumbent, so the budget (opt->time_limit_ms, as
 * counted work; <= 0 means ILP_DEFAULT_TIME_LIMIT_MS) always ends with a solution. The chosen trees then get
 * the best rates they allow from a small LP over them alone. When opt->dump is set, the MIP
 * is appended to it in CPLEX LP format (deterministic: no paths, no times).
 * Errors: BK_EINTERNAL for a bad target/slack or a candidate that does not fit p, BK_ESOLVE for
 * no candidates, BK_EIO when the dump cannot be written, BK_ENOMEM. `rep` may be NULL.
 */
BK_MUST_USE
enum bk_status ilp_fewest_trees(const struct pack_problem *p, const struct ptree_set *cand,
                                double target, const struct ilp_opts *opt, struct ptree_set *out,
                                struct ilp_report *rep, struct diag *d);

/*
 * A plain LP for other stages (the ring baseline): maximise sum obj[j] x[j] over x >= 0 subject
 * to each row i: sum_j a_ij x_j (<=, =, >=) rhs[i]. The matrix is given by column:
 * col_off[ncols+1], col_row[], col_val[].
 */
enum lp_row_type { LP_LE, LP_EQ, LP_GE };
struct lp_model {
    int nrows, ncols;
    const enum lp_row_type *row_type; /* [nrows] */
    const double *rhs;                /* [nrows] */
    const double *obj;                /* [ncols] */
    const int *col_off;               /* [ncols+1] */
    const int *col_row;
    const double *col_val;
};

/* Solve; x[ncols] gets the solution and *value the objective. BK_ESOLVE if infeasible or
 * unbounded (with a diagnostic). */
BK_MUST_USE
enum bk_status ilp_solve_lp(const struct lp_model *m, double *x, double *value, struct diag *d);

/* "GLPK x.y", for --version (only ilp_*.c may include glpk.h). */
const char *ilp_solver_version(void);

/*
 * Test hook: misuse GLPK on purpose (an out-of-range column index) inside the guarded region,
 * to show that a GLPK fault comes back as BK_EINTERNAL with GLPK's message in an error
 * diagnostic, instead of aborting the process. Nothing else calls it.
 */
BK_MUST_USE
enum bk_status ilp_glpk_selftest_fault(struct diag *d);

#endif
