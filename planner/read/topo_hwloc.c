/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_hwloc.c - the hwloc 2.x XML reader: `lstopo --of xml` output -> topology model.
 *
 * The file is first checked with libxml2 (xml_safe: no entities, well-formed; hwloc_precheck: a
 * <topology version="2.x"> root and nothing libhwloc 2.9 crashes or leaks on), then loaded by
 * libhwloc with every I/O object kept, because NVLink exists only in hwloc's NVLinkBandwidth
 * distance matrix and that matrix refers to I/O objects. GPUs are PCI devices carrying an
 * NVML/CUDA/OpenCL/RSMI OS device; NVSwitches, NICs, the PCIe tree (collapsed to switch chips)
 * and CPU packages come from the object tree. Two hwloc quirks are undone here: the
 * 2.5.0-2.9.0 doubling of NVLink3/4 values, and the DGX-2 switch trunks hwloc never reports.
 * Nothing is printed: hwloc and libxml2 stay silent and every problem becomes a diagnostic
 * naming the XML element and line.
 */
#include <hwloc.h>
#include <libxml/tree.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/hwloc_precheck.h"
#include "core/strbuf.h"
#include "read/topo_read.h"
#include "read/xml_safe.h"

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
    const struct input *in;
    const struct topo_read_opts *o;
    struct topo *t;
    struct diag *d;
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

BK_MUST_USE
static enum bk_status grow(void **p, int *cap, int n, size_t elt)
{
    if (n < *cap)
        return BK_OK;
    int ncap = *cap ? 2 * *cap : 16;
    void *q = realloc(*p, (size_t)ncap * elt);
    if (!q)
        return BK_ENOMEM;
    *p = q;
    *cap = ncap;
    return BK_OK;
}

/* A small non-negative decimal from an hwloc info value; -1 when absent or not a number. */
static int info_int(hwloc_obj_t o, const char *name)
{
    unsigned long long v;
    const char *s = o ? hwloc_obj_get_info_by_name(o, name) : NULL;
    return s && hwloc_precheck_ull(s, &v) && v < 1000000 ? (int)v : -1;
}

static const char *info_str(hwloc_obj_t o, const char *name)
{
    const char *s = o ? hwloc_obj_get_info_by_name(o, name) : NULL;
    return s && *s ? s : NULL;
}

/* Where the file declares the object hwloc calls `o` (hwloc keeps the file's gp_index). */
static struct diag_loc loc_of(const struct ctx *c, hwloc_obj_t o)
{
    int line = o ? hwloc_precheck_line(&c->pc, o->gp_index) : 0;
    return line ? DIAG_AT(line, 0) : DIAG_NOWHERE;
}

/*
 * hwloc's minimal XML parser (HWLOC_LIBXML_IMPORT=0) stops at comments, which hwloc never writes
 * but people add. Blank them, keeping newlines so line numbers still match. The document is
 * well-formed, so "<!--" cannot sit in an attribute; hwloc files have no CDATA to worry about.
 */
static void blank_comments(char *s, size_t len)
{
    char *end = s + len;
    for (char *p = s; (p = memchr(p, '<', (size_t)(end - p))) && end - p >= 4; p++) {
        if (memcmp(p, "<!--", 4) != 0)
            continue;
        char *q = strstr(p + 4, "-->"), *stop = q ? q + 3 : end;
        for (char *r = p; r < stop; r++)
            if (*r != '\n')
                *r = ' ';
        p = stop - 1;
    }
}

/* ---------------------------------------------------------------- loading through hwloc */

BK_MUST_USE
static enum bk_status load_hwloc(struct ctx *c)
{
    if (c->in->len >= (size_t)INT_MAX)
        return diag_error(c->d, c->in->name, DIAG_NOWHERE, "XML file too large for hwloc");
    char *buf = malloc(c->in->len + 1);
    if (!buf)
        return BK_ENOMEM;
    memcpy(buf, c->in->data, c->in->len);
    buf[c->in->len] = '\0';
    blank_comments(buf, c->in->len);

    /* hwloc 2.9 prints a banner to stderr for some files it still loads (an out-of-order
     * object) and has no API to stop it; HWLOC_HIDE_ERRORS, read once per process, is the only
     * switch (2 = hide all, also on hwloc >= 2.10). A value the user set explicitly wins. */
    setenv("HWLOC_HIDE_ERRORS", "2", 0);
    enum bk_status st = BK_OK;
    if (hwloc_topology_init(&c->hw) < 0) {
        c->hw = NULL;
        free(buf);
        return BK_ENOMEM;
    }
    /* Without KEEP_ALL hwloc silently drops the GPUs' OS devices and with them the matrix. */
    if (hwloc_topology_set_io_types_filter(c->hw, HWLOC_TYPE_FILTER_KEEP_ALL) < 0)
        st = diag_error(c->d, c->in->name, DIAG_NOWHERE,
                        "hwloc refused to keep I/O objects (hwloc_topology_set_io_types_filter)");
    /* A failed set_xmlbuffer leaves the native backend in place: never load after it, or we
     * would describe the machine blinkc runs on. The size counts the terminating NUL. */
    else if (hwloc_topology_set_xmlbuffer(c->hw, buf, (int)c->in->len + 1) < 0 ||
             hwloc_topology_load(c->hw) < 0) {
        const char *imp = getenv("HWLOC_LIBXML");
        if (!imp)
            imp = getenv("HWLOC_LIBXML_IMPORT");
        st = diag_error(c->d, c->in->name, DIAG_NOWHERE,
                        "hwloc 2.9 could not import this topology although it is well-formed "
                        "XML: an object, attribute or distance matrix is not what hwloc 2.x "
                        "writes%s; 'HWLOC_XML_VERBOSE=1 lstopo-no-graphics --input FILE' shows "
                        "hwloc's reason",
                        imp && imp[0] == '0' ? " (HWLOC_LIBXML_IMPORT=0 selects hwloc's minimal "
                                               "parser, which reads only files written by hwloc)"
                                             : "");
    }
    free(buf);
    return st;
}

BK_MUST_USE
static enum bk_status get_matrices(struct ctx *c)
{
    unsigned nr = 0;
    struct hwloc_distances_s *none = NULL;
    if (hwloc_distances_get_by_name(c->hw, "NVLinkBandwidth", &nr, &none, 0) < 0)
        return diag_error(c->d, c->in->name, DIAG_NOWHERE,
                          "hwloc could not return the NVLinkBandwidth matrix");
    if (nr == 0)
        return BK_OK;
    if (nr > 64)
        nr = 64;
    if (!(c->dist = calloc(nr, sizeof *c->dist)))
        return BK_ENOMEM;
    unsigned got = nr;
    if (hwloc_distances_get_by_name(c->hw, "NVLinkBandwidth", &got, c->dist, 0) < 0)
        return diag_error(c->d, c->in->name, DIAG_NOWHERE,
                          "hwloc could not return the NVLinkBandwidth matrix");
    c->ndist = got < nr ? got : nr;
    /* hwloc drops an index naming no object and shrinks the matrix without a word. */
    for (unsigned k = 0; k < c->ndist && (int)c->ndist == c->pc.nmats; k++) {
        char *nb = xml_attr(c->pc.mats[k], "nbobjs");
        unsigned long long want;
        int bad = nb && hwloc_precheck_ull(nb, &want) && want != c->dist[k]->nbobjs;
        xmlFree(nb);
        if (bad) {
            char *path = xml_node_path(c->pc.mats[k]);
            enum bk_status st = diag_error(
                c->d, c->in->name, xml_node_loc(c->pc.mats[k]),
                "%s: the NVLinkBandwidth matrix lists %llu objects but only %u of them exist in "
                "the file (an index names no object); re-export it with lstopo --of xml",
                path ? path : "NVLinkBandwidth", want, c->dist[k]->nbobjs);
            free(path);
            return st;
        }
    }
    return BK_OK;
}

/* ---------------------------------------------------------------- devices and CPUs */

/* Numbering scheme of a GPU OS device name (nvmlN, cudaN, openclPdN, rsmiN), or -1. */
static int gpu_osdev(const char *name, int *index)
{
    static const char *const prefix[NUM_SCHEMES] = {"nvml", "cuda", "opencl", "rsmi"};
    for (int r = 0; r < NUM_SCHEMES && name; r++) {
        size_t n = strlen(prefix[r]);
        if (strncmp(name, prefix[r], n) != 0)
            continue;
        const char *p = name + n;
        if (r == NUM_OPENCL) { /* platform number, then 'd', then the device number */
            const char *q = p;
            while (*p >= '0' && *p <= '9')
                p++;
            if (p == q || *p++ != 'd')
                return -1;
        }
        unsigned long long v;
        if (!hwloc_precheck_ull(p, &v) || v > 1000000)
            return -1;
        *index = (int)v;
        return r;
    }
    return -1;
}

BK_MUST_USE
static enum bk_status find_devices(struct ctx *c)
{
    for (hwloc_obj_t p = NULL; (p = hwloc_get_next_pcidev(c->hw, p));) {
        struct hwloc_pcidev_attr_s *a = &p->attr->pcidev;
        struct dev dv = {.pci = p, .node = -1, .osidx = {-1, -1, -1, -1}};
        snprintf(dv.busid, sizeof dv.busid, "%04x:%02x:%02x.%x", (unsigned)a->domain,
                 (unsigned)a->bus, (unsigned)a->dev, (unsigned)a->func);
        int gpu_os = 0;
        for (hwloc_obj_t os = p->io_first_child; os; os = os->next_sibling) {
            int idx, r = os->type == HWLOC_OBJ_OS_DEVICE ? gpu_osdev(os->name, &idx) : -1;
            if (r >= 0 && !dv.os[r])
                dv.osidx[r] = idx, dv.os[r] = os;
            gpu_os += r >= 0;
        }
        /* hwloc marks switches found through NVML; some files carry an empty class for them. */
        if ((p->subtype && strcmp(p->subtype, "NVSwitch") == 0) ||
            (a->class_id == 0x0680 && a->vendor_id == 0x10de))
            dv.kind = DEV_NVSWITCH;
        else if (gpu_os && (a->class_id >> 8 == 0x03 || (a->class_id == 0 && a->vendor_id == 0)))
            dv.kind = DEV_GPU;
        else if (a->class_id >> 8 == 0x02)
            dv.kind = DEV_NIC;
        else
            continue; /* storage, a BMC's VGA, bridges' extra functions: not part of the model */
        BK_CHECK(grow((void **)&c->devs, &c->devs_cap, c->ndevs, sizeof *c->devs));
        c->devs[c->ndevs++] = dv;
        p->userdata = (void *)(uintptr_t)c->ndevs;
    }
    return BK_OK;
}

BK_MUST_USE
static enum bk_status add_named(struct ctx *c, enum topo_node_kind kind, const char *name,
                               struct diag_loc loc, int *node)
{
    if (topo_find(c->t, name) >= 0)
        return diag_error(c->d, c->in->name, loc,
                          "two objects are both called '%s' (each GPU, NIC, switch and package "
                          "needs its own name or PCI bus id)",
                          name);
    return topo_add_node(c->t, kind, name, 0, loc, node);
}

BK_MUST_USE
static enum bk_status add_cpus(struct ctx *c)
{
    hwloc_obj_t root = hwloc_get_root_obj(c->hw);
    int n = hwloc_get_nbobjs_by_type(c->hw, HWLOC_OBJ_PACKAGE);
    c->machine_node = -1;
    if (n <= 0) {
        /* No Package at all (a trimmed or virtual export): the machine is the one CPU. */
        BK_CHECK(add_named(c, TOPO_CPU, "machine", loc_of(c, root), &c->machine_node));
        c->t->nodes[c->machine_node].socket = 0;
        return topo_node_set_model(c->t, c->machine_node, info_str(root, "CPUModel"));
    }
    c->pkgs = calloc((size_t)n, sizeof *c->pkgs);
    c->pkg_node = calloc((size_t)n, sizeof *c->pkg_node);
    if (!c->pkgs || !c->pkg_node)
        return BK_ENOMEM;
    for (int i = 0; i < n; i++) {
        hwloc_obj_t p = hwloc_get_obj_by_type(c->hw, HWLOC_OBJ_PACKAGE, (unsigned)i);
        if (!p)
            return BK_EINTERNAL;
        int sock = p->os_index == HWLOC_UNKNOWN_INDEX || p->os_index > 1000000 ? i
                                                                               : (int)p->os_index;
        char name[32];
        snprintf(name, sizeof name, "package%d", sock);
        BK_CHECK(add_named(c, TOPO_CPU, name, loc_of(c, p), &c->pkg_node[i]));
        c->t->nodes[c->pkg_node[i]].socket = sock;
        BK_CHECK(topo_node_set_model(c->t, c->pkg_node[i], info_str(p, "CPUModel")));
        c->pkgs[i] = p;
        p->userdata = (void *)(uintptr_t)(i + 1);
        c->npkgs = i + 1;
    }
    return BK_OK;
}

static enum topo_cpu_family family_of(const struct ctx *c, hwloc_obj_t p)
{
    hwloc_obj_t root = hwloc_get_root_obj(c->hw);
    const char *vendor = info_str(p, "CPUVendor"), *model = info_str(p, "CPUModel");
    int fam = info_int(p, "CPUFamilyNumber"), num = info_int(p, "CPUModelNumber");
    if (!vendor && !model) { /* some exports keep CPU infos on the Machine only */
        vendor = info_str(root, "CPUVendor");
        model = info_str(root, "CPUModel");
        fam = info_int(root, "CPUFamilyNumber");
        num = info_int(root, "CPUModelNumber");
    }
    return topo_cpu_family_of(vendor, fam, num, model, info_str(root, "Architecture"));
}

/* Every pair of packages shares the inter-socket bus; charge it at the slower family's rate. */
BK_MUST_USE
static enum bk_status add_smp(struct ctx *c)
{
    for (int i = 0; i < c->npkgs; i++)
        for (int j = i + 1; j < c->npkgs; j++) {
            double a = topo_rate_smp(&c->o->rates, family_of(c, c->pkgs[i]));
            double b = topo_rate_smp(&c->o->rates, family_of(c, c->pkgs[j]));
            double r = a < b ? a : b;
            BK_CHECK(topo_add_link(c->t, c->pkg_node[i], c->pkg_node[j], TOPO_SMP, 1, r, r,
                                   loc_of(c, c->pkgs[j])));
        }
    return BK_OK;
}

/* ---------------------------------------------------------------- GPUs */

BK_MUST_USE
static enum bk_status add_gpus(struct ctx *c)
{
    int ngpus = 0, scheme = -1, assumed = 0;
    for (int i = 0; i < c->ndevs; i++)
        ngpus += c->devs[i].kind == DEV_GPU;
    if (!ngpus)
        return diag_error(c->d, c->in->name, DIAG_NOWHERE,
                          "no GPUs: no PCI device carries an NVML, CUDA, OpenCL or RSMI OS device "
                          "(export on the GPU server with an hwloc 2.x built with NVML or CUDA "
                          "support, keeping I/O objects: lstopo --of xml)");
    /* GPU numbers must come from one scheme that every GPU has, or they could collide. */
    for (int r = 0; r < NUM_SCHEMES && scheme < 0; r++) {
        int all = 1;
        for (int i = 0; i < c->ndevs; i++)
            if (c->devs[i].kind == DEV_GPU && c->devs[i].osidx[r] < 0)
                all = 0;
        if (all)
            scheme = r;
    }
    if (scheme < 0)
        diag_warning(c->d, c->in->name, DIAG_NOWHERE,
                     "the GPUs share no NVML, CUDA, OpenCL or RSMI numbering; numbering them in "
                     "PCI order");
    int pos = 0;
    for (int i = 0; i < c->ndevs; i++) {
        struct dev *g = &c->devs[i];
        if (g->kind != DEV_GPU)
            continue;
        hwloc_obj_t os = scheme >= 0 ? g->os[scheme] : NULL;
        for (int r = 0; r < NUM_SCHEMES && !os; r++)
            os = g->os[r];
        const char *model = info_str(os, "GPUModel");
        for (int r = 0; r < NUM_SCHEMES && !model; r++)
            model = info_str(g->os[r], "GPUModel");
        g->gen = topo_gpu_model_gen(model);
        if (!g->gen) {
            if (!assumed) {
                char *why = model ? bk_asprintf("because hwloc's GPUModel '%.64s' is not a GPU "
                                                "blinkc knows", model)
                                  : bk_asprintf("because hwloc records no GPUModel");
                assumed = topo_assumed_gen(c->o, 0, why, c->in, c->d);
                free(why);
                if (!assumed)
                    return BK_EINPUT;
            }
            g->gen = assumed;
        }
        if (g->gen > c->max_gen)
            c->max_gen = g->gen;
        BK_CHECK(add_named(c, TOPO_GPU, os && os->name ? os->name : g->busid, loc_of(c, g->pci),
                           &g->node));
        struct topo_node *nd = &c->t->nodes[g->node];
        nd->gpu_order = scheme >= 0 ? g->osidx[scheme] : pos;
        nd->nvlink_gen = g->gen;
        pos++;
        BK_CHECK(topo_node_set_busid(c->t, g->node, g->busid));
        BK_CHECK(topo_node_set_model(c->t, g->node, model));
    }
    return BK_OK;
}

/* ---------------------------------------------------------------- NVLink */

static int cpu_of(const struct ctx *c, hwloc_obj_t o);

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
        return (*k = cpu_of(c, o)) >= 0 ? M_CPU : M_NONE;
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
        BK_CHECK(add_named(c, TOPO_NVSWITCH, dv->busid, loc_of(c, dv->pci), &dv->node));
        BK_CHECK(topo_node_set_busid(c->t, dv->node, dv->busid));
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
            if (links > topo_nvlink_budget(c->devs[gpu].gen) && links > worst)
                worst = links, over = gpu;
        }
    }
    if (over >= 0 && all50) {
        c->doubled = 1;
        const struct dev *g = &c->devs[over];
        diag_warning(c->d, c->in->name, DIAG_NOWHERE,
                     "unknown hwloc version '%.40s': at 25000 MB/s per link GPU %s would have %lld "
                     "NVLinks, more than the %d an %s has, so the values are read as hwloc "
                     "2.5.0-2.9.0's doubled NVLink%d encoding (50000 MB/s per link)",
                     v ? v : "(none)", c->t->nodes[g->node].name, worst,
                     topo_nvlink_budget(g->gen), topo_gen_model(g->gen), g->gen);
    }
}

BK_MUST_USE
static enum bk_status add_nvlink(struct ctx *c, int a, int b, int count, int gen,
                                 struct diag_loc loc, const char *path)
{
    int have = topo_find_link(c->t, a, b, TOPO_NVLINK);
    if (have >= 0) { /* the same pair again, e.g. in a second matrix */
        if (c->t->links[have].count == count)
            return BK_OK;
        return diag_error(c->d, c->in->name, loc,
                          "%s: %s and %s are given %d NVLinks here but %d elsewhere", path,
                          c->t->nodes[a].name, c->t->nodes[b].name, count,
                          c->t->links[have].count);
    }
    double r = topo_rate_nvlink(&c->o->rates, gen, count);
    return topo_add_link(c->t, a, b, TOPO_NVLINK, count, r, r, loc);
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
                st = diag_error(c->d, c->in->name, loc,
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
                    diag_warning(c->d, c->in->name, loc,
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
                    c->d, c->in->name, loc,
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
static enum bk_status add_nvlinks(struct ctx *c)
{
    if (!c->ndist) {
        int ngpus = 0;
        for (int i = 0; i < c->ndevs; i++)
            ngpus += c->devs[i].kind == DEV_GPU;
        if (ngpus > 1)
            diag_warning(c->d, c->in->name, DIAG_NOWHERE,
                         "no NVLinkBandwidth matrix: the GPUs are joined by PCIe only (hwloc "
                         "writes NVLinks only from 2.5 on, when built with NVML and run where "
                         "the NVIDIA driver works)");
        return BK_OK;
    }
    decide_doubling(c);
    for (unsigned k = 0; k < c->ndist; k++)
        BK_CHECK(read_matrix(c, k));
    int nvlinks = 0;
    for (int l = 0; l < c->t->nlinks; l++)
        nvlinks += c->t->links[l].kind == TOPO_NVLINK;
    if (c->max_gen == 5 && !nvlinks)
        diag_warning(c->d, c->in->name, DIAG_NOWHERE,
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
static enum bk_status add_trunks(struct ctx *c)
{
    struct topo *t = c->t;
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
        double r = topo_rate_nvlink(&c->o->rates, c->max_gen, n);
        st = topo_add_link(t, a, b, TOPO_NVLINK, n, r, r, DIAG_NOWHERE);
        added += n;
    }
    if (st == BK_OK)
        diag_note(c->d, c->in->name, DIAG_NOWHERE,
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

/* ---------------------------------------------------------------- PCIe */

enum role { ROLE_TOP, ROLE_HOST, ROLE_SWITCH, ROLE_OTHER };

static double link_speed(hwloc_obj_t o)
{
    if (o && o->type == HWLOC_OBJ_PCI_DEVICE)
        return o->attr->pcidev.linkspeed;
    int pci = o && o->type == HWLOC_OBJ_BRIDGE &&
              o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
    return pci ? o->attr->bridge.upstream.pci.linkspeed : 0;
}

/* Rate of the link above `o`: its own speed, else the port above it (the other end of the same
 * link), else unknown (Gen3 x16, as NCCL assumes). */
static double pcie_rate(const struct ctx *c, hwloc_obj_t o)
{
    int gen = 0, width = 0;
    if (!topo_pcie_from_speed(link_speed(o), &gen, &width) &&
        !topo_pcie_from_speed(link_speed(o->parent), &gen, &width))
        gen = width = 0;
    return topo_rate_pcie(&c->o->rates, gen, width);
}

BK_MUST_USE
static enum bk_status switch_node(struct ctx *c, int s, int *node)
{
    struct pcisw *w = &c->sws[s];
    if (w->node < 0) {
        int parent = w->cpu;
        if (w->parent >= 0)
            BK_CHECK(switch_node(c, w->parent, &parent));
        w = &c->sws[s];
        const struct hwloc_pcidev_attr_s *a = &w->up->attr->bridge.upstream.pci;
        char busid[24];
        snprintf(busid, sizeof busid, "%04x:%02x:%02x.%x", (unsigned)a->domain, (unsigned)a->bus,
                 (unsigned)a->dev, (unsigned)a->func);
        struct diag_loc loc = loc_of(c, w->up);
        BK_CHECK(add_named(c, TOPO_PCIE_SWITCH, busid, loc, &w->node));
        BK_CHECK(topo_node_set_busid(c->t, w->node, busid));
        double r = pcie_rate(c, w->up);
        BK_CHECK(topo_add_link(c->t, w->node, parent, TOPO_PCIE, 1, r, r, loc));
    }
    *node = w->node;
    return BK_OK;
}

/* A switch's upstream port holds its downstream port bridges (and perhaps integrated
 * functions); a bridge with one child is just a link in a chain. */
static int is_switch_port(hwloc_obj_t o)
{
    int bridges = 0, all = 0;
    for (hwloc_obj_t ch = o->io_first_child; ch; ch = ch->next_sibling) {
        all++;
        bridges += ch->type == HWLOC_OBJ_BRIDGE;
    }
    return all >= 2 && bridges >= 1;
}

BK_MUST_USE
static enum bk_status attach_device(struct ctx *c, struct dev *dv, int sw, int cpu)
{
    struct diag_loc loc = loc_of(c, dv->pci);
    if (dv->kind == DEV_NIC) {
        /* Name it like NCCL does (mlx5_0): the verbs device if any, else the first OS device. */
        const char *first = NULL, *verbs = NULL;
        for (hwloc_obj_t os = dv->pci->io_first_child; os; os = os->next_sibling)
            if (os->type == HWLOC_OBJ_OS_DEVICE && os->name && *os->name) {
                if (!first)
                    first = os->name;
                if (!verbs && os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
                    verbs = os->name;
            }
        const char *name = verbs ? verbs : first ? first : dv->busid;
        BK_CHECK(add_named(c, TOPO_NIC, name, loc, &dv->node));
        BK_CHECK(topo_node_set_busid(c->t, dv->node, dv->busid));
    }
    int parent = cpu;
    if (sw >= 0)
        BK_CHECK(switch_node(c, sw, &parent));
    double r = pcie_rate(c, dv->pci);
    return topo_add_link(c->t, dv->node, parent, TOPO_PCIE, 1, r, r, loc);
}

BK_MUST_USE
static enum bk_status walk_io(struct ctx *c, hwloc_obj_t o, int sw, int cpu, enum role role,
                              int depth)
{
    if (depth > MAX_DEPTH)
        return diag_error(c->d, c->in->name, loc_of(c, o), "PCI tree nested too deeply");
    if (o->type == HWLOC_OBJ_PCI_DEVICE) {
        uintptr_t k = (uintptr_t)o->userdata;
        if (k && k <= (uintptr_t)c->ndevs && c->devs[k - 1].kind != DEV_NVSWITCH)
            return attach_device(c, &c->devs[k - 1], sw, cpu);
        return BK_OK; /* NVSwitch management functions and other devices stay out */
    }
    if (o->type != HWLOC_OBJ_BRIDGE)
        return BK_OK;
    enum role next = ROLE_OTHER;
    if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
        next = ROLE_HOST;
    else if (role == ROLE_OTHER && is_switch_port(o)) {
        BK_CHECK(grow((void **)&c->sws, &c->sws_cap, c->nsws, sizeof *c->sws));
        c->sws[c->nsws] = (struct pcisw){o, sw, cpu, -1};
        sw = c->nsws++;
        next = ROLE_SWITCH;
    }
    /* Else a root port (under a host bridge), a downstream port of the switch above, or a
     * single-child chain bridge: none is a switch, so its children go straight up. */
    for (hwloc_obj_t ch = o->io_first_child; ch; ch = ch->next_sibling)
        BK_CHECK(walk_io(c, ch, sw, cpu, next, depth + 1));
    return BK_OK;
}

/* The cpu node of I/O hanging below normal object `o`: its package, or on a Machine or Group
 * spanning packages the first package it shares CPUs with, else package 0. */
static int cpu_of(const struct ctx *c, hwloc_obj_t o)
{
    if (!c->npkgs)
        return c->machine_node;
    hwloc_obj_t p = o->type == HWLOC_OBJ_PACKAGE
                        ? o
                        : hwloc_get_ancestor_obj_by_type(c->hw, HWLOC_OBJ_PACKAGE, o);
    if (p && p->userdata)
        return c->pkg_node[(uintptr_t)p->userdata - 1];
    for (int i = 0; i < c->npkgs && o->cpuset; i++)
        if (c->pkgs[i]->cpuset && hwloc_bitmap_intersects(o->cpuset, c->pkgs[i]->cpuset))
            return c->pkg_node[i];
    return c->pkg_node[0];
}

BK_MUST_USE
static enum bk_status walk_normal(struct ctx *c, hwloc_obj_t o, int depth)
{
    if (depth > MAX_DEPTH)
        return diag_error(c->d, c->in->name, loc_of(c, o), "topology nested too deeply");
    for (hwloc_obj_t ch = o->io_first_child; ch; ch = ch->next_sibling)
        BK_CHECK(walk_io(c, ch, -1, cpu_of(c, o), ROLE_TOP, depth + 1));
    for (hwloc_obj_t ch = o->first_child; ch; ch = ch->next_sibling)
        BK_CHECK(walk_normal(c, ch, depth + 1));
    return BK_OK;
}

/* ---------------------------------------------------------------- entry point */

enum bk_status topo_read_hwloc(const struct input *in, const struct topo_read_opts *o,
                               struct topo *t, struct diag *d)
{
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.in = in, c.o = o, c.t = t, c.d = d;
    xmlDocPtr doc = NULL;
    enum bk_status st = xml_safe_parse(in, &doc, d);
    if (st != BK_OK)
        return st;
    BK_CHECK_GOTO(hwloc_precheck_doc(in, doc, &c.pc, d), st, out);
    BK_CHECK_GOTO(load_hwloc(&c), st, out);
    BK_CHECK_GOTO(get_matrices(&c), st, out);
    BK_CHECK_GOTO(find_devices(&c), st, out);
    BK_CHECK_GOTO(add_cpus(&c), st, out);
    BK_CHECK_GOTO(add_gpus(&c), st, out);
    BK_CHECK_GOTO(add_nvlinks(&c), st, out);
    BK_CHECK_GOTO(add_trunks(&c), st, out);
    BK_CHECK_GOTO(walk_normal(&c, hwloc_get_root_obj(c.hw), 0), st, out);
    BK_CHECK_GOTO(add_smp(&c), st, out);
    {
        const char *product = info_str(hwloc_get_root_obj(c.hw), "DMIProductName");
        if (product)
            st = topo_set_name(t, product);
    }
out:
    for (unsigned k = 0; k < c.ndist; k++)
        if (c.dist[k])
            hwloc_distances_release(c.hw, c.dist[k]);
    free(c.dist);
    if (c.hw)
        hwloc_topology_destroy(c.hw);
    hwloc_precheck_free(&c.pc);
    xmlFreeDoc(doc);
    free(c.devs);
    free(c.sws);
    free(c.pkgs);
    free(c.pkg_node);
    return st;
}
