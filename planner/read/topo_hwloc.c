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
 * naming the XML element and line. The NVLink matrix and the switch trunks are read in
 * hwloc_links.c (hwloc_internal.h).
 */
#include <hwloc.h>
#include <libxml/tree.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "read/hwloc_internal.h"
#include "read/xml_safe.h"

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
    if (c->rd.in->len >= (size_t)INT_MAX)
        return diag_error(c->rd.d, c->rd.in->name, DIAG_NOWHERE, "XML file too large for hwloc");
    char *buf = malloc(c->rd.in->len + 1);
    if (!buf)
        return BK_ENOMEM;
    memcpy(buf, c->rd.in->data, c->rd.in->len);
    buf[c->rd.in->len] = '\0';
    blank_comments(buf, c->rd.in->len);

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
        st = diag_error(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
                        "hwloc refused to keep I/O objects (hwloc_topology_set_io_types_filter)");
    /* A failed set_xmlbuffer leaves the native backend in place: never load after it, or we
     * would describe the machine blinkc runs on. The size counts the terminating NUL. */
    else if (hwloc_topology_set_xmlbuffer(c->hw, buf, (int)c->rd.in->len + 1) < 0 ||
             hwloc_topology_load(c->hw) < 0) {
        const char *imp = getenv("HWLOC_LIBXML");
        if (!imp)
            imp = getenv("HWLOC_LIBXML_IMPORT");
        st = diag_error(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
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
        return diag_error(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
                          "hwloc could not return the NVLinkBandwidth matrix");
    if (nr == 0)
        return BK_OK;
    if (nr > 64)
        nr = 64;
    if (!(c->dist = calloc(nr, sizeof *c->dist)))
        return BK_ENOMEM;
    unsigned got = nr;
    if (hwloc_distances_get_by_name(c->hw, "NVLinkBandwidth", &got, c->dist, 0) < 0)
        return diag_error(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
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
                c->rd.d, c->rd.in->name, xml_node_loc(c->pc.mats[k]),
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
        BK_CHECK(bk_grow_int((void **)&c->devs, &c->devs_cap, c->ndevs, sizeof *c->devs));
        c->devs[c->ndevs++] = dv;
        p->userdata = (void *)(uintptr_t)c->ndevs;
    }
    return BK_OK;
}

BK_MUST_USE
static enum bk_status add_cpus(struct ctx *c)
{
    hwloc_obj_t root = hwloc_get_root_obj(c->hw);
    int n = hwloc_get_nbobjs_by_type(c->hw, HWLOC_OBJ_PACKAGE);
    c->machine_node = -1;
    if (n <= 0) {
        /* No Package at all (a trimmed or virtual export): the machine is the one CPU. */
        BK_CHECK(hwloc_add_named(c, TOPO_CPU, "machine", hwloc_loc_of(c, root), &c->machine_node));
        c->rd.t->nodes[c->machine_node].socket = 0;
        return topo_node_set_model(c->rd.t, c->machine_node, info_str(root, "CPUModel"));
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
        BK_CHECK(hwloc_add_named(c, TOPO_CPU, name, hwloc_loc_of(c, p), &c->pkg_node[i]));
        c->rd.t->nodes[c->pkg_node[i]].socket = sock;
        BK_CHECK(topo_node_set_model(c->rd.t, c->pkg_node[i], info_str(p, "CPUModel")));
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
            double a = topo_rate_smp(&c->rd.o->rates, family_of(c, c->pkgs[i]));
            double b = topo_rate_smp(&c->rd.o->rates, family_of(c, c->pkgs[j]));
            double r = a < b ? a : b;
            BK_CHECK(topo_add_link(c->rd.t, c->pkg_node[i], c->pkg_node[j], TOPO_SMP, 1, r, r,
                                   hwloc_loc_of(c, c->pkgs[j])));
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
        return diag_error(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
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
        diag_warning(c->rd.d, c->rd.in->name, DIAG_NOWHERE,
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
                assumed = topo_assumed_gen(c->rd.o, 0, why, c->rd.in, c->rd.d);
                free(why);
                if (!assumed)
                    return BK_EINPUT;
            }
            g->gen = assumed;
        }
        if (g->gen > c->max_gen)
            c->max_gen = g->gen;
        BK_CHECK(hwloc_add_named(c, TOPO_GPU, os && os->name ? os->name : g->busid,
                                 hwloc_loc_of(c, g->pci), &g->node));
        struct topo_node *nd = &c->rd.t->nodes[g->node];
        nd->gpu_order = scheme >= 0 ? g->osidx[scheme] : pos;
        nd->nvlink_gen = g->gen;
        pos++;
        BK_CHECK(topo_node_set_busid(c->rd.t, g->node, g->busid));
        BK_CHECK(topo_node_set_model(c->rd.t, g->node, model));
        if (!nd->part) { /* a model the parts table does not know: --gpu-model's, or assumed */
            const char *given = c->rd.o->gpu_model;
            nd->part = given ? topo_gpu_part_find(given) : topo_gpu_part_of_gen(g->gen);
            nd->part_assumed = !given;
        }
    }
    return BK_OK;
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
    return topo_rate_pcie(&c->rd.o->rates, gen, width);
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
        struct diag_loc loc = hwloc_loc_of(c, w->up);
        BK_CHECK(hwloc_add_named(c, TOPO_PCIE_SWITCH, busid, loc, &w->node));
        BK_CHECK(topo_node_set_busid(c->rd.t, w->node, busid));
        double r = pcie_rate(c, w->up);
        BK_CHECK(topo_add_link(c->rd.t, w->node, parent, TOPO_PCIE, 1, r, r, loc));
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
    struct diag_loc loc = hwloc_loc_of(c, dv->pci);
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
        BK_CHECK(hwloc_add_named(c, TOPO_NIC, name, loc, &dv->node));
        BK_CHECK(topo_node_set_busid(c->rd.t, dv->node, dv->busid));
    }
    int parent = cpu;
    if (sw >= 0)
        BK_CHECK(switch_node(c, sw, &parent));
    double r = pcie_rate(c, dv->pci);
    return topo_add_link(c->rd.t, dv->node, parent, TOPO_PCIE, 1, r, r, loc);
}

BK_MUST_USE
static enum bk_status walk_io(struct ctx *c, hwloc_obj_t o, int sw, int cpu, enum role role,
                              int depth)
{
    if (depth > MAX_DEPTH)
        return diag_error(c->rd.d, c->rd.in->name, hwloc_loc_of(c, o),
                          "PCI tree nested too deeply");
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
        BK_CHECK(bk_grow_int((void **)&c->sws, &c->sws_cap, c->nsws, sizeof *c->sws));
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

BK_MUST_USE
static enum bk_status walk_normal(struct ctx *c, hwloc_obj_t o, int depth)
{
    if (depth > MAX_DEPTH)
        return diag_error(c->rd.d, c->rd.in->name, hwloc_loc_of(c, o),
                          "topology nested too deeply");
    for (hwloc_obj_t ch = o->io_first_child; ch; ch = ch->next_sibling)
        BK_CHECK(walk_io(c, ch, -1, hwloc_cpu_of(c, o), ROLE_TOP, depth + 1));
    for (hwloc_obj_t ch = o->first_child; ch; ch = ch->next_sibling)
        BK_CHECK(walk_normal(c, ch, depth + 1));
    return BK_OK;
}

/* ---------------------------------------------------------------- entry point */

enum bk_status topo_read_hwloc(const struct reader *r)
{
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.rd = *r;
    xmlDocPtr doc = NULL;
    enum bk_status st = xml_safe_parse(r->in, &doc, r->d);
    if (st != BK_OK)
        return st;
    BK_CHECK_GOTO(hwloc_precheck_doc(r->in, doc, &c.pc, r->d), st, out);
    BK_CHECK_GOTO(load_hwloc(&c), st, out);
    BK_CHECK_GOTO(get_matrices(&c), st, out);
    BK_CHECK_GOTO(find_devices(&c), st, out);
    BK_CHECK_GOTO(add_cpus(&c), st, out);
    BK_CHECK_GOTO(add_gpus(&c), st, out);
    BK_CHECK_GOTO(hwloc_add_nvlinks(&c), st, out);
    BK_CHECK_GOTO(hwloc_add_trunks(&c), st, out);
    BK_CHECK_GOTO(walk_normal(&c, hwloc_get_root_obj(c.hw), 0), st, out);
    BK_CHECK_GOTO(add_smp(&c), st, out);
    {
        const char *product = info_str(hwloc_get_root_obj(c.hw), "DMIProductName");
        if (product)
            st = topo_set_name(r->t, product);
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
