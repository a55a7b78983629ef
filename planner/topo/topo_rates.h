/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_rates.h - default per-link capacities, and GPU and CPU model recognition.
 *
 * Readers turn what their format says (an NVLink count and GPU model, a PCIe generation and
 * width, a CPU model, a NIC speed) into GB/s per direction through this table, so every format
 * agrees on the numbers. Every default can be overridden from the command line
 * (--link-rate KEY=GBPS).
 *
 * Defaults: NVLink1 20 GB/s per link, NVLink2-4 25, NVLink5 50 (hwloc's per-generation values).
 * PCIe uses NCCL's effective rate, width x code / 80 with code 15/30/60/120/240/480 for Gen1-6
 * (Gen3 x16 = 12 GB/s). CPU-to-CPU links use NCCL's constants (QPI 6, Skylake UPI 10, Sapphire
 * Rapids 22, Emerald Rapids 40, AMD 16, POWER 32, ARM 6). A NIC runs at its speed / 8.
 */
#ifndef BK_TOPO_RATES_H
#define BK_TOPO_RATES_H

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
 * GPU model recognition: "Tesla V100-SXM2-16GB", "V100", "NVIDIA H100 80GB HBM3", "b200"...
 * Returns the NVLink generation (1 P100, 2 V100, 3 A100/A30, 4 H100/H200/H800/GH200,
 * 5 B100/B200/GB200), or 0 when the model is not recognised.
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
