/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * smi_infer.c - the `nvidia-smi topo -m` reader's inference (topo_smi.c has the rules): the
 * NVLink generation and plane, PCIe switches from PIX and PXB cells, CPUs from affinities and
 * SYS cells.
 */
#include "read/smi_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

/* The relation of two devices, from whichever of their rows exists. */
static int rel(const struct smi *s, int a, int b)
{
    if (s->cols[a].has_row)
        return cell(s, a, b)->code;
    if (s->cols[b].has_row)
        return cell(s, b, a)->code;
    return C_NONE;
}

/* Union-find with the smallest index as root, so classes are named by their first device. */
static int uf_find(int *p, int a)
{
    while (p[a] != a)
        a = p[a] = p[p[a]];
    return a;
}

static void uf_union(int *p, int a, int b)
{
    a = uf_find(p, a);
    b = uf_find(p, b);
    if (a < b)
        p[b] = a;
    else if (b < a)
        p[a] = b;
}

/* A usable affinity value: present, not "N/A". */
static const char *aff_value(const struct col *c, int kind)
{
    const char *v = kind >= 0 ? c->trail[kind] : NULL;
    return v && *v && strcmp(v, "N/A") != 0 ? v : NULL;
}

/* Join the classes of a and b unless they carry different affinity values. */
static void key_union(int *uf, const char **key, int a, int b)
{
    a = uf_find(uf, a);
    b = uf_find(uf, b);
    if (a == b || (key[a] && key[b] && strcmp(key[a], key[b]) != 0))
        return;
    const char *k = key[a] ? key[a] : key[b];
    uf_union(uf, a, b);
    key[uf_find(uf, a)] = k;
}

/* CPU number (first-appearance order) of every device into cpu[]; returns the count. */
static int group_cpus(const struct smi *s, int *uf, const char **key, int *cpu, char *mark)
{
    int n = s->ncols, keycol = -1;
    static const int prefer[2] = {T_NUMA, T_CPU};
    for (int k = 0; k < 2 && keycol < 0; k++) {
        int ok = 1;
        for (int i = 0; i < n; i++)
            if (s->cols[i].gpu >= 0)
                ok &= aff_value(&s->cols[i], prefer[k]) != NULL;
        if (ok)
            keycol = prefer[k];
    }
    for (int i = 0; i < n; i++) {
        uf[i] = i;
        key[i] = aff_value(&s->cols[i], keycol);
    }
    /* Equal affinity values share a CPU. */
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (key[a] && key[b] && strcmp(key[a], key[b]) == 0)
                key_union(uf, key, a, b);
    /* Then relations, nearest first, never joining two different affinity values. */
    for (int code = C_PIX; code <= C_NODE; code++)
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                if (rel(s, a, b) == code)
                    key_union(uf, key, a, b);
    /* Groups without an affinity value join the first group no SYS cell separates them from. */
    for (int r = 0; r < n; r++) {
        if (uf_find(uf, r) != r || key[r])
            continue;
        memset(mark, 0, (size_t)n);
        for (int a = 0; a < n; a++)
            if (uf_find(uf, a) == r)
                for (int b = 0; b < n; b++)
                    if (rel(s, a, b) == C_SYS)
                        mark[uf_find(uf, b)] = 1;
        for (int q = 0; q < n; q++)
            if (q != r && uf_find(uf, q) == q && !mark[q]) {
                key_union(uf, key, q, r);
                break;
            }
    }
    int ncpu = 0;
    for (int i = 0; i < n; i++)
        cpu[i] = -1;
    for (int i = 0; i < n; i++) {
        int r = uf_find(uf, i);
        if (cpu[r] < 0)
            cpu[r] = ncpu++;
        cpu[i] = cpu[r];
    }
    return ncpu;
}

/* Add a node with a synthetic name base+num that no input label uses. */
BK_MUST_USE
static enum bk_status add_synth(struct smi *s, enum topo_node_kind kind, const char *base, int num,
                                int *out)
{
    for (int attempt = 0; attempt <= s->t->nnodes; attempt++) {
        char *name = attempt ? bk_asprintf("%s%d-%d", base, num, attempt)
                             : bk_asprintf("%s%d", base, num);
        if (!name)
            return BK_ENOMEM;
        enum bk_status st = BK_OK;
        int free_name = topo_find(s->t, name) < 0;
        if (free_name)
            st = topo_add_node(s->t, kind, name, 0, DIAG_AT(s->hdr[0].no, 0), out);
        free(name);
        if (free_name)
            return st;
    }
    return BK_EINTERNAL;
}

/* Switch classes and the PCIe/CPU part of the graph (see PCIE and CPUS in the file comment). */
BK_MUST_USE
static enum bk_status build_pcie(struct smi *s)
{
    int n = s->ncols;
    enum bk_status st = BK_ENOMEM;
    int *buf = calloc((size_t)n * 9, sizeof *buf); /* nine int arrays of n, carved below */
    const char **key = malloc((size_t)n * sizeof *key);
    char *mark = malloc((size_t)n);
    if (!buf || !key || !mark)
        goto out;
    int *leaf = buf, *up = buf + n, *cuf = buf + 2 * n, *cpu = buf + 3 * n, *size = buf + 4 * n;
    int *groups = buf + 5 * n, *leaf_node = buf + 6 * n, *up_node = buf + 7 * n;
    int *cpu_node = buf + 8 * n;
    for (int i = 0; i < n; i++)
        leaf[i] = up[i] = i, leaf_node[i] = up_node[i] = -1;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (rel(s, a, b) == C_PIX)
                uf_union(leaf, a, b);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (rel(s, a, b) == C_PXB)
                uf_union(up, uf_find(leaf, a), uf_find(leaf, b));
    for (int a = 0; a < n; a++) {
        size[uf_find(leaf, a)]++;
        if (uf_find(leaf, a) == a)
            groups[uf_find(up, a)]++;
    }
    int ncpu = group_cpus(s, cuf, key, cpu, mark);
    struct topo_rates const *rt = &s->o->rates;
    for (int c = 0; c < ncpu; c++) {
        BK_CHECK_GOTO(add_synth(s, TOPO_CPU, "CPU", c, &cpu_node[c]), st, out);
        s->t->nodes[cpu_node[c]].socket = c;
        double smp = topo_rate_smp(rt, TOPO_CPU_UNKNOWN);
        for (int c2 = 0; c2 < c; c2++)
            BK_CHECK_GOTO(topo_add_link(s->t, cpu_node[c2], cpu_node[c], TOPO_SMP, 1, smp, smp,
                                        DIAG_NOWHERE),
                          st, out);
    }
    double pcie = topo_rate_pcie(rt, 0, 0);
    int nsw = 0;
    for (int a = 0; a < n; a++) {
        int g = uf_find(leaf, a), p = uf_find(up, g), parent = -1;
        struct diag_loc loc = s->cols[a].loc;
        if (groups[p] >= 2) {
            if (up_node[p] < 0) {
                BK_CHECK_GOTO(add_synth(s, TOPO_PCIE_SWITCH, "PCIeSwitch", nsw++, &up_node[p]),
                              st, out);
                BK_CHECK_GOTO(topo_add_link(s->t, up_node[p], cpu_node[cpu[p]], TOPO_PCIE, 1,
                                            pcie, pcie, loc),
                              st, out);
            }
            parent = up_node[p];
        }
        int attach = parent >= 0 ? parent : cpu_node[cpu[a]];
        if (size[g] >= 2) {
            if (leaf_node[g] < 0) {
                int pa = parent >= 0 ? parent : cpu_node[cpu[g]];
                BK_CHECK_GOTO(add_synth(s, TOPO_PCIE_SWITCH, "PCIeSwitch", nsw++, &leaf_node[g]),
                              st, out);
                BK_CHECK_GOTO(topo_add_link(s->t, leaf_node[g], pa, TOPO_PCIE, 1, pcie, pcie, loc),
                              st, out);
            }
            attach = leaf_node[g];
        }
        BK_CHECK_GOTO(topo_add_link(s->t, s->cols[a].node, attach, TOPO_PCIE, 1, pcie, pcie, loc),
                      st, out);
    }
    st = BK_OK;
out:
    free(buf), free(key), free(mark);
    return st;
}

/* The NVLink generation, from --gpu-model or the matrix's shape; 0 when nothing needs one. */
BK_MUST_USE
static enum bk_status nvlink_model(struct smi *s, int *gen, int *plane, int *per_gpu)
{
    int uniform = -1, any = 0, maxsum = 0, ng = 0, mgen = 0;
    *gen = *plane = 0;
    if (s->o->gpu_model && !(mgen = topo_assumed_gen(s->o, 0, NULL, s->in, s->d)))
        return BK_EINPUT;
    for (int i = 0; i < s->ncols; i++) {
        if (s->cols[i].gpu < 0)
            continue;
        int sum = 0;
        ng++;
        for (int j = 0; j < s->ncols; j++) {
            if (j == i || s->cols[j].gpu < 0)
                continue;
            const struct cell *c = cell(s, i, j);
            int v = c->code == C_NV ? c->nv : 0;
            sum += v;
            any |= v > 0;
            uniform = uniform == -1 || uniform == v ? v : 0;
        }
        maxsum = sum > maxsum ? sum : maxsum;
    }
    int budget_ok = mgen ? uniform == topo_nvlink_budget(mgen)
                         : uniform == 6 || uniform == 12 || uniform == 18;
    *plane = ng >= 3 && uniform > 0 && budget_ok;
    *per_gpu = uniform;
    if (mgen) {
        *gen = mgen;
    } else if (any) {
        char why[96];
        int guess = 0;
        if (*plane) {
            guess = uniform == 6 ? 2 : uniform == 12 ? 3 : 4;
            snprintf(why, sizeof why, "from NV%d between every GPU pair (an NVSwitch plane)",
                     uniform);
        } else {
            guess = maxsum == 4 ? 1 : maxsum == 6 ? 2 : 0;
            if (guess)
                snprintf(why, sizeof why, "from %d NVLinks per GPU", maxsum);
            else
                snprintf(why, sizeof why, "(no known board has %d NVLinks per GPU)", maxsum);
        }
        if (!(*gen = topo_assumed_gen(s->o, guess, why, s->in, s->d)))
            return BK_EINPUT;
    }
    if (!*plane && *gen && maxsum > topo_nvlink_budget(*gen))
        diag_warning(s->d, s->in->name, DIAG_AT(s->hdr[0].no, 0),
                     "a GPU shows %d NVLinks, more than the %d of a %s: if the NV# cells are "
                     "NVSwitch totals, the graph overstates NVLink bandwidth",
                     maxsum, topo_nvlink_budget(*gen), topo_gen_model(*gen));
    return BK_OK;
}

BK_MUST_USE
enum bk_status smi_build(struct smi *s)
{
    struct topo *t = s->t;
    int gen, plane, per_gpu, nvs = -1;
    BK_CHECK(nvlink_model(s, &gen, &plane, &per_gpu));
    for (int pass = 0; pass < 2; pass++) /* GPUs first, then NICs */
        for (int i = 0; i < s->ncols; i++) {
            struct col *c = &s->cols[i];
            if ((c->gpu >= 0) != (pass == 0))
                continue;
            const char *name = c->dev ? c->dev : c->label;
            struct diag_loc loc = c->dev ? c->dev_loc : c->loc;
            if (topo_find(t, name) >= 0)
                return diag_error(s->d, s->in->name, loc,
                                  "device name '%s' is used twice; every GPU and NIC needs its "
                                  "own name",
                                  name);
            BK_CHECK(topo_add_node(t, pass ? TOPO_NIC : TOPO_GPU, name, 0, loc, &c->node));
            if (pass)
                continue;
            t->nodes[c->node].gpu_order = c->gpu;
            t->nodes[c->node].nvlink_gen = gen;
            if (s->o->gpu_model)
                BK_CHECK(topo_node_set_model(t, c->node, s->o->gpu_model));
        }
    if (plane) { /* one bundle of per_gpu links from each GPU to the plane */
        double r = topo_rate_nvlink(&s->o->rates, gen, per_gpu);
        BK_CHECK(add_synth(s, TOPO_NVSWITCH, "NVSwitch", 0, &nvs));
        for (int i = 0; i < s->ncols; i++)
            if (s->cols[i].gpu >= 0)
                BK_CHECK(topo_add_link(t, s->cols[i].node, nvs, TOPO_NVLINK, per_gpu, r, r,
                                       s->cols[i].row_loc));
    } else {
        for (int i = 0; i < s->ncols; i++)
            for (int j = i + 1; j < s->ncols && s->cols[i].gpu >= 0; j++) {
                const struct cell *c = cell(s, i, j);
                if (c->code != C_NV || s->cols[j].gpu < 0)
                    continue;
                double r = topo_rate_nvlink(&s->o->rates, gen, c->nv);
                BK_CHECK(topo_add_link(t, s->cols[i].node, s->cols[j].node, TOPO_NVLINK, c->nv,
                                       r, r, c->loc));
            }
    }
    return build_pcie(s);
}
