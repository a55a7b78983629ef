/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * hwloc_internal.h - what the hwloc reader's files share (topo_hwloc.c): the reader's context
 * and devices, and the NVLink matrix and switch trunks (hwloc_links.c).
 */
#ifndef BK_HWLOC_INTERNAL_H
#define BK_HWLOC_INTERNAL_H

#include <hwloc.h>

#include "read/hwloc_precheck.h"
#include "read/reader.h"

/* No real pair has more than 18 NVLinks; anything far beyond is a corrupt or hostile file. */
#define MAX_LINKS_PER_PAIR 100
/* libxml2 already refuses nesting deeper than 256 (no XML_PARSE_HUGE); this is a second guard. */
#define MAX_DEPTH 512

enum dev_kind { DEV_GPU, DEV_NVSWITCH, DEV_NIC };

/* The GPU numberings hwloc's backends write, in order of preference. */
enum { NUM_NVML, NUM_CUDA, NUM_OPENCL, NUM_RSMI, NUM_SCHEMES };

/* A PCI device that becomes a node: GPU, NVSwitch or NIC. obj->userdata holds its index + 1. */
struct dev {
    hwloc_obj_t pci;
    enum dev_kind kind;
    int node; /* topo node, -1 until added (NVSwitches are added once they have a link) */
    int gen;  /* GPUs: NVLink generation */
    int osidx[NUM_SCHEMES];       /* GPUs: number in each scheme, -1 if absent */
    hwloc_obj_t os[NUM_SCHEMES];  /* GPUs: the OS device giving it */
    char busid[24];
};

/* A PCIe switch chip; it becomes a node only once a GPU or NIC is found below it. */
struct pcisw {
    hwloc_obj_t up; /* its upstream port bridge */
    int parent;     /* enclosing switch, or -1 when it hangs off the CPU */
    int cpu;        /* cpu node of the subtree */
    int node;       /* -1 until needed */
};

struct ctx {
    struct reader rd;
    hwloc_topology_t hw;
    struct hwloc_precheck pc; /* object lines, NVLinkBandwidth elements, writer's version */
    struct hwloc_distances_s **dist;
    unsigned ndist;
    struct dev *devs;
    int ndevs, devs_cap;
    struct pcisw *sws;
    int nsws, sws_cap;
    hwloc_obj_t *pkgs;
    int *pkg_node, npkgs;
    int machine_node; /* cpu node when the file has no Package */
    int max_gen;      /* highest GPU NVLink generation */
    int doubled;      /* NVLink3/4 written at 50000 MB/s per link */
};

/* topo_hwloc.c */
struct diag_loc hwloc_loc_of(const struct ctx *c, hwloc_obj_t o);
BK_MUST_USE
enum bk_status hwloc_add_named(struct ctx *c, enum topo_node_kind kind, const char *name,
                               struct diag_loc loc, int *node);
int hwloc_cpu_of(const struct ctx *c, hwloc_obj_t o);
/* hwloc_links.c */
BK_MUST_USE
enum bk_status hwloc_add_nvlinks(struct ctx *c);
BK_MUST_USE
enum bk_status hwloc_add_trunks(struct ctx *c);

#endif
