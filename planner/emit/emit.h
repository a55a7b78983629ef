/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * emit.h - code generation: plans -> data model -> one self-contained C/CUDA source.
 *
 * The generated source (blinkc -o collectives.cu) holds only constant tables of the types in
 * runtime/include/blink_plan.h and the thin blinkCommInitAll that hands them to the runtime.
 * It is rendered from the embedded templates (templates/NAME.tmpl, or --templates DIR) by the
 * template engine (tmpl.h), whose typed escapers are the only path from the model to the code:
 * identifiers are built from indices, the topology's name travels as an escaped string literal,
 * and no other input text reaches the output. The output is deterministic: no time stamps, no
 * paths, the blinkc version on one line.
 *
 * Data model (every key is in emit_model_keys; the templates may use nothing else, and
 * test_emit checks both the model and the templates against that list):
 *   blinkc_version  string, |raw only (the one whitelisted key)
 *   topology        string, the topology's name (input text: |cstr)
 *   arrays          list of maps, every int table of the source once (emit_intern.h), in
 *                   order of first use: id "a<k>" (|ident), values  list of int
 *   ndevices        int;  blocks: list of int, the block of each device of the server, for a
 *                   library by classes (allocations.h); empty where the library lists its sets
 *   nplans          int;  plans: list of maps, one per allocation (one, or with
 *                   --all-allocations every connected set of GPUs, or one per class):
 *     id            "p<k>" (|ident)
 *     fingerprint   string, 16 hex digits of FNV-1a 64 over the canonical graph and allocation
 *     nranks        int;  devices: list of int, the allocation's GPU numbers in rank order
 *                   (cluster plans: each GPU's number within its server)
 *     nservers      int;  servers: list of int, each rank's server (empty on one server)
 *     host_staged   bool, the plan's tree sets run over PCIe between GPUs without peer access,
 *                   so every edge of them is host-staged
 *     schedules_of  "p<j>" (|ident) when the plan runs plan j's schedules (a symmetry of the
 *                   server takes j's GPUs onto its own, devices then in j's rank order; its own
 *                   schedules list is empty), else ""
 *     chunk_bytes   int (|size), the default pipeline chunk
 *     nschedules    int;  schedules: list of maps, one per plan of the plan set, in its order:
 *       id          "p<k>s<s>" (|ident)   collective  "broadcast", ... (|ident)
 *       coll        "BLINK_PLAN_..." (|ident)         rooted  bool;  root  int, -1 if none
 *       relabel     "" or an array's id: the schedule is schedule relabel_of (int) of the
 *                   same plan with each rank q renamed relabel[q] (a symmetry of the
 *                   allocation); its trees list is then empty
 *       root_maps   list of string per rank, for a collective without a root whose trees from
 *                   each rank are its orbit's first rank's relabelled: "" where they are
 *                   listed, else an array's id (the map); empty where every tree is listed
 *       ntrees      int;  trees: list of maps (without those of ranks with a map):
 *         id        "p<k>s<s>t<j>" (|ident)  root  int;  gbps  float (the tree's rate)
 *         weight    int (|u64), the rate in units of 1e-4 GB/s
 *         parent    an array's id: the parent of each rank (-1 at the root)
 *         order     an array's id: breadth first from the root, children in rank order
 *       nring_trees int;  ring_trees: the same maps, NCCL's rings as chains (single server)
 *       npcie_trees int;  pcie_trees: the same maps, the hybrid's PCIe trees (empty for a
 *                   relabelled schedule: its source's, relabelled)
 *       nranges     int;  ranges_of  "p<k>s<j>" (|ident), the schedule whose ranges table
 *                   this one runs (its own, or a copy's source's);  ranges: list of maps, per
 *                   message size (plan_tune.h), empty where ranges_of is another schedule:
 *         min_bytes int (|size)  algo  "BLINK_PLAN_TREES", "_RINGS" or "_HYBRID" (|ident)
 *         chunk_bytes int (|size)  proto  "BLINK_PLAN_SIMPLE" or "BLINK_PLAN_LL" (|ident)
 *         fallback  "BLINK_PLAN_TREES" or "_RINGS" (|ident): what runs where a hybrid cannot
 *         tree_us, ring_us  float, the simulated times
 */
#ifndef BK_EMIT_H
#define BK_EMIT_H

#include "core/builtin.h"
#include "plan/plan.h"
#include "core/strbuf.h"
#include "emit/tmpl.h"
#include "topo/topo.h"

/* Default pipeline chunk: 1 MiB (a later tuning step replaces it; BLINK_CHUNK_BYTES overrides it
 * at run time). */
#define EMIT_CHUNK_BYTES (1024 * 1024)

/* The template rendered for -o; the others are its partials. */
#define EMIT_MAIN_TEMPLATE "collectives.cu"

/* Every key of the data model above, NULL-terminated. */
extern const char *const emit_model_keys[];

/* templates/NAME.tmpl, embedded at build time (tools/embed.sh); ends with {NULL, NULL, 0}. */
extern const struct builtin_file builtin_templates[];

/* FNV-1a 64 of the canonical graph (node ids, kinds, servers, ranks; links with kind, count
 * and capacity) as 16 lowercase hex digits in out[17]. Input labels do not take part. */
void emit_fingerprint(const struct topo *t, char out[17]);

/* One allocation to generate code for: its restricted topology and its plans, or, where a
 * symmetry takes an earlier allocation onto it (allocations.h), that one's plans. */
struct emit_alloc {
    const struct topo *topo;
    const struct plan_set *plans;
    int shares;          /* 0, or 1 + the index among the allocs of the allocation whose
                            schedules this one runs (an earlier one, itself not sharing) */
    const int *devices;  /* with shares: the device each rank of those schedules runs on */
};

/* A library by classes (allocations.h): block[d] is the block of the server's device d. */
struct emit_blocks {
    int ndevices;
    const int *block;
};

/* Build the data model above for nallocs allocations (the topology name is the first's).
 * Errors: BK_EINTERNAL with a diagnostic when a plan breaks blink_plan.h's rules (a tree not
 * spanning, weights that do not fit), BK_ENOMEM. */
BK_MUST_USE
enum bk_status emit_model(const struct emit_alloc *allocs, int nallocs, struct tmpl_value **out,
                          struct diag *d);
/* The same for a library by classes: blocks may be NULL (a library that lists its sets). */
BK_MUST_USE
enum bk_status emit_model_classes(const struct emit_alloc *allocs, int nallocs,
                                  const struct emit_blocks *blocks, struct tmpl_value **out,
                                  struct diag *d);

/* The template set: the embedded templates, each replaced by DIR/NAME.tmpl where dir is given
 * and that file exists. Errors: BK_EIO, BK_EINPUT (a template does not parse), BK_ENOMEM. */
BK_MUST_USE
enum bk_status emit_load_templates(const char *dir, struct tmpl_set **out, struct diag *d);

/* Render the whole source for the allocations into out (appended). template_dir may be
 * NULL. */
BK_MUST_USE
enum bk_status emit_render(struct strbuf *out, const struct emit_alloc *allocs, int nallocs,
                           const char *template_dir, struct diag *d);
BK_MUST_USE
enum bk_status emit_render_classes(struct strbuf *out, const struct emit_alloc *allocs,
                                   int nallocs, const struct emit_blocks *blocks,
                                   const char *template_dir, struct diag *d);

#endif
