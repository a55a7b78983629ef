/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_rates.h - default per-link capacities, and GPU and CPU model recognition.
 *
 * Readers turn what their format says (an NVLink count and GPU model, a PCIe generation and
 * width, a CPU model, a NIC speed) into GB/s per direction through this table, so every format
 * agrees on the numbers. Every default can be overridden from the command line
 * (--link-rate KEY=GBPS).
 *
 * Defaults: NVLink1 20 GB/s per link, NVLink2-4 25, NVLink5 50 (hwloc's per-generation values);
 * a GPU whose part is known (the parts table below) runs its links at the part's own rate, which
 * differs for GA102's bridges (14.0625 GB/s per link).
 * PCIe uses NCCL's effective rate, width x code / 80 with code 15/30/60/120/240/480 for Gen1-6
 * (Gen3 x16 = 12 GB/s). CPU-to-CPU links use NCCL's constants (QPI 6, Skylake UPI 10, Sapphire
 * Rapids 22, Emerald Rapids 40, AMD 16, POWER 32, ARM 6). A NIC runs at its speed / 8.
 */
#ifndef BK_TOPO_RATES_H
#define BK_TOPO_RATES_H

#include <stddef.h>

#include "core/bk.h"

#define TOPO_NVLINK_GENS 5
#define TOPO_PCIE_GENS 6

enum topo_cpu_family {
    TOPO_CPU_UNKNOWN, /* charged like QPI, NCCL's x86 fallback */
    TOPO_CPU_INTEL_QPI, /* Broadwell and older */
    TOPO_CPU_INTEL_SKL, /* Skylake to Ice Lake UPI */
    TOPO_CPU_INTEL_SPR, /* Sapphire Rapids */
    TOPO_CPU_INTEL_EMR, /* Emerald Rapids and newer */
    TOPO_CPU_AMD,
    TOPO_CPU_POWER,
    TOPO_CPU_ARM,
    TOPO_CPU_FAMILIES
};

struct topo_rates {
    double nvlink[TOPO_NVLINK_GENS + 1]; /* GB/s per link, index = generation (0 unused) */
    unsigned char nvlink_set[TOPO_NVLINK_GENS + 1]; /* 1: --link-rate nvlinkN gave nvlink[N],
                                                       which then wins over every part's own */
    double pcie_x16[TOPO_PCIE_GENS + 1]; /* GB/s of an x16 link, index = generation */
    double smp[TOPO_CPU_FAMILIES];       /* GB/s of a CPU-to-CPU link by CPU family */
    double net;                          /* GB/s of a NIC whose speed is unknown */
};

/* The defaults above. */
void topo_rates_default(struct topo_rates *r);

/*
 * Apply one override "KEY=GBPS". Keys: nvlink1..nvlink5 (per link), pcie1..pcie6 (per x16 link;
 * narrower links scale by width/16), smp (every CPU family), net. Returns 0 and fills *why on a
 * bad key or value.
 */
int topo_rates_override(struct topo_rates *r, const char *spec, const char **why);

/* Capacity of `count` bonded NVLinks of generation gen (1..5). */
double topo_rate_nvlink(const struct topo_rates *r, int gen, int count);

/* Capacity of a PCIe link. gen 0 means unknown (Gen3, as NCCL assumes); width 0 means x16. */
double topo_rate_pcie(const struct topo_rates *r, int gen, int width);

double topo_rate_smp(const struct topo_rates *r, enum topo_cpu_family f);

/*
 * The GPU parts table: one row per NVLink-capable part, with its NVLink generation, its NVLinks
 * per GPU and the GB/s of one link in one direction, and where those numbers come from (the
 * table in topo_rates.c cites each source; blinkc-topology(5) lists them). A model string names
 * a part when one of the part's names occurs in it as whole words, case-insensitively, with
 * spaces, '-' and '_' alike: "NVIDIA A800-SXM4-80GB" is an A800, "NVIDIA GeForce RTX 3090" an
 * RTX 3090, "NVIDIA H100 NVL" an H100 NVL; the longest name that occurs wins, so "GH200" is no
 * H200, "GB200" no B200, "RTX A4000" no A40 and "H200" no H20.
 */
struct topo_gpu_part {
    const char *name;      /* as --gpu-model and messages spell it: "A100", "RTX 3090" */
    const char *alias[3];  /* other names that mean this part ("A6000"), NULL-padded */
    int gen;               /* NVLink generation 1..5 */
    int links;             /* NVLinks per GPU: the most NVLink bandwidth it can have is
                              links x link_gbps per direction */
    double link_gbps;      /* GB/s of one NVLink, one direction */
    int sm;                /* compute capability x 10, as NCCL's <gpu sm=> writes it */
    unsigned short pci[8]; /* PCI device ids (vendor 0x10de) of this part, 0-terminated */
    const char *kind;      /* how its NVLinks leave the GPU: "NVSwitch", "bridge", ... */
    const char *source;    /* where links and link_gbps come from */
};

/* The part a model string names ("NVIDIA A800-SXM4-80GB", "rtx 3090", "GB200"); NULL when it
 * names none (or model is NULL). */
const struct topo_gpu_part *topo_gpu_part_find(const char *model);

/*
 * The part of a GPU known by its compute capability (sm x 10) and PCI device id, as an NCCL
 * topology file gives them (device 0: unknown). A device id in the table decides; else the sm's
 * most common part: 60 P100, 70 V100, 75 TITAN RTX, 80 A100, 86 RTX 3090 (every NVLink GA102
 * part has the same links), 90 H100, 100 B200, 103 B300. NULL for any other sm.
 */
const struct topo_gpu_part *topo_gpu_part_by_pci(int sm, unsigned device);

/* The i-th part of the table (0..), NULL past its end: for listing them. */
const struct topo_gpu_part *topo_gpu_part_at(int i);

/* Every part's name, comma-separated, into buf (cap > 0); names that do not fit become "...".
 * Returns buf. */
char *topo_gpu_part_names(char *buf, size_t cap);

/* The flagship part of an NVLink generation (P100, V100, A100, H100, B200), NULL for others. */
const struct topo_gpu_part *topo_gpu_part_of_gen(int gen);

/*
 * GB/s of one NVLink of generation gen whose ends are parts a and b (NULL: not a GPU, or a GPU
 * of unknown part): the slower of the two parts' own link rates, counting only parts of that
 * generation; with none, or once --link-rate nvlinkN set the generation's rate, r->nvlink[gen].
 * topo_rate_nvlink_parts() is that times count.
 */
double topo_part_link_gbps(const struct topo_rates *r, const struct topo_gpu_part *a,
                           const struct topo_gpu_part *b, int gen);
double topo_rate_nvlink_parts(const struct topo_rates *r, const struct topo_gpu_part *a,
                              const struct topo_gpu_part *b, int gen, int count);

/*
 * GPU model recognition through the parts table: the NVLink generation of the part the model
 * names (1 P100; 2 V100 and Turing bridges; 3 A100, A800, A30 and GA102 bridges; 4 H100, H800,
 * H200, H20, GH200; 5 B100, B200, B300, GB200, GB300), or 0 when it names none.
 */
int topo_gpu_model_gen(const char *model);

/* NVLinks per GPU for a generation's flagship part: 4, 6, 12, 18, 18. */
int topo_nvlink_budget(int gen);

/* A model name for a generation, for messages: "P100", "V100", "A100", "H100", "B200". */
const char *topo_gen_model(int gen);

/* CPU family from what hwloc and NCCL record; any argument may be NULL or -1. */
enum topo_cpu_family topo_cpu_family_of(const char *vendor, int family, int model,
                                        const char *model_name, const char *arch);

/*
 * Infer a PCIe generation and width from a theoretical one-direction speed in GB/s (hwloc's
 * pci_link_speed: 15.753846 = Gen3 x16). Returns 1 and sets *gen, *width on a match within 0.5 %,
 * else 0.
 */
int topo_pcie_from_speed(double gbps, int *gen, int *width);

/*
 * Parse a bandwidth with an optional unit: "25", "25GB/s", "100Gb/s", "12500MB/s", "100Gbps",
 * "1.2TB/s". A bare number is GB/s. Returns 1 and sets *gbps; else 0 and sets *why.
 */
int topo_parse_bandwidth(const char *s, double *gbps, const char **why);

#endif
