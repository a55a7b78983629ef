/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * blink_perf.c - blink-perf, the nccl-tests of blinkc: times one collective of a generated
 * source over a range of sizes, out of place and in place, and checks every element.
 *
 *   blink-perf -b 8 -e 128M -f 2                      (all_reduce_perf's flags and defaults)
 *   blink-perf --collective all_gather --devices 0,2,3 --procs -b 8 -e 1M -f 4
 *   mpirun -np 8 ... blink-perf --mpi --collective allreduce -b 8 -e 16M -f 4
 *
 * It takes nccl-tests' flags with their meanings (usage() has the table; those that cannot
 * apply to the runtime are accepted with a note on stderr), the collective in either spelling
 * (allreduce, all_reduce; also from argv[0], as all_reduce_perf), devices as lists and ranges
 * in any order, and by default the ranks and devices of the largest plan it links. Its columns
 * and footer are nccl-tests' (size, count, type, redop, root, time, algbw, busbw, #wrong; "Out
 * of bounds values", "Avg bus bandwidth"). It links one generated source and one runtime
 * backend (the in-tree build also a tuned plan it puts first: BLINK_PERF_TUNED below), and
 * runs the ranks one of three ways:
 *  - threads (default): blinkCommInitAll's way, and every rank driven from this thread between
 *    blinkGroupStart and blinkGroupEnd, as nccl-tests does with -t 1 -g N;
 *  - processes (--procs), as a job launcher runs them: blinkGetUniqueId here, then one child
 *    per rank plays its device (BLINK_DEVICE; on CUDA also the current device), joins with
 *    blinkCommInitRank, allocates only its own buffers and times its own calls. Children send
 *    their times and wrong counts up a pipe; this process prints the ranks' time (-a) and every
 *    rank's wrong elements. A child that dies, or no rank progressing for BLINK_TIMEOUT_S plus
 *    a margin, makes it kill the others: a run never hangs;
 *  - MPI (--mpi, only where the build defines BLINK_PERF_MPI): this process is one rank of an
 *    mpirun job, as a cluster plan runs across servers. MPI rank 0 makes the unique id and
 *    broadcasts it, every rank joins with blinkCommInitRank (its server: BLINK_SERVER, else
 *    the host name; its device: BLINK_DEVICE, or its entry of --devices), and after each
 *    half-row MPI_Reduce brings the ranks' time (-a) and the sum of wrong elements to rank 0,
 *    which prints. Every rank exits with the job's worst status (MPI_Allreduce) and calls
 *    MPI_Finalize.
 * All ways run the same per-rank code (fill, call, check), so they check the same values.
 * Exit status: 0 when every element was right, 1 when some were wrong or a call or a rank
 * failed, 2 for a usage error.
 *
 * Checked values are small integers (and powers of two for prod), so every datatype holds every
 * partial result exactly and the reference (perf_ranks.c) needs no tolerance except for avg of
 * floats.
 *
 * This file holds the options, the threads mode and main; perf.h names the others by job.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fork; users build these files on their own */
#define _DEFAULT_SOURCE         /* MAP_ANONYMOUS */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef BLINK_PERF_MPI
#include <mpi.h>
#endif


#include "perf.h"

const char *const coll_names[C_COUNT] = {"broadcast", "reduce", "allreduce", "allgather",
                                                "reducescatter"};
const char *const type_names[blinkNumTypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16"};
const size_t type_sizes[blinkNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
const char *const op_names[blinkNumOps] = {"sum", "prod", "max", "min", "avg"};

/* ---------------------------------------------------------------- ranks as threads */

struct threads_ctx {
    const struct opts *o;
    const struct local *l;
};

static int threads_half(void *ctx, const struct opts *o, size_t count, int in_place,
                        struct half *h)
{
    const struct threads_ctx *c = ctx;
    return measure(o, c->l, count, in_place, h);
}

/* Every rank in this process, each call issued for all of them from this thread. */
static int run_threads(const struct opts *o)
{
    blinkComm_t comms[MAX_RANKS];
    blinkResult_t res = blinkrtCommInitAllFrom(o->lib, comms, o->ndev,
                                               o->ndevices ? o->devices : NULL);
    if (res != blinkSuccess) {
        fprintf(stderr, "blink-perf: blinkCommInitAll: %s: %s\n", blinkGetErrorString(res),
                blinkGetLastError(NULL));
        return 1;
    }
    struct local l;
    memset(&l, 0, sizeof l);
    l.n = o->ndev;
    for (int r = 0; r < l.n; r++) {
        l.rank[r].rank = r;
        l.rank[r].comm = comms[r];
    }
    struct blinkrt_stats st;
    int ok = local_open(o, &l) && blinkrtCommStats(comms[0], &st) == blinkSuccess;
    struct tally t = {0, 0, 0};
    if (!ok) {
        fprintf(stderr, "blink-perf: cannot allocate buffers or streams\n");
    } else {
        print_header(o, &st);
        struct threads_ctx c = {o, &l};
        if (!(ok = print_rows(o, threads_half, &c, &t)))
            fprintf(stderr, "blink-perf: %s\n", blinkGetLastError(NULL));
        print_footer(&t, ok);
    }
    local_close(o, &l);
    return ok && t.wrong == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------- command line */

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    double mult = 1;
    switch (*end) {
    case 'K': case 'k': mult = 1024.0; end++; break;
    case 'M': case 'm': mult = 1024.0 * 1024; end++; break;
    case 'G': case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (end == s || *end != '\0' || !(v >= 0) || v * mult > 1e15)
        return 0;
    *out = (size_t)(v * mult);
    return 1;
}

/* "0,2,3", "4-7", "5,1,4", "0-2,5": the job's devices in rank order, each once (a range may
 * run down: "7-4"). */
static int parse_devices(const char *s, struct opts *o)
{
    o->ndevices = 0;
    for (const char *p = s; *p;) {
        char *end;
        if (*p < '0' || *p > '9')
            return 0;
        long lo = strtol(p, &end, 10), hi = lo;
        if (*end == '-') {
            const char *q = end + 1;
            if (*q < '0' || *q > '9')
                return 0;
            hi = strtol(q, &end, 10);
        }
        if (lo > 1 << 20 || hi > 1 << 20 || (*end && *end != ',') || (*end == ',' && !end[1]))
            return 0;
        for (long v = lo;; v += lo <= hi ? 1 : -1) {
            for (int i = 0; i < o->ndevices; i++)
                if (o->devices[i] == v)
                    return 0; /* a device twice */
            if (o->ndevices == MAX_RANKS)
                return 0;
            o->devices[o->ndevices++] = (int)v;
            if (v == hi)
                break;
        }
        p = *end ? end + 1 : end;
    }
    return o->ndevices > 0;
}

/* A collective in nccl-tests' spelling or ours, any case, with or without nccl-tests'
 * "_perf" (all_reduce_perf). */
static int parse_coll(const char *s, enum coll *out)
{
    static const struct { const char *name; enum coll c; } names[] = {
        {"broadcast", C_BROADCAST}, {"reduce", C_REDUCE}, {"allreduce", C_ALLREDUCE},
        {"all_reduce", C_ALLREDUCE}, {"allgather", C_ALLGATHER}, {"all_gather", C_ALLGATHER},
        {"reducescatter", C_REDUCESCATTER}, {"reduce_scatter", C_REDUCESCATTER}};
    size_t n = strlen(s);
    if (n > 5 && !strcasecmp(s + n - 5, "_perf"))
        n -= 5;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && !strncasecmp(s, names[i].name, n)) {
            *out = names[i].c;
            return 1;
        }
    return 0;
}

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static int parse_type(const char *s, blinkDataType_t *out)
{
    static const struct { const char *name; blinkDataType_t t; } alias[] = {
        {"char", blinkInt8}, {"int", blinkInt32}, {"float16", blinkFloat16},
        {"float32", blinkFloat32}, {"float64", blinkFloat64}, {"bf16", blinkBfloat16}};
    int k = lookup(s, type_names, blinkNumTypes);
    if (k >= 0) {
        *out = (blinkDataType_t)k;
        return 1;
    }
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (strcmp(s, alias[i].name) == 0) {
            *out = alias[i].t;
            return 1;
        }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: blink-perf [OPTIONS]\n"
"Time and check one collective of the linked blinkc plans, as nccl-tests does (its flags,\n"
"columns and footer).\n\n"
"nccl-tests' flags, with their meanings:\n"
"  -t, --nthreads N          threads per process: a process runs t x g ranks (default 1),\n"
"                            all driven from one thread in a group\n"
"  -g, --ngpus N             GPUs per thread (default 1). Without -t, -g or --devices: the\n"
"                            ranks and devices of the largest linked plan\n"
"  -b, --minbytes SIZE       smallest size (default 32M; K, M, G suffixes)\n"
"  -e, --maxbytes SIZE       largest size (default 32M)\n"
"  -i, --stepbytes SIZE      add this between sizes (default 1M)\n"
"  -f, --stepfactor F        multiply by this between sizes instead (default 1: off)\n"
"  -n, --iters N             timed iterations (default 20)\n"
"  -w, --warmup_iters N      untimed calls first (default 5)\n"
"  -m, --agg_iters N         calls per timed iteration, in one group (default 1)\n"
"  -N, --run_cycles N        sweep every size N times (default 1; 0: until killed)\n"
"  -c, --check N             checked calls per size and placement (default 1; 0: none)\n"
"  -o, --op OP               sum (default), prod, max, min, avg, or all (a sweep each)\n"
"  -d, --datatype TYPE       int8, uint8, int32, uint32, int64, uint64, half, float\n"
"                            (default), double, bfloat16, or all\n"
"  -r, --root N              root of broadcast and reduce (default 0), or all\n"
"  -z, --blocking 0|1        1: wait for each timed call; 0 (default): for the last\n"
"  -C, --report_cputime 0|1  1: time the issuing of the calls (column 'cputime')\n"
"  -a, --average 0-3         the ranks' time (--procs, --mpi): 0 rank 0's, 1 the mean\n"
"                            (default), 2 the least, 3 the most\n"
"  -T, --timeout S           BLINK_TIMEOUT_S=S: a rank that waits longer fails its call\n"
"  -R, --local_register N    1 or 2: register each rank's send and receive buffers\n"
"                            (blinkCommRegister, from blinkMemAlloc, so that with --procs\n"
"                            parents write their children's outputs);\n"
"                            0 (default): none\n"
"  -G, --cudagraph N         the -n timed iterations captured in a CUDA graph per rank,\n"
"                            replayed N times (after one untimed replay); 0 (default):\n"
"                            issued one by one. CUDA backend only (ignored with a note\n"
"                            on the host backend)\n"
"  accepted and ignored with a note, for the runtime has nothing like them:\n"
"  -p, --parallel_init       (every rank's init runs on a thread of its own anyway)\n"
"  -y, --stream_null         (each rank runs on a stream of its own)\n"

"  -x, --cta_policy, -D N (--device_implementation), -V, --device_cta_count,\n"
"  -M, --memory_report, -S, --report_timestamps, -J, --output_file (NCCL 2.27+)\n\n"
"blink-perf's own:\n"
"      --collective NAME     broadcast, reduce, allreduce (default), allgather,\n"
"                            reducescatter; or all_reduce, all_gather, reduce_scatter;\n"
"                            run as all_gather_perf (a link), the name says it.\n"
"                            -C NAME still works\n"
"      --devices LIST        the job's devices in rank order, e.g. 0,2,3 or 4-7 or\n"
"                            5,1,4; sets the ranks. -D LIST (a list or a range) still\n"
"                            works\n"
"      --procs               a process per rank (blinkCommInitRank, BLINK_DEVICE set to\n"
"                            its device); default: one thread drives every rank in a\n"
"                            group (blinkCommInitAll). A rank that dies, or none\n"
"                            progressing for BLINK_TIMEOUT_S + %g s, gets the others\n"
"                            killed. Was -N, which is nccl-tests' now\n"
"      --mpi                 this process is one rank of an MPI job, one process per\n"
"                            rank (mpirun -np N blink-perf --mpi ...), as a cluster plan\n"
"                            runs across servers: MPI rank 0 makes the unique id,\n"
"                            every rank joins with blinkCommInitRank. A rank's server:\n"
"                            BLINK_SERVER, else its host name; its device: its entry of\n"
"                            --devices, else BLINK_DEVICE. Ranks: the job's size; rank 0\n"
"                            prints the table; every rank exits with the job's status.\n"
"                            Was -M, which is nccl-tests' now%s\n"
"      --hbm-gbps R          all ranks on one GPU that copies R GB/s (read + write):\n"
"                            print the bound that puts on the protocol's bytes and\n"
"                            each row's algbw as %%bound of it (tools/gpu-check)\n"
"  -h, --help                this text\n\n"
"BLINK_DEVICE_MAP=0,0,0,0 runs every rank of every mode on GPU 0 (CUDA): a rank\n"
"runs on its entry there and plays its device of --devices.\n"
"Backend: " BACKEND_NAME ". Exit status: 0 all right, 1 wrong elements or a failed\n"
"call or rank, 2 usage error.\n", MARGIN_S,
#ifdef BLINK_PERF_MPI
            ""
#else
            ".\n                            Not in this build: it was built without MPI"
#endif
    );
}

/* An nccl-tests flag that cannot apply here: accepted, and said so. */
static void note(int c, const char *arg, const char *why)
{
    fprintf(stderr, "blink-perf: note: -%c %s ignored: %s\n", c, arg ? arg : "", why);
}

/* The value of an integer flag: the whole argument, in [lo, hi]. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

enum { OPT_COLLECTIVE = 256, OPT_DEVICES, OPT_PROCS, OPT_MPI, OPT_HBM };

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        {"nthreads", required_argument, NULL, 't'},    {"ngpus", required_argument, NULL, 'g'},
        {"minbytes", required_argument, NULL, 'b'},    {"maxbytes", required_argument, NULL, 'e'},
        {"stepbytes", required_argument, NULL, 'i'},   {"stepfactor", required_argument, NULL, 'f'},
        {"iters", required_argument, NULL, 'n'},       {"agg_iters", required_argument, NULL, 'm'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"run_cycles", required_argument, NULL, 'N'},
        {"parallel_init", required_argument, NULL, 'p'},
        {"check", required_argument, NULL, 'c'},       {"op", required_argument, NULL, 'o'},
        {"datatype", required_argument, NULL, 'd'},    {"root", required_argument, NULL, 'r'},
        {"blocking", required_argument, NULL, 'z'},
        {"stream_null", required_argument, NULL, 'y'},
        {"timeout", required_argument, NULL, 'T'},     {"cudagraph", required_argument, NULL, 'G'},
        {"report_cputime", required_argument, NULL, 'C'},
        {"average", required_argument, NULL, 'a'},
        {"local_register", required_argument, NULL, 'R'},
        {"cta_policy", required_argument, NULL, 'x'},
        {"device_implementation", required_argument, NULL, 'D'},
        {"device_cta_count", required_argument, NULL, 'V'},
        {"memory_report", required_argument, NULL, 'M'}, {"memory", required_argument, NULL, 'M'},
        {"report_timestamps", required_argument, NULL, 'S'},
        {"output_file", required_argument, NULL, 'J'},
        {"collective", required_argument, NULL, OPT_COLLECTIVE},
        {"devices", required_argument, NULL, OPT_DEVICES},
        {"procs", no_argument, NULL, OPT_PROCS},       {"mpi", no_argument, NULL, OPT_MPI},
        {"hbm-gbps", required_argument, NULL, OPT_HBM},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    static const char shorts[] = "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:";
    int c, k, ok = 1, n;
    long v;
    char *end, *hbm_end;
    while (ok && (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const char *why = NULL; /* a usage error's own words, else "bad value" */
        switch (c) {
        case 't':
        case 'g':
            ok = parse_long(optarg, 1, MAX_RANKS, &v);
            *(c == 't' ? &o->nthreads : &o->ngpus) = (int)v;
            o->count_given = 1;
            break;
        case 'b': ok = parse_size(optarg, &o->min_bytes); break;
        case 'e': ok = parse_size(optarg, &o->max_bytes); break;
        case 'i': ok = parse_size(optarg, &o->step_bytes) && o->step_bytes > 0; break;
        case 'f':
            o->factor = strtod(optarg, &end);
            ok = end != optarg && !*end && o->factor >= 1;
            break;
        case 'n': ok = parse_long(optarg, 0, 1000000, &v); o->iters = (int)v; break;
        case 'w': ok = parse_long(optarg, 0, 1000000, &v); o->warmup = (int)v; break;
        case 'm': ok = parse_long(optarg, 1, 1000000, &v); o->agg = (int)v; break;
        case 'c': ok = parse_long(optarg, 0, 1000000, &v); o->check = (int)v; break;
        case 'a': ok = parse_long(optarg, 0, 3, &v); o->average = (int)v; break;
        case 'z': ok = parse_long(optarg, 0, 1, &v); o->blocking = (int)v; break;
        case 'T':
            ok = parse_long(optarg, 0, 1000000000, &v);
            if (ok && v > 0) /* 0: nccl-tests' "no timeout", the runtime's default here */
                ok = setenv("BLINK_TIMEOUT_S", optarg, 1) == 0;
            break;
        case 'N':
            ok = parse_long(optarg, 0, LONG_MAX, &v);
            o->cycles = v;
            if (!ok && optarg[0] == '-')
                why = "-N is nccl-tests' --run_cycles N now; a process per rank is --procs";
            break;
        case 'M':
            ok = optarg[0] != '-';
            if (ok)
                note(c, optarg, "the runtime reports its memory at BLINK_DEBUG=INFO (staging)");
            else
                why = "-M is nccl-tests' --memory_report 0|1 now; MPI ranks are --mpi";
            break;
        case 'o':
            o->op_all = !strcmp(optarg, "all");
            ok = o->op_all || (k = lookup(optarg, op_names, blinkNumOps)) >= 0;
            if (ok && !o->op_all)
                o->op = (blinkRedOp_t)k;
            if (!strcmp(optarg, "mulsum"))
                why = "-o mulsum: the runtime has no PreMulSum op (NCCL's, handed to NCCL by "
                      "libblink-nccl)";
            break;
        case 'd':
            o->type_all = !strcmp(optarg, "all");
            ok = o->type_all || parse_type(optarg, &o->type);
            break;
        case 'r':
            o->root_all = !strcmp(optarg, "all");
            ok = o->root_all || parse_long(optarg, 0, MAX_RANKS - 1, &v);
            if (ok && !o->root_all)
                o->root = (int)v;
            break;
        case 'C': /* nccl-tests' 0|1; a name is the collective, as blink-perf had it */
            if (parse_long(optarg, 0, 1, &v))
                o->cputime = (int)v;
            else
                ok = parse_coll(optarg, &o->coll);
            break;
        case 'D': /* a single number is nccl-tests'; a list or a range, the devices */
            n = (int)strspn(optarg, "0123456789");
            if (n > 0 && !optarg[n])
                note(c, optarg, "NCCL's device implementations (2.28) are NCCL's own");
            else
                ok = parse_devices(optarg, o);
            break;
        case 'p': note(c, optarg, "every rank's init runs on a thread of its own anyway"); break;
        case 'y': note(c, optarg, "each rank runs its calls on a stream of its own"); break;
        case 'G':
#ifdef BLINK_BACKEND_CUDA
            ok = parse_long(optarg, 0, 1000000, &v);
            o->graphs = (int)v;
#else
            note(c, optarg, "the host backend's streams capture no CUDA graphs");
#endif
            break;
        case 'R':
            ok = parse_long(optarg, 0, 2, &v);
            o->reg = (int)v;
            break;
        case 'x': case 'V': case 'S': case 'J':
            note(c, optarg, "an NCCL 2.27+ feature the runtime does not have"); break;
        case OPT_COLLECTIVE: ok = parse_coll(optarg, &o->coll); break;
        case OPT_DEVICES: ok = parse_devices(optarg, o); break;
        case OPT_PROCS: o->procs = 1; break;
        case OPT_HBM:
            o->hbm_gbps = strtod(optarg, &hbm_end);
            ok = hbm_end != optarg && !*hbm_end && o->hbm_gbps > 0 && o->hbm_gbps < 1e7;
            break;
        case OPT_MPI:
#ifdef BLINK_PERF_MPI
            o->mpi = 1;
#else
            why = "--mpi: this blink-perf was built without MPI";
            ok = 0;
#endif
            break;
        case 'h': usage(stdout); exit(0);
        default: ok = 0; break;
        }
        if ((!ok || why) && c != '?') {
            if (why)
                fprintf(stderr, "blink-perf: %s\n", why);
            else
                fprintf(stderr, "blink-perf: bad value for %s%s: '%s'\n",
                        c < 256 ? "-" : "--", c < 256 ? (char[2]){(char)c, 0} :
                        c == OPT_COLLECTIVE ? "collective" : c == OPT_HBM ? "hbm-gbps"
                        : "devices", optarg ? optarg : "");
            ok = 0;
        }
    }
    if (ok && optind < argc) {
        fprintf(stderr, "blink-perf: unexpected argument '%s'\n", argv[optind]);
        ok = 0;
    }
    if (ok && o->mpi && o->procs) {
        fprintf(stderr, "blink-perf: --mpi and --procs exclude each other\n");
        ok = 0;
    }
    if (ok && o->min_bytes > o->max_bytes) {
        fprintf(stderr, "blink-perf: need minbytes <= maxbytes\n");
        ok = 0;
    }
    return ok;
}

#ifdef BLINK_PERF_TUNED
/* The in-tree build (templates/local.mk) links a tuned source besides the one it is built
 * with, its blinkPlanLibrary renamed to this. Weak: the other builds of this file link one
 * source and need nothing. */
const struct blink_plan_library *BLINK_PERF_TUNED(void) __attribute__((weak));
#endif

/* The plans init chooses from: the linked source's, after the tuned ones where the build links
 * those too (init takes the first plan for the ranks' devices, so theirs win). */
static const struct blink_plan_library *perf_library(void)
{
    static struct blink_plan_library merged;
    const struct blink_plan_library *lib = blinkPlanLibrary(), *tuned = NULL;
#ifdef BLINK_PERF_TUNED
    if (BLINK_PERF_TUNED)
        tuned = BLINK_PERF_TUNED();
#endif
    if (!tuned || !lib || tuned->abi != lib->abi || tuned->nplans < 1 || lib->nplans < 1)
        return lib;
    const struct blink_plan **plans = malloc(sizeof *plans * (size_t)(tuned->nplans + lib->nplans));
    if (!plans)
        return lib;
    memcpy(plans, tuned->plans, sizeof *plans * (size_t)tuned->nplans);
    memcpy(plans + tuned->nplans, lib->plans, sizeof *plans * (size_t)lib->nplans);
    merged.abi = lib->abi;
    merged.nplans = tuned->nplans + lib->nplans;
    merged.plans = plans;
    return &merged;
}

/* The ranks and their devices: --devices, else t x g (devices 0..n-1, as nccl-tests), else
 * those of the largest plan linked (a cluster plan's ranks play its devices in order). --mpi
 * takes the job's size once MPI runs. 0 on a usage error. */
static int choose_ranks(struct opts *o)
{
    int asked = o->nthreads * o->ngpus;
    if (o->mpi)
        return 1;
    if (o->ndevices && o->count_given && asked != o->ndevices) {
        fprintf(stderr, "blink-perf: -t %d -g %d make %d ranks, but --devices lists %d\n",
                o->nthreads, o->ngpus, asked, o->ndevices);
        return 0;
    }
    if (o->ndevices)
        o->ndev = o->ndevices;
    else if (o->count_given)
        o->ndev = asked;
    else {
        const struct blink_plan *big = NULL;
        for (int k = 0; o->lib && k < o->lib->nplans; k++)
            if (o->lib->plans[k] && (!big || o->lib->plans[k]->nranks > big->nranks))
                big = o->lib->plans[k];
        o->ndev = big ? big->nranks : 1;
        int own = big && big->devices && big->nservers <= 1; /* a cluster's: in order */
        for (int r = 0; own && r < o->ndev && r < MAX_RANKS; r++)
            o->devices[o->ndevices++] = big->devices[r];
    }
    if (o->ndev > MAX_RANKS) {
        fprintf(stderr, "blink-perf: %d ranks; blink-perf runs %d at most\n", o->ndev, MAX_RANKS);
        return 0;
    }
    if (!o->root_all && is_rooted(o) && o->root >= o->ndev) {
        fprintf(stderr, "blink-perf: root %d, but there are %d ranks\n", o->root, o->ndev);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof o);
    o.coll = C_ALLREDUCE;
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    if (strlen(base) > 5 && !strcmp(base + strlen(base) - 5, "_perf"))
        parse_coll(base, &o.coll); /* run as all_gather_perf: nccl-tests' binary names */
    o.min_bytes = o.max_bytes = 32u << 20;
    o.step_bytes = 1u << 20;
    o.factor = 1;
    o.check = 1;
    o.iters = 20;
    o.warmup = 5;
    o.nthreads = o.ngpus = 1;
    o.agg = 1;
    o.cycles = 1;
    o.average = 1;
    o.type = blinkFloat32;
    o.op = blinkSum;
    if (!parse(argc, argv, &o) || ((o.lib = perf_library()), !choose_ranks(&o))) {
        fprintf(stderr, "Try 'blink-perf --help' for more information.\n");
        return 2;
    }
    if (o.nthreads > 1 && !o.mpi)
        fprintf(stderr, "blink-perf: note: -t %d: one thread drives all %d ranks in a group\n",
                o.nthreads, o.ndev);
#ifdef BLINK_PERF_MPI
    if (o.mpi)
        return run_mpi(&o);
#endif
    return o.procs ? run_procs(&o) : run_threads(&o);
}
