/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_internal.h - what the NCCL topology reader's files share (topo_nccl.c): its context and
 * records, messages and attribute values (nccl_values.c), and what runs after the walk
 * (nccl_links.c).
 */
#ifndef BK_NCCL_INTERNAL_H
#define BK_NCCL_INTERNAL_H

#include <libxml/tree.h>
#include <stddef.h>

#include "read/reader.h"

#define NAME_MAX_LEN 255 /* NCCL's own limit on an attribute value */
#define MAX_NVLINK_COUNT 64
#define MAX_GPU_DEV 1000000
/* Linux allows 1024 NUMA nodes; every pair gets an smp link, so bound the quadratic part. */
#define MAX_CPUS 256
#define BUSID_LEN 20 /* "ffffffff:bb:dd.f" plus room */

enum peer { PEER_ANY, PEER_GPU, PEER_NVS, PEER_CPU, PEER_C2C };

struct cpu_rec {
    int node, socket;
    enum topo_cpu_family fam;
    xmlNodePtr el;
};

struct gpu_rec {
    int node, dev;
    int cpu;   /* its cpu node */
    int links; /* sum of its own <nvlink> counts, for guessing an unknown generation */
    xmlNodePtr el;
};

/* One <nvlink> or <c2c>, resolved after the walk. */
struct link_rec {
    int gpu; /* index into gpus */
    enum peer peer;
    int count;
    double gbps;            /* c2c only: bw x count */
    char target[BUSID_LEN]; /* normalised bus id; empty for c2c */
    xmlNodePtr el;
};

struct bus_slot {
    char busid[BUSID_LEN]; /* empty: free slot */
    xmlNodePtr el;
};

/* A pcie-switch candidate; its node is made only when a device below it needs it. */
struct sw_frame {
    xmlNodePtr el;
    const char *busid;
    double gbps; /* its upstream link */
    int node;    /* -1 until made */
    struct sw_frame *up;
};

struct ctx {
    struct reader rd;
    struct cpu_rec *cpus;
    int ncpus, cpus_cap;
    struct gpu_rec *gpus;
    int ngpus, gpus_cap;
    struct link_rec *links;
    int nlinks, links_cap;
    struct bus_slot *bus; /* open-addressing set of every <pci> bus id seen */
    size_t bus_cap, nbus;
    int pcilink_noted;
};

/* nccl_values.c */
/* A message naming el's path and line; el_error's value is BK_EINPUT. */
enum bk_status nccl_el_msg(struct ctx *c, enum diag_level lvl, xmlNodePtr el, const char *fmt,
                           ...) BK_PRINTF(4, 5);
#define el_error(c, el, ...) nccl_el_msg((c), DIAG_ERROR, (el), __VA_ARGS__)
#define el_warning(c, el, ...) (void)nccl_el_msg((c), DIAG_WARNING, (el), __VA_ARGS__)
/* "/system/cpu[2]/pci/gpu (line 14)" for naming a second element. Caller frees. */
char *nccl_el_where(xmlNodePtr el);
BK_MUST_USE
enum bk_status nccl_busid_attr(struct ctx *c, xmlNodePtr el, const char *name, char *out);
BK_MUST_USE
enum bk_status nccl_class_attr(struct ctx *c, xmlNodePtr el, const char *name, long *out);
BK_MUST_USE
enum bk_status nccl_el_error2(struct ctx *c, xmlNodePtr el, const char *what, xmlNodePtr first);
int nccl_gen_from_sm(long sm);
BK_MUST_USE
enum bk_status nccl_int_attr(struct ctx *c, xmlNodePtr el, const char *name, int required,
                             long lo, long hi, long dflt, long *out);
int nccl_is_el(xmlNodePtr n, const char *name);
BK_MUST_USE
enum bk_status nccl_pci_rate(struct ctx *c, xmlNodePtr el, double *gbps);
/* topo_nccl.c */
BK_MUST_USE
enum bk_status nccl_add_node(struct ctx *c, xmlNodePtr el, enum topo_node_kind kind,
                             const char *name, const char *busid, int *out);
BK_MUST_USE
enum bk_status nccl_read_system(struct ctx *c, xmlNodePtr root);
/* nccl_links.c */
BK_MUST_USE
enum bk_status nccl_add_smp(struct ctx *c);
BK_MUST_USE
enum bk_status nccl_check_devs(struct ctx *c);
BK_MUST_USE
enum bk_status nccl_resolve_links(struct ctx *c);
BK_MUST_USE
enum bk_status nccl_set_gens(struct ctx *c);
BK_MUST_USE
enum bk_status nccl_check_budgets(struct ctx *c);

#endif
