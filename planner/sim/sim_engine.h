/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_engine.h - the flow-level discrete-event engine under the schedule simulator (sim.h).
 *
 * A run is a DAG of tasks. A task becomes ready when every task it depends on has finished; it
 * then waits its fixed delay (launch overhead plus latency, in microseconds) and, if it carries
 * bytes, becomes a flow over a list of resources (arcs of a link, a GPU's reduction units, or
 * virtual ring links). Concurrent flows share every resource max-min fairly (progressive
 * filling), and rates are recomputed whenever a flow starts or ends; between such events every
 * rate is constant, so the run is exact for this fluid model. Everything is deterministic: ties
 * in time are broken by task number. The engine never prints.
 *
 * Units: time in microseconds; capacities in GB/s (1e9 B/s), i.e. 1e3 bytes per microsecond.
 */
#ifndef BK_SIM_ENGINE_H
#define BK_SIM_ENGINE_H

#include "core/bk.h"

struct sim_eng {
    int nres;
    double *cap;       /* [nres] bytes per microsecond */
    int ntasks, tcap;
    double *delay;     /* [ntasks] microseconds before the flow starts */
    double *bytes;     /* [ntasks] 0: a pure delay */
    double *finish;    /* [ntasks] finish times once run */
    int *res_off;      /* [ntasks] start of the task's resources in res[] */
    int *res_n;        /* [ntasks] how many */
    int *res;
    int nres_used, res_cap;
    int *dep_from, *dep_to;
    int ndeps, dep_cap;
};

/* An engine with nres resources of the given capacities in GB/s (each > 0). */
BK_MUST_USE
enum bk_status sim_eng_init(struct sim_eng *e, int nres, const double *cap_gbps);
void sim_eng_free(struct sim_eng *e);

/* Add a task: delay_us, then a flow of `bytes` over res[0..nres) (none: bytes are ignored and the
 * task is a pure delay). Its number goes to *id. */
BK_MUST_USE
enum bk_status sim_eng_task(struct sim_eng *e, double delay_us, double bytes, const int *res,
                            int nres, int *id);

/* Task `after` starts only once `before` has finished. before < 0 is ignored, so callers can
 * pass "no predecessor" as -1. */
BK_MUST_USE
enum bk_status sim_eng_dep(struct sim_eng *e, int before, int after);

/* Run every task from time 0; *makespan gets the last finish time (0 without tasks). Fails with
 * BK_EINTERNAL when a dependency cycle leaves tasks unrun, BK_ENOMEM otherwise. */
BK_MUST_USE
enum bk_status sim_eng_run(struct sim_eng *e, double *makespan);

#endif
