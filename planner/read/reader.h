/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * reader.h - what every topology reader works with, and the start and end all reads share.
 *
 * topo_read() begins a struct reader (an empty topology), hands it to the reader of the format,
 * and finishes it. A reader only adds nodes and links to r->t and records its problems in r->d,
 * naming r->in->name as the file; it never finalizes, so validation and canonical order are the
 * same for every format. Each reader's own context keeps a copy as its member `rd`.
 */
#ifndef BK_READER_H
#define BK_READER_H

#include "core/bk.h"
#include "core/diag.h"
#include "core/input.h"
#include "read/topo_read.h"
#include "topo/topo.h"

struct reader {
    const struct input *in;         /* the file read; in->name names it in every message */
    const struct topo_read_opts *o; /* --gpu-model and the link rates */
    struct topo *t;                 /* what the reader fills: empty at the start */
    struct diag *d;                 /* the read's errors, warnings and notes */
    /* topo_read itself, for a cluster's server files (set by topo_read; NULL otherwise). */
    enum bk_status (*read)(const struct input *in, const struct topo_read_opts *o,
                           struct topo *t, struct diag *d);
};

/* Start a read of `in` into t: t is initialised empty and r holds the four. */
void reader_begin(struct reader *r, const struct input *in, const struct topo_read_opts *o,
                  struct topo *t, struct diag *d);

/*
 * End a read of format f whose reader returned st. On success the topology records its format
 * and source file, takes the file's base name unless the input named it, and is finalized
 * (topo_finalize); on failure, here or before, it is freed. Returns the read's status.
 */
BK_MUST_USE
enum bk_status reader_finish(const struct reader *r, enum topo_format f, enum bk_status st);

/* The readers, one per format: r->t is empty and they do not finalize. */
BK_MUST_USE
enum bk_status topo_read_text(const struct reader *r);
BK_MUST_USE
enum bk_status topo_read_hwloc(const struct reader *r);
BK_MUST_USE
enum bk_status topo_read_nccl(const struct reader *r);
BK_MUST_USE
enum bk_status topo_read_smi(const struct reader *r);
/* A cluster file (topo_cluster.c): reads the server files it names (detected on their own, with
 * r->o's GPU model and rates) and joins them; paths are relative to r->in->name's directory. */
BK_MUST_USE
enum bk_status topo_read_cluster(const struct reader *r);

/*
 * NVLink generation for a GPU whose input gives no usable model: --gpu-model if set, else
 * `guess_gen` (the reader's inference from link counts; 0 for none, which means V100). Records
 * one warning saying what was assumed unless --gpu-model was given. Returns 1..5, or 0 and an
 * error when --gpu-model names no known GPU.
 */
int topo_assumed_gen(const struct topo_read_opts *o, int guess_gen, const char *why,
                     const struct input *in, struct diag *d);

#endif
