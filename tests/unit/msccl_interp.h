/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_interp.h - an interpreter for MSCCL algorithm XML, written from the schema the
 * executors parse (msccl-executor-nccl and RCCL, src/misc/msccl/msccl_parser.cc), for the tests.
 * It shares no code or header with blinkc's exporter: it reads the file with libxml2, plays
 * every threadblock's steps over FIFO connections per (sender, receiver, channel) holding one
 * step's message each, honours dependencies as the executor's flags do (a step's flag is its
 * number, set only where hasdep is 1), finds deadlocks, and checks every output chunk against
 * the collective's definition on symbolic values (an input chunk's index and the set of ranks
 * summed into it).
 */
#ifndef BK_MSCCL_INTERP_H
#define BK_MSCCL_INTERP_H

#define MI_MAX_GPUS 64

struct mi_result {
    int ok;                /* parsed, ran to the end, every output right */
    char why[512];         /* the first failure */
    int limits;            /* executor limits the file breaks */
    char limit[512];       /* the first of them */
    char coll[16];
    int ngpus, nchunks, nchannels, inplace;
    int tbs, steps;        /* totals over the GPUs */
    int max_tbs, max_steps; /* per GPU, per threadblock */
    double load[MI_MAX_GPUS][MI_MAX_GPUS]; /* chunks sent from one GPU to another per loop */
};

/* Run the file out of place (inplace 0) or with input and output one buffer (inplace 1, for
 * allreduce, broadcast and reduce); root: broadcast and reduce's root rank, else ignored.
 * Returns r->ok. */
int mi_run(const char *path, int root, int inplace, struct mi_result *r);

#endif
