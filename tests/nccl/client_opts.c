/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * client_opts.c - nccl_client's command line (usage below) and the buffer size a run needs.
 */
#include "client.h"

static const size_t default_counts[] = {0, 1, 2, 3, 7, 31, 1021, 4096, 65537};
static const size_t quick_counts[] = {0, 1, 3, 31, 1021};

/* ------------------------------------------------------------------ options */

static void usage(FILE *f)
{
    fputs("Usage: nccl_client [OPTION]...   (under mpirun, one process per rank)\n"
          "  -C, --colls LIST      broadcast,reduce,allreduce,allgather,reducescatter; all; none\n"
          "  -d, --datatypes LIST  int8,uint8,int32,uint32,int64,uint64,float16,float32,\n"
          "                        float64,bfloat16; or all\n"
          "  -o, --ops LIST        sum,prod,max,min,avg; or all\n"
          "  -r, --roots LIST      roots of broadcast and reduce; or all\n"
          "  -n, --counts LIST     element counts (default 0,1,2,3,7,31,1021,4096,65537, and\n"
          "                        1000003 for float32)\n"
          "  -Q, --quick           counts 0,1,3,31,1021\n"
          "  -p, --place WHICH     out, in or both\n"
          "  -s, --seed N          input seed\n"
          "  -q, --quiet           no version line\n"
          "      --split           then allreduce on ncclCommSplit(comm, rank % 2, rank)\n"
          "      --register        both buffers registered with ncclCommRegister\n"
          "      --fresh           new buffers (ncclMemAlloc) for every collective, type and op\n"
          "  -X, --xfail WHAT      only one call: p2p, alltoall, premulsum, fp8, allreduce\n"
          "      --expect CODE     the ncclResult_t it must give (default 0)\n"
          "  -h, --help            this text\n", f);
}

/* The next comma-separated item of *s into item; 0 at the end, -1 if too long. */
static int next_item(const char **s, char *item, size_t len)
{
    if (!*s)
        return 0;
    const char *comma = strchr(*s, ',');
    size_t k = comma ? (size_t)(comma - *s) : strlen(*s);
    if (k >= len)
        return -1;
    memcpy(item, *s, k);
    item[k] = '\0';
    *s = comma ? comma + 1 : NULL;
    return 1;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (!*s || *s == '-' || *end || errno || x > max)
        return -1;
    *v = x;
    return 0;
}

/* A list of the names in table (each entry's first member, entries stride bytes apart). */
static int parse_names(const char *s, const void *table, size_t stride, int count,
                       unsigned *mask)
{
    char item[32];
    int got;
    *mask = strcmp(s, "all") == 0 ? (1u << count) - 1 : 0;
    if (*mask || strcmp(s, "none") == 0)
        return 0;
    while ((got = next_item(&s, item, sizeof item)) > 0) {
        int k = 0;
        while (k < count && strcmp(item, *(const char *const *)(const void *)
                                   ((const char *)table + (size_t)k * stride)) != 0)
            k++;
        if (k == count)
            return -1;
        *mask |= 1u << k;
    }
    return got;
}

/* A list of numbers up to max into out; their number, or -1. */
static int parse_numbers(const char *s, uint64_t max, uint64_t *out)
{
    char item[32];
    int k = 0, got;
    while ((got = next_item(&s, item, sizeof item)) > 0)
        if (k == MAX_LIST || parse_u64(item, max, &out[k++]) != 0)
            return -1;
    return got < 0 || k == 0 ? -1 : k;
}

/* -1 to go on; otherwise the exit status (0 for --help, 2 for a usage error). */
int parse(int argc, char **argv, int nranks, struct opts *o)
{
    static const struct option longs[] = {
        {"colls", required_argument, NULL, 'C'}, {"datatypes", required_argument, NULL, 'd'},
        {"ops", required_argument, NULL, 'o'},   {"roots", required_argument, NULL, 'r'},
        {"counts", required_argument, NULL, 'n'}, {"quick", no_argument, NULL, 'Q'},
        {"place", required_argument, NULL, 'p'}, {"seed", required_argument, NULL, 's'},
        {"quiet", no_argument, NULL, 'q'},       {"split", no_argument, NULL, 'S'},
        {"xfail", required_argument, NULL, 'X'}, {"expect", required_argument, NULL, 'E'},
        {"register", no_argument, NULL, 'R'},    {"fresh", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t v[MAX_LIST];
    int opt, k, quick = 0;
    memset(o, 0, sizeof *o);
    o->colls = (1u << NCOLLS) - 1;
    o->types = (1u << NTYPES) - 1;
    o->ops = (1u << NOPS) - 1;
    o->places = 3;
    o->seed = 1;
    o->ncounts = -1;
    opterr = world_rank == 0;
    while ((opt = getopt_long(argc, argv, "C:d:o:r:n:Qp:s:qX:h", longs, NULL)) != -1) {
        const char *bad = NULL;
        switch (opt) {
        case 'C':
            bad = parse_names(optarg, colls, sizeof colls[0], NCOLLS, &o->colls) ? "-C" : NULL;
            break;
        case 'd':
            bad = parse_names(optarg, dtypes, sizeof dtypes[0], NTYPES, &o->types) ? "-d" : NULL;
            break;
        case 'o':
            bad = parse_names(optarg, ops, sizeof ops[0], NOPS, &o->ops) ? "-o" : NULL;
            break;
        case 'r':
            o->nroots = 0;
            if (strcmp(optarg, "all") != 0 &&
                (o->nroots = parse_numbers(optarg, (uint64_t)nranks - 1, v)) < 0)
                bad = "-r (roots must be below the rank count)";
            for (k = 0; k < o->nroots; k++)
                o->roots[k] = (int)v[k];
            break;
        case 'n':
            /* 2^32 elements at most: counts times ranks times 8 bytes must not overflow. */
            if ((o->ncounts = parse_numbers(optarg, (uint64_t)1 << 32, v)) < 0)
                bad = "-n";
            for (k = 0; k < o->ncounts; k++)
                o->counts[k] = (size_t)v[k];
            break;
        case 'Q': quick = 1; break;
        case 'p':
            o->places = strcmp(optarg, "out") == 0 ? 1 : strcmp(optarg, "in") == 0 ? 2
                      : strcmp(optarg, "both") == 0 ? 3 : 0;
            bad = o->places ? NULL : "-p";
            break;
        case 's': bad = parse_u64(optarg, UINT64_MAX, &o->seed) ? "-s" : NULL; break;
        case 'q': o->quiet = 1; break;
        case 'S': o->split = 1; break;
        case 'R': o->reg = 1; break;
        case 'F': o->fresh = 1; break;
        case 'X':
            o->xfail = optarg;
            bad = strcmp(optarg, "p2p") && strcmp(optarg, "alltoall") &&
                  strcmp(optarg, "premulsum") && strcmp(optarg, "fp8") &&
                  strcmp(optarg, "allreduce") ? "-X" : NULL;
            break;
        case 'E':
            v[0] = 0;
            bad = parse_u64(optarg, ncclNumResults - 1, &v[0]) ? "--expect" : NULL;
            o->expect = (int)v[0];
            break;
        case 'h':
            if (world_rank == 0)
                usage(stdout);
            return 0;
        default: bad = "";
        }
        if (bad) {
            if (world_rank == 0 && *bad)
                fprintf(stderr, "nccl_client: bad %s argument '%s'\n", bad, optarg);
            if (world_rank == 0)
                fputs("Try 'nccl_client --help'\n", stderr);
            return 2;
        }
    }
    if (optind < argc) {
        if (world_rank == 0)
            fprintf(stderr, "nccl_client: unexpected '%s'\nTry 'nccl_client --help'\n",
                    argv[optind]);
        return 2;
    }
    if (o->ncounts < 0) {
        const size_t *c = quick ? quick_counts : default_counts;
        o->ncounts = quick ? (int)LEN(quick_counts) : (int)LEN(default_counts);
        memcpy(o->counts, c, (size_t)o->ncounts * sizeof *c);
        o->big = !quick;
    }
    return -1;
}

/* The bytes each buffer needs for every case selected. */
size_t need_bytes(const struct opts *o, int n)
{
    size_t most = (size_t)(4 * n + 16 + GUARD) * 8, counts[MAX_LIST + 1];
    size_t mult = o->colls & ((1u << ALLGATHER) | (1u << REDUCESCATTER)) ? (size_t)n : 1;
    for (int ti = 0; ti < NTYPES && !o->xfail; ti++)
        for (int k = 0, nc = type_counts(o, &dtypes[ti], counts); k < nc; k++)
            if (o->types & (1u << ti) && o->colls) {
                size_t b = (counts[k] * mult + GUARD) * (size_t)dtypes[ti].size;
                most = b > most ? b : most;
            }
    if (o->split && (split_counts[LEN(split_counts) - 1] + GUARD) * 4 > most)
        most = (split_counts[LEN(split_counts) - 1] + GUARD) * 4;
    return most;
}
