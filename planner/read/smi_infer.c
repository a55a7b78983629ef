/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * smi_infer.c - the `nvidia-smi topo -m` reader's inference (topo_smi.c has the rules): the
 * GPU part and NVLink plane, PCIe switches from PIX and PXB cells, CPUs from affinities and
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

/* Two devices that affinity column `kind` puts on one CPU while their cell says SYS (other
 * sockets): a batch job or container prints its cgroup's CPUs ("0-3" on every row), not the
 * socket. Returns 1 and the first such pair in *a, *b. */
static int affinity_contradicts(const struct smi *s, int kind, int *a, int *b)
{
    for (*a = 0; *a < s->ncols; (*a)++)
        for (*b = *a + 1; *b < s->ncols; (*b)++) {
            const char *x = aff_value(&s->cols[*a], kind), *y = aff_value(&s->cols[*b], kind);
            if (x && y && strcmp(x, y) == 0 && rel(s, *a, *b) == C_SYS)
                return 1;
        }
    return 0;
}

/* CPU number (first-appearance order) of every device into cpu[]; returns the count. */
static int group_cpus(const struct smi *s, int *uf, const char **key, int *cpu, char *mark)
{
    int n = s->ncols, keycol = -1;
    static const int prefer[2] = {T_NUMA, T_CPU};
    static const char *const names[2] = {"NUMA Affinity", "CPU Affinity"};
    for (int k = 0; k < 2 && keycol < 0; k++) {
        int ok = 1, a, b;
        for (int i = 0; i < n; i++)
            if (s->cols[i].gpu >= 0)
                ok &= aff_value(&s->cols[i], prefer[k]) != NULL;
        if (ok && affinity_contradicts(s, prefer[k], &a, &b)) {
            diag_warning(s->rd.d, s->rd.in->name, s->cols[a].row_loc,
                         "%s puts %s and %s on one CPU ('%s'), but their cell says SYS (other "
                         "sockets): the column looks like a job's or container's CPU set, not "
                         "the sockets; the cells win",
                         names[k], s->cols[a].label, s->cols[b].label,
                         aff_value(&s->cols[a], prefer[k]));
            ok = 0;
        }
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
    for (int attempt = 0; attempt <= s->rd.t->nnodes; attempt++) {
        char *name = attempt ? bk_asprintf("%s%d-%d", base, num, attempt)
                             : bk_asprintf("%s%d", base, num);
        if (!name)
            return BK_ENOMEM;
        enum bk_status st = BK_OK;
        int free_name = topo_find(s->rd.t, name) < 0;
        if (free_name)
            st = topo_add_node(s->rd.t, kind, name, 0, DIAG_AT(s->hdr[0].no, 0), out);
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
    struct topo_rates const *rt = &s->rd.o->rates;
    for (int c = 0; c < ncpu; c++) {
        BK_CHECK_GOTO(add_synth(s, TOPO_CPU, "CPU", c, &cpu_node[c]), st, out);
        s->rd.t->nodes[cpu_node[c]].socket = c;
        double smp = topo_rate_smp(rt, TOPO_CPU_UNKNOWN);
        for (int c2 = 0; c2 < c; c2++)
            BK_CHECK_GOTO(topo_add_link(s->rd.t, cpu_node[c2], cpu_node[c], TOPO_SMP, 1, smp, smp,
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
                BK_CHECK_GOTO(topo_add_link(s->rd.t, up_node[p], cpu_node[cpu[p]], TOPO_PCIE, 1,
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
                BK_CHECK_GOTO(topo_add_link(s->rd.t, leaf_node[g], pa, TOPO_PCIE, 1, pcie, pcie, loc),
                              st, out);
            }
            attach = leaf_node[g];
        }
        BK_CHECK_GOTO(topo_add_link(s->rd.t, s->cols[a].node, attach, TOPO_PCIE, 1, pcie, pcie, loc),
                      st, out);
    }
    st = BK_OK;
out:
    free(buf), free(key), free(mark);
    return st;
}

/* ---------------------------------------------------------------- NVLink */

/* What the NV# cells look like, over the GPU columns. */
struct shape {
    int ng;       /* GPU columns */
    int any;      /* some pair shows NV# */
    int uniform;  /* the NV# every GPU pair shows, 0 when pairs differ or one shows none */
    int maxsum;   /* most NVLinks one row adds up to */
    int sum_col;  /* the column of that row */
    int maxcell;  /* largest NV# */
    int complete; /* every GPU pair shows NV# */
    int pairs;    /* every GPU is NVLinked to at most one other GPU (bridged pairs) */
};

static int nv_of(const struct smi *s, int i, int j)
{
    const struct cell *c = cell(s, i, j);
    return c->code == C_NV ? c->nv : 0;
}

static void get_shape(const struct smi *s, struct shape *sh)
{
    memset(sh, 0, sizeof *sh);
    sh->uniform = -1;
    sh->complete = sh->pairs = 1;
    sh->sum_col = -1;
    for (int i = 0; i < s->ncols; i++) {
        if (s->cols[i].gpu < 0)
            continue;
        int sum = 0, peers = 0;
        sh->ng++;
        for (int j = 0; j < s->ncols; j++) {
            if (j == i || s->cols[j].gpu < 0)
                continue;
            int v = nv_of(s, i, j);
            sum += v;
            peers += v > 0;
            sh->any |= v > 0;
            sh->complete &= v > 0;
            sh->maxcell = v > sh->maxcell ? v : sh->maxcell;
            sh->uniform = sh->uniform == -1 || sh->uniform == v ? v : 0;
        }
        sh->pairs &= peers <= 1;
        if (sh->sum_col < 0 || sum > sh->maxsum)
            sh->maxsum = sum, sh->sum_col = i;
    }
    if (sh->uniform < 0)
        sh->uniform = 0;
}

/* The smallest of `names` (in rising link counts) with at least n NVLinks, or NULL. */
static const struct topo_gpu_part *smallest(const char *const *names, size_t k, int n)
{
    for (size_t i = 0; i < k; i++) {
        const struct topo_gpu_part *p = topo_gpu_part_find(names[i]);
        if (p && p->links >= n)
            return p;
    }
    return NULL;
}

/*
 * Guess the part from the shape alone (see NVLINK in topo_smi.c): a uniform NV# at a switch
 * count is that board's NVSwitch plane; bridged pairs are the bridge part with that many links;
 * otherwise direct links, on the smallest board with direct links that has the row's links.
 * Fills `why` with the reason, and the other boards that print the same, for the warning.
 */
static const struct topo_gpu_part *guess_part(const struct shape *sh, char *why, size_t cap)
{
    static const char *const plane[] = {"V100", "A800", "A100", "H100"}; /* 6 8 12 18 */
    static const char *const mesh[] = {"P100", "V100", "A100", "H100"};   /* 4 6 12 18 */
    static const char *const bridge[] = {"Quadro RTX 5000", "TITAN RTX", "RTX 3090", "V100",
                                         "A800", "A100", "H100"};        /* 1 2 4 6 8 12 18 */
    const struct topo_gpu_part *p;
    int u = sh->uniform;
    if (u > 0 && sh->ng >= 3 && (u == 6 || u == 8 || u == 12 || u == 18)) {
        p = smallest(plane, BK_ARRAY_LEN(plane), u);
        snprintf(why, cap, "NV%d between every GPU pair, the NVSwitch plane of %s boards%s", u,
                 p->name,
                 u == 6 && sh->ng == 4 ? " (4 H100s with direct links print NV6 too: "
                                         "--gpu-model H100)"
                 : u == 8  ? " (an H800 board prints NV8 too, at the same rate)"
                 : u == 18 ? " (H200, H20 and B200 boards print NV18 too; B200 links run at "
                             "50 GB/s: --gpu-model B200)"
                           : "");
        return p;
    }
    if (sh->pairs) {
        p = smallest(bridge, BK_ARRAY_LEN(bridge), sh->maxcell);
        if (p)
            snprintf(why, cap, "NV%d between %s%s", sh->maxcell,
                     sh->ng == 2 ? "the two GPUs" : "bridged pairs of GPUs",
                     p->link_gbps != 25 ? " (an A30 pair prints NV4 too, at 25 GB/s per link: "
                                          "--gpu-model A30)"
                                        : "");
        return p;
    }
    if ((p = smallest(mesh, BK_ARRAY_LEN(mesh), sh->maxsum))) {
        snprintf(why, cap, "%d NVLinks per GPU, as direct links", sh->maxsum);
        return p;
    }
    /* More links than any GPU has: only a switch plane can explain that. */
    if ((p = smallest(plane, BK_ARRAY_LEN(plane), sh->maxcell)))
        snprintf(why, cap, "NV%d cells that add up to %d per GPU, more than any GPU has as "
                 "direct links", sh->maxcell, sh->maxsum);
    return p;
}

/* The name `nvidia-smi -L` gave matrix column i's GPU, or NULL. */
static const struct listed_gpu *listed_of(const struct smi *s, int i)
{
    for (int k = 0; k < s->nlisted; k++)
        if (s->listed[k].gpu == s->cols[i].gpu)
            return &s->listed[k];
    return NULL;
}

/* The part all `nvidia-smi -L` lines name, or NULL with a warning when they name a part the
 * table does not know, several parts, or a GPU the matrix does not have. */
static const struct topo_gpu_part *listed_part(const struct smi *s)
{
    const struct topo_gpu_part *part = NULL;
    for (int k = 0; k < s->nlisted; k++) {
        const struct listed_gpu *g = &s->listed[k];
        const struct topo_gpu_part *p = topo_gpu_part_find(g->name);
        int in_matrix = 0;
        for (int i = 0; i < s->ncols; i++)
            in_matrix |= s->cols[i].gpu == g->gpu;
        const char *why = !in_matrix ? "the matrix has no such GPU"
                          : !p       ? "a GPU the parts table does not know"
                          : part && p != part ? "another part than the lines above it"
                                              : NULL;
        if (why) {
            diag_warning(s->rd.d, s->rd.in->name, g->loc,
                         "nvidia-smi -L line for GPU %d names '%.*s', %s; the GPU model is "
                         "inferred from the matrix instead",
                         g->gpu, QUOTE, g->name, why);
            return NULL;
        }
        part = p;
    }
    return part;
}

/*
 * The part of every GPU (--gpu-model, else named by nvidia-smi -L lines, else guessed with a
 * warning) and whether the NV# cells
 * are one NVSwitch plane. The rule: the cells are direct links only if no row adds up to more
 * NVLinks than the part has; a row that does means a switch plane, with each GPU's own NV# as
 * its links to it. Cells no reading fits are refused.
 */
BK_MUST_USE
static enum bk_status nvlink_model(struct smi *s, const struct topo_gpu_part **part, int *assumed,
                                   int *plane)
{
    struct shape sh;
    get_shape(s, &sh);
    *part = NULL;
    *assumed = *plane = 0;
    if (s->rd.o->gpu_model && !(*part = topo_gpu_part_find(s->rd.o->gpu_model))) {
        char names[200];
        return diag_error(s->rd.d, NULL, DIAG_NOWHERE, "--gpu-model %.40s: unknown GPU model (%s)",
                          s->rd.o->gpu_model, topo_gpu_part_names(names, sizeof names));
    }
    if (!*part && s->nlisted)
        *part = listed_part(s);
    if (!sh.any)
        return BK_OK; /* no NVLink: the rates of none matter */
    struct diag_loc at = DIAG_AT(s->hdr[0].no, 0);
    if (!*part) {
        char why[200];
        if (!(*part = guess_part(&sh, why, sizeof why)))
            return diag_error(s->rd.d, s->rd.in->name, s->cols[sh.sum_col].row_loc,
                              "row %s's NV# cells add up to %d NVLinks, more than any GPU has, "
                              "and not every GPU pair is NVLinked, so they are neither direct "
                              "links nor one NVSwitch plane",
                              s->cols[sh.sum_col].label, sh.maxsum);
        *assumed = 1;
        const struct topo_gpu_part *p = *part;
        diag_warning(s->rd.d, s->rd.in->name, at,
                     "the input does not name the GPU model; assuming %s (NVLink%d, %d NVLinks "
                     "per GPU of %g GB/s each) from %s; use --gpu-model to say otherwise",
                     p->name, p->gen, p->links, topo_part_link_gbps(&s->rd.o->rates, p, NULL, p->gen),
                     why);
    }
    const struct topo_gpu_part *p = *part;
    if (sh.maxcell > p->links) {
        for (int i = 0; i < s->ncols; i++)
            for (int j = 0; j < s->ncols && s->cols[i].gpu >= 0; j++)
                if (s->cols[j].gpu >= 0 && nv_of(s, i, j) == sh.maxcell)
                    return diag_error(s->rd.d, s->rd.in->name, cell(s, i, j)->loc,
                                      "NV%d between %s and %s, but %s GPUs have %d NVLinks "
                                      "each (check --gpu-model)",
                                      sh.maxcell, s->cols[i].label, s->cols[j].label, p->name,
                                      p->links);
    }
    if (sh.maxsum <= p->links)
        return BK_OK; /* direct links, within what every GPU has */
    if (!sh.complete)
        return diag_error(s->rd.d, s->rd.in->name, s->cols[sh.sum_col].row_loc,
                          "row %s's NV# cells add up to %d NVLinks, but %s GPUs have %d each, "
                          "and not every GPU pair is NVLinked, so they are neither direct links "
                          "nor one NVSwitch plane",
                          s->cols[sh.sum_col].label, sh.maxsum, p->name, p->links);
    *plane = 1;
    if (!*assumed && sh.uniform != p->links)
        diag_note(s->rd.d, s->rd.in->name, at,
                  "%s: as direct links the NV# cells would give a GPU %d NVLinks, but %s GPUs "
                  "have %d each; read as one NVSwitch plane, each GPU with its own NV# links to it",
                  s->cols[sh.sum_col].label, sh.maxsum, p->name, p->links);
    return BK_OK;
}

/* A GPU's links to the plane: the largest NV# in its row. */
static int plane_links(const struct smi *s, int i)
{
    int most = 0;
    for (int j = 0; j < s->ncols; j++)
        if (j != i && s->cols[j].gpu >= 0 && nv_of(s, i, j) > most)
            most = nv_of(s, i, j);
    return most;
}

BK_MUST_USE
enum bk_status smi_build(struct smi *s)
{
    struct topo *t = s->rd.t;
    const struct topo_gpu_part *part;
    int assumed, plane, nvs = -1;
    BK_CHECK(nvlink_model(s, &part, &assumed, &plane));
    int gen = part ? part->gen : 0;
    for (int pass = 0; pass < 2; pass++) /* GPUs first, then NICs */
        for (int i = 0; i < s->ncols; i++) {
            struct col *c = &s->cols[i];
            if ((c->gpu >= 0) != (pass == 0))
                continue;
            const char *name = c->dev ? c->dev : c->label;
            struct diag_loc loc = c->dev ? c->dev_loc : c->loc;
            if (topo_find(t, name) >= 0)
                return diag_error(s->rd.d, s->rd.in->name, loc,
                                  "device name '%s' is used twice; every GPU and NIC needs its "
                                  "own name",
                                  name);
            BK_CHECK(topo_add_node(t, pass ? TOPO_NIC : TOPO_GPU, name, 0, loc, &c->node));
            if (pass)
                continue;
            t->nodes[c->node].gpu_order = c->gpu;
            t->nodes[c->node].no_p2p = c->no_p2p;
            t->nodes[c->node].nvlink_gen = gen;
            const struct listed_gpu *named = listed_of(s, i);
            if (s->rd.o->gpu_model || named)
                BK_CHECK(topo_node_set_model(t, c->node,
                                             s->rd.o->gpu_model ? s->rd.o->gpu_model : named->name));
            t->nodes[c->node].part = part; /* where the reader assumed it, recorded as such */
            t->nodes[c->node].part_assumed = assumed;
        }
    if (plane) { /* one bundle from each GPU to the plane, of its own NV# links */
        BK_CHECK(add_synth(s, TOPO_NVSWITCH, "NVSwitch", 0, &nvs));
        for (int i = 0; i < s->ncols; i++) {
            int links = s->cols[i].gpu >= 0 ? plane_links(s, i) : 0;
            double r = topo_rate_nvlink_parts(&s->rd.o->rates, part, NULL, gen, links);
            if (links)
                BK_CHECK(topo_add_link(t, s->cols[i].node, nvs, TOPO_NVLINK, links, r, r,
                                       s->cols[i].row_loc));
        }
    } else {
        for (int i = 0; i < s->ncols; i++)
            for (int j = i + 1; j < s->ncols && s->cols[i].gpu >= 0; j++) {
                const struct cell *c = cell(s, i, j);
                if (c->code != C_NV || s->cols[j].gpu < 0)
                    continue;
                double r = topo_rate_nvlink_parts(&s->rd.o->rates, part, part, gen, c->nv);
                BK_CHECK(topo_add_link(t, s->cols[i].node, s->cols[j].node, TOPO_NVLINK, c->nv,
                                       r, r, c->loc));
            }
    }
    return build_pcie(s);
}
