/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_rates.c - default link capacities and model recognition (see topo_rates.h for the numbers
 * and their sources).
 */
#include "topo/topo_rates.h"

#include <ctype.h>
#include <math.h>
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
    if (strncmp(key, "nvlink", 6) == 0 && key[6] >= '1' && key[6] <= '5' && !key[7])
        r->nvlink[key[6] - '0'] = v;
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

int topo_gpu_model_gen(const char *model)
{
    if (!model)
        return 0;
    /* Order matters: "GH200" before "H200", "GB200" before "B200". */
    static const struct {
        const char *needle;
        int gen;
    } table[] = {
        {"GB200", 5}, {"GB300", 5}, {"B100", 5}, {"B200", 5}, {"B300", 5},
        {"GH200", 4}, {"H100", 4},  {"H200", 4}, {"H800", 4}, {"H20", 4},
        {"A100", 3},  {"A800", 3},  {"A30", 3},
        {"V100", 2},  {"P100", 1},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(table); i++)
        if (contains_ci(model, table[i].needle))
            return table[i].gen;
    return 0;
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
