/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cli.c - the option table, option parsing and --help (see cli.h).
 *
 * Groups follow the house convention: input, optimisation, code generation, benchmark,
 * diagnostics. A group with no options yet is simply not printed.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum cli_group { G_INPUT, G_OUTPUT, G_DIAG, G_COUNT };
static const char *const group_names[G_COUNT] = {"Input", "Output", "Diagnostics"};

enum opt_id {
    OPT_FORMAT = 256,
    OPT_GPUS,
    OPT_GPU_MODEL,
    OPT_LINK_RATE,
    OPT_PLAN_JSON,
    OPT_PRINT_TOPOLOGY,
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
     "input format: text, hwloc, nccl, smi (default: detect)"},
    {"gpus", OPT_GPUS, required_argument, G_INPUT, "LIST",
     "plan for these GPUs only (0,1,3 or 0-3,6), in rank order"},
    {"gpu-model", OPT_GPU_MODEL, required_argument, G_INPUT, "NAME",
     "GPU where the input names none: P100 ... B200"},
    {"link-rate", OPT_LINK_RATE, required_argument, G_INPUT, "KEY=GBPS",
     "override a default rate (nvlink1-5, pcie1-6, smp, net)"},
    {"plan-json", OPT_PLAN_JSON, required_argument, G_OUTPUT, "FILE",
     "write the plan as JSON (- for stdout)"},
    {"print-topology", OPT_PRINT_TOPOLOGY, no_argument, G_OUTPUT, NULL,
     "print the normalised topology and its links"},
    {"quiet", 'q', no_argument, G_DIAG, NULL, "print errors only"},
    {"help", 'h', no_argument, G_DIAG, NULL, "print this help and exit"},
    {"version", 'V', no_argument, G_DIAG, NULL, "print the version and exit"},
};

void cli_print_help(FILE *out)
{
    fputs("Usage: blinkc [OPTIONS] [TOPOLOGY]\n"
          "Plan GPU collectives by packing spanning trees over a server's or cluster's links.\n"
          "\n"
          "TOPOLOGY is hwloc XML (lstopo), NCCL topology XML, 'nvidia-smi topo -m' output or a\n"
          "blinkc .topo file; - reads standard input, builtin:NAME an embedded fixture. Without\n"
          "it, blinkc uses the built-in DGX-1V.\n",
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

/* "0,1,3" or "0-3,6": strictly decimal, bounded. */
static int parse_gpus(struct cli *c, const char *s, char *buf, size_t cap, const char **why)
{
    c->ngpus = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        if (*p < '0' || *p > '9')
            goto bad;
        long a = strtol(p, &end, 10), b = a;
        if (errno || a > 1000000)
            goto bad;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                goto bad;
            b = strtol(p, &end, 10);
            if (errno || b < a || b > 1000000)
                goto bad;
            p = end;
        }
        for (long g = a; g <= b; g++) {
            if (c->ngpus == CLI_MAX_GPUS) {
                snprintf(buf, cap, "--gpus: more than %d GPUs", CLI_MAX_GPUS);
                *why = buf;
                return 0;
            }
            c->gpus[c->ngpus++] = (int)g;
        }
        if (*p == ',' && p[1])
            p++;
        else if (*p)
            goto bad;
    }
    if (c->ngpus > 0)
        return 1;
bad:
    snprintf(buf, cap, "--gpus: '%.40s' is not a list of GPU numbers such as 0,1,3 or 0-3,6", s);
    *why = buf;
    return 0;
}

enum bk_status cli_parse(struct cli *c, int argc, char **argv, char *buf, size_t cap,
                         const char **why)
{
    memset(c, 0, sizeof *c);
    topo_read_opts_default(&c->read);
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
    while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        const char *rate_why = NULL;
        switch (ch) {
        case OPT_FORMAT:
            if (!topo_format_parse(optarg, &c->read.format)) {
                snprintf(buf, cap, "--format: unknown format '%.40s' (text, hwloc, nccl, smi)",
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
            if (!topo_gpu_model_gen(optarg)) {
                snprintf(buf, cap,
                         "--gpu-model: unknown GPU '%.40s' (P100, V100, A100, H100, H200, B200)",
                         optarg);
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
        case OPT_PLAN_JSON: c->plan_json = optarg; break;
        case OPT_PRINT_TOPOLOGY: c->print_topology = 1; break;
        case 'q': c->quiet = 1; break;
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
    return BK_OK;
}
