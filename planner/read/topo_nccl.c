/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_nccl.c - the NCCL topology XML reader (NCCL_TOPO_FILE, NCCL_TOPO_DUMP_FILE).
 *
 * Walks system -> cpu -> pci/nic, pci -> pci/gpu/nic, gpu -> nvlink/c2c, nic -> net, as NCCL's
 * src/graph/xml.cc does, and turns it into the model's graph: one cpu node per <cpu>, the PCIe
 * tree collapsed to real switches, one GPU per <pci> holding a <gpu>, one NIC per <net>, and one
 * full-duplex NVLink per connected pair. NVLink targets are bus ids that may name a GPU further
 * down the file, so <nvlink> and <c2c> entries are collected during the walk and resolved once the
 * whole tree is known. Unknown elements are skipped with their subtree, as NCCL does.
 *
 * NCCL stores link counts, not bandwidths (its per-SM effective rates are an internal tuning
 * choice), so capacities come from blinkc's per-generation table like every other format. XML is
 * parsed only through xml_safe_parse: no entities, no DTD, no network. Every error names the
 * element path and its line. Messages and values are in nccl_values.c, what runs after the walk
 * in nccl_links.c (nccl_internal.h).
 */
#include <libxml/tree.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "read/nccl_internal.h"
#include "read/xml_safe.h"

/* ---------------------------------------------------------------- bookkeeping */

static size_t bus_slot_of(const struct bus_slot *s, size_t cap, const char *busid)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = busid; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    size_t k = (size_t)h & (cap - 1);
    while (s[k].busid[0] && strcmp(s[k].busid, busid) != 0)
        k = (k + 1) & (cap - 1);
    return k;
}

/* Record a <pci> bus id; a repeat is an error naming both elements. */
BK_MUST_USE
static enum bk_status bus_add(struct ctx *c, const char *busid, xmlNodePtr el)
{
    if ((c->nbus + 1) * 2 > c->bus_cap) {
        size_t ncap = c->bus_cap ? 2 * c->bus_cap : 64;
        struct bus_slot *s = calloc(ncap, sizeof *s);
        if (!s)
            return BK_ENOMEM;
        for (size_t i = 0; i < c->bus_cap; i++)
            if (c->bus[i].busid[0])
                s[bus_slot_of(s, ncap, c->bus[i].busid)] = c->bus[i];
        free(c->bus);
        c->bus = s;
        c->bus_cap = ncap;
    }
    struct bus_slot *slot = &c->bus[bus_slot_of(c->bus, c->bus_cap, busid)];
    if (slot->busid[0]) {
        char *what = bk_asprintf("bus id %s is already used by", busid);
        enum bk_status st = what ? nccl_el_error2(c, el, what, slot->el) : BK_ENOMEM;
        free(what);
        return st;
    }
    memcpy(slot->busid, busid, strlen(busid) + 1); /* fits: norm_busid made it */
    slot->el = el;
    c->nbus++;
    return BK_OK;
}

/* The node a device below frame f hangs from: f's switch (made on first use) or the CPU. */
BK_MUST_USE
static enum bk_status attach_point(struct ctx *c, struct sw_frame *f, int cpu, int *out)
{
    if (!f) {
        *out = cpu;
        return BK_OK;
    }
    if (f->node < 0) {
        int up, n;
        BK_CHECK(attach_point(c, f->up, cpu, &up));
        BK_CHECK(nccl_add_node(c, f->el, TOPO_PCIE_SWITCH, f->busid, f->busid, &n));
        BK_CHECK(topo_add_link(c->rd.t, n, up, TOPO_PCIE, 1, f->gbps, f->gbps,
                               xml_node_loc(f->el)));
        f->node = n;
    }
    *out = f->node;
    return BK_OK;
}

/* ---------------------------------------------------------------- the walk */

/* One <nvlink> (or <c2c>) under GPU g: checked now, resolved after the walk. */
BK_MUST_USE
static enum bk_status read_gpu_link(struct ctx *c, xmlNodePtr el, int g, const char *own_busid)
{
    struct link_rec r = {.gpu = g, .peer = PEER_C2C, .el = el};
    long count, bw, cls;
    BK_CHECK(nccl_int_attr(c, el, "count", 1, 1, MAX_NVLINK_COUNT, 0, &count));
    r.count = (int)count;
    if (nccl_is_el(el, "c2c")) {
        BK_CHECK(nccl_int_attr(c, el, "bw", 1, 1, 1000000, 0, &bw));
        r.gbps = (double)bw / 1000.0 * (double)count; /* bw is MB/s per link */
    } else {
        BK_CHECK(nccl_busid_attr(c, el, "target", r.target));
        BK_CHECK(nccl_class_attr(c, el, "tclass", &cls));
        if (cls < 0)
            r.peer = PEER_ANY; /* decided by what the target turns out to be */
        else if ((cls >> 16) == 0x03)
            r.peer = PEER_GPU;
        else if (cls == 0x068000 || cls == 0x068001)
            r.peer = cls == 0x068000 ? PEER_NVS : PEER_CPU;
        else
            return el_error(c, el, "tclass=\"0x%06lx\" is not a GPU (0x03xxxx), NVSwitch "
                                   "(0x068000) or CPU (0x068001) class",
                            cls);
        if (r.peer <= PEER_GPU && strcmp(r.target, own_busid) == 0) {
            /* Seen in files cloud images ship: drop it, read the rest. */
            diag_warning(c->rd.d, c->rd.in->name, xml_node_loc(el),
                         "<nvlink> target %s is this GPU's own bus id: an NVLink needs a peer, "
                         "so this one is dropped", own_busid);
            return BK_OK;
        }
        c->gpus[g].links += r.count;
    }
    BK_CHECK(bk_grow_int((void **)&c->links, &c->links_cap, c->nlinks, sizeof *c->links));
    c->links[c->nlinks++] = r;
    return BK_OK;
}

/* The device id of a GPU's <pci device="0x20b0">, 0 when absent or unreadable: NCCL writes it
 * but never reads it back, so a bad one only leaves the part to the sm. */
static unsigned pci_device(xmlNodePtr pci)
{
    char *v = xml_attr(pci, "device"), *end = NULL;
    unsigned long d = v ? strtoul(v, &end, 16) : 0;
    unsigned out = v && end != v && !*end && d <= 0xffff ? (unsigned)d : 0;
    xmlFree(v);
    return out;
}

/* <gpu> inside the <pci> element `pci` whose bus id is `busid`, hanging from `up`. */
BK_MUST_USE
static enum bk_status read_gpu(struct ctx *c, xmlNodePtr el, const char *busid, int cpu,
                               struct sw_frame *up, double gbps, xmlNodePtr pci)
{
    long dev, sm, v;
    BK_CHECK(nccl_int_attr(c, el, "dev", 1, 0, MAX_GPU_DEV, 0, &dev));
    BK_CHECK(nccl_int_attr(c, el, "sm", 0, 0, 100000, 0, &sm));
    BK_CHECK(nccl_int_attr(c, el, "rank", 0, -1, INT_MAX, -1, &v));
    BK_CHECK(nccl_int_attr(c, el, "gdr", 0, 0, INT_MAX, 0, &v));
    int node, parent;
    BK_CHECK(attach_point(c, up, cpu, &parent));
    BK_CHECK(nccl_add_node(c, el, TOPO_GPU, busid, busid, &node));
    c->rd.t->nodes[node].gpu_order = (int)dev;
    /* sm and the PCI device id tell parts apart (an A800 from an A100, an RTX A6000 from an
       A100); sm alone gives its most common part, recorded as assumed. */
    unsigned device = pci_device(pci);
    const struct topo_gpu_part *part = topo_gpu_part_by_pci((int)sm, device);
    struct topo_node *n = &c->rd.t->nodes[node];
    n->part = part;
    n->part_assumed = part && topo_gpu_part_by_pci(0, device) != part;
    n->nvlink_gen = part ? part->gen : nccl_gen_from_sm(sm);
    BK_CHECK(topo_add_link(c->rd.t, node, parent, TOPO_PCIE, 1, gbps, gbps, xml_node_loc(pci)));
    BK_CHECK(bk_grow_int((void **)&c->gpus, &c->gpus_cap, c->ngpus, sizeof *c->gpus));
    int g = c->ngpus++;
    c->gpus[g] = (struct gpu_rec){node, (int)dev, cpu, 0, el};
    for (xmlNodePtr k = el->children; k; k = k->next)
        if (nccl_is_el(k, "nvlink") || nccl_is_el(k, "c2c"))
            BK_CHECK(read_gpu_link(c, k, g, busid));
    return BK_OK;
}

/* One NIC node called `name` hanging from `parent`; speed_mbps is its <net speed=> (NCCL
 * writes Mb/s), 0 when unknown. */
BK_MUST_USE
static enum bk_status add_nic(struct ctx *c, xmlNodePtr el, const char *name, const char *busid,
                              int parent, double gbps, xmlNodePtr link_el, long speed_mbps)
{
    int node;
    BK_CHECK(nccl_add_node(c, el, TOPO_NIC, name, busid, &node));
    double rate = (double)speed_mbps / 8000.0;
    /* A rate no link could carry is no rate: left unknown rather than failing later. */
    c->rd.t->nodes[node].nic_gbps = rate <= TOPO_MAX_GBPS ? rate : 0;
    return topo_add_link(c->rd.t, node, parent, TOPO_PCIE, 1, gbps, gbps, xml_node_loc(link_el));
}

/* <nic> with its <net> children: one NIC node per net, counted in *made. */
BK_MUST_USE
static enum bk_status read_nic(struct ctx *c, xmlNodePtr el, const char *busid, int parent,
                               double gbps, xmlNodePtr link_el, int *made)
{
    for (xmlNodePtr k = el->children; k; k = k->next) {
        if (!nccl_is_el(k, "net"))
            continue;
        long v, speed;
        BK_CHECK(nccl_int_attr(c, k, "dev", 0, 0, INT_MAX, 0, &v));
        BK_CHECK(nccl_int_attr(c, k, "speed", 0, 0, LONG_MAX, 0, &speed));
        char *name = xml_attr(k, "name");
        size_t len = name ? strlen(name) : 0;
        enum bk_status st;
        if (len == 0 || len > NAME_MAX_LEN)
            st = el_error(c, k, "%s name= attribute (the device name, e.g. mlx5_0; at most %d "
                                "characters)",
                          name ? "bad" : "missing", NAME_MAX_LEN);
        else
            st = add_nic(c, k, name, busid, parent, gbps, link_el, speed);
        xmlFree(name);
        BK_CHECK(st);
        (*made)++;
    }
    return BK_OK;
}

enum pci_kind { PCI_PLAIN, PCI_BRIDGE, PCI_GPU, PCI_NIC, PCI_NVSWITCH };

BK_MUST_USE
static enum bk_status walk_pci(struct ctx *c, xmlNodePtr el, int cpu, struct sw_frame *up);

/* Walk every <pci> child of el below `up`. */
BK_MUST_USE
static enum bk_status walk_children(struct ctx *c, xmlNodePtr el, int cpu, struct sw_frame *up)
{
    for (xmlNodePtr k = el->children; k; k = k->next)
        if (nccl_is_el(k, "pci"))
            BK_CHECK(walk_pci(c, k, cpu, up));
    return BK_OK;
}

BK_MUST_USE
static enum bk_status walk_pci(struct ctx *c, xmlNodePtr el, int cpu, struct sw_frame *up)
{
    char busid[BUSID_LEN];
    double gbps = 0;
    long cls;
    BK_CHECK(nccl_busid_attr(c, el, "busid", busid));
    BK_CHECK(bus_add(c, busid, el));
    BK_CHECK(nccl_pci_rate(c, el, &gbps));
    BK_CHECK(nccl_class_attr(c, el, "class", &cls));
    xmlNodePtr gpu = NULL, only_pci = NULL;
    int npci = 0, nnic = 0;
    for (xmlNodePtr k = el->children; k; k = k->next) {
        if (nccl_is_el(k, "gpu") && gpu)
            return el_error(c, k, "a second <gpu> in one <pci> device");
        if (nccl_is_el(k, "gpu"))
            gpu = k;
        nnic += nccl_is_el(k, "nic");
        if (nccl_is_el(k, "pci"))
            npci++, only_pci = k;
        if (nccl_is_el(k, "pcilink") && !c->pcilink_noted) {
            c->pcilink_noted = 1;
            diag_note(c->rd.d, c->rd.in->name, xml_node_loc(k),
                      "<pcilink> elements (Broadcom switch-to-switch P2P links) are ignored");
        }
    }
    /* NCCL decides by class; a partial file without one is judged by its children. */
    enum pci_kind kind = PCI_PLAIN;
    if (cls < 0)
        kind = gpu ? PCI_GPU : nnic ? PCI_NIC : npci ? PCI_BRIDGE : PCI_PLAIN;
    else if ((cls >> 8) == 0x0604)
        kind = PCI_BRIDGE;
    else if ((cls >> 8) == 0x0680)
        kind = PCI_NVSWITCH; /* an NVSwitch or POWER NPU as a PCI device: not on PCIe paths */
    else if ((cls >> 8) == 0x0302 && !gpu) /* a 3D controller NCCL is left to fill in */
        return el_error(c, el, "GPU %s is a <pci> of class 0x%06lx without its <gpu> element: "
                               "this file is a template that NCCL completes at run time (cloud "
                               "images ship such files for NCCL_TOPO_FILE), so it does not say "
                               "how the GPUs are linked; on the machine, run an NCCL job with "
                               "NCCL_TOPO_DUMP_FILE=topo.xml and give blinkc that file",
                        busid, cls);
    else if ((cls >> 16) == 0x03)
        kind = gpu ? PCI_GPU : PCI_PLAIN; /* a BMC's VGA device is no GPU */
    else if ((cls >> 16) == 0x02 || nnic)
        kind = PCI_NIC;
    if (gpu && kind != PCI_GPU)
        return el_error(c, gpu, "<gpu> inside a <pci> of class 0x%06lx (a GPU's class is "
                                "0x03xxxx)",
                        cls);

    int parent, made = 0;
    switch (kind) {
    case PCI_NVSWITCH: return BK_OK;
    case PCI_GPU: return read_gpu(c, gpu, busid, cpu, up, gbps, el);
    case PCI_NIC:
        BK_CHECK(attach_point(c, up, cpu, &parent));
        for (xmlNodePtr k = el->children; k; k = k->next)
            if (nccl_is_el(k, "nic"))
                BK_CHECK(read_nic(c, k, busid, parent, gbps, el, &made));
        /* A NIC without <net> children is still a NIC; name it by its bus id. */
        return made ? BK_OK : add_nic(c, el, busid, busid, parent, gbps, el, 0);
    case PCI_BRIDGE: {
        if (npci == 1) /* a root port or a chain element, not a switch chip */
            return walk_pci(c, only_pci, cpu, up);
        struct sw_frame f = {el, busid, gbps, -1, up};
        return walk_children(c, el, cpu, &f);
    }
    case PCI_PLAIN: return walk_children(c, el, cpu, up);
    }
    return BK_EINTERNAL;
}

BK_MUST_USE
static enum bk_status read_cpu(struct ctx *c, xmlNodePtr el, int position)
{
    long numaid, fam, model;
    if (c->ncpus == MAX_CPUS)
        return el_error(c, el, "more than %d <cpu> elements", MAX_CPUS);
    BK_CHECK(nccl_int_attr(c, el, "numaid", 0, -1, 1 << 20, -1, &numaid));
    BK_CHECK(nccl_int_attr(c, el, "familyid", 0, 0, 0xffff, -1, &fam));
    BK_CHECK(nccl_int_attr(c, el, "modelid", 0, 0, 0xffff, -1, &model));
    char *aff = xml_attr(el, "affinity");
    enum bk_status st = BK_OK;
    if (aff && strspn(aff, "0123456789abcdefABCDEF,") != strlen(aff))
        st = el_error(c, el, "affinity=\"%.64s\" is not a CPU mask (comma-separated hex words)",
                      aff);
    xmlFree(aff);
    BK_CHECK(st);
    int socket = numaid >= 0 ? (int)numaid : position;
    for (int i = 0; i < c->ncpus; i++)
        if (c->cpus[i].socket == socket) {
            char *what = bk_asprintf("NUMA node %d%s is already declared by", socket,
                                     numaid < 0 ? " (numaid -1 or absent: its position)" : "");
            st = what ? nccl_el_error2(c, el, what, c->cpus[i].el) : BK_ENOMEM;
            free(what);
            return st;
        }
    char *vendor = xml_attr(el, "vendor"), *arch = xml_attr(el, "arch");
    enum topo_cpu_family f = topo_cpu_family_of(vendor, (int)fam, (int)model, NULL, arch);
    xmlFree(vendor);
    xmlFree(arch);
    char name[32];
    snprintf(name, sizeof name, "cpu%d", socket);
    int node;
    BK_CHECK(nccl_add_node(c, el, TOPO_CPU, name, NULL, &node));
    c->rd.t->nodes[node].socket = socket;
    BK_CHECK(bk_grow_int((void **)&c->cpus, &c->cpus_cap, c->ncpus, sizeof *c->cpus));
    c->cpus[c->ncpus++] = (struct cpu_rec){node, socket, f, el};
    for (xmlNodePtr k = el->children; k; k = k->next) {
        int made = 0;
        if (nccl_is_el(k, "pci"))
            BK_CHECK(walk_pci(c, k, node, NULL));
        else if (nccl_is_el(k, "nic")) /* no PCI placement (a virtual NIC): link speed unknown */
            BK_CHECK(read_nic(c, k, NULL, node, topo_rate_pcie(&c->rd.o->rates, 0, 0), k, &made));
    }
    return BK_OK;
}

BK_MUST_USE
enum bk_status nccl_read_system(struct ctx *c, xmlNodePtr root)
{
    if (!nccl_is_el(root, "system"))
        return el_error(c, root, "not an NCCL topology: the root element must be <system>");
    long version;
    BK_CHECK(nccl_int_attr(c, root, "version", 0, 0, LONG_MAX, 1, &version));
    if (version != 1)
        return el_error(c, root, "version %ld is not supported (NCCL topology files are "
                                 "version 1)",
                        version);
    char *name = xml_attr(root, "name");
    enum bk_status st = BK_OK;
    if (name && *name && strlen(name) <= NAME_MAX_LEN)
        st = topo_set_name(c->rd.t, name);
    xmlFree(name);
    BK_CHECK(st);
    int position = 0;
    for (xmlNodePtr k = root->children; k; k = k->next)
        if (nccl_is_el(k, "cpu"))
            BK_CHECK(read_cpu(c, k, position++));
    return BK_OK;
}

enum bk_status topo_read_nccl(const struct reader *r)
{
    xmlDocPtr doc;
    BK_CHECK(xml_safe_parse(r->in, &doc, r->d));
    struct ctx c = {.rd = *r};
    enum bk_status st;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (!root)
        st = diag_error(r->d, r->in->name, DIAG_NOWHERE,
                        "no root element: not an NCCL topology file");
    else
        st = nccl_read_system(&c, root);
    if (st == BK_OK)
        st = nccl_check_devs(&c);
    if (st == BK_OK)
        st = nccl_set_gens(&c);
    if (st == BK_OK)
        st = nccl_check_budgets(&c);
    if (st == BK_OK)
        st = nccl_resolve_links(&c);
    if (st == BK_OK)
        st = nccl_add_smp(&c);
    free(c.links);
    free(c.gpus);
    free(c.cpus);
    free(c.bus);
    xmlFreeDoc(doc);
    return st;
}
