/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * perf.h - what blink-perf's files share (blink_perf.c: its options, its threads mode and
 * main): the options, the ranks a process drives, a half-row's result and the table's tally,
 * and what each file gives the others: perf_ranks.c (memory, values, calls, checks and
 * timing), perf_table.c (the sweep and nccl-tests' table), perf_procs.c (ranks as processes)
 * and perf_mpi.c (ranks as MPI processes, with BLINK_PERF_MPI).
 */
#ifndef BLINK_PERF_H
#define BLINK_PERF_H

#include <stddef.h>
#include <stdio.h>

#include "blink.h"
#include "blink_plan.h" /* blinkrtCommStats */
#include "hbm_bound.h"

#ifdef BLINK_BACKEND_CUDA
#define BACKEND_NAME "cuda"
#else
#define BACKEND_NAME "host"
#endif

#define MAX_RANKS 64

enum coll { C_BROADCAST, C_REDUCE, C_ALLREDUCE, C_ALLGATHER, C_REDUCESCATTER, C_COUNT };
extern const char *const coll_names[C_COUNT];
extern const char *const type_names[blinkNumTypes];
extern const size_t type_sizes[blinkNumTypes];
extern const char *const op_names[blinkNumOps];

struct opts {
    enum coll coll;
    size_t min_bytes, max_bytes, step_bytes;
    double factor;             /* -f: above 1, multiply; 1 (default): add -i */
    int check;                 /* -c: checked calls per half-row (0: none) */
    int iters, warmup, root, ndev;
    int devices[MAX_RANKS], ndevices; /* --devices: the job's devices (0: 0..ndev-1) */
    blinkDataType_t type;
    blinkRedOp_t op;
    int type_all, op_all, root_all; /* -d all, -o all, -r all: a sweep for each */
    int nthreads, ngpus;       /* -t, -g: a process's ranks are t x g (nccl-tests) */
    int count_given;           /* -t or -g was given */
    int agg;                   /* -m: calls per timed iteration, in one group */
    long cycles;               /* -N: sweeps of every size (0: until killed) */
    int blocking;              /* -z 1: wait for each timed call; 0: for the last */
    int cputime;               /* -C 1: time the issuing of the calls, not their end */
    int graphs;                /* -G N (CUDA): the timed calls captured in a CUDA graph per
                                * rank, replayed N times; 0: issued one by one */
    int average;               /* -a: the ranks' time: 0 rank 0's, 1 mean, 2 min, 3 max */
    int procs;                 /* --procs: a process per rank instead of one thread for all */
    int reg;                   /* -R 1 or 2: buffers registered (blinkCommRegister), from
                                * blinkMemAlloc on the host backend */
    int mpi;                   /* --mpi: this process is one rank of an MPI job */
    int servers;               /* --mpi: the job's distinct servers, for the header */
    const struct blink_plan_library *lib; /* the plans init chooses from */
    double hbm_gbps;           /* --hbm-gbps: one GPU's copy rate, for the bound columns */
};

#define BEAT_ELEMS ((size_t)1 << 20) /* fill and check tell the parent they live this often */

/* One rank this process drives. */
struct rank {
    int rank, dev;              /* dev: the rank's device, as its communicator reports it */
    blinkComm_t comm;
    blinkStream_t stream;
    void *send, *recv;          /* device buffers */
    void *reg[2];               /* -R: send's and recv's registrations */
    unsigned long *beat;        /* processes: steps done, which the parent watches; else NULL */
};

/* The ranks this process drives: every rank (threads) or its own (processes). */
struct local {
    int n;
    struct rank rank[MAX_RANKS];
    void *host;                 /* host copy of a buffer, for filling and checking */
};

/* One half-row (out of place or in place): the mean time of a call, and the wrong elements. */
struct half {
    double us;
    long wrong;
};

/* Where a half-row of combination c comes from: measured here (threads) or gathered from the
 * ranks (processes, MPI). 0 when a call or a rank failed. */
typedef int (*half_fn)(void *ctx, const struct opts *c, size_t count, int in_place,
                       struct half *h);
/* One row of the run: combination c at `bytes` (every mode sweeps the same rows). */
typedef int (*row_fn)(void *ctx, const struct opts *c, size_t bytes);

struct tally {
    long wrong;
    int rows;
    double busbw_sum;
};

/* ---------------------------------------------------------------- perf_ranks.c */
/* A rank process runs on the device it plays (blinkCommInitRank takes the current one). */
int dev_select(int dev);
/* Each local rank's device, buffers and stream, and the host copy; 0 when one is missing. */
int local_open(const struct opts *o, struct local *l);
void local_close(const struct opts *o, struct local *l);
/* Half a row on the local ranks: check (-c times), warm up, then time -n iterations of -m
 * calls each, waiting for each (-z 1) or for the last (-z 0, nccl-tests' default), or (-G)
 * replay them; the time is a call's, to its end or (-C 1) to its issue. 0 when a call failed. */
int measure(const struct opts *o, const struct local *l, size_t count, int in_place,
            struct half *h);
/* Monotonic microseconds. */
double now_us(void);

/* ---------------------------------------------------------------- perf_table.c */
/* Whether the collective has a root. */
int is_rooted(const struct opts *o);
/* The header: the run, how the ranks run and what one holds (rank 0's), the plan, the
 * columns. */
void print_header(const struct opts *o, const struct blinkrt_stats *st);
/* Every row of the run; 0 when one failed. */
int print_rows(const struct opts *o, half_fn half, void *ctx, struct tally *t);
void print_footer(const struct tally *t, int ok);
/* A row's count per call and its size as shown (whole gathered or scattered buffer). */
void row_size(const struct opts *o, size_t bytes, size_t *count, size_t *shown);
/* Every row of the run, in one order for every mode: -N cycles (0: until killed) of every
 * combination of every size. 0 when a row failed. */
int sweep(const struct opts *o, row_fn row, void *ctx);
/* -a, as nccl-tests reports a time across ranks: folding rank r's time t into acc (of n
 * ranks, in rank order) gives rank 0's (0), the mean (1), the least (2) or the most (3). */
double ranks_time(int average, double acc, double t, int r, int n);

/* ---------------------------------------------------------------- perf_procs.c */
/* No rank progressing for BLINK_TIMEOUT_S (when every rank's own wait gives up) and this
 * much more means a rank hangs where the runtime cannot see it. */
#define MARGIN_S 10.0
/* A process per rank; this one only prints what they send. */
int run_procs(const struct opts *o);
/* The physical device rank r runs on: its entry of BLINK_DEVICE_MAP (as blinkCommInitAll reads
 * it, so that ranks of every mode can share one GPU), else the device it plays. */
int run_device(int r, int dev);

/* ---------------------------------------------------------------- perf_mpi.c */
/* One rank of an MPI job (BLINK_PERF_MPI); every rank returns the job's worst status, after MPI_Finalize. */
int run_mpi(struct opts *o);

#endif
