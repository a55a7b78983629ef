/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_read.h - reading a topology file: the four formats, the cluster file, and format detection.
 *
 * Every reader (reader.h) fills an initialised, empty struct topo from one input buffer and
 * returns BK_OK, or an error status with a diagnostic naming FILE:LINE:COL or the XML element. A
 * reader only adds nodes and links (topo.h) and never calls topo_finalize; topo_read() does that,
 * so validation and canonical order are the same for every format.
 */
#ifndef BK_TOPO_READ_H
#define BK_TOPO_READ_H

#include "core/bk.h"
#include "core/diag.h"
#include "core/input.h"
#include "topo/topo.h"
#include "topo/topo_rates.h"

enum topo_format {
    TOPO_FMT_AUTO,
    TOPO_FMT_TEXT,
    TOPO_FMT_HWLOC,
    TOPO_FMT_NCCL,
    TOPO_FMT_SMI,
    TOPO_FMT_CLUSTER
};

/* How a reader opens a file that its input names (a cluster file's servers): like input_read,
 * errors BK_EIO or BK_EINPUT with a message in d, BK_ENOMEM. ctx is topo_read_opts.open_ctx. */
typedef enum bk_status (*topo_open_fn)(void *ctx, const char *path, struct input *in,
                                       struct diag *d);

struct topo_read_opts {
    enum topo_format format;    /* TOPO_FMT_AUTO: detect from the content */
    const char *gpu_model;      /* --gpu-model, or NULL: GPU model where the input names none */
    int no_p2p;                 /* --no-p2p: every GPU without peer access over PCIe */
    struct topo_rates rates;    /* per-link defaults, after --link-rate overrides */
    topo_open_fn open_file;     /* topo_open_file (NULL means it too); tests read from memory */
    void *open_ctx;
};

/* The file system: input_read(path). The default topo_read_opts.open_file. */
BK_MUST_USE
enum bk_status topo_open_file(void *ctx, const char *path, struct input *in, struct diag *d);

void topo_read_opts_default(struct topo_read_opts *o);

/* Detect the format from the content. Returns TOPO_FMT_AUTO and records an error if unknown. */
enum topo_format topo_detect_format(const struct input *in, struct diag *d);

/* "text", "hwloc", "nccl", "smi", "cluster"; parse returns 1 on success. */
const char *topo_format_name(enum topo_format f);
int topo_format_parse(const char *s, enum topo_format *out);

/* Detect (unless forced), read, and finalize. The readers themselves are in reader.h. */
BK_MUST_USE
enum bk_status topo_read(const struct input *in, const struct topo_read_opts *o, struct topo *t,
                         struct diag *d);


#endif
