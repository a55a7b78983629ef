/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * hwloc_links.c - the hwloc reader's NVLink (topo_hwloc.c): the NVLinkBandwidth matrix read into
 * links, with the 2.5.0-2.9.0 doubling of NVLink3/4 undone, and the DGX-2 trunks between
 * NVSwitch boards that hwloc never reports.
 */
#include "read/hwloc_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "read/xml_safe.h"

enum member { M_NONE, M_GPU, M_NVSWITCH, M_CPU };

/* How messages name a matrix member: "nvml0", "PCIDev 0000:61:00.0", "Package P#1". */
static void label(hwloc_obj_t o, char *buf, size_t n)
{
    if (o->name)
        snprintf(buf, n, "%.40s", o->name);
    else if (o->type == HWLOC_OBJ_PCI_DEVICE)
        snprintf(buf, n, "PCIDev %04x:%02x:%02x.%x", (unsigned)o->attr->pcidev.domain,
                 (unsigned)o->attr->pcidev.bus, (unsigned)o->attr->pcidev.dev,
                 (unsigned)o->attr->pcidev.func);
    else
        snprintf(buf, n, "%s P#%u", hwloc_obj_type_string(o->type), o->os_index);
}

/*
 * What a matrix member is: a GPU (through any of its OS devices) or an NVSwitch, with *k its
 * device index, or the CPU of a normal object (hwloc puts the POWER8/9 NPU's Package there),
 * with *k its cpu node.
 */
static enum member member(const struct ctx *c, hwloc_obj_t o, int *k)
{
    if (o && o->type == HWLOC_OBJ_OS_DEVICE)
        o = o->parent;
    if (o && o->cpuset) /* only normal objects have one */
        return (*k = hwloc_cpu_of(c, o)) >= 0 ? M_CPU : M_NONE;
    uintptr_t u = o && o->type == HWLOC_OBJ_PCI_DEVICE ? (uintptr_t)o->userdata : 0;
    if (!u || u > (uintptr_t)c->ndevs || c->devs[u - 1].kind == DEV_NIC)
        return M_NONE;
    *k = (int)(u - 1);
    return c->devs[*k].kind == DEV_GPU ? M_GPU : M_NVSWITCH;
}

/* The node of a GPU or NVSwitch; switches become nodes with their first link. */
BK_MUST_USE
static enum bk_status dev_node(struct ctx *c, int k, int *node)
{
    struct dev *dv = &c->devs[k];
    if (dv->node < 0) {
        BK_CHECK(hwloc_add_named(c, TOPO_NVSWITCH, dv->busid, hwloc_loc_of(c, dv->pci), &dv->node));
        BK_CHECK(topo_node_set_busid(c->rd.t, dv->node, dv->busid));
    }
    *node = dv->node;
    return BK_OK;
}

/* hwloc's MB/s per link (topology-nvml.c); 2.5.0-2.9.0 wrote 50000 for NVLink3/4. */
static unsigned per_link(const struct ctx *c, int gen)
{
    if (gen == 1)
        return 20000;
    if (gen == 5 || ((gen == 3 || gen == 4) && c->doubled))
        return 50000;
    return 25000;
}

/* A GPU's NVLinks: its part's (an A800 or H800 has 8), else its generation's flagship's. */
static int link_budget(const struct ctx *c, const struct dev *g)
{
    const struct topo_gpu_part *p = g->node >= 0 ? c->rd.t->nodes[g->node].part : NULL;
    return p && p->gen == g->gen ? p->links : topo_nvlink_budget(g->gen);
}

/* The name of a GPU's part, for messages. */
static const char *part_name(const struct ctx *c, const struct dev *g)
{
    const struct topo_gpu_part *p = g->node >= 0 ? c->rd.t->nodes[g->node].part : NULL;
    return p && p->gen == g->gen ? p->name : topo_gen_model(g->gen);
}

/*
 * Decide whether the writer doubled NVLink3/4 values. A known version decides: 2.5.0 up to
 * 2.9.0 did (fixed in 2.9.1 by hwloc commit 01fee4021). An unknown one (a pre-release, or no
 * hwlocVersion) is judged by the link budget: if some A100/H100 would have more NVLinks than
 * the part has at 25000 MB/s per link, and every value is a multiple of 50000, the file is
 * doubled.
 */
static void decide_doubling(struct ctx *c)
{
    const char *v = c->pc.version, *p = v;
    long part[3] = {0, 0, 0}, n = 0;
    while (p && n < 3 && *p >= '0' && *p <= '9') { /* "2.9.0", "2.5.0a1-git", "2.10" */
        for (; *p >= '0' && *p <= '9'; p++)
            part[n] = part[n] < 100000 ? part[n] * 10 + (*p - '0') : part[n];
        n++;
        p = *p == '.' ? p + 1 : NULL;
    }
    if (n >= 2) {
        long ver = part[0] * 1000000 + part[1] * 1000 + part[2];
        c->doubled = ver >= 2005000 && ver <= 2009000;
        return;
    }
    c->doubled = 0;
    int all50 = 1, over = -1;
    long long worst = 0;
    for (unsigned k = 0; k < c->ndist; k++) {
        const struct hwloc_distances_s *m = c->dist[k];
        for (unsigned i = 0; i < m->nbobjs; i++) {
            int gpu;
            if (member(c, m->objs[i], &gpu) != M_GPU ||
                (c->devs[gpu].gen != 3 && c->devs[gpu].gen != 4))
                continue;
            long long links = 0;
            for (unsigned j = 0; j < m->nbobjs; j++) {
                hwloc_uint64_t x = m->values[(size_t)i * m->nbobjs + j];
                if (i == j || !x)
                    continue;
                all50 &= x % 50000 == 0;
                links += x / 25000 < 1000000 ? (long long)(x / 25000) : 1000000;
            }
            if (links > link_budget(c, &c->devs[gpu]) && links > worst)
                worst = links, over = gpu;
        }
    }
    if (over >= 0 && all50) {
        c->doubled = 1;
        const struct dev *g = &c->devs[over];
        diag_warning(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
                     "unknown hwloc version '%.40s': at 25000 MB/s per link GPU %s would have %lld "
                     "NVLinks, but %s GPUs have %d, so the values are read as hwloc "
                     "2.5.0-2.9.0's doubled NVLink%d encoding (50000 MB/s per link)",
                     v ? v : "(none)", c->rd.t->nodes[g->node].name, worst, part_name(c, g),
                     link_budget(c, g), g->gen);
    }
}

BK_MUST_USE
static enum bk_status add_nvlink(struct ctx *c, int a, int b, int count, int gen,
                                 struct diag_loc loc, const char *path)
{
    int have = topo_find_link(c->rd.t, a, b, TOPO_NVLINK);
    if (have >= 0) { /* the same pair again, e.g. in a second matrix */
        if (c->rd.t->links[have].count == count)
            return BK_OK;
        return diag_error(c->rd.d, c->rd.in->name, loc,
                          "%s: %s and %s are given %d NVLinks here but %d elsewhere", path,
                          c->rd.t->nodes[a].name, c->rd.t->nodes[b].name, count,
                          c->rd.t->links[have].count);
    }
    /* hwloc counts every NVLink3 link as 25000 MB/s, but a GA102 bridge runs at its part's own
       14.0625 GB/s: the count comes from hwloc, the rate from the parts. */
    const struct topo_node *na = &c->rd.t->nodes[a], *nb = &c->rd.t->nodes[b];
    double r = topo_rate_nvlink_parts(&c->rd.o->rates, na->kind == TOPO_GPU ? na->part : NULL,
                                      nb->kind == TOPO_GPU ? nb->part : NULL, gen, count);
    return topo_add_link(c->rd.t, a, b, TOPO_NVLINK, count, r, r, loc);
}

BK_MUST_USE
static enum bk_status read_matrix(struct ctx *c, unsigned k)
{
    const struct hwloc_distances_s *m = c->dist[k];
    xmlNodePtr el = (int)c->ndist == c->pc.nmats ? c->pc.mats[k] : c->pc.nmats ? c->pc.mats[0] : NULL;
    struct diag_loc loc = el ? xml_node_loc(el) : DIAG_NOWHERE;
    char *path = el ? xml_node_path(el) : NULL;
    const char *where = path ? path : "NVLinkBandwidth";
    enum bk_status st = BK_OK;
    int warned = 0;
    unsigned n = m->nbobjs;
    for (unsigned i = 0; i < n && st == BK_OK; i++)
        for (unsigned j = i + 1; j < n && st == BK_OK; j++) {
            hwloc_uint64_t v = m->values[(size_t)i * n + j], w = m->values[(size_t)j * n + i];
            if (!v && !w)
                continue;
            char na[64], nb[64];
            label(m->objs[i], na, sizeof na);
            label(m->objs[j], nb, sizeof nb);
            if (v != w) {
                st = diag_error(c->rd.d, c->rd.in->name, loc,
                                "%s: NVLinkBandwidth is not symmetric: %llu MB/s from %s to %s "
                                "but %llu MB/s back (hwloc always writes both directions "
                                "alike)",
                                where, (unsigned long long)v, na, nb, (unsigned long long)w);
                break;
            }
            int ka, kb;
            enum member ma = member(c, m->objs[i], &ka), mb = member(c, m->objs[j], &kb);
            /* hwloc links a GPU to GPUs, NVSwitches and (POWER NPU) packages only. */
            if (ma == M_NONE || mb == M_NONE ||
                (ma != M_GPU && mb != M_GPU && (ma == M_CPU || mb == M_CPU))) {
                if (!warned++)
                    diag_warning(c->rd.d, c->rd.in->name, loc,
                                 "%s: ignoring NVLink bandwidth between %s and %s: blinkc "
                                 "knows NVLinks only from GPUs to GPUs, NVSwitches and CPU "
                                 "packages",
                                 where, na, nb);
                continue;
            }
            if (ma == mb && ka == kb)
                continue; /* two OS devices of one GPU */
            int gen = c->max_gen;
            if (ma == M_GPU && mb == M_GPU)
                gen = c->devs[ka].gen < c->devs[kb].gen ? c->devs[ka].gen : c->devs[kb].gen;
            else if (ma == M_GPU || mb == M_GPU)
                gen = c->devs[ma == M_GPU ? ka : kb].gen;
            unsigned unit = per_link(c, gen);
            if (v % unit || v / unit > MAX_LINKS_PER_PAIR) {
                st = diag_error(
                    c->rd.d, c->rd.in->name, loc,
                    "%s: NVLinkBandwidth between %s and %s is %llu MB/s, not a whole number of "
                    "NVLink%d links (hwloc writes %u MB/s per %s link%s, summed over the links "
                    "of a pair, at most %d)",
                    where, na, nb, (unsigned long long)v, gen, unit, topo_gen_model(gen),
                    unit == 50000 && gen < 5 ? "; hwloc 2.5.0-2.9.0 doubled NVLink3/4, so if "
                                               "the writer had the 2.9.1 fix, say so with "
                                               "hwlocVersion 2.9.1"
                                             : "",
                    MAX_LINKS_PER_PAIR);
                break;
            }
            int a = ka, b = kb;
            if ((ma != M_CPU && (st = dev_node(c, ka, &a)) != BK_OK) ||
                (mb != M_CPU && (st = dev_node(c, kb, &b)) != BK_OK))
                break;
            st = add_nvlink(c, a, b, (int)(v / unit), gen, loc, where);
        }
    free(path);
    return st;
}

BK_MUST_USE
enum bk_status hwloc_add_nvlinks(struct ctx *c)
{
    if (!c->ndist) {
        int ngpus = 0, nvidia = 0, nvml = 0;
        for (int i = 0; i < c->ndevs; i++) {
            const struct dev *g = &c->devs[i];
            ngpus += g->kind == DEV_GPU;
            nvidia += g->kind == DEV_GPU && g->pci->attr->pcidev.vendor_id == 0x10de;
            nvml += g->kind == DEV_GPU && g->os[0] != NULL; /* scheme 0: nvmlN */
        }
        /* NVIDIA GPUs seen without NVML (OpenCL or CUDA only) may well have NVLinks that the
         * file cannot show: say so loudly rather than plan as if the box had none. */
        if (nvidia > 1 && nvml == 0)
            diag_warning(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
                         "NVLinks unknown: these %d NVIDIA GPUs were exported without NVML (through "
                         "OpenCL or CUDA), so the file has no NVLinkBandwidth matrix, and blinkc "
                         "plans over PCIe only, maybe far below the box's NVLink speed; export "
                         "with hwloc's NVML plugin where the NVIDIA driver runs (Debian: "
                         "libhwloc-contrib-plugins), or give blinkc an NCCL dump "
                         "(NCCL_TOPO_DUMP_FILE) or 'nvidia-smi topo -m'", nvidia);
        else if (ngpus > 1)
            diag_warning(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
                         "no NVLinkBandwidth matrix: the GPUs are joined by PCIe only (hwloc "
                         "writes NVLinks only from 2.5 on, when built with NVML and run where "
                         "the NVIDIA driver works)");
        return BK_OK;
    }
    decide_doubling(c);
    for (unsigned k = 0; k < c->ndist; k++)
        BK_CHECK(read_matrix(c, k));
    int nvlinks = 0;
    for (int l = 0; l < c->rd.t->nlinks; l++)
        nvlinks += c->rd.t->links[l].kind == TOPO_NVLINK;
    if (c->max_gen == 5 && !nvlinks)
        diag_warning(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
                     "the NVLinkBandwidth matrix has no NVLink5 link: hwloc before 2.12 drops "
                     "them; export with hwloc 2.12 or later");
    return BK_OK;
}

/* ---------------------------------------------------------------- NVSwitch trunks */

static int uf_find(int *up, int x)
{
    while (up[x] != x)
        x = up[x] = up[up[x]];
    return x;
}

struct swkey {
    const char *busid;
    int node;
};

static int cmp_swkey(const void *pa, const void *pb)
{
    const struct swkey *a = pa, *b = pb;
    int r = strcmp(a->busid ? a->busid : "", b->busid ? b->busid : "");
    return r ? r : a->node - b->node;
}

/* NVLinks from switch node s to GPUs. */
static int gpu_links(const struct topo *t, int s)
{
    int n = 0;
    for (int l = 0; l < t->nlinks; l++)
        if (t->links[l].src == s && t->links[l].kind == TOPO_NVLINK &&
            t->nodes[t->links[l].dst].kind == TOPO_GPU)
            n += t->links[l].count;
    return n;
}

/*
 * DGX-2 trunks. hwloc (NVML) sees only GPU-to-switch NVLinks, so a DGX-2 reads as two 8-GPU
 * islands. Rule: when the linked NVSwitches split into exactly two NVLink-connected groups
 * (baseboards) of equal size, each with GPUs, and no switch links to a switch or to a GPU of
 * the other group, the boards are joined the way NVIDIA builds them: each switch gets a trunk
 * bundle to its peer on the other board (peers paired in bus-id order) with as many NVLinks as
 * the pair's larger GPU-link count (8 on a DGX-2: 8 GPU ports + 8 trunk ports + 2 unused of
 * NVSwitch gen1's 18), of the GPUs' NVLink generation. Any other shape is left as the file says.
 */
BK_MUST_USE
enum bk_status hwloc_add_trunks(struct ctx *c)
{
    struct topo *t = c->rd.t;
    int nsw = 0;
    for (int i = 0; i < t->nnodes; i++)
        nsw += t->nodes[i].kind == TOPO_NVSWITCH;
    if (nsw < 2 || nsw % 2)
        return BK_OK;
    int *up = malloc((size_t)t->nnodes * sizeof *up);
    struct swkey *grp = malloc((size_t)nsw * 2 * sizeof *grp);
    enum bk_status st = BK_ENOMEM;
    if (!up || !grp)
        goto out;
    st = BK_OK;
    for (int i = 0; i < t->nnodes; i++)
        up[i] = i;
    for (int l = 0; l < t->nlinks; l++) {
        const struct topo_link *k = &t->links[l];
        if (k->kind != TOPO_NVLINK)
            continue;
        if (t->nodes[k->src].kind == TOPO_NVSWITCH && t->nodes[k->dst].kind == TOPO_NVSWITCH)
            goto out; /* the file already has switch-to-switch links */
        up[uf_find(up, k->src)] = uf_find(up, k->dst);
    }
    int root[2] = {-1, -1}, nin[2] = {0, 0}, ngpu[2] = {0, 0};
    for (int i = 0; i < t->nnodes; i++) {
        if (t->nodes[i].kind != TOPO_NVSWITCH)
            continue;
        int r = uf_find(up, i), g = r == root[0] ? 0 : r == root[1] ? 1 : -1;
        if (g < 0 && root[0] < 0)
            root[g = 0] = r;
        else if (g < 0 && root[1] < 0)
            root[g = 1] = r;
        if (g < 0)
            goto out; /* three or more groups */
        grp[g * nsw + nin[g]++] = (struct swkey){t->nodes[i].busid, i};
    }
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == TOPO_GPU) {
            int r = uf_find(up, i);
            ngpu[0] += r == root[0];
            ngpu[1] += r == root[1];
        }
    if (root[1] < 0 || nin[0] != nin[1] || !ngpu[0] || !ngpu[1])
        goto out;
    qsort(grp, (size_t)nin[0], sizeof *grp, cmp_swkey);
    qsort(grp + nsw, (size_t)nin[1], sizeof *grp, cmp_swkey);
    int added = 0;
    for (int i = 0; i < nin[0] && st == BK_OK; i++) {
        int a = grp[i].node, b = grp[nsw + i].node;
        int na = gpu_links(t, a), nb = gpu_links(t, b), n = na > nb ? na : nb;
        double r = topo_rate_nvlink(&c->rd.o->rates, c->max_gen, n);
        st = topo_add_link(t, a, b, TOPO_NVLINK, n, r, r, DIAG_NOWHERE);
        added += n;
    }
    if (st == BK_OK)
        diag_note(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
                  "added %d NVSwitch trunk NVLinks between %d switch pairs (peers paired in "
                  "bus-id order, each pair with as many links as a switch has GPU links, as on a "
                  "DGX-2): hwloc reports no switch-to-switch links, and the %d NVSwitches form "
                  "two baseboards (%d and %d GPUs) whose switches link only to their own GPUs",
                  added, nin[0], nsw, ngpu[0], ngpu[1]);
out:
    free(up);
    free(grp);
    return st;
}

