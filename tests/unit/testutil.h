/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * testutil.h - helpers shared by the Criterion tests: locating fixtures, reading a topology
 * file through the real readers, checking the DGX-1V reference graph that every format's fixture
 * must give, and running the blinkc binary to check messages and exit codes.
 */
#ifndef BK_TESTUTIL_H
#define BK_TESTUTIL_H

#include "core/diag.h"
#include "topo/topo.h"
#include "read/topo_read.h"

/* $BLINKC_SRCDIR/rel (the source tree). Caller frees. */
char *tu_src_path(const char *rel);
/* $BLINKC_SHARED/rel (../shared beside the checkout); skips the test when it is absent.
 * Caller frees. */
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
/* Index of the node with canonical id `id`; fails the test (Criterion) when there is none. */
int tu_node(const struct topo *t, const char *id);

/*
 * Assert (Criterion, fatal) that t is the DGX-1V reference graph, by canonical ids, as given in
 * shared/reference/topology-facts.md 4.3 (NVLink matrix) and 4.4 (PCIe and socket layout):
 *  - 8 GPUs, all NVLink generation 2 (V100); no NVSwitch, no network switch;
 *  - NVLink pairs 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7 doubled (count 2, 50 GB/s) and
 *    0-1, 0-2, 1-3, 2-6, 3-7, 4-5, 4-6, 5-7 single (count 1, 25 GB/s), each way;
 *  - 4 PCIe switches, switch k holding gpu2k, gpu2k+1 and nick; pcisw0-1 under cpu0 and
 *    pcisw2-3 under cpu1; every PCIe hop count 1 at 12 GB/s (NCCL's Gen3 x16 figure);
 *  - 2 CPUs, cpuN on socket N, joined by one smp link at 6 GB/s (NCCL's Broadwell QPI figure);
 *  - directed links: 32 nvlink, 32 pcie, 2 smp, 0 net.
 * Only the graph: bus ids, names and model strings depend on what each format records, so each
 * reader's test checks those itself.
 */
void tu_expect_dgx1v(const struct topo *t);

/*
 * Read topologies/<fixture> from the source tree and, if ngpus > 0, restrict it to those GPU
 * numbers (rank order as given). Fails the test (Criterion, fatal) on any error.
 */
void tu_load_alloc(const char *fixture, const int *gpus, int ngpus, struct topo *out);

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

/* The .topo text of `name`: ngpus H100s, each with `count` NVLinks to one NVSwitch (caller
 * frees). */
char *tu_nvswitch_text(const char *name, int ngpus, int count);

/* Write text to a fresh temporary file and return its path (caller frees and unlinks). */
char *tu_temp_file(const char *suffix, const char *text, size_t len);

struct plan_trees;
/*
 * plan-json.md's rules, checked on node sequences, independently of the planner's bookkeeping:
 * each non-root GPU is the child of exactly one edge, parents lead to the root, paths run
 * parent..child over listed links with only non-GPU nodes inside, and the summed load on every
 * directed link (direction by collective c) stays within its capacity. Criterion asserts.
 */
void tu_check_trees(const struct topo *t, const struct plan_trees *pt, int c);

struct plan;
struct plan_set;
/* Plan the collectives in the mask `collectives` (bit per enum collective), broadcast and reduce
 * from `root` (-1: every root), on topologies/<fixture> restricted as tu_load_alloc does.
 * Criterion asserts on failure; free with plan_set_free and topo_free. */
void tu_plan_alloc(const char *fixture, const int *gpus, int ngpus, unsigned collectives,
                   int root, struct topo *t, struct plan_set *ps);
/* The plan of collective c from root (-1: the first plan of c); fails the test if none. */
const struct plan *tu_find_plan(const struct plan_set *ps, int c, int root);

struct strbuf;
/* The C token stream of s, one token per line (caller frees): string and character literals
 * become STR, comments are kept whole (input text must never reach them), everything else is
 * split into identifier, number and punctuation tokens. Literal texts are appended to lits.
 * For comparing generated sources outside their string literals. */
char *tu_c_tokens(const char *s, struct strbuf *lits);

/* A whole file (NUL-terminated; *len, if not NULL, gets its size), or NULL if it cannot be
 * opened. Caller frees. */
char *tu_slurp(const char *path, size_t *len);

#endif
