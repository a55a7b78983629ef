/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_rates.c - default link capacities and model recognition (see topo_rates.h for the numbers
 * and their sources).
 */
#include "topo/topo_rates.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topo/topo.h"

void topo_rates_default(struct topo_rates *r)
{
    memset(r, 0, sizeof *r);
    /* hwloc's per-link values (topology-nvml.c): unidirectional GB/s per NVLink. */
    r->nvlink[1] = 20;
    r->nvlink[2] = r->nvlink[3] = r->nvlink[4] = 25;
    r->nvlink[5] = 50;
    /* NCCL: 16 lanes x code / 80, code 15/30/60/120/240/480 per lane for Gen1..6. */
    static const int code[TOPO_PCIE_GENS + 1] = {0, 15, 30, 60, 120, 240, 480};
    for (int g = 1; g <= TOPO_PCIE_GENS; g++)
        r->pcie_x16[g] = 16.0 * code[g] / 80.0;
    r->smp[TOPO_CPU_UNKNOWN] = 6;
    r->smp[TOPO_CPU_INTEL_QPI] = 6;
    r->smp[TOPO_CPU_INTEL_SKL] = 10;
    r->smp[TOPO_CPU_INTEL_SPR] = 22;
    r->smp[TOPO_CPU_INTEL_EMR] = 40;
    r->smp[TOPO_CPU_AMD] = 16;
    r->smp[TOPO_CPU_POWER] = 32;
    r->smp[TOPO_CPU_ARM] = 6;
    r->net = 12.5; /* 100 Gb/s */
}

int topo_rates_override(struct topo_rates *r, const char *spec, const char **why)
{
    const char *eq = strchr(spec, '=');
    if (!eq) {
        *why = "expected KEY=GBPS";
        return 0;
    }
    double v;
    if (!topo_parse_bandwidth(eq + 1, &v, why))
        return 0;
    size_t klen = (size_t)(eq - spec);
    char key[16];
    if (klen == 0 || klen >= sizeof key) {
        *why = "unknown key (nvlink1..nvlink5, pcie1..pcie6, smp, net)";
        return 0;
    }
    memcpy(key, spec, klen);
    key[klen] = '\0';
    if (strncmp(key, "nvlink", 6) == 0 && key[6] >= '1' && key[6] <= '5' && !key[7]) {
        r->nvlink[key[6] - '0'] = v;
        r->nvlink_set[key[6] - '0'] = 1;
    }
    else if (strncmp(key, "pcie", 4) == 0 && key[4] >= '1' && key[4] <= '6' && !key[5])
        r->pcie_x16[key[4] - '0'] = v;
    else if (strcmp(key, "smp") == 0)
        for (int f = 0; f < TOPO_CPU_FAMILIES; f++)
            r->smp[f] = v;
    else if (strcmp(key, "net") == 0)
        r->net = v;
    else {
        *why = "unknown key (nvlink1..nvlink5, pcie1..pcie6, smp, net)";
        return 0;
    }
    return 1;
}

double topo_rate_nvlink(const struct topo_rates *r, int gen, int count)
{
    if (gen < 1 || gen > TOPO_NVLINK_GENS)
        gen = 2;
    return r->nvlink[gen] * count;
}

double topo_rate_pcie(const struct topo_rates *r, int gen, int width)
{
    if (gen < 1 || gen > TOPO_PCIE_GENS)
        gen = 3;
    if (width <= 0)
        width = 16;
    return r->pcie_x16[gen] * width / 16.0;
}

double topo_rate_smp(const struct topo_rates *r, enum topo_cpu_family f) { return r->smp[f]; }

static int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return 1;
    return 0;
}

/*
 * The GPU parts table. Per-link rates are GB/s in one direction: NVIDIA's datasheets quote the
 * total of both directions over all links ("600 GB/s" for an A100 is 12 links x 25 GB/s x 2), so
 * links x link_gbps x 2 is the datasheet figure in every row. PCI device ids are from the PCI ID
 * Repository's pci.ids (version 2023.04.10); parts newer than that file have none and are told
 * apart by name or sm only.
 */
static const struct topo_gpu_part parts[] = {
    /* Datacentre parts, SXM boards (direct links or NVSwitch) and their PCIe cards. */
    {"P100", {NULL}, 1, 4, 20, 60, {0x15f9}, "SXM2 direct links",
     "NVIDIA Tesla P100 whitepaper WP-08019-001: 4 NVLinks, 160 GB/s; hwloc topology-nvml.c"},
    {"V100", {"V100S", NULL}, 2, 6, 25, 70, {0x1db1, 0x1db5, 0x1db8, 0x1df5},
     "SXM2 direct, SXM3 NVSwitch",
     "NVIDIA Tesla V100 architecture whitepaper WP-08608-001: 6 NVLinks, 300 GB/s"},
    {"A100", {NULL}, 3, 12, 25, 80, {0x20b0, 0x20b1, 0x20b2, 0x20b3, 0x20b5, 0x20f1},
     "SXM4 NVSwitch, PCIe bridge",
     "NVIDIA A100 Tensor Core GPU architecture whitepaper: 12 NVLinks, 600 GB/s; A100 PCIe "
     "product brief PB-10137-001: the same 600 GB/s over bridges"},
    {"A800", {NULL}, 3, 8, 25, 80, {0x20f3, 0x20f5, 0x20f6}, "SXM4 NVSwitch, PCIe bridge",
     "NVIDIA A800 datasheet: NVLink 400 GB/s (an A100 cut to 8 of its 12 links)"},
    {"A30", {NULL}, 3, 4, 25, 80, {0x20b7}, "PCIe bridge",
     "NVIDIA A30 datasheet: third-generation NVLink 200 GB/s"},
    {"H100", {NULL}, 4, 18, 25, 90, {0x2330}, "SXM5 NVSwitch",
     "NVIDIA H100 Tensor Core GPU architecture whitepaper: 18 NVLinks, 900 GB/s"},
    {"H100 NVL", {"H100 PCIe"}, 4, 12, 25, 90, {0x2331}, "PCIe bridge",
     "NVIDIA H100 PCIe product brief PB-11133-001 and H100 NVL datasheet: NVLink bridge "
     "600 GB/s"},
    {"H800", {NULL}, 4, 8, 25, 90, {0x2322, 0x2324}, "SXM5 NVSwitch, PCIe bridge",
     "NVIDIA H800 datasheet: NVLink 400 GB/s (an H100 cut to 8 of its 18 links)"},
    {"H200", {NULL}, 4, 18, 25, 90, {0}, "SXM5 NVSwitch, NVL bridge",
     "NVIDIA H200 datasheet: NVLink 900 GB/s; MLCommons inference v4.1 H200-SXM: 18x 4th Gen "
     "NVLink"},
    {"H20", {NULL}, 4, 18, 25, 90, {0}, "SXM5 NVSwitch",
     "NVIDIA H20 product specification: NVLink 900 GB/s"},
    {"GH200", {NULL}, 4, 18, 25, 90, {0}, "NVLink Switch (NVL32), C2C to Grace",
     "NVIDIA GH200 Grace Hopper Superchip datasheet: 900 GB/s NVLink to other GPUs"},
    {"B100", {NULL}, 5, 18, 50, 100, {0}, "SXM6 NVSwitch",
     "NVIDIA Blackwell architecture technical brief: fifth-generation NVLink, 18 links, "
     "1.8 TB/s per GPU"},
    {"B200", {NULL}, 5, 18, 50, 100, {0}, "SXM6 NVSwitch",
     "NVIDIA HGX B200 datasheet: 1.8 TB/s NVLink per GPU; MLCommons inference v6.0 B200-SXM: "
     "18x 5th Gen NVLink"},
    {"B300", {NULL}, 5, 18, 50, 103, {0}, "SXM NVSwitch",
     "NVIDIA HGX B300 datasheet: 1.8 TB/s NVLink per GPU"},
    {"GB200", {NULL}, 5, 18, 50, 100, {0}, "NVL72: 72 GPUs on one NVLink Switch domain",
     "NVIDIA GB200 NVL72 datasheet: 72 GPUs in one NVLink domain, 130 TB/s, 1.8 TB/s per GPU"},
    {"GB300", {NULL}, 5, 18, 50, 103, {0}, "NVL72: 72 GPUs on one NVLink Switch domain",
     "NVIDIA GB300 NVL72 datasheet: 72 GPUs in one NVLink domain, 1.8 TB/s per GPU"},
    /* Workstation and consumer cards: two GPUs on an NVLink bridge. GA102's links are narrower
       (x4) than GA100's, so they run at 14.0625 GB/s, not at the datacentre 25. */
    {"RTX 3090", {"GeForce RTX 3090", NULL}, 3, 4, 14.0625, 86, {0x2204}, "bridge",
     "NVIDIA Ampere GA102 GPU architecture whitepaper: four x4 NVLinks of 14.0625 GB/s each "
     "direction, 112.5 GB/s total"},
    {"RTX A6000", {"A6000", NULL}, 3, 4, 14.0625, 86, {0x2230}, "bridge",
     "NVIDIA RTX A6000 datasheet: NVLink 112.5 GB/s bidirectional; GA102 whitepaper"},
    {"RTX A5500", {"A5500", NULL}, 3, 4, 14.0625, 86, {0x2233}, "bridge",
     "NVIDIA RTX A5500 datasheet: NVLink 112.5 GB/s bidirectional; GA102 whitepaper"},
    {"RTX A5000", {"A5000", NULL}, 3, 4, 14.0625, 86, {0x2231}, "bridge",
     "NVIDIA RTX A5000 datasheet: NVLink 112.5 GB/s bidirectional; GA102 whitepaper"},
    {"RTX A4500", {"A4500", NULL}, 3, 4, 14.0625, 86, {0x2232}, "bridge",
     "NVIDIA RTX A4500 datasheet: NVLink 112.5 GB/s bidirectional; GA102 whitepaper"},
    {"A40", {NULL}, 3, 4, 14.0625, 86, {0x2235}, "bridge",
     "NVIDIA A40 product brief PB-09976-001 and datasheet: NVLink 112.5 GB/s bidirectional"},
    /* Turing (TU102/TU104) bridges run NVLink2 at the datacentre 25 GB/s per link. */
    {"TITAN RTX", {NULL}, 2, 2, 25, 75, {0x1e02}, "bridge",
     "NVIDIA TITAN RTX specifications: NVLink 100 GB/s"},
    {"RTX 2080 Ti", {"GeForce RTX 2080 Ti", NULL}, 2, 2, 25, 75, {0}, "bridge",
     "NVIDIA GeForce RTX 2080 Ti specifications: NVLink 100 GB/s"},
    {"Quadro RTX 8000", {NULL}, 2, 2, 25, 75, {0x1e30, 0x1e78}, "bridge",
     "NVIDIA Quadro RTX 8000 datasheet: NVLink 100 GB/s bidirectional"},
    {"Quadro RTX 6000", {NULL}, 2, 2, 25, 75, {0x1e36}, "bridge",
     "NVIDIA Quadro RTX 6000 datasheet: NVLink 100 GB/s bidirectional"},
    {"Quadro RTX 5000", {NULL}, 2, 1, 25, 75, {0}, "bridge",
     "NVIDIA Quadro RTX 5000 datasheet: NVLink 50 GB/s bidirectional"},
};

static int is_alnum(char c) { return isalnum((unsigned char)c); }
static int is_sep(char c) { return c == ' ' || c == '-' || c == '_'; }

/* Length of hay that `name` matches at its start (a space in name matches any run of spaces,
 * '-' and '_', or none), or 0. */
static size_t match_at(const char *hay, const char *name)
{
    const char *h = hay;
    for (const char *n = name; *n; n++) {
        if (*n == ' ') {
            while (is_sep(*h))
                h++;
            continue;
        }
        if (tolower((unsigned char)*h) != tolower((unsigned char)*n))
            return 0;
        h++;
    }
    return (size_t)(h - hay);
}

/* Does `name` occur in `model` as whole words? */
static int names(const char *model, const char *name)
{
    for (const char *p = model; *p; p++) {
        if (p > model && is_alnum(p[-1]))
            continue;
        size_t n = match_at(p, name);
        if (n && !is_alnum(p[n]))
            return 1;
    }
    return 0;
}

const struct topo_gpu_part *topo_gpu_part_find(const char *model)
{
    const struct topo_gpu_part *best = NULL;
    size_t best_len = 0;
    if (!model)
        return NULL;
    for (size_t i = 0; i < BK_ARRAY_LEN(parts); i++)
        for (int k = -1; k < 3; k++) {
            const char *name = k < 0 ? parts[i].name : parts[i].alias[k];
            if (name && strlen(name) > best_len && names(model, name))
                best = &parts[i], best_len = strlen(name);
        }
    return best;
}

const struct topo_gpu_part *topo_gpu_part_at(int i)
{
    return i >= 0 && (size_t)i < BK_ARRAY_LEN(parts) ? &parts[i] : NULL;
}

char *topo_gpu_part_names(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < BK_ARRAY_LEN(parts); i++) {
        const char *sep = i ? ", " : "";
        size_t need = strlen(sep) + strlen(parts[i].name);
        if (n + need + sizeof ", ..." > cap) { /* keep room to say the list goes on */
            if (n + sizeof ", ..." <= cap)
                memcpy(buf + n, ", ...", sizeof ", ...");
            break;
        }
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, parts[i].name);
    }
    return buf;
}

const struct topo_gpu_part *topo_gpu_part_of_gen(int gen)
{
    static const char *const flagship[TOPO_NVLINK_GENS + 1] = {NULL,   "P100", "V100",
                                                               "A100", "H100", "B200"};
    return gen >= 1 && gen <= TOPO_NVLINK_GENS ? topo_gpu_part_find(flagship[gen]) : NULL;
}

const struct topo_gpu_part *topo_gpu_part_by_pci(int sm, unsigned device)
{
    for (size_t i = 0; device && i < BK_ARRAY_LEN(parts); i++)
        for (size_t k = 0; k < BK_ARRAY_LEN(parts[i].pci) && parts[i].pci[k]; k++)
            if (parts[i].pci[k] == device)
                return &parts[i];
    static const struct {
        int sm;
        const char *part;
    } by_sm[] = {{60, "P100"}, {70, "V100"},  {75, "TITAN RTX"}, {80, "A100"},
                 {86, "RTX 3090"}, {90, "H100"}, {100, "B200"},  {103, "B300"}};
    for (size_t i = 0; i < BK_ARRAY_LEN(by_sm); i++)
        if (by_sm[i].sm == sm)
            return topo_gpu_part_find(by_sm[i].part);
    return NULL;
}

double topo_part_link_gbps(const struct topo_rates *r, const struct topo_gpu_part *a,
                           const struct topo_gpu_part *b, int gen)
{
    if (gen < 1 || gen > TOPO_NVLINK_GENS)
        gen = 2;
    double v = r->nvlink[gen];
    if (r->nvlink_set[gen])
        return v; /* the user's rate for the generation wins */
    /* Ends that are no GPU (a switch port runs at its GPU's rate), or of unknown part or of
       another generation, do not count. */
    const struct topo_gpu_part *end[2] = {a, b};
    int own = 0;
    double least = 0;
    for (int k = 0; k < 2; k++)
        if (end[k] && end[k]->gen == gen && (!own++ || end[k]->link_gbps < least))
            least = end[k]->link_gbps;
    return own ? least : v;
}

double topo_rate_nvlink_parts(const struct topo_rates *r, const struct topo_gpu_part *a,
                              const struct topo_gpu_part *b, int gen, int count)
{
    return topo_part_link_gbps(r, a, b, gen) * count;
}

int topo_gpu_model_gen(const char *model)
{
    const struct topo_gpu_part *p = topo_gpu_part_find(model);
    return p ? p->gen : 0;
}

int topo_nvlink_budget(int gen)
{
    static const int budget[TOPO_NVLINK_GENS + 1] = {0, 4, 6, 12, 18, 18};
    return gen >= 1 && gen <= TOPO_NVLINK_GENS ? budget[gen] : 0;
}

const char *topo_gen_model(int gen)
{
    static const char *const names[TOPO_NVLINK_GENS + 1] = {"?", "P100", "V100", "A100", "H100",
                                                            "B200"};
    return gen >= 1 && gen <= TOPO_NVLINK_GENS ? names[gen] : "?";
}

enum topo_cpu_family topo_cpu_family_of(const char *vendor, int family, int model,
                                        const char *model_name, const char *arch)
{
    if ((arch && (contains_ci(arch, "ppc") || contains_ci(arch, "power"))) ||
        (model_name && contains_ci(model_name, "POWER")))
        return TOPO_CPU_POWER;
    if ((arch && (contains_ci(arch, "arm") || contains_ci(arch, "aarch64"))) ||
        (model_name && (contains_ci(model_name, "Neoverse") || contains_ci(model_name, "Grace"))))
        return TOPO_CPU_ARM;
    if ((vendor && contains_ci(vendor, "AMD")) || (model_name && contains_ci(model_name, "AMD")))
        return TOPO_CPU_AMD;
    int intel = (vendor && contains_ci(vendor, "Intel")) ||
                (model_name && contains_ci(model_name, "Intel"));
    if (intel && family == 6 && model > 0) {
        /* NCCL's cut-offs: Skylake-SP is model 0x55, Sapphire Rapids 0x8f, Emerald 0xcf. */
        if (model >= 0xcf)
            return TOPO_CPU_INTEL_EMR;
        if (model >= 0x8f)
            return TOPO_CPU_INTEL_SPR;
        if (model >= 0x55)
            return TOPO_CPU_INTEL_SKL;
        return TOPO_CPU_INTEL_QPI;
    }
    if (intel && model_name) {
        /* hwloc names the model but not always its number: "Xeon E5-2698 v4" is Broadwell. */
        if (contains_ci(model_name, " v2") || contains_ci(model_name, " v3") ||
            contains_ci(model_name, " v4"))
            return TOPO_CPU_INTEL_QPI;
        if (contains_ci(model_name, "Platinum") || contains_ci(model_name, "Gold") ||
            contains_ci(model_name, "Silver") || contains_ci(model_name, "Bronze"))
            return TOPO_CPU_INTEL_SKL;
    }
    if (intel)
        return TOPO_CPU_INTEL_QPI;
    return TOPO_CPU_UNKNOWN;
}

int topo_pcie_from_speed(double gbps, int *gen, int *width)
{
    /* Theoretical GB/s per lane per direction: 8b/10b for Gen1-2, 128b/130b from Gen3. */
    static const double lane[TOPO_PCIE_GENS + 1] = {0,          0.25,       0.5,       0.984615,
                                                    1.969231,   3.938462,   7.876923};
    static const int widths[] = {16, 8, 4, 2, 1, 32, 12};
    if (!(gbps > 0) || !isfinite(gbps))
        return 0;
    /* Common widths first: Gen3 x16 and Gen4 x8 (or Gen3 x32) run at the same speed. */
    for (size_t w = 0; w < BK_ARRAY_LEN(widths); w++)
        for (int g = 1; g <= TOPO_PCIE_GENS; g++) {
            double v = lane[g] * widths[w];
            if (fabs(v - gbps) <= 0.005 * v) {
                *gen = g;
                *width = widths[w];
                return 1;
            }
        }
    return 0;
}

int topo_parse_bandwidth(const char *s, double *gbps, const char **why)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!(isdigit((unsigned char)*s) || *s == '.' || *s == '-' || *s == '+')) {
        *why = "not a number";
        return 0;
    }
    char *end;
    double v = strtod(s, &end);
    if (end == s) {
        *why = "not a number";
        return 0;
    }
    static const struct {
        const char *unit;
        double scale; /* to GB/s */
    } units[] = {
        {"", 1},          {"GB/s", 1},      {"GBps", 1},      {"G", 1},
        {"MB/s", 1e-3},   {"MBps", 1e-3},   {"TB/s", 1e3},    {"TBps", 1e3},
        {"Gb/s", 0.125},  {"Gbps", 0.125},  {"Gbit/s", 0.125}, {"Mb/s", 0.125e-3},
        {"Mbps", 0.125e-3}, {"Tb/s", 125},  {"Tbps", 125},
    };
    size_t i;
    for (i = 0; i < BK_ARRAY_LEN(units); i++)
        if (strcmp(end, units[i].unit) == 0)
            break;
    if (i == BK_ARRAY_LEN(units)) {
        *why = "unknown unit (use GB/s, MB/s, TB/s, Gb/s, Mb/s or Tb/s)";
        return 0;
    }
    v *= units[i].scale;
    if (!isfinite(v)) {
        *why = "not a finite number";
        return 0;
    }
    if (v <= 0) {
        *why = "must be positive";
        return 0;
    }
    if (v > TOPO_MAX_GBPS) {
        *why = "absurdly large (over 100 TB/s)";
        return 0;
    }
    *gbps = v;
    return 1;
}
