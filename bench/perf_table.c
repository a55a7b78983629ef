/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * perf_table.c - blink-perf's sweep and its table (perf.h): the sizes and the (type, op, root)
 * combinations every mode runs, nccl-tests' columns, header and footer, and the plan line.
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

/* ---------------------------------------------------------------- the table */



/* The next size of the sweep into *bytes; 0 after the last. */
static int next_size(const struct opts *o, size_t *bytes)
{
    size_t next = o->factor > 1 ? (size_t)((double)*bytes * o->factor) : *bytes + o->step_bytes;
    if (next <= *bytes || next > o->max_bytes)
        return 0; /* a zero size never grows by a factor */
    *bytes = next;
    return 1;
}

/* A row's count per call and its size as shown (whole gathered or scattered buffer). */
void row_size(const struct opts *o, size_t bytes, size_t *count, size_t *shown)
{
    size_t esz = type_sizes[o->type], n = (size_t)o->ndev;
    int per_rank = o->coll == C_ALLGATHER || o->coll == C_REDUCESCATTER;
    *count = bytes / esz / (per_rank ? n : 1);
    *shown = *count * esz * (per_rank ? n : 1);
}

int is_rooted(const struct opts *o) { return o->coll == C_BROADCAST || o->coll == C_REDUCE; }
static int has_op(const struct opts *o) { return o->coll != C_BROADCAST && o->coll != C_ALLGATHER; }

/* The run's (datatype, op, root) combinations: the one given, or, where -d, -o or -r said
 * all, every type, every op (of a collective that has one) and every root (of a rooted one),
 * in nccl-tests' order (types, then ops, then roots). Combination k into *c. */
static int combos(const struct opts *o)
{
    return (o->type_all ? blinkNumTypes : 1) * (o->op_all && has_op(o) ? blinkNumOps : 1) *
           (o->root_all && is_rooted(o) ? o->ndev : 1);
}
static void combo(const struct opts *o, int k, struct opts *c)
{
    int nroots = o->root_all && is_rooted(o) ? o->ndev : 1;
    int nops = o->op_all && has_op(o) ? blinkNumOps : 1;
    *c = *o;
    if (nroots > 1)
        c->root = k % nroots;
    if (nops > 1)
        c->op = (blinkRedOp_t)(k / nroots % nops);
    if (o->type_all)
        c->type = (blinkDataType_t)(k / nroots / nops);
}

/* Every row of the run, in one order for every mode: -N cycles (0: until killed) of every
 * combination of every size. 0 when a row failed. */
int sweep(const struct opts *o, row_fn row, void *ctx)
{
    for (long cycle = 0; o->cycles == 0 || cycle < o->cycles; cycle++)
        for (int k = 0; k < combos(o); k++) {
            struct opts c;
            size_t bytes = o->min_bytes;
            combo(o, k, &c);
            do {
                if (!row(ctx, &c, bytes))
                    return 0;
            } while (next_size(o, &bytes));
        }
    return 1;
}

/* -a, as nccl-tests reports a time across ranks: folding rank r's time t into acc (of n
 * ranks, in rank order) gives rank 0's (0), the mean (1), the least (2) or the most (3). */
double ranks_time(int average, double acc, double t, int r, int n)
{
    switch (average) {
    case 0: return r == 0 ? t : acc;
    case 2: return r == 0 ? t : fmin(acc, t);
    case 3: return r == 0 ? t : fmax(acc, t);
    default: return acc + t / n;
    }
}

static double bus_factor(const struct opts *o)
{
    double n = o->ndev;
    switch (o->coll) {
    case C_ALLREDUCE: return 2 * (n - 1) / n;
    case C_ALLGATHER:
    case C_REDUCESCATTER: return (n - 1) / n;
    default: return 1;
    }
}

/* "from 128 KiB" */
static const char *size_text(size_t b, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (u < 3 && b >= 1024 && b % 1024 == 0)
        b /= 1024, u++;
    snprintf(buf, len, "%zu %s", b, unit[u]);
    return buf;
}

/* The plan init will choose for the run's devices (on one server; a cluster library's only
 * plan), or NULL where the header cannot tell. */
static const struct blink_plan *run_plan(const struct opts *o)
{
    const struct blink_plan_library *lib = o->lib;
    if (!lib || lib->nplans < 1)
        return NULL;
    if (lib->nplans == 1 || o->mpi)
        return lib->nplans == 1 ? lib->plans[0] : NULL;
    for (int k = 0; k < lib->nplans; k++) {
        const struct blink_plan *p = lib->plans[k];
        int same = p->nranks == o->ndev && p->devices && p->nservers <= 1;
        for (int r = 0; same && r < o->ndev; r++) {
            int dev = o->ndevices ? o->devices[r] : r, found = 0;
            for (int q = 0; q < p->nranks && !found; q++)
                found = p->devices[q] == dev;
            same = found;
        }
        if (same)
            return p;
    }
    return NULL;
}

/* The plan's per-size choice for the collective (its first root), as the runtime reads it. */
static const int plan_coll[C_COUNT] = {BLINK_PLAN_BROADCAST, BLINK_PLAN_REDUCE,
                                       BLINK_PLAN_ALLREDUCE, BLINK_PLAN_ALLGATHER,
                                       BLINK_PLAN_REDUCESCATTER};

static void print_plan(const struct opts *o, const struct blinkrt_stats *st)
{
    /* The plan init chose; a library by classes holds none with the run's own devices. */
    const struct blink_plan *p = o->lib && st->plan_index >= 0 && st->plan_index < o->lib->nplans
                                 ? o->lib->plans[st->plan_index] : run_plan(o);
    if (!p)
        return;
    const struct blink_plan_schedule *sch = NULL;
    for (int i = 0; i < p->nschedules && !sch; i++)
        if (p->schedules[i].coll == plan_coll[o->coll])
            sch = &p->schedules[i];
    printf("#  Plan: '%s' (fingerprint %s), %d ranks; %s", p->topology ? p->topology : "?",
           p->fingerprint ? p->fingerprint : "?", p->nranks, sch ? "" : "no schedule\n");
    if (sch && sch->nranges < 1 && sch->root_relabel)
        printf("no per-size choice (untuned): the trees at every size\n");
    else if (sch && sch->nranges < 1)
        printf("no per-size choice (untuned): %d tree%s at every size\n", sch->ntrees,
               sch->ntrees == 1 ? "" : "s");
    for (int i = 0; sch && i < sch->nranges; i++) {
        char from[32], chunk[32];
        const struct blink_plan_range *rg = &sch->ranges[i];
        printf("%s%s from %s (%s chunks)%s", i ? ", " : "per-size choice: ",
               rg->algo == BLINK_PLAN_RINGS ? "rings"
               : rg->proto == BLINK_PLAN_LL ? "trees LL"
                                             : "trees",
               size_text(rg->min_bytes, from, sizeof from),
               size_text(rg->chunk_bytes, chunk, sizeof chunk), i + 1 < sch->nranges ? "" : "\n");
    }
}

/* The header: the run, how the ranks run and what one holds (rank 0's), the plan, the
 * columns. */
void print_header(const struct opts *o, const struct blinkrt_stats *st)
{
    char step[48];
    if (o->factor > 1)
        snprintf(step, sizeof step, "%g(factor)", o->factor);
    else
        snprintf(step, sizeof step, "%zu(bytes)", o->step_bytes);
    printf("# blink-perf: %s, %d ranks, %s backend, minBytes %zu maxBytes %zu step: %s "
           "warmup iters: %d iters: %d agg iters: %d validation: %d\n",
           coll_names[o->coll], o->ndev, BACKEND_NAME, o->min_bytes, o->max_bytes, step,
           o->warmup, o->iters, o->agg, o->check);
    if (o->blocking)
        printf("# Blocking Enabled: wait for completion after each collective\n");
    printf("#\n");
    if (o->mpi)
        printf("#  Ranks as MPI processes: %d (one per rank, %d server%s)\n", o->ndev,
               o->servers, o->servers == 1 ? "" : "s");
    else
        printf("#  Ranks as %s: %d (%s)\n", o->procs ? "processes" : "threads", o->ndev,
               o->procs ? "one process per rank" : "one thread drives all, grouped");
    if (o->reg)
        printf("#  Buffers registered (-R %d), from blinkMemAlloc\n", o->reg);
    if (o->graphs > 0)
        printf("#  CUDA graphs: each rank's %d timed iterations captured in one graph, replayed "
               "%d times\n", o->iters, o->graphs);
    printf("#  Per rank (rank 0): streams %d, threads %d, staging bytes %zu\n", st->streams,
           st->threads, st->staging_bytes);
    print_plan(o, st);
    if (o->hbm_gbps > 0)
        printf("#  One-GPU bound (--hbm-gbps %g): each call moves %g (in place %g) bytes per byte "
               "through device memory, so algbw <= %.2f (%.2f) GB/s; %%bound is algbw over it\n",
               o->hbm_gbps, hbm_bytes_per_byte(plan_coll[o->coll], o->ndev, 0),
               hbm_bytes_per_byte(plan_coll[o->coll], o->ndev, 1),
               o->hbm_gbps / hbm_bytes_per_byte(plan_coll[o->coll], o->ndev, 0),
               o->hbm_gbps / hbm_bytes_per_byte(plan_coll[o->coll], o->ndev, 1));
    const char *t = o->cputime ? "cputime" : "time";
    printf("#\n#                                                        out-of-place            "
           "           in-place\n");
    printf("#       size         count      type   redop    root  %7s   algbw   busbw  #wrong"
           "  %7s   algbw   busbw  #wrong\n", t, t);
    printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
           "     (us)  (GB/s)  (GB/s)\n");
}

struct print_ctx {
    half_fn half;
    void *ctx;
    struct tally *t;
};

/* A row as nccl-tests prints it, each half from half(); 0 when one failed (the row ends). */
static int print_row(void *ctx, const struct opts *c, size_t bytes)
{
    const struct print_ctx *p = ctx;
    size_t count, shown, n = (size_t)c->ndev;
    double bound[2] = {0, 0};
    row_size(c, bytes, &count, &shown);
    printf("%12zu  %12zu  %8s  %6s  %6d", shown,
           c->coll == C_ALLGATHER || c->coll == C_REDUCESCATTER ? count * n : count,
           type_names[c->type], has_op(c) ? op_names[c->op] : "none", is_rooted(c) ? c->root : -1);
    for (int in_place = 0; in_place < 2; in_place++) {
        struct half h;
        if (!p->half(p->ctx, c, count, in_place, &h)) {
            printf("\n");
            fflush(stdout);
            return 0;
        }
        double algbw = h.us > 0 ? (double)shown / h.us / 1e3 : 0;
        double busbw = algbw * bus_factor(c);
        p->t->busbw_sum += busbw / 2;
        p->t->wrong += h.wrong;
        printf("  %8.2f  %6.2f  %6.2f  %6ld", h.us, algbw, busbw, h.wrong);
        double f = hbm_bytes_per_byte(plan_coll[c->coll], c->ndev, in_place);
        if (c->hbm_gbps > 0 && f > 0)
            bound[in_place] = 100 * algbw / (c->hbm_gbps / f);
    }
    if (c->hbm_gbps > 0)
        printf("  %%bound %5.1f %5.1f", bound[0], bound[1]);
    printf("\n");
    fflush(stdout);
    p->t->rows++;
    return 1;
}

/* Every row of the run; 0 when one failed. */
int print_rows(const struct opts *o, half_fn half, void *ctx, struct tally *t)
{
    struct print_ctx p = {half, ctx, t};
    return sweep(o, print_row, &p);
}

void print_footer(const struct tally *t, int ok)
{
    printf("# Out of bounds values : %ld %s\n", t->wrong, t->wrong == 0 && ok ? "OK" : "FAILED");
    printf("# Avg bus bandwidth    : %g \n#\n", t->rows ? t->busbw_sum / t->rows : 0);
}
