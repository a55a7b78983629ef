/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * client.h - what nccl_client's files share: the tables of collectives, types and ops, a
 * case, a communicator as the reference sees it, the options, and what each file gives the
 * others: client_values.c (moving data, the inputs and the reference), client_opts.c (the
 * command line); nccl_client.c runs the cases.
 */
#ifndef NCCL_CLIENT_H
#define NCCL_CLIENT_H

#include <errno.h>
#include <getopt.h>
#include <math.h>   /* NAN and INFINITY only: no libm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

/* NVIDIA's header declares ncclGroupStart() and a few others without (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#ifdef NCCL_CLIENT_CUDA
#include <cuda_runtime.h>
#endif

#define GUARD 64               /* elements after every receive buffer that must stay untouched */
#define SENTINEL 0xa5          /* the byte of those, and of receive elements not yet written */
#define MAX_LIST 64
#define MAX_RANKS 4096
#define BIG_COUNT 1000003      /* in the default run, for float32 only: time and memory */
#define NULL_STREAM ((cudaStream_t)0)

enum coll { BCAST, REDUCE, ALLREDUCE, ALLGATHER, REDUCESCATTER, NCOLLS };
enum kind { K_INT, K_UINT, K_HALF, K_BF16, K_FLOAT, K_DOUBLE };
enum { OP_NONE = -1, OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_AVG, NOPS };

/* bits: the width of an integer type; for a float type, its significand, so that every
 * integer up to 2^bits in magnitude is exact. */
struct dtype {
    const char *name;
    ncclDataType_t dt;
    enum kind kind;
    int size, bits;
};
#define NTYPES 10

#define LEN(a) (sizeof a / sizeof a[0])

struct opts {
    unsigned colls, types, ops;        /* bit masks over the tables */
    int roots[MAX_LIST], nroots;       /* nroots 0: every root */
    size_t counts[MAX_LIST];
    int ncounts, big;                  /* big: BIG_COUNT for float32 too */
    unsigned places;                   /* bit 0 out of place, bit 1 in place */
    uint64_t seed;
    int quiet, split, expect, reg;     /* reg: --register */
    int fresh;                         /* --fresh: new buffers for every group of cases */
    const char *xfail;                 /* -X WHAT, or NULL */
};

/* A communicator as the reference sees it: its size, this rank, and the MPI rank of each of
 * its ranks, whose inputs the formula gives. */
struct ctx {
    ncclComm_t comm;
    int rank, n;
    const int *world;
    uint64_t seed;
};

struct tcase {
    enum coll coll;
    const struct dtype *t;
    int op, root;                      /* OP_NONE and -1 where the collective has none */
    size_t count;
    int inplace;
    uint64_t id;                       /* the same on every rank: it seeds the inputs */
    const uint64_t *key;               /* per comm rank, from seed, id and its MPI rank */
    int64_t lo;                        /* the inputs' range (input_range) */
    uint64_t span;
};

struct bufs {
    char *a, *b;                       /* ncclMemAlloc: send, and receive (or in place) */
    size_t bytes;
    void *reg[2];                      /* --register: a's and b's ncclCommRegister handles */
    unsigned char *hsend, *hrecv;      /* host images */
};

union num {
    uint64_t u;                        /* integer types, sign-extended for signed ones */
    double f;                          /* float types */
};

/* The name comes first in each table: parse_names reads it through the stride. */
struct coll_name {
    const char *name, *fn;
};
struct op_name {
    const char *name;
    ncclRedOp_t op;
};
extern const struct coll_name colls[NCOLLS];
extern const struct dtype dtypes[NTYPES];
extern const struct op_name ops[NOPS];

/* The counts of --split's calls. */
#define NSPLIT 5
extern const size_t split_counts[NSPLIT];

/* This process's MPI rank, and what it counted. */
extern int world_rank;
struct tally {
    long cases, wrong, errors;
    int broken;
};
extern struct tally st;

/* ---------------------------------------------------------------- nccl_client.c */
/* The counts of type t's cases into out (the big count for float32 where asked); how many. */
int type_counts(const struct opts *o, const struct dtype *t, size_t *out);

/* ---------------------------------------------------------------- client_values.c */
/* What this rank's output element j must be. */
union num expected(const struct ctx *cx, const struct tcase *c, size_t j);
/* Copy bytes between a buffer (device memory on CUDA) and the host: 0, or 1 on a failure
 * (said and counted as an error). */
int to_buf(void *dst, const void *src, size_t bytes);
int from_buf(void *dst, const void *src, size_t bytes);
/*
 * The input of comm rank r at element idx of its send buffer, in c's range. prod: 1, -1
 * (signed and float types) and, on comm ranks 0-5 only, sometimes 2: at most six factors of 2,
 * |product| <= 64, exact even in int8 and bfloat16.
 */
union num input(const struct tcase *c, int r, size_t idx);
/*
 * The range of the inputs of case c on n ranks: lo + [0, span), span 0 meaning any bits.
 *  - sum, avg: integers within top/n of the type (so n of them never wrap); floats within 2^p/n
 *    (p the significand) so every partial sum is exact, and avg inputs positive, so its
 *    relative tolerance means something;
 *  - max, min, broadcast, allgather: the whole integer range (uint64's top bit included, which
 *    a signed comparison gets wrong); floats the integers within 2^p.
 * prod has its own rule (input).
 */
void input_range(const struct dtype *t, int op, uint64_t n, int64_t *lo, uint64_t *span);
/* Element values of type t in memory: read, and written. */
union num load(const struct dtype *t, const unsigned char *p);
void store(const struct dtype *t, unsigned char *p, union num v);
/* A 64-bit mixing function (the seed of every case and rank derives through it). */
uint64_t mix(uint64_t x);
/* One GPU per rank of a node, as nccl-tests picks them. */
void pick_device(void);
/* Whether got is want (avg of floats within its tolerance); v as text, for messages. */
int same(const struct dtype *t, int op, union num got, union num want);
void show(const struct dtype *t, union num v, char *s, size_t len);
/* Wait for this rank's stream (CUDA): 0, or 1 on a failure, as to_buf. */
int sync_stream(void);

/* ---------------------------------------------------------------- client_opts.c */
/* The bytes each buffer needs for every case selected. */
size_t need_bytes(const struct opts *o, int n);
/* -1 to go on; otherwise the exit status (0 for --help, 2 for a usage error). */
int parse(int argc, char **argv, int nranks, struct opts *o);

#endif
