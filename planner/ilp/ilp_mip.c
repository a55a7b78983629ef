/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ilp_mip.c - Blink's fewest-trees step: a MIP over the LP's candidate trees, solved by GLPK's
 * branch and bound under a deterministic work budget, then a small LP that gives the chosen
 * trees their best rates. Also writes the MIP as CPLEX LP text (--dump-ilp) so anyone can rerun it with glpsol.
 *
 * Model (blink-and-peers.md 2.4), rows and columns in this fixed order:
 *   columns x_t<i> >= 0 (rate of candidate i), then y_t<i> binary (candidate i used);
 *   rows cap_a<a>: sum_i m_i(a) x_i <= cap[a], for every arc some candidate loads;
 *   rows link_t<i>: x_i - M_i y_i <= 0, M_i = min(cap_i, target), where cap_i = min over loaded
 *        arcs of cap[a] / m_i(a) is the tree's own bottleneck, so M_i never cuts off a feasible
 *        rate (a tree alone can carry no more, and no tree needs more than the target);
 *   rows rate (allgather: rate_r<r> per root): sum x_i >= (1 - slack) * target;
 *   objective trees: minimise sum_i y_i.
 * Candidates: all of them when there are few; otherwise those of positive LP rate and the
 * zero-rate ones of zero reduced cost, at most MIP_MAX_CAND (see select_candidates).
 * Fallbacks (budget spent without incumbent, GLPK fault, infeasible model) return the LP
 * solution already in the candidates' rates and say so with a warning; the caller always gets a
 * feasible tree set.
 * Budget: the search stops on counted work (simplex iterations and branch-and-bound nodes), never
 * on the clock, so a plan is the same on any machine under any load (see WORK_PER_MS). The wall
 * clock is only a far-off safety cap, and reaching it is a warning.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ilp/ilp.h"
#include "ilp/ilp_glpk.h"

/* Rates below this are zero: they come from simplex round-off, not from a real tree share. */
#define RATE_EPS 1e-9
/* A zero-rate candidate enters the MIP when its reduced cost is within this (relative) of 0. */
#define RC_TOL 1e-6
/* At most this many candidates enter the MIP (those of positive LP rate are always among them:
 * a basic solution has at most one per row, far fewer than this). */
#define MIP_MAX_CAND 1000
/* Work units: a simplex iteration costs the model's row count, a branch-and-bound node (basis
 * restore and refactorisation) NODE_WORK iterations' worth. On the fixtures' models GLPK does
 * about WORK_PER_MS units per millisecond of CPU (x86-64; measured 4000-6500 from 47 to 426
 * rows), so --time-limit MS becomes MS * WORK_PER_MS units: about MS ms on such a core, and the
 * same search, hence the same plan, everywhere. */
#define WORK_PER_MS 5000.0
#define NODE_WORK 3
/* Stop once the incumbent has not improved for this fraction of the budget: the y relaxation is
 * weak, so branch and bound rarely proves optimality, and a long stall rarely ends in a tree
 * fewer. */
#define STALL_FRACTION 0.2
/* The wall-clock safety cap (GLPK tm_lim) for a search that the work count fails to bound (one
 * node's LP is not interrupted): SAFETY_FACTOR times the budget's nominal time plus
 * SAFETY_FLOOR_MS, far beyond what any overloaded machine needs for the budget. */
#define SAFETY_FACTOR 10
#define SAFETY_FLOOR_MS 10000

struct rc_item {
    double rc; /* relative reduced cost; -inf for trees of positive LP rate */
    int i;
};

struct mip_ctx {
    const struct pack_problem *p;
    const struct ptree_set *cand;
    double target;
    const struct ilp_opts *opt;
    struct diag *d;
    int n;                 /* candidates */
    int *keep;             /* [n] 1 when candidate i enters the MIP */
    int nk;                /* candidates in the MIP; the k-th kept is column k+1 (x), nk+k+1 (y) */
    double *hx;            /* [n] the LP rate as a MIP value (clamped to M_i) */
    struct rc_item *items; /* [n] scratch for the candidate selection */
    int *load_off;         /* [n+1] candidate i's loaded arcs: load_arc/load_m[off[i]..off[i+1]) */
    int *load_arc, *load_m;
    double *bigm;          /* [n] M_i */
    int *row_of_arc;       /* [narcs] cap row, or 0 when no kept candidate loads the arc */
    int ncap;              /* cap rows */
    int *ind;              /* 1-based scratch for one column */
    double *val;
    double *heur;          /* [2nk+1] the LP solution as a MIP point, 1-based */
    int heur_ok;           /* the LP point satisfies every row of the MIP */
    int heur_given;        /* set once offered, or from the start when the point is unusable */
    double last_gap;       /* from the callback: the incumbent's relative gap, 1 if unknown */
    double budget;         /* work units for the branch and bound (and again for the root LP) */
    int rows;              /* the model's rows: the weight of an iteration */
    int it0;               /* GLPK's iteration count when the branch and bound started */
    double work_better;    /* work done when the incumbent last improved */
    int budget_hit;        /* the callback stopped the search */
    int safety_ms;         /* the wall-clock cap */
    int safety_hit;        /* it was reached: the result may depend on the machine */
    char *tmp_path;        /* the dump's temporary file while it exists */
    /* results */
    const char *fallback;  /* why the LP solution is returned instead, or NULL */
    int mip_status;
    double mip_gap;
    int *chosen;           /* [n] 1 when y_i = 1 */
    double *rate;          /* [n] final rates of the chosen trees */
    struct ilp_pack_lp m;  /* the pricing and re-maximisation LPs */
};

/* Work done by the branch and bound so far, in the units of WORK_PER_MS. Both counts are
 * GLPK's own and depend only on the model, so this is the same on every run. */
static double work_done(const struct mip_ctx *c, glp_tree *tree)
{
    int active, current, total;
    glp_ios_tree_size(tree, &active, &current, &total);
    double its = (double)glp_get_it_cnt(glp_ios_get_prob(tree)) - c->it0;
    return (its + NODE_WORK * (double)total) * c->rows;
}

/* Callback: hand GLPK the LP solution as its incumbent at the very first call (a node
 * selection, before any budget check, so a spent budget always ends with a solution), keep
 * the latest gap, and stop the search on the work budget or a stall.
 * glp_ios_heur_sol checks integrality and bounds only, not rows, so the point must be truly
 * feasible: it is the LP optimum, with x_i clamped to M_i. */
static void mip_callback(glp_tree *tree, void *info)
{
    struct mip_ctx *c = info;
    int reason = glp_ios_reason(tree);
    if (!c->heur_given) {
        c->heur_given = 1;
        glp_ios_heur_sol(tree, c->heur); /* rejected only if not better: nothing to do then */
    }
    if (reason == GLP_IBINGO)
        c->work_better = work_done(c, tree);
    if (reason == GLP_ISELECT) {
        double w = work_done(c, tree);
        if (w >= c->budget || w - c->work_better > STALL_FRACTION * c->budget) {
            c->budget_hit = 1;
            glp_ios_terminate(tree);
        }
    }
    if (reason == GLP_IHEUR || reason == GLP_IBINGO || reason == GLP_ISELECT) {
        /* sum y >= 0, so 0 is always a bound and a gap above 1 means "bound not known yet" */
        double gap = glp_ios_mip_gap(tree);
        if (gap >= 0 && gap <= 1)
            c->last_gap = gap;
    }
}

BK_MUST_USE
static enum bk_status build(struct mip_ctx *c, glp_prob *lp)
{
    const struct pgraph *g = c->p->g;
    int nk = c->nk, allgather = c->p->kind == PACK_ALLGATHER;
    int nrate = allgather ? g->ngpus : 1;
    double need = (1 - c->opt->slack) * c->target;
    char nm[40];
    /* Cap rows only for arcs a kept candidate loads (an empty row is no constraint). */
    c->ncap = 0;
    memset(c->row_of_arc, 0, (size_t)g->narcs * sizeof *c->row_of_arc);
    for (int i = 0; i < c->n; i++)
        for (int k = c->load_off[i]; c->keep[i] && k < c->load_off[i + 1]; k++)
            c->row_of_arc[c->load_arc[k]] = 1;
    for (int a = 0; a < g->narcs; a++)
        if (c->row_of_arc[a])
            c->row_of_arc[a] = ++c->ncap;
    int row_link = c->ncap + 1, row_rate = c->ncap + nk + 1;
    glp_set_prob_name(lp, "blinkc_fewest_trees");
    glp_set_obj_name(lp, "trees");
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, c->ncap + nk + nrate);
    glp_add_cols(lp, 2 * nk);
    for (int a = 0; a < g->narcs; a++)
        if (c->row_of_arc[a]) {
            snprintf(nm, sizeof nm, "cap_a%d", a);
            BK_CHECK(ilp_glpk_set_row(lp, c->row_of_arc[a], nm, GLP_UP, 0, g->cap[a], c->d));
        }
    /* Names carry the candidate's own index, so a dump reads against the plan's candidates. */
    for (int i = 0, k = 0; i < c->n; i++)
        if (c->keep[i]) {
            snprintf(nm, sizeof nm, "link_t%d", i);
            BK_CHECK(ilp_glpk_set_row(lp, row_link + k++, nm, GLP_UP, 0, 0, c->d));
        }
    for (int r = 0; r < nrate; r++) {
        if (allgather)
            snprintf(nm, sizeof nm, "rate_r%d", r);
        else
            snprintf(nm, sizeof nm, "rate");
        BK_CHECK(ilp_glpk_set_row(lp, row_rate + r, nm, GLP_LO, need, 0, c->d));
    }
    for (int i = 0, k = 0; i < c->n; i++) {
        if (!c->keep[i])
            continue;
        int len = 0;
        for (int l = c->load_off[i]; l < c->load_off[i + 1]; l++) {
            c->ind[++len] = c->row_of_arc[c->load_arc[l]];
            c->val[len] = c->load_m[l];
        }
        c->ind[++len] = row_link + k;
        c->val[len] = 1;
        c->ind[++len] = row_rate + (allgather ? c->cand->t[i].root : 0);
        c->val[len] = 1;
        snprintf(nm, sizeof nm, "x_t%d", i);
        BK_CHECK(ilp_glpk_set_col(lp, k + 1, nm, GLP_CV, GLP_LO, 0, 0, 0, c->d));
        BK_CHECK(ilp_glpk_set_mat_col(lp, k + 1, len, c->ind, c->val, c->d));
        c->heur[k + 1] = c->hx[i];
        k++;
    }
    for (int i = 0, k = 0; i < c->n; i++) {
        if (!c->keep[i])
            continue;
        c->ind[1] = row_link + k;
        c->val[1] = -c->bigm[i];
        snprintf(nm, sizeof nm, "y_t%d", i);
        BK_CHECK(ilp_glpk_set_col(lp, nk + k + 1, nm, GLP_BV, GLP_DB, 0, 1, 1, c->d));
        BK_CHECK(ilp_glpk_set_mat_col(lp, nk + k + 1, 1, c->ind, c->val, c->d));
        c->heur[nk + k + 1] = c->hx[i] > 0 ? 1 : 0;
        k++;
    }
    return BK_OK;
}

/* Cheapest first, then lowest index: a total order, so the selection is deterministic. */
static int rc_cmp(const void *pa, const void *pb)
{
    const struct rc_item *a = pa, *b = pb;
    if (a->rc != b->rc)
        return a->rc < b->rc ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Which candidates enter the MIP. Solve the packing LP over all of them and price each under
 * its duals: by complementary slackness a tree of positive reduced cost rc carries nothing in
 * any optimal packing, and at most slack * V / rc in one within the slack. So the MIP takes
 * the trees with positive LP rate and the zero-rate trees of (near-)zero reduced cost, the
 * alternative optima that can replace several trees at once; the cheapest MIP_MAX_CAND of them
 * (ties by index). With thousands of MWU trees this keeps the MIP, and the work its root
 * relaxation takes, small. If the LP fails, all candidates stay. */
BK_MUST_USE
static enum bk_status select_candidates(struct mip_ctx *c)
{
    const struct pgraph *g = c->p->g;
    int allgather = c->p->kind == PACK_ALLGATHER;
    for (int i = 0; i < c->n; i++)
        c->keep[i] = 1;
    c->nk = c->n;
    if (c->n <= MIP_MAX_CAND / 4)
        return BK_OK; /* small enough as it is */
    BK_CHECK(ilp_pack_lp_create(&c->m, "blinkc_pricing_lp", c->d));
    for (int i = 0; i < c->n; i++)
        BK_CHECK(ilp_pack_lp_add_tree(&c->m, &c->cand->t[i], c->d));
    struct diag quiet; /* a failure here only means no filtering */
    diag_init(&quiet);
    enum bk_status st = ilp_pack_lp_solve(&c->m, &quiet);
    diag_free(&quiet);
    if (st != BK_OK) {
        ilp_pack_lp_delete(&c->m);
        return BK_OK;
    }
    struct rc_item *items = c->items;
    int ni = 0, npos = 0;
    for (int i = 0; i < c->n; i++) {
        double cost = 0, y;
        for (int l = c->load_off[i]; l < c->load_off[i + 1]; l++)
            if ((y = glp_get_row_dual(c->m.lp, c->load_arc[l] + 1)) > 0 && isfinite(y))
                cost += c->load_m[l] * y;
        double thresh =
            allgather ? -glp_get_row_dual(c->m.lp, g->narcs + 1 + c->cand->t[i].root) : 1.0;
        /* Relative to the tree's objective coefficient, so 1e-6 means the same for allgather's
         * per-root prices (about 1/ngpus) as for broadcast's 1. */
        double rel = (cost - thresh) / (thresh > 1e-12 ? thresh : 1.0);
        if (c->hx[i] > 0) {
            rel = -INFINITY; /* the LP solution itself always enters */
            npos++;
        }
        if (rel <= RC_TOL)
            items[ni++] = (struct rc_item){rel, i};
    }
    ilp_pack_lp_delete(&c->m);
    qsort(items, (size_t)ni, sizeof *items, rc_cmp);
    /* Never cut into the LP solution (it sorts first): the incumbent needs all of it. */
    if (ni > MIP_MAX_CAND)
        ni = npos > MIP_MAX_CAND ? npos : MIP_MAX_CAND;
    for (int i = 0; i < c->n; i++)
        c->keep[i] = 0;
    for (int k = 0; k < ni; k++)
        c->keep[items[k].i] = 1;
    c->nk = ni;
    return BK_OK;
}

/* glp_write_lp only writes to a named file: write a private temporary file, read it back into
 * the dump buffer and remove it. The text holds no path or time (its header names the problem),
 * so the dump is byte-for-byte deterministic. */
BK_MUST_USE
static enum bk_status dump_model(struct mip_ctx *c, glp_prob *lp)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir || strlen(dir) > 4000)
        dir = "/tmp";
    c->tmp_path = bk_asprintf("%s/blinkc-ilp-XXXXXX", dir);
    if (!c->tmp_path)
        return BK_ENOMEM;
    int fd = mkstemp(c->tmp_path);
    if (fd < 0) {
        diag_add(c->d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "cannot create a temporary file for the ILP dump");
        return BK_EIO;
    }
    close(fd);
    enum bk_status st = BK_OK;
    FILE *f = NULL;
    if (glp_write_lp(lp, NULL, c->tmp_path) != 0 || !(f = fopen(c->tmp_path, "rb"))) {
        st = BK_EIO;
    } else {
        char buf[4096];
        size_t k;
        while ((k = fread(buf, 1, sizeof buf, f)) > 0)
            sb_putn(c->opt->dump, buf, k);
        if (ferror(f))
            st = BK_EIO;
        fclose(f);
        if (c->opt->dump->failed)
            st = BK_ENOMEM;
    }
    unlink(c->tmp_path);
    free(c->tmp_path);
    c->tmp_path = NULL;
    if (st == BK_EIO)
        diag_add(c->d, DIAG_ERROR, NULL, DIAG_NOWHERE, "cannot write the ILP dump");
    return st;
}

/* Best rates over the chosen trees only. */
BK_MUST_USE
static enum bk_status remaximise(struct mip_ctx *c)
{
    BK_CHECK(ilp_pack_lp_create(&c->m, "blinkc_remax_lp", c->d));
    for (int i = 0; i < c->n; i++)
        if (c->chosen[i])
            BK_CHECK(ilp_pack_lp_add_tree(&c->m, &c->cand->t[i], c->d));
    if (ilp_pack_lp_solve(&c->m, c->d) != BK_OK) {
        c->fallback = "the rate LP over the chosen trees failed";
        return BK_OK;
    }
    for (int i = 0, k = 0; i < c->n; i++)
        if (c->chosen[i])
            c->rate[i] = ilp_pack_lp_rate(&c->m, k++);
    /* The chosen trees reached (1 - slack) * target in the MIP, so their best rate does too;
     * anything lower is a numerical accident and the LP solution is the safer answer. */
    double need = (1 - c->opt->slack) * c->target;
    if (glp_get_obj_val(c->m.lp) < need * (1 - 1e-7))
        c->fallback = "the chosen trees fell short of the target rate";
    ilp_pack_lp_delete(&c->m);
    return BK_OK;
}

BK_MUST_USE
static enum bk_status mip_run(void *ctx)
{
    struct mip_ctx *c = ctx;
    BK_CHECK(select_candidates(c));
    glp_prob *lp = glp_create_prob();
    BK_CHECK(build(c, lp));
    if (c->opt->dump)
        BK_CHECK(dump_model(c, lp));
    /* The root relaxation first: glp_intopt without the presolver needs it, and the presolver
     * is off so that the callback's incumbent is in our own column space. */
    glp_smcp sp;
    ilp_glpk_smcp(&sp);
    int limit = c->opt->time_limit_ms > 0 ? c->opt->time_limit_ms : ILP_DEFAULT_TIME_LIMIT_MS;
    c->rows = glp_get_num_rows(lp) > 0 ? glp_get_num_rows(lp) : 1;
    c->budget = limit * WORK_PER_MS;
    c->safety_ms = limit > (INT_MAX - SAFETY_FLOOR_MS) / SAFETY_FACTOR
                       ? INT_MAX
                       : SAFETY_FACTOR * limit + SAFETY_FLOOR_MS;
    /* The relaxation gets its own budget, as iterations (the budget over the row weight). */
    double its = c->budget / c->rows;
    sp.it_lim = its < 1 ? 1 : its > INT_MAX ? INT_MAX : (int)its;
    sp.tm_lim = c->safety_ms;
    int ret = glp_simplex(lp, &sp);
    c->safety_hit = ret == GLP_ETMLIM;
    if ((ret == GLP_EITLIM || ret == GLP_ETMLIM) && c->heur_ok) {
        /* Budget spent before branching: the LP point is the incumbent, with no bound yet. */
        c->mip_status = 1;
        c->mip_gap = 1;
        for (int i = 0; i < c->n; i++)
            c->chosen[i] = c->hx[i] > 0;
        glp_delete_prob(lp);
        return remaximise(c);
    }
    if (ret != 0 || glp_get_status(lp) != GLP_OPT) {
        c->fallback = ret == 0 && glp_get_status(lp) == GLP_NOFEAS
                          ? "the tree-count ILP is infeasible (so is its relaxation)"
                      : ret == GLP_EITLIM || ret == GLP_ETMLIM
                          ? "the tree-count ILP's relaxation used up its budget"
                                          : "the relaxation of the tree-count ILP has no optimum";
        glp_delete_prob(lp);
        return BK_OK;
    }
    glp_iocp ip;
    glp_init_iocp(&ip);
    ip.msg_lev = GLP_MSG_OFF;
    ip.presolve = GLP_OFF;
    ip.tm_lim = c->safety_ms;
    ip.cb_func = mip_callback;
    ip.cb_info = c;
    c->it0 = glp_get_it_cnt(lp);
    c->work_better = 0;
    ret = glp_intopt(lp, &ip);
    if (ret == GLP_ETMLIM)
        c->safety_hit = 1;
    int ms = glp_mip_status(lp);
    if ((ret == 0 || ret == GLP_ETMLIM) && ms == GLP_OPT) {
        c->mip_status = 0;
    } else if ((ret == GLP_ETMLIM || ret == GLP_EMIPGAP || ret == GLP_ESTOP) && ms == GLP_FEAS) {
        c->mip_status = 1;
        c->mip_gap = c->last_gap;
    } else {
        c->fallback = ret == GLP_ETMLIM || ret == GLP_ESTOP
                          ? "the tree-count ILP used up its budget with no solution"
                      : ms == GLP_NOFEAS ? "the tree-count ILP is infeasible"
                                         : "GLPK's branch and bound failed";
        glp_delete_prob(lp);
        return BK_OK;
    }
    for (int i = 0, k = 0; i < c->n; i++)
        if (c->keep[i])
            c->chosen[i] = glp_mip_col_val(lp, c->nk + ++k) > 0.5;
    glp_delete_prob(lp);
    return remaximise(c);
}

/* GLPK takes a heuristic point without checking rows, so check them here: capacities (to
 * round-off) and the rate rows. A caller whose rates do not reach the target gets no incumbent
 * from us, only GLPK's own search. */
static int heur_feasible(const struct mip_ctx *c)
{
    const struct pgraph *g = c->p->g;
    int nrate = c->p->kind == PACK_ALLGATHER ? g->ngpus : 1, ok = 1;
    double *load = calloc(g->narcs ? (size_t)g->narcs : 1, sizeof *load);
    double *sum = calloc((size_t)nrate, sizeof *sum);
    if (!load || !sum)
        ok = 0;
    for (int i = 0; ok && i < c->n; i++) {
        for (int k = c->load_off[i]; k < c->load_off[i + 1]; k++)
            load[c->load_arc[k]] += c->load_m[k] * c->hx[i];
        sum[nrate > 1 ? c->cand->t[i].root : 0] += c->hx[i];
    }
    for (int a = 0; ok && a < g->narcs; a++)
        ok = load[a] <= g->cap[a] * (1 + 1e-9);
    for (int r = 0; ok && r < nrate; r++)
        ok = sum[r] >= (1 - c->opt->slack) * c->target;
    free(load);
    free(sum);
    return ok;
}

/* Everything that needs no GLPK: per-candidate loads, big-M values, the LP point. */
BK_MUST_USE
static enum bk_status prepare(struct mip_ctx *c)
{
    const struct pgraph *g = c->p->g;
    int n = c->n, total = 0;
    int *mult = malloc((g->narcs ? (size_t)g->narcs : 1) * sizeof *mult);
    c->load_off = malloc(((size_t)n + 1) * sizeof *c->load_off);
    c->bigm = malloc((size_t)n * sizeof *c->bigm);
    c->row_of_arc = calloc(g->narcs ? (size_t)g->narcs : 1, sizeof *c->row_of_arc);
    c->heur = calloc(2 * (size_t)n + 1, sizeof *c->heur);
    c->hx = calloc((size_t)n, sizeof *c->hx);
    c->keep = calloc((size_t)n, sizeof *c->keep);
    c->items = malloc((size_t)n * sizeof *c->items);
    c->chosen = calloc((size_t)n, sizeof *c->chosen);
    c->rate = calloc((size_t)n, sizeof *c->rate);
    c->ind = malloc(((size_t)g->narcs + (size_t)n + (size_t)g->ngpus + 2) * sizeof *c->ind);
    c->val = malloc(((size_t)g->narcs + (size_t)n + (size_t)g->ngpus + 2) * sizeof *c->val);
    c->load_arc = malloc(((size_t)n * (size_t)g->narcs + 1) * sizeof *c->load_arc);
    c->load_m = malloc(((size_t)n * (size_t)g->narcs + 1) * sizeof *c->load_m);
    enum bk_status st = BK_ENOMEM;
    if (!mult || !c->load_off || !c->bigm || !c->row_of_arc || !c->heur || !c->hx || !c->keep ||
        !c->items || !c->chosen || !c->rate || !c->ind || !c->val || !c->load_arc || !c->load_m)
        goto out;
    for (int i = 0; i < n; i++) {
        const struct ptree *t = &c->cand->t[i];
        BK_CHECK_GOTO(ilp_tree_load(c->p, t, mult, c->d), st, out);
        double cap = c->target;
        c->load_off[i] = total;
        for (int a = 0; a < g->narcs; a++)
            if (mult[a] > 0) {
                c->load_arc[total] = a;
                c->load_m[total++] = mult[a];
                if (g->cap[a] / mult[a] < cap)
                    cap = g->cap[a] / mult[a];
            }
        c->bigm[i] = cap;
        /* The LP solution as a MIP point; clamping to M_i only trims round-off. */
        c->hx[i] = t->rate > RATE_EPS ? fmin(t->rate, cap) : 0;
    }
    c->load_off[n] = total;
    c->heur_ok = heur_feasible(c);
    c->heur_given = !c->heur_ok;
    st = BK_OK;
out:
    free(mult);
    return st;
}

static void ctx_free(struct mip_ctx *c)
{
    if (c->tmp_path) { /* a GLPK fault interrupted the dump */
        unlink(c->tmp_path);
        free(c->tmp_path);
    }
    free(c->load_off);
    free(c->load_arc);
    free(c->load_m);
    free(c->bigm);
    free(c->row_of_arc);
    free(c->ind);
    free(c->val);
    free(c->heur);
    free(c->hx);
    free(c->keep);
    free(c->items);
    free(c->chosen);
    free(c->rate);
    ilp_pack_lp_free(&c->m);
}

/* Copy the trees whose rate (rate[i], or the candidate's own when rate is NULL) is positive. */
BK_MUST_USE
static enum bk_status emit(const struct ptree_set *cand, const double *rate, struct ptree_set *out)
{
    for (int i = 0; i < cand->n; i++) {
        double r = rate ? rate[i] : cand->t[i].rate;
        if (!(r > RATE_EPS))
            continue;
        struct ptree t = cand->t[i];
        t.rate = r; /* a shallow copy: ptree_set_add copies the arrays */
        BK_CHECK(ptree_set_add(out, &t, NULL));
    }
    return BK_OK;
}

enum bk_status ilp_fewest_trees(const struct pack_problem *p, const struct ptree_set *cand,
                                double target, const struct ilp_opts *opt, struct ptree_set *out,
                                struct ilp_report *rep, struct diag *d)
{
    if (!(target > 0) || !isfinite(target) || !(opt->slack >= 0 && opt->slack < 0.5)) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "internal error: fewest trees: bad target %g or slack %g", target, opt->slack);
        return BK_EINTERNAL;
    }
    if (cand->n == 0) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "fewest trees: no candidate trees");
        return BK_ESOLVE;
    }
    struct mip_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.cand = cand;
    c.target = target;
    c.opt = opt;
    c.d = d;
    c.n = cand->n;
    c.last_gap = 1;
    int n0 = out->n, before = 0;
    for (int i = 0; i < cand->n; i++)
        before += cand->t[i].rate > RATE_EPS;
    char why[512] = "";
    enum bk_status st = prepare(&c);
    if (st == BK_OK)
        st = ilp_pack_lp_init(&c.m, p);
    if (st == BK_OK)
        st = ilp_glpk_run(mip_run, &c, why, sizeof why);
    if (st == BK_EINTERNAL && why[0]) { /* a GLPK fault, not a bug of ours: fall back */
        c.fallback = "GLPK failed";
        st = BK_OK;
    }
    if (st == BK_OK && c.safety_hit)
        diag_warning(d, NULL, DIAG_NOWHERE,
                     "the fewest-trees ILP reached its wall-clock safety cap of %d ms before its "
                     "work budget (an overloaded machine?); this plan may differ between runs",
                     c.safety_ms);
    if (st == BK_OK && c.fallback) {
        diag_warning(d, NULL, DIAG_NOWHERE,
                     "%s%s%s; keeping the LP solution's %d trees instead of the fewest", c.fallback,
                     why[0] ? ": " : "", why, before);
        c.mip_status = 2;
        c.mip_gap = 0;
        st = emit(cand, NULL, out);
    } else if (st == BK_OK) {
        st = emit(cand, c.rate, out);
    }
    ctx_free(&c);
    if (st != BK_OK)
        return st;
    if (rep) {
        rep->mip_candidates = c.nk;
        rep->mip_status = c.mip_status;
        rep->mip_gap = c.mip_gap;
        rep->trees_before = before;
        rep->trees_after = out->n - n0;
    }
    return BK_OK;
}
