/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_map.h - a plan's trees (or ring chains) as an MSCCL program: the steps every GPU's
 * threadblocks run, before msccl_xml.c writes them out.
 *
 * Each tree gets a whole share of the nchunksperloop chunks, within 1% of its rate's share, and
 * its chunks flow along its edges: gather-like collectives copy them down the tree, reduce-like
 * ones receive-reduce them up it (allreduce then broadcasts the sums back down). One
 * threadblock per (peer, direction, channel); a step's order key (tree, phase, level, GPU,
 * piece) sorts every threadblock the same way, and dependencies point only to smaller keys, so
 * the program cannot deadlock. Switches are not GPUs: a tree edge is a direct GPU-to-GPU
 * connection whatever its path. Reads the plan, never changes it.
 */
#ifndef BK_MSCCL_MAP_H
#define BK_MSCCL_MAP_H

#include "core/bk.h"
#include "core/collective.h"
#include "graph/ptree.h"

/* The executors' limits (msccl-executor-nccl and RCCL, src/include/msccl/msccl_struct.h). */
#define MSCCL_MAX_CNT 71     /* a step's cnt must be below MSCCL_MAX_COUNT (72) */
#define MSCCL_MAX_CHUNKS 8192 /* offsets are int16_t; fewer chunks also divide more counts */
#define MSCCL_CHANNELS 2     /* trees sharing a GPU pair alternate over this many channels */

struct mstep {
    char type[5];          /* "s", "r", "rrc", "cpy" */
    char srcbuf, dstbuf;   /* 'i', 'o', 's' */
    int srcoff, dstoff, cnt;
    int dep;               /* index of the step it waits for, -1 for none */
    int hasdep;            /* another step waits for this one */
    int gpu, peer, dir;    /* dir: 0 send, 1 receive, 2 local */
    int chan;
    int key[5];            /* order within the threadblock */
    int tb, s;             /* filled by msccl_layout */
};

struct mprog {
    enum collective coll;
    int ngpus, nchunks, nchannels;
    int in_chunks, out_chunks, scratch_chunks;
    int *counts;           /* [ntrees] chunks per tree */
    int ntrees;
    struct mstep *st;
    int n, cap;
    int *ntb;              /* [ngpus] threadblocks per GPU */
    int *order;            /* [n] steps by (gpu, tb, s) */
};

/* Map trees (rates their weights) of collective c over ngpus GPUs. Errors: BK_ENOMEM. */
BK_MUST_USE
enum bk_status msccl_map(const struct ptree_set *trees, enum collective c, int ngpus,
                         struct mprog *out);
void mprog_free(struct mprog *p);

#endif
