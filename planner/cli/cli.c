/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cli.c - the option table, option parsing and --help (see cli.h).
 *
 * Groups follow the house convention: input, optimisation, code generation, benchmark,
 * diagnostics. A group with no options yet is simply not printed.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/builtin.h"
#include "core/gpu_list.h"
#include "core/outfile.h"
#include "topo/topo_join.h"

enum cli_group { G_INPUT, G_OPTIM, G_OUTPUT, G_BENCH, G_DIAG, G_COUNT };
static const char *const group_names[G_COUNT] = {"Input", "Optimisation", "Output",
                                                 "Simulation", "Diagnostics"};

enum opt_id {
    OPT_FORMAT = 256,
    OPT_GPUS,
    OPT_GPU_MODEL,
    OPT_LINK_RATE,
    OPT_PLAN_JSON,
    OPT_PRINT_TOPOLOGY,
    OPT_COLLECTIVE,
    OPT_ROOT,
    OPT_EPSILON,
    OPT_TIME_LIMIT,
    OPT_TDPA,
    OPT_NO_HYBRID,
    OPT_NO_P2P,
    OPT_NO_TUNE,
    OPT_EXPLAIN,
    OPT_DUMP_ILP,
    OPT_TEMPLATES,
    OPT_ALL_ALLOCATIONS,
    OPT_DOT,
    OPT_MSCCL_XML,
    OPT_SIMULATE,
    OPT_SIM_PARAM,
    OPT_SERVERS,
    OPT_NIC_GBPS,
    OPT_DEBUG,
    OPT_FROM_PLAN,
    OPT_DOT_COLLAPSE,
};

struct cli_option {
    const char *name;
    int val;           /* short letter, or an OPT_ id */
    int has_arg;       /* no_argument / required_argument */
    enum cli_group group;
    const char *arg;   /* argument name for --help */
    const char *help;
};

static const struct cli_option options[] = {
    {"format", OPT_FORMAT, required_argument, G_INPUT, "FMT",
     "input format: text, hwloc, nccl, smi, cluster (default: detect)"},
    {"servers", OPT_SERVERS, required_argument, G_INPUT, "N",
     "N copies (2-1024) of the one-server TOPOLOGY, their NICs on one switch"},
    {"nic-gbps", OPT_NIC_GBPS, required_argument, G_INPUT, "GBITS",
     "with --servers: every NIC's line rate in Gb/s (default: the topology's)"},
    {"gpus", OPT_GPUS, required_argument, G_INPUT, "LIST",
     "plan for these GPUs only (0,1,3 or 0-3,6), in rank order"},
    {"all-allocations", OPT_ALL_ALLOCATIONS, no_argument, G_INPUT, NULL,
     "with -o: a plan for every connected set of 2+ GPUs (up to 16 GPUs)"},
    {"from-plan", OPT_FROM_PLAN, required_argument, G_INPUT, "FILE",
     "with -o: render a plan saved by --plan-json instead of planning"},
    {"gpu-model", OPT_GPU_MODEL, required_argument, G_INPUT, "NAME",
     "GPU where the input names none: P100 ... GB300, RTX 3090, A40 (blinkc-topology(5))"},
    {"link-rate", OPT_LINK_RATE, required_argument, G_INPUT, "KEY=GBPS",
     "override a default rate (nvlink1-5, pcie1-6, smp, net)"},
    {"no-p2p", OPT_NO_P2P, no_argument, G_INPUT, NULL,
     "the GPUs have no peer access (RTX 4090/5090, VMs): PCIe paths via host memory"},
    {"collective", OPT_COLLECTIVE, required_argument, G_OPTIM, "NAME",
     "plan only NAME (broadcast, reduce, allreduce, allgather, reducescatter); repeatable"},
    {"root", OPT_ROOT, required_argument, G_OPTIM, "RANK|gpuN",
     "broadcast and reduce from this rank only (default: every rank)"},
    {"epsilon", OPT_EPSILON, required_argument, G_OPTIM, "EPS",
     "MWU accuracy, 0.0001 to 0.5 (default 0.1)"},
    {"time-limit", OPT_TIME_LIMIT, required_argument, G_OPTIM, "MS",
     "fewest-trees ILP budget, as work, not time (default 200)"},
    {"tdpa", OPT_TDPA, required_argument, G_OPTIM, "US",
     "hybrid PCIe split: cost of forcing a copy onto PCIe (default 50)"},
    {"no-hybrid", OPT_NO_HYBRID, no_argument, G_OPTIM, NULL,
     "plan NVLink trees only, no second tree set over PCIe"},
    {"no-tune", OPT_NO_TUNE, no_argument, G_OPTIM, NULL,
     "skip the simulated per-size choice: trees at every size, 1 MiB chunks"},
    {"explain", OPT_EXPLAIN, no_argument, G_OUTPUT, NULL,
     "print every plan: choices, solver stages and trees"},
    {"dump-ilp", OPT_DUMP_ILP, required_argument, G_OUTPUT, "FILE",
     "write the fewest-trees ILP for glpsol --lp (needs one plan)"},
    {"plan-json", OPT_PLAN_JSON, required_argument, G_OUTPUT, "FILE",
     "write the plan as JSON (- for stdout)"},

    {"dot", OPT_DOT, required_argument, G_OUTPUT, "FILE|DIR",
     "draw the plans' trees for Graphviz (- for stdout; DIR: a file per plan)"},
    {"msccl-xml", OPT_MSCCL_XML, required_argument, G_OUTPUT, "DIR",
     "write MSCCL algorithm files into DIR (per plan and sizes the trees run)"},
    {"dot-collapse-switches", OPT_DOT_COLLAPSE, no_argument, G_OUTPUT, NULL,
     "with --dot: leave switches out, one line per tree edge"},
    {"print-topology", OPT_PRINT_TOPOLOGY, no_argument, G_OUTPUT, NULL,
     "print the normalised topology and its links"},
    {"output", 'o', required_argument, G_OUTPUT, "FILE",
     "write the generated C/CUDA source for the blinkc runtime (- for stdout)"},
    {"templates", OPT_TEMPLATES, required_argument, G_OUTPUT, "DIR",
     "read the code templates from DIR instead of the built-in ones"},
    {"simulate", OPT_SIMULATE, no_argument, G_BENCH, NULL,
     "time the plans and NCCL's rings on the flow model, per size (a table)"},
    {"minbytes", 'b', required_argument, G_BENCH, "SIZE",
     "smallest size, K/M/G binary suffixes (default 1M)"},
    {"maxbytes", 'e', required_argument, G_BENCH, "SIZE", "largest size (default 256M)"},
    {"stepfactor", 'f', required_argument, G_BENCH, "N",
     "multiply the size by N between rows (default 4)"},
    {"sim-param", OPT_SIM_PARAM, required_argument, G_BENCH, "KEY=VALUE",
     "override a model parameter (blinkc(1) lists them); repeatable"},
    {"jobs", 'j', required_argument, G_BENCH, "N",
     "simulate on N threads (default: the CPUs online; same output)"},
    {"quiet", 'q', no_argument, G_DIAG, NULL, "print errors only"},
    {"debug", OPT_DEBUG, no_argument, G_DIAG, NULL,
     "on failure, also print where it passed in blinkc (as BLINKC_DEBUG=1)"},
    {"help", 'h', no_argument, G_DIAG, NULL, "print this help and exit"},
    {"version", 'V', no_argument, G_DIAG, NULL, "print the version and exit"},
};

void cli_print_help(FILE *out)
{
    fputs("Usage: blinkc [OPTIONS] [TOPOLOGY]\n"
          "Plan GPU collectives by packing spanning trees over a server's or cluster's links.\n"
          "\n"
          "TOPOLOGY is hwloc XML (lstopo), NCCL topology XML, 'nvidia-smi topo -m' output or a\n"
          "blinkc .topo or cluster file; - reads standard input, builtin:NAME an embedded\n"
          "fixture. Without it, blinkc prints the built-in DGX-1V's plans; a run that writes a\n"
          "file (-o, --plan-json, --msccl-xml, --dot, --dump-ilp) must name its TOPOLOGY.\n",
          out);
    for (int g = 0; g < G_COUNT; g++) {
        fprintf(out, "\n%s:\n", group_names[g]);
        for (size_t i = 0; i < BK_ARRAY_LEN(options); i++) {
            const struct cli_option *o = &options[i];
            if (o->group != (enum cli_group)g)
                continue;
            char left[64];
            if (o->val < 256)
                snprintf(left, sizeof left, "-%c, --%s%s%s", o->val, o->name, o->arg ? " " : "",
                         o->arg ? o->arg : "");
            else
                snprintf(left, sizeof left, "    --%s%s%s", o->name, o->arg ? " " : "",
                         o->arg ? o->arg : "");
            fprintf(out, "  %-26s %s\n", left, o->help);
        }
    }
    fputs("\nExit status: 0 success, 1 input or planning error, 2 usage error, 3 internal error.\n"
          "See blinkc(1) and blinkc-topology(5).\n",
          out);
}

/* --gpus LIST (gpu_list.h). */
static int parse_gpus(struct cli *c, const char *s, char *buf, size_t cap, const char **why)
{
    int n = gpu_list_parse(s, c->gpus, CLI_MAX_GPUS);
    c->ngpus = n > 0 ? n : 0;
    if (n > 0)
        return 1;
    if (n < 0)
        snprintf(buf, cap, "--gpus: more than %d GPUs", CLI_MAX_GPUS);
    else
        snprintf(buf, cap, "--gpus: '%.40s' is not a list of GPU numbers such as 0,1,3 or 0-3,6",
                 s);
    *why = buf;
    return 0;
}

/* A decimal number in [lo, hi] (locale-free: strtod would read "0,5" in a decimal-comma locale
 * the same way as "0.5", but blinkc never calls setlocale, so "." is the only point). */
static int parse_number(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return 0;
    *out = v;
    return 1;
}

/* nccl-tests' sizes: bytes with an optional binary K, M or G. */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double unit = *end == 'K' || *end == 'k'   ? 1024.0
                  : *end == 'M' || *end == 'm' ? 1048576.0
                  : *end == 'G' || *end == 'g' ? 1073741824.0
                                               : 1;
    if (unit > 1)
        end++;
    if (errno || end == s || *end || !(v >= 1) || v * unit > 1e15)
        return 0;
    *out = (size_t)(v * unit);
    return 1;
}

static int parse_option_value(struct cli *c, int ch, const char *arg, char *buf, size_t cap,
                              const char **why)
{
    double v;
    enum collective coll;
    switch (ch) {
    case OPT_COLLECTIVE:
        if (!collective_parse(arg, &coll)) {
            snprintf(buf, cap, "--collective: unknown collective '%.40s' (broadcast, reduce, "
                               "allreduce, allgather, reducescatter)", arg);
            break;
        }
        if (!c->collectives_given)
            c->plan.collectives = 0;
        c->collectives_given = 1;
        c->plan.collectives |= 1u << coll;
        return 1;
    case OPT_ROOT:
        if (strncmp(arg, "gpu", 3) == 0 && parse_number(arg + 3, 0, INT_MAX, &v) &&
            v == (int)v) {
            c->root_gpu = arg; /* a GPU of the allocation, found once it is known (main.c) */
            c->plan.root = 0;
            return 1;
        }
        if (!parse_number(arg, 0, CLI_MAX_GPUS - 1, &v) || v != (int)v) {
            snprintf(buf, cap, "--root: '%.40s' is neither a rank nor a GPU (gpuN)", arg);
            break;
        }
        c->root_gpu = NULL;
        c->plan.root = (int)v;
        return 1;
    case OPT_EPSILON:
        if (!parse_number(arg, 1e-4, 0.5, &v)) {
            snprintf(buf, cap, "--epsilon: '%.40s' is not a number in [0.0001, 0.5]", arg);
            break;
        }
        c->plan.epsilon = v;
        return 1;
    case OPT_TIME_LIMIT:
        if (!parse_number(arg, 1, 3600000, &v) || v != (int)v) {
            snprintf(buf, cap, "--time-limit: '%.40s' is not a whole number of ms (1 to 3600000)",
                     arg);
            break;
        }
        c->plan.time_limit_ms = (int)v;
        return 1;
    case 'b':
    case 'e':
        if (!parse_size(arg, ch == 'b' ? &c->sim.min_bytes : &c->sim.max_bytes)) {
            snprintf(buf, cap, "-%c: '%.40s' is not a size such as 8, 64K or 128M", ch, arg);
            break;
        }
        return 1;
    case 'f':
        if (!parse_number(arg, 1.0001, 1e6, &v)) {
            snprintf(buf, cap, "-f: '%.40s' is not a factor above 1", arg);
            break;
        }
        c->sim.factor = v;
        return 1;
    case OPT_SIM_PARAM: {
        const char *bad = NULL;
        if (!sim_params_set(&c->sim.params, arg, &bad)) {
            snprintf(buf, cap, "--sim-param %.40s: %s", arg, bad);
            break;
        }
        return 1;
    }
    case 'j':
        if (!parse_number(arg, 1, CLI_MAX_JOBS, &v) || v != (int)v) {
            snprintf(buf, cap, "-j: '%.40s' is not a whole number of threads from 1 to %d", arg,
                     CLI_MAX_JOBS);
            break;
        }
        c->jobs = (int)v;
        return 1;
    case OPT_SERVERS:
        if (!parse_number(arg, 2, TOPO_JOIN_MAX_SERVERS, &v) || v != (int)v) {
            snprintf(buf, cap,
                     "--servers: '%.40s' is not a whole number of servers from 2 to %d", arg,
                     TOPO_JOIN_MAX_SERVERS);
            break;
        }
        c->servers = (int)v;
        return 1;
    case OPT_NIC_GBPS:
        /* Gb/s, as NICs are sold; the model counts GB/s, and TOPO_MAX_GBPS bounds any link. */
        if (!parse_number(arg, 0, 8 * TOPO_MAX_GBPS, &v) || !(v > 0)) {
            snprintf(buf, cap, "--nic-gbps: '%.40s' is not a line rate in Gb/s (above 0, at "
                               "most %g)", arg, 8 * TOPO_MAX_GBPS);
            break;
        }
        c->nic_gbps = v / 8;
        c->nic_arg = arg;
        return 1;
    case OPT_TDPA:
        if (!parse_number(arg, 0, 1e6, &v)) {
            snprintf(buf, cap, "--tdpa: '%.40s' is not a number of microseconds (0 to 1e6)", arg);
            break;
        }
        c->plan.tdpa_us = v;
        return 1;
    default: return 0;
    }
    *why = buf;
    return 0;
}

static const struct cli_option *option_of(int val)
{
    for (size_t i = 0; i < BK_ARRAY_LEN(options); i++)
        if (options[i].val == val)
            return &options[i];
    return NULL;
}

/* Options that add to a list; any other option with a value is given once, so that a second
 * value never silently replaces the first (-o x -o y). */
static int repeatable(int val)
{
    return val == OPT_COLLECTIVE || val == OPT_LINK_RATE || val == OPT_SIM_PARAM;
}

/* A run that writes a file names the topology it is for: an empty variable in a script
 * (blinkc -o sku.cu $TOPO) must not write the built-in DGX-1V's library under its name. */
BK_MUST_USE
static enum bk_status check_topology_given(const struct cli *c, char *buf, size_t cap,
                                           const char **why)
{
#define BK_FILE(p) ((p) && strcmp((p), "-") != 0) /* standard output is read, not kept */
    const char *out = c->all_allocations ? "--all-allocations" : BK_FILE(c->output) ? "-o/--output"
                    : BK_FILE(c->plan_json) ? "--plan-json" : c->msccl_xml ? "--msccl-xml"
                    : BK_FILE(c->dot) ? "--dot" : BK_FILE(c->dump_ilp) ? "--dump-ilp" : NULL;
#undef BK_FILE
    if (c->topology || c->from_plan || !out)
        return BK_OK;
    snprintf(buf, cap, "%s writes a file, so it needs a TOPOLOGY (builtin:%s for the built-in "
                       "DGX-1V); without one blinkc only prints", out, BUILTIN_DEFAULT);
    *why = buf;
    return BK_EUSAGE;
}

/* --from-plan renders a saved plan: it reads no topology and plans nothing, so every option
 * that would change what is read or planned, and every other output, is refused. */
BK_MUST_USE
static enum bk_status check_from_plan(const struct cli *c, char *buf, size_t cap,
                                      const char **why)
{
    if (!c->from_plan)
        return BK_OK;
    const char *clash = c->topology ? "a TOPOLOGY" : c->planning_opt;
    if (!c->output)
        snprintf(buf, cap, "--from-plan goes with -o/--output (it renders code)");
    else if (clash)
        snprintf(buf, cap, "--from-plan renders a saved plan; it cannot take %s%.40s", c->topology
                 ? "" : "--", clash);
    else if (c->plan_json || c->explain || c->dump_ilp || c->print_topology || c->dot ||
             c->msccl_xml)
        snprintf(buf, cap, "--from-plan goes with -o/--output and --templates only");
    else
        return BK_OK;
    *why = buf;
    return BK_EUSAGE;
}

/* One output per stream: standard output takes one format, and no two outputs share a file. */
BK_MUST_USE
static enum bk_status check_streams(const struct cli *c, char *buf, size_t cap, const char **why)
{
    const char *path[] = {c->output, c->plan_json, c->dump_ilp, c->dot};
    const char *name[] = {"-o", "--plan-json", "--dump-ilp", "--dot"};
    const char *printer = c->simulate ? "--simulate" : c->explain ? "--explain"
                        : c->print_topology ? "--print-topology" : NULL;
    for (size_t i = 0; i < BK_ARRAY_LEN(path); i++)
        for (size_t j = i + 1; path[i] && j < BK_ARRAY_LEN(path); j++)
            if (path[j] && ((strcmp(path[i], "-") == 0 && strcmp(path[j], "-") == 0) ||
                            outfile_same_file(path[i], path[j]))) {
                int as = strcmp(path[i], path[j]) != 0; /* "./x" and "x" */
                snprintf(buf, cap, "%s and %s both write to %s%.40s%s%.40s%s: give each its own "
                         "file", name[i], name[j], strcmp(path[i], "-") ? "" : "standard output ",
                         strcmp(path[i], "-") ? path[i] : "(-)", as ? " (as " : "",
                         as ? path[j] : "", as ? ")" : "");
                *why = buf;
                return BK_EUSAGE;
            }
    for (size_t i = 0; printer && i < BK_ARRAY_LEN(path); i++)
        if (path[i] && strcmp(path[i], "-") == 0) {
            snprintf(buf, cap, "%s prints to standard output, so %s needs a file, not -", printer,
                     name[i]);
            *why = buf;
            return BK_EUSAGE;
        }
    return BK_OK;
}

/* One model per file: --dump-ilp needs a selection that makes exactly one plan. */
BK_MUST_USE
static enum bk_status check_dump_ilp(const struct cli *c, char *buf, size_t cap, const char **why)
{
    unsigned m = c->plan.collectives;
    if (!c->dump_ilp)
        return BK_OK;
    int one = c->collectives_given && m && !(m & (m - 1));
    int rooted = m & ((1u << COLL_BROADCAST) | (1u << COLL_REDUCE));
    if (one && (!rooted || c->plan.root >= 0))
        return BK_OK;
    snprintf(buf, cap, "--dump-ilp writes one model: choose one plan with --collective (and "
                       "--root for broadcast or reduce)");
    *why = buf;
    return BK_EUSAGE;
}

enum bk_status cli_parse(struct cli *c, int argc, char **argv, char *buf, size_t cap,
                         const char **why)
{
    memset(c, 0, sizeof *c);
    topo_read_opts_default(&c->read);
    plan_opts_default(&c->plan);
    c->tune = 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    c->jobs = cpus < 1 ? 1 : cpus > CLI_MAX_JOBS ? CLI_MAX_JOBS : (int)cpus;
    sim_report_opts_default(&c->sim);
    struct option longopts[BK_ARRAY_LEN(options) + 1];
    char shortopts[2 * BK_ARRAY_LEN(options) + 2] = ":";
    size_t ns = 1;
    for (size_t i = 0; i < BK_ARRAY_LEN(options); i++) {
        longopts[i] = (struct option){options[i].name, options[i].has_arg, NULL, options[i].val};
        if (options[i].val < 256) {
            shortopts[ns++] = (char)options[i].val;
            if (options[i].has_arg)
                shortopts[ns++] = ':';
        }
    }
    shortopts[ns] = '\0';
    longopts[BK_ARRAY_LEN(options)] = (struct option){0};
    optind = 1;
    opterr = 0;
    int ch;
    unsigned char given[BK_ARRAY_LEN(options)] = {0};
    while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        const char *rate_why = NULL;
        const struct cli_option *opt = option_of(ch);
        if (opt && opt->has_arg && !repeatable(ch) && given[opt - options]++) {
            snprintf(buf, cap, "--%s given twice (the second is '%.40s'): give it once",
                     opt->name, optarg);
            *why = buf;
            return BK_EUSAGE;
        }
        if (opt && opt->group != G_OUTPUT && opt->group != G_DIAG && ch != OPT_FROM_PLAN &&
            ch != 'j')
            c->planning_opt = opt->name; /* what --from-plan cannot honour */
        switch (ch) {
        case OPT_FORMAT:
            if (!topo_format_parse(optarg, &c->read.format)) {
                snprintf(buf, cap,
                         "--format: unknown format '%.40s' (text, hwloc, nccl, smi, cluster)",
                         optarg);
                *why = buf;
                return BK_EUSAGE;
            }
            break;
        case OPT_GPUS:
            if (!parse_gpus(c, optarg, buf, cap, why))
                return BK_EUSAGE;
            break;
        case OPT_GPU_MODEL:
            if (!topo_gpu_part_find(optarg)) { /* every part of the parts table */
                char names[160];
                snprintf(buf, cap, "--gpu-model: unknown GPU '%.40s' (known: %s)", optarg,
                         topo_gpu_part_names(names, sizeof names));
                *why = buf;
                return BK_EUSAGE;
            }
            c->read.gpu_model = optarg;
            break;
        case OPT_LINK_RATE:
            if (!topo_rates_override(&c->read.rates, optarg, &rate_why)) {
                snprintf(buf, cap, "--link-rate %.40s: %s", optarg, rate_why);
                *why = buf;
                return BK_EUSAGE;
            }
            break;
        case OPT_COLLECTIVE:
        case OPT_ROOT:
        case OPT_EPSILON:
        case OPT_TIME_LIMIT:
        case OPT_TDPA:
        case OPT_SERVERS:
        case OPT_NIC_GBPS:
        case 'b':
        case 'e':
        case 'f':
        case OPT_SIM_PARAM:
        case 'j':
            if (!parse_option_value(c, ch, optarg, buf, cap, why))
                return BK_EUSAGE;
            break;
        case OPT_NO_HYBRID: c->plan.hybrid = 0; break;
        case OPT_NO_P2P: c->read.no_p2p = 1; break;
        case OPT_NO_TUNE: c->tune = 0; break;
        case OPT_EXPLAIN: c->explain = 1; break;
        case OPT_DUMP_ILP: c->dump_ilp = optarg; break;
        case OPT_PLAN_JSON: c->plan_json = optarg; break;
        case OPT_FROM_PLAN: c->from_plan = optarg; break;
        case OPT_PRINT_TOPOLOGY: c->print_topology = 1; break;
        case 'o': c->output = optarg; break;
        case OPT_TEMPLATES: c->templates = optarg; break;
        case OPT_ALL_ALLOCATIONS: c->all_allocations = 1; break;
        case OPT_DOT: c->dot = optarg; break;
        case OPT_MSCCL_XML: c->msccl_xml = optarg; break;
        case OPT_DOT_COLLAPSE: c->dot_collapse = 1; break;
        case OPT_SIMULATE: c->simulate = 1; break;
        case 'q': c->quiet = 1; break;
        case OPT_DEBUG: c->debug = 1; break;
        case 'h': c->help = 1; break;
        case 'V': c->version = 1; break;
        case ':':
            snprintf(buf, cap, "option '%.40s' needs an argument", argv[optind - 1]);
            *why = buf;
            return BK_EUSAGE;
        default:
            snprintf(buf, cap, "unknown option '%.40s'", argv[optind - 1]);
            *why = buf;
            return BK_EUSAGE;
        }
    }
    if (optind < argc)
        c->topology = argv[optind++];
    if (optind < argc) {
        snprintf(buf, cap, "more than one TOPOLOGY given ('%.40s')", argv[optind]);
        *why = buf;
        return BK_EUSAGE;
    }
    if (c->all_allocations && (!c->output || c->ngpus || c->plan_json || c->explain ||
                               c->dump_ilp || c->print_topology || c->dot || c->msccl_xml)) {
        snprintf(buf, cap, "--all-allocations goes with -o/--output only (not with --gpus, "
                           "--plan-json, --explain, --dump-ilp, --dot, --msccl-xml or "
                           "--print-topology)");
        *why = buf;
        return BK_EUSAGE;
    }
    if (c->nic_gbps > 0 && !c->servers) {
        snprintf(buf, cap, "--nic-gbps goes with --servers (a cluster file sets its NICs' rate "
                           "with a nic-speed line)");
        *why = buf;
        return BK_EUSAGE;
    }
    if (c->sim.min_bytes > c->sim.max_bytes) {
        snprintf(buf, cap, "-b %zu is above -e %zu", c->sim.min_bytes, c->sim.max_bytes);
        *why = buf;
        return BK_EUSAGE;
    }
    if (c->templates && !c->output) {
        snprintf(buf, cap, "--templates only matters with -o/--output");
        *why = buf;
        return BK_EUSAGE;
    }
    if (c->dot_collapse && !c->dot) {
        snprintf(buf, cap, "--dot-collapse-switches goes with --dot");
        *why = buf;
        return BK_EUSAGE;
    }
    BK_CHECK(check_from_plan(c, buf, cap, why));
    BK_CHECK(check_streams(c, buf, cap, why));
    BK_CHECK(check_dump_ilp(c, buf, cap, why));
    return check_topology_given(c, buf, cap, why);
}
