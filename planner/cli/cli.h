/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cli.h - blinkc's command line: one table of options, from which getopt_long's array and the
 * --help text are both built, so the two can never disagree.
 */
#ifndef BK_CLI_H
#define BK_CLI_H

#include <stdio.h>

#include "core/bk.h"
#include "plan/plan.h"
#include "out/sim_report.h"
#include "read/topo_read.h"

#define CLI_MAX_GPUS 4096
#define CLI_MAX_JOBS 256 /* -j: simulation threads */
#define CLI_MAX_RATES 32

struct cli {
    const char *topology;   /* path, "-", builtin:NAME, or NULL for the built-in default */
    struct topo_read_opts read;
    int servers;            /* --servers N: N copies of TOPOLOGY joined by a network; 0: off */
    double nic_gbps;        /* --nic-gbps X, in GB/s (the option takes Gb/s); 0: the input's */
    const char *nic_arg;    /* --nic-gbps as given, for messages */
    int gpus[CLI_MAX_GPUS]; /* --gpus, canonical GPU numbers in rank order */
    int ngpus;              /* 0: every GPU */
    struct plan_opts plan;
    const char *root_gpu;   /* --root gpuN: that GPU's rank replaces plan.root (main.c) */
    int collectives_given;  /* the first --collective replaces the default "all" */  /* --collective, --root, --epsilon, --time-limit, --tdpa, --no-hybrid */
    const char *plan_json;  /* --plan-json FILE */
    const char *from_plan;  /* --from-plan FILE: render a saved plan (plan_load.h) */
    const char *planning_opt; /* the last input, planning or simulation option given */
    const char *dump_ilp;   /* --dump-ilp FILE */
    const char *output;     /* -o/--output FILE: the generated source */
    const char *templates;  /* --templates DIR */
    const char *dot;        /* --dot FILE|DIR: the trees for Graphviz (DIR: a file per plan) */
    const char *msccl_xml;  /* --msccl-xml DIR: MSCCL algorithm files */
    int dot_collapse;       /* --dot-collapse-switches */
    int simulate;           /* --simulate: the table of simulated times */
    struct sim_report_opts sim; /* -b, -e, -f, --sim-param */
    int all_allocations;    /* --all-allocations: one plan per connected set of GPUs */
    int tune;               /* per-size trees-or-rings and chunk (plan_tune.h); --no-tune: 0 */
    int jobs;               /* -j N: simulation threads (default: the CPUs online) */
    int explain;
    int print_topology;
    int quiet;
    int debug;              /* --debug or BLINKC_DEBUG=1: print the failure's trail (trail.h) */
    int help, version;
};

/*
 * Parse argv. On a usage error returns BK_EUSAGE and writes one line to *why (static or in
 * why_buf). --help and --version only set flags.
 */
BK_MUST_USE
enum bk_status cli_parse(struct cli *c, int argc, char **argv, char *why_buf, size_t why_cap,
                         const char **why);

/* Print --help from the option table. */
void cli_print_help(FILE *out);

#endif
