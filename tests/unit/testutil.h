/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * testutil.h - helpers shared by the Criterion tests: locating fixtures, reading a topology
 * file through the real readers, and running the blinkc binary to check messages and exit codes.
 */
#ifndef BK_TESTUTIL_H
#define BK_TESTUTIL_H

#include "diag.h"
#include "topo.h"
#include "topo_read.h"

/* $BLINKC_SRCDIR/rel (the source tree). Caller frees. */
char *tu_src_path(const char *rel);
/* $BLINKC_SHARED/rel (../shared beside the checkout). Caller frees. */
char *tu_shared_path(const char *rel);

/*
 * Read a file through topo_read with default options plus an optional format and GPU model
 * (NULL for none). Returns the status; d collects the diagnostics.
 */
enum bk_status tu_read_file(const char *path, enum topo_format fmt, const char *gpu_model,
                            struct topo *t, struct diag *d);
/* Same, from a string. */
enum bk_status tu_read_string(const char *name, const char *text, enum topo_format fmt,
                              const char *gpu_model, struct topo *t, struct diag *d);

/* Count of directed links of a kind; total links between two named nodes (ids), or -1. */
int tu_count_links(const struct topo *t, enum topo_link_kind kind);
int tu_count_nodes(const struct topo *t, enum topo_node_kind kind);
/* The directed link between ids a and b (any kind), or NULL. */
const struct topo_link *tu_link(const struct topo *t, const char *a, const char *b);

struct tu_run {
    int status;  /* exit status, or -1 if it did not exit normally */
    char *out;   /* captured stdout */
    char *err;   /* captured stderr */
};

/* Run $BLINKC_BIN with argv (NULL-terminated, without argv[0]) and capture everything. */
void tu_run_blinkc(struct tu_run *r, const char *const *args);
/* Run any program (argv[0] is looked up on PATH) and capture everything. */
void tu_run_argv(struct tu_run *r, const char *const *argv);
void tu_run_free(struct tu_run *r);

/* Write text to a fresh temporary file and return its path (caller frees and unlinks). */
char *tu_temp_file(const char *suffix, const char *text, size_t len);

#endif
