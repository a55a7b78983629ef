/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo.h - the normalised topology model: the one graph every reader produces and every later
 * stage (planner, plan output, code generation) consumes.
 *
 * Nodes are GPUs, NVSwitches, PCIe switches, CPUs (a socket or root complex), NICs and network
 * switches; each records its server. Links are directed and stored in both directions, each with
 * its kind, its bonded physical link count and its capacity in GB/s (1e9 B/s) for that direction.
 *
 * Life cycle: a reader calls topo_add_node/topo_add_link in any order, then topo_finalize()
 * validates the graph and puts nodes and links into canonical order with canonical ids (gpu0,
 * nvs0, pcisw0, cpu0, nic0, netsw0), so that the same machine gives the same graph whatever format
 * described it. topo_restrict() then cuts out an allocation. The model never reaches back into a
 * reader, and never prints.
 */
#ifndef BK_TOPO_H
#define BK_TOPO_H

#include <stddef.h>

#include "core/bk.h"
#include "core/diag.h"

enum topo_node_kind {
    TOPO_GPU,
    TOPO_NVSWITCH,
    TOPO_PCIE_SWITCH,
    TOPO_CPU,
    TOPO_NIC,
    TOPO_NET_SWITCH,
    TOPO_NODE_KINDS
};

enum topo_link_kind { TOPO_NVLINK, TOPO_PCIE, TOPO_SMP, TOPO_NET, TOPO_LINK_KINDS };

struct topo_gpu_part; /* a GPU part of the parts table (topo_rates.h) */

struct topo_node {
    enum topo_node_kind kind;
    char *name;     /* the input's own label: untrusted text, never NULL */
    char *id;       /* canonical ASCII id, set by topo_finalize */
    int server;     /* server index, 0 on one box: servers are numbered 0.. in input order */
    int local_gpu;  /* GPUs: number within its server, its position among that server's GPUs
                       in canonical order (every reader numbers a server's GPUs consecutively, so
                       this is the GPU number minus the GPUs of earlier servers); set by
                       topo_finalize and kept by topo_restrict; -1 for other nodes */
    int gpu_order;  /* GPUs: sort key of the input's own GPU order (nvmlN, dev=, GPUk, or
                       declaration order); -1 for other nodes */
    int rank;       /* GPUs: rank within the planned allocation; -1 otherwise and before
                       topo_finalize */
    int socket;     /* CPUs: socket or NUMA number when known, else -1 */
    int nvlink_gen; /* GPUs: NVLink generation 1..5, 0 when unknown */
    const struct topo_gpu_part *part; /* GPUs: the part of topo_rates.h's table that the input's
                                         model names, or that a reader assumed; NULL when
                                         unknown. Static data, never freed. */
    int part_assumed; /* GPUs: 1 when the input does not name the part and the reader chose
                         it: from the NV# shape or an assumed generation (a warning names the
                         part and rate), or from an NCCL sm without a known PCI device id (sm
                         gives generation and rate; the part is the sm's most common); else 0 */
    double nic_gbps; /* NICs: line rate in GB/s per direction when the input gives one, else 0 */
    int no_p2p;     /* GPUs: 1 where the GPU has no peer access over PCIe (consumer cards, some
                       sockets and VMs: nvidia-smi topo -p2p, p2p=no, --no-p2p), so its PCIe
                       traffic to other GPUs goes through host memory; else 0 */
    char *busid;    /* PCI bus id "dddd:bb:dd.f" when known, else NULL */
    char *model;    /* GPU or CPU model text when known, else NULL (untrusted) */
    struct diag_loc loc; /* where the input declared it */
};

struct topo_link {
    int src, dst; /* node indices */
    enum topo_link_kind kind;
    int count;    /* bonded physical links, >= 1 */
    double gbps;  /* capacity from src to dst, GB/s */
    struct diag_loc loc;
};

struct topo_name_index; /* name -> node hash, private to topo.c */

struct topo {
    char *name;   /* topology name (from the input, or the file's base name) */
    char *source; /* the input file name, for diagnostics */
    const char *format; /* "text", "hwloc", "nccl" or "smi" (static string) */
    struct topo_node *nodes;
    int nnodes, nodes_cap;
    struct topo_link *links;
    int nlinks, links_cap;
    int nservers; /* set by topo_finalize */
    int ngpus;    /* set by topo_finalize */
    struct topo_name_index *index;
};

void topo_init(struct topo *t);
void topo_free(struct topo *t);
/* Free one node's strings (a zeroed node is fine). */
void topo_node_free(struct topo_node *n);

/* Set t->name (copied). */
BK_MUST_USE
enum bk_status topo_set_name(struct topo *t, const char *name);

/*
 * Add a node. `name` must be unique within the topology (readers check with topo_find first and
 * report duplicates at their own position). Returns the new index in *out.
 * Fails only with BK_ENOMEM.
 */
BK_MUST_USE
enum bk_status topo_add_node(struct topo *t, enum topo_node_kind kind, const char *name, int server,
                             struct diag_loc loc, int *out);

/* Index of the node called `name`, or -1. O(1). */
int topo_find(const struct topo *t, const char *name);

/* Set optional text fields of a node (copied; NULL clears). */
BK_MUST_USE
enum bk_status topo_node_set_busid(struct topo *t, int node, const char *busid);
BK_MUST_USE
enum bk_status topo_node_set_model(struct topo *t, int node, const char *model);

/*
 * Add a full-duplex link between a and b: two directed links, a->b at gbps_ab and b->a at gbps_ba.
 * Readers merge or reject repeated links themselves (topo_find_link). Fails with BK_ENOMEM, or
 * BK_EINTERNAL for a self-link or bad index.
 */
BK_MUST_USE
enum bk_status topo_add_link(struct topo *t, int a, int b, enum topo_link_kind kind, int count,
                             double gbps_ab, double gbps_ba, struct diag_loc loc);

/* Add one directed link src->dst (a saved plan lists each direction on its own). Errors as
 * topo_add_link. */
BK_MUST_USE
enum bk_status topo_add_arc(struct topo *t, int src, int dst, enum topo_link_kind kind,
                            int count, double gbps, struct diag_loc loc);

/* qsort order of links: (src, dst, kind), then input position. */
int topo_link_cmp(const void *a, const void *b);

/* Index of the directed link src->dst of that kind, or -1. */
int topo_find_link(const struct topo *t, int src, int dst, enum topo_link_kind kind);

/* The server of node v, or -1: network switches belong to none, though a file declares them in
 * some server's section. */
int topo_node_server(const struct topo *t, int v);

/*
 * Validate and canonicalise. Checks: every GPU has a link, capacities are finite and positive,
 * counts >= 1, GPU orders are distinct, no link joins a node to itself. Then sorts nodes (kind,
 * then GPU order or nearest-GPU anchor, then bus id, then input order), renames them to canonical
 * ids, sorts links by (src, dst, kind) and sets rank = GPU position and local_gpu. Errors name
 * the input position of the offending declaration.
 */
BK_MUST_USE
enum bk_status topo_finalize(struct topo *t, struct diag *d);

/*
 * Restrict a finalized topology to the GPUs listed in `gpus` (canonical GPU numbers, i.e. gpuN),
 * in that order, which becomes rank order. Keeps every switch, CPU and NIC that lies on a path
 * between two kept GPUs (non-GPU leaves are pruned repeatedly). Fails with BK_EUSAGE for an index
 * out of range or repeated, and BK_EINPUT when the kept GPUs are not connected.
 */
BK_MUST_USE
enum bk_status topo_restrict(const struct topo *in, const int *gpus, int ngpus, struct topo *out,
                             struct diag *d);

/* Rebuild the name index after nodes were reordered or renamed (topo_canon.c uses it). */
BK_MUST_USE
enum bk_status topo_reindex(struct topo *t);

/* Deep copy. */
BK_MUST_USE
enum bk_status topo_copy(const struct topo *in, struct topo *out);

const char *topo_node_kind_name(enum topo_node_kind k); /* "gpu", "nvswitch", ... */
const char *topo_link_kind_name(enum topo_link_kind k); /* "nvlink", "pcie", "smp", "net" */
int topo_node_kind_parse(const char *s, enum topo_node_kind *out); /* 1 on success */
int topo_link_kind_parse(const char *s, enum topo_link_kind *out);

/* Node index of the GPU of rank k, or -1 (GPUs come first, in rank order, once finalized). */
int topo_gpu_node(const struct topo *t, int k);

/* The N of a canonical GPU id "gpuN" (0 to INT_MAX), or -1 for any other id or NULL. */
int topo_gpu_number(const char *id);

/* 1 when some GPU of t has no peer access over PCIe (topo_node.no_p2p). */
int topo_no_p2p(const struct topo *t);

/* The device rank k runs on, as the generated code names it: in a cluster its number within
 * its server (local_gpu, when set); else the N of its canonical id gpuN (the allocation's GPU
 * number, which topo_restrict keeps); else k. */
int topo_gpu_device(const struct topo *t, int k);

/* Largest capacity plausible for one link bundle: anything above is rejected as absurd. */
#define TOPO_MAX_GBPS 100000.0

#endif
