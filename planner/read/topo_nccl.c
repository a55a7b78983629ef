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
 * element path and its line.
 */
#include <libxml/tree.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "read/topo_read.h"
#include "read/xml_safe.h"

#define NAME_MAX_LEN 255 /* NCCL's own limit on an attribute value */
#define MAX_NVLINK_COUNT 64
#define MAX_GPU_DEV 1000000
/* Linux allows 1024 NUMA nodes; every pair gets an smp link, so bound the quadratic part. */
#define MAX_CPUS 256
#define BUSID_LEN 20 /* "ffffffff:bb:dd.f" plus room */

enum peer { PEER_ANY, PEER_GPU, PEER_NVS, PEER_CPU, PEER_C2C };

struct cpu_rec {
    int node, socket;
    enum topo_cpu_family fam;
    xmlNodePtr el;
};

struct gpu_rec {
    int node, dev;
    int cpu;   /* its cpu node */
    int links; /* sum of its own <nvlink> counts, for guessing an unknown generation */
    xmlNodePtr el;
};

/* One <nvlink> or <c2c>, resolved after the walk. */
struct link_rec {
    int gpu; /* index into gpus */
    enum peer peer;
    int count;
    double gbps;            /* c2c only: bw x count */
    char target[BUSID_LEN]; /* normalised bus id; empty for c2c */
    xmlNodePtr el;
};

struct bus_slot {
    char busid[BUSID_LEN]; /* empty: free slot */
    xmlNodePtr el;
};

/* A pcie-switch candidate; its node is made only when a device below it needs it. */
struct sw_frame {
    xmlNodePtr el;
    const char *busid;
    double gbps; /* its upstream link */
    int node;    /* -1 until made */
    struct sw_frame *up;
};

struct ctx {
    const struct input *in;
    const struct topo_read_opts *o;
    struct topo *t;
    struct diag *d;
    struct cpu_rec *cpus;
    int ncpus, cpus_cap;
    struct gpu_rec *gpus;
    int ngpus, gpus_cap;
    struct link_rec *links;
    int nlinks, links_cap;
    struct bus_slot *bus; /* open-addressing set of every <pci> bus id seen */
    size_t bus_cap, nbus;
    int pcilink_noted;
};

/* ---------------------------------------------------------------- messages */

static enum bk_status el_msg(struct ctx *c, enum diag_level lvl, xmlNodePtr el, const char *fmt,
                             ...) BK_PRINTF(4, 5);
static enum bk_status el_msg(struct ctx *c, enum diag_level lvl, xmlNodePtr el, const char *fmt,
                             ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = bk_vasprintf(fmt, ap);
    va_end(ap);
    char *path = xml_node_path(el);
    diag_add(c->d, lvl, c->in->name, xml_node_loc(el), "<%s> at %s: %s", (const char *)el->name,
             path ? path : "?", msg ? msg : "(out of memory formatting the message)");
    free(msg);
    free(path);
    return BK_EINPUT;
}
#define el_error(c, el, ...) el_msg((c), DIAG_ERROR, (el), __VA_ARGS__)
#define el_warning(c, el, ...) (void)el_msg((c), DIAG_WARNING, (el), __VA_ARGS__)

/* "/system/cpu[2]/pci/gpu (line 14)" for naming a second element in a message. Caller frees. */
static char *el_where(xmlNodePtr el)
{
    char *path = xml_node_path(el);
    char *s = bk_asprintf("%s (line %d)", path ? path : "?", xml_node_loc(el).line);
    free(path);
    return s;
}

/* An error at `el` that points back at an earlier element `first`. */
BK_MUST_USE
static enum bk_status el_error2(struct ctx *c, xmlNodePtr el, const char *what, xmlNodePtr first)
{
    char *where = el_where(first);
    enum bk_status st = el_error(c, el, "%s the <%s> at %s", what, (const char *)first->name,
                                 where ? where : "?");
    free(where);
    return st;
}

static int is_el(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && xmlStrEqual(n->name, (const xmlChar *)name);
}

/* ---------------------------------------------------------------- values */

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static size_t hex_run(const char *p)
{
    size_t n = 0;
    while (hexval(p[n]) >= 0)
        n++;
    return n;
}

/* Strict integer: optional sign, then decimal digits, or 0x and hex digits (always hex when
 * `hex`), nothing else. Returns 0 on success, 1 when malformed, 2 when outside [lo, hi]. */
static int parse_long(const char *s, int hex, long lo, long hi, long *out)
{
    const char *p = s;
    int neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    unsigned base = hex ? 16 : 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    if (!*p)
        return 1;
    unsigned long long v = 0;
    int big = 0;
    for (; *p; p++) {
        int dg = hexval(*p);
        if (dg < 0 || (unsigned)dg >= base)
            return 1;
        if (v > ((unsigned long long)LONG_MAX - (unsigned)dg) / base)
            big = 1; /* keep scanning: junk after a huge number is still "malformed" */
        else
            v = v * base + (unsigned)dg;
    }
    long x = neg ? -(long)v : (long)v;
    if (big || x < lo || x > hi)
        return 2;
    *out = x;
    return 0;
}

/* An integer attribute; absent gives dflt, or an error when required. */
BK_MUST_USE
static enum bk_status int_attr(struct ctx *c, xmlNodePtr el, const char *name, int required,
                               long lo, long hi, long dflt, long *out)
{
    *out = dflt;
    char *v = xml_attr(el, name);
    if (!v)
        return required ? el_error(c, el, "missing %s= attribute", name) : BK_OK;
    enum bk_status st = BK_OK;
    switch (parse_long(v, 0, lo, hi, out)) {
    case 1: st = el_error(c, el, "%s=\"%.64s\" is not an integer (decimal or 0x hex)", name, v); break;
    case 2: st = el_error(c, el, "%s=\"%.64s\" is out of range (%ld to %ld)", name, v, lo, hi); break;
    }
    xmlFree(v);
    return st;
}

/* A PCI class code attribute ("0x030200"; hex even without the 0x). Absent: -1. */
BK_MUST_USE
static enum bk_status class_attr(struct ctx *c, xmlNodePtr el, const char *name, long *out)
{
    *out = -1;
    char *v = xml_attr(el, name);
    enum bk_status st = BK_OK;
    if (v && (v[0] == '-' || v[0] == '+' || parse_long(v, 1, 0, 0xffffff, out) != 0))
        st = el_error(c, el, "%s=\"%.64s\" is not a PCI class code (e.g. 0x030200)", name, v);
    xmlFree(v);
    return st;
}

/*
 * A PCI bus id "dddd:bb:dd.f" into out[BUSID_LEN], lowercase, the domain padded to 4 digits.
 * The domain is optional and may have up to 8 digits (NCCL's VM hidden switch is
 * "fffffff:ff:ff.0"). Returns 0 when malformed.
 */
static int norm_busid(const char *s, char *out)
{
    size_t dn = hex_run(s);
    const char *p = s;
    if (s[dn] == ':' && dn >= 1 && dn <= 8 && hex_run(s + dn + 1) == 2 && s[dn + 3] == ':')
        p = s + dn + 1;
    else
        dn = 0;
    if (hex_run(p) != 2 || p[2] != ':' || hex_run(p + 3) != 2 || p[5] != '.' ||
        hex_run(p + 6) != 1 || p[7] != '\0')
        return 0;
    size_t n = 0;
    for (size_t i = dn; i < 4; i++)
        out[n++] = '0';
    memcpy(out + n, s, dn);
    n += dn;
    out[n++] = ':';
    memcpy(out + n, p, 8); /* "bb:dd.f" and its NUL */
    for (char *q = out; *q; q++)
        if (*q >= 'A' && *q <= 'F')
            *q = (char)(*q - 'A' + 'a');
    return 1;
}

/* busid= of a <pci> or target= of an <nvlink>: required, normalised into out. */
BK_MUST_USE
static enum bk_status busid_attr(struct ctx *c, xmlNodePtr el, const char *name, char *out)
{
    char *v = xml_attr(el, name);
    if (!v)
        return el_error(c, el, "missing %s= attribute (a PCI bus id such as 0000:06:00.0)", name);
    enum bk_status st = BK_OK;
    if (!norm_busid(v, out))
        st = el_error(c, el, "%s=\"%.64s\" is not a PCI bus id (expected dddd:bb:dd.f, e.g. "
                             "0000:06:00.0)",
                      name, v);
    xmlFree(v);
    return st;
}

/*
 * link_speed as sysfs and NCCL write it: "8 GT/s", "8.0 GT/s PCIe", "2.5 GT/s"; empty or
 * "Unknown..." is unknown (gen 0). Returns 0 and sets *gen, 1 when malformed, 2 when the number
 * is no PCIe generation's rate.
 */
static int parse_link_speed(const char *s, int *gen)
{
    static const char *const rates[] = {"2.5", "5", "5.0", "8", "8.0", "16", "16.0",
                                        "32", "32.0", "64", "64.0"};
    static const int gens[] = {1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6};
    *gen = 0;
    if (!*s || strncmp(s, "Unknown", 7) == 0 || strncmp(s, "unknown", 7) == 0)
        return 0;
    size_t n = strspn(s, "0123456789."), dots = 0;
    for (size_t i = 0; i < n; i++)
        dots += s[i] == '.';
    const char *u = s + n + (s[n] == ' ');
    if (n == 0 || n > 8 || dots > 1 || s[0] == '.' || s[n - 1] == '.' ||
        strncmp(u, "GT/s", 4) != 0 || (u[4] && u[4] != ' '))
        return 1;
    for (size_t i = 0; i < BK_ARRAY_LEN(rates); i++)
        if (strlen(rates[i]) == n && memcmp(rates[i], s, n) == 0) {
            *gen = gens[i];
            return 0;
        }
    return 2;
}

/* The capacity of a <pci> element's upstream link from link_speed and link_width. */
BK_MUST_USE
static enum bk_status pci_rate(struct ctx *c, xmlNodePtr el, double *gbps)
{
    int gen = 0;
    long width = 0;
    enum bk_status st = BK_OK;
    char *v = xml_attr(el, "link_speed");
    int r = v ? parse_link_speed(v, &gen) : 0;
    if (r == 1)
        st = el_error(c, el, "link_speed=\"%.64s\" is not a PCIe speed (expected e.g. \"8.0 GT/s "
                             "PCIe\", \"16 GT/s\" or empty)",
                      v);
    else if (r == 2)
        el_warning(c, el, "link_speed=\"%.64s\" is no PCIe generation's rate; assuming Gen3 as "
                          "NCCL does",
                   v);
    xmlFree(v);
    BK_CHECK(st);
    v = xml_attr(el, "link_width");
    int empty = v && !*v; /* "" is unknown, like 0 */
    xmlFree(v);
    if (!empty)
        BK_CHECK(int_attr(c, el, "link_width", 0, 0, 32, 0, &width));
    *gbps = topo_rate_pcie(&c->o->rates, gen, (int)width);
    return BK_OK;
}

/* NVLink generation from the compute capability x 10; 0 when unknown. */
static int gen_from_sm(long sm)
{
    if (sm == 60)
        return 1;
    if (sm == 70)
        return 2;
    if (sm == 80 || sm == 86 || sm == 87 || sm == 89)
        return 3;
    if (sm == 90)
        return 4;
    return sm >= 100 ? 5 : 0;
}

/* ---------------------------------------------------------------- bookkeeping */

BK_MUST_USE
static enum bk_status grow(void **arr, int *cap, int n, size_t size)
{
    if (n < *cap)
        return BK_OK;
    if (*cap > INT_MAX / 4)
        return BK_ENOMEM;
    int ncap = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, (size_t)ncap * size);
    if (!p)
        return BK_ENOMEM;
    *arr = p;
    *cap = ncap;
    return BK_OK;
}

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
        enum bk_status st = what ? el_error2(c, el, what, slot->el) : BK_ENOMEM;
        free(what);
        return st;
    }
    memcpy(slot->busid, busid, strlen(busid) + 1); /* fits: norm_busid made it */
    slot->el = el;
    c->nbus++;
    return BK_OK;
}

/* Add a node called `name`, refusing a name another node already has. */
BK_MUST_USE
static enum bk_status add_node(struct ctx *c, xmlNodePtr el, enum topo_node_kind kind,
                               const char *name, const char *busid, int *out)
{
    int other = topo_find(c->t, name);
    if (other >= 0)
        return el_error(c, el, "the name '%s' is already used by a %s declared at line %d", name,
                        topo_node_kind_name(c->t->nodes[other].kind),
                        c->t->nodes[other].loc.line);
    BK_CHECK(topo_add_node(c->t, kind, name, 0, xml_node_loc(el), out));
    return busid ? topo_node_set_busid(c->t, *out, busid) : BK_OK;
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
        BK_CHECK(add_node(c, f->el, TOPO_PCIE_SWITCH, f->busid, f->busid, &n));
        BK_CHECK(topo_add_link(c->t, n, up, TOPO_PCIE, 1, f->gbps, f->gbps, xml_node_loc(f->el)));
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
    BK_CHECK(int_attr(c, el, "count", 1, 1, MAX_NVLINK_COUNT, 0, &count));
    r.count = (int)count;
    if (is_el(el, "c2c")) {
        BK_CHECK(int_attr(c, el, "bw", 1, 1, 1000000, 0, &bw));
        r.gbps = (double)bw / 1000.0 * (double)count; /* bw is MB/s per link */
    } else {
        BK_CHECK(busid_attr(c, el, "target", r.target));
        BK_CHECK(class_attr(c, el, "tclass", &cls));
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
        if (r.peer <= PEER_GPU && strcmp(r.target, own_busid) == 0)
            return el_error(c, el, "target %s is this GPU's own bus id (an NVLink needs a peer)",
                            own_busid);
        c->gpus[g].links += r.count;
    }
    BK_CHECK(grow((void **)&c->links, &c->links_cap, c->nlinks, sizeof *c->links));
    c->links[c->nlinks++] = r;
    return BK_OK;
}

/* <gpu> inside the <pci> element `pci` whose bus id is `busid`, hanging from `up`. */
BK_MUST_USE
static enum bk_status read_gpu(struct ctx *c, xmlNodePtr el, const char *busid, int cpu,
                               struct sw_frame *up, double gbps, xmlNodePtr pci)
{
    long dev, sm, v;
    BK_CHECK(int_attr(c, el, "dev", 1, 0, MAX_GPU_DEV, 0, &dev));
    BK_CHECK(int_attr(c, el, "sm", 0, 0, 100000, 0, &sm));
    BK_CHECK(int_attr(c, el, "rank", 0, -1, INT_MAX, -1, &v));
    BK_CHECK(int_attr(c, el, "gdr", 0, 0, INT_MAX, 0, &v));
    int node, parent;
    BK_CHECK(attach_point(c, up, cpu, &parent));
    BK_CHECK(add_node(c, el, TOPO_GPU, busid, busid, &node));
    c->t->nodes[node].gpu_order = (int)dev;
    c->t->nodes[node].nvlink_gen = gen_from_sm(sm);
    BK_CHECK(topo_add_link(c->t, node, parent, TOPO_PCIE, 1, gbps, gbps, xml_node_loc(pci)));
    BK_CHECK(grow((void **)&c->gpus, &c->gpus_cap, c->ngpus, sizeof *c->gpus));
    int g = c->ngpus++;
    c->gpus[g] = (struct gpu_rec){node, (int)dev, cpu, 0, el};
    for (xmlNodePtr k = el->children; k; k = k->next)
        if (is_el(k, "nvlink") || is_el(k, "c2c"))
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
    BK_CHECK(add_node(c, el, TOPO_NIC, name, busid, &node));
    double rate = (double)speed_mbps / 8000.0;
    /* A rate no link could carry is no rate: left unknown rather than failing later. */
    c->t->nodes[node].nic_gbps = rate <= TOPO_MAX_GBPS ? rate : 0;
    return topo_add_link(c->t, node, parent, TOPO_PCIE, 1, gbps, gbps, xml_node_loc(link_el));
}

/* <nic> with its <net> children: one NIC node per net, counted in *made. */
BK_MUST_USE
static enum bk_status read_nic(struct ctx *c, xmlNodePtr el, const char *busid, int parent,
                               double gbps, xmlNodePtr link_el, int *made)
{
    for (xmlNodePtr k = el->children; k; k = k->next) {
        if (!is_el(k, "net"))
            continue;
        long v, speed;
        BK_CHECK(int_attr(c, k, "dev", 0, 0, INT_MAX, 0, &v));
        BK_CHECK(int_attr(c, k, "speed", 0, 0, LONG_MAX, 0, &speed));
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
        if (is_el(k, "pci"))
            BK_CHECK(walk_pci(c, k, cpu, up));
    return BK_OK;
}

BK_MUST_USE
static enum bk_status walk_pci(struct ctx *c, xmlNodePtr el, int cpu, struct sw_frame *up)
{
    char busid[BUSID_LEN];
    double gbps = 0;
    long cls;
    BK_CHECK(busid_attr(c, el, "busid", busid));
    BK_CHECK(bus_add(c, busid, el));
    BK_CHECK(pci_rate(c, el, &gbps));
    BK_CHECK(class_attr(c, el, "class", &cls));
    xmlNodePtr gpu = NULL, only_pci = NULL;
    int npci = 0, nnic = 0;
    for (xmlNodePtr k = el->children; k; k = k->next) {
        if (is_el(k, "gpu") && gpu)
            return el_error(c, k, "a second <gpu> in one <pci> device");
        if (is_el(k, "gpu"))
            gpu = k;
        nnic += is_el(k, "nic");
        if (is_el(k, "pci"))
            npci++, only_pci = k;
        if (is_el(k, "pcilink") && !c->pcilink_noted) {
            c->pcilink_noted = 1;
            diag_note(c->d, c->in->name, xml_node_loc(k),
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
            if (is_el(k, "nic"))
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
    BK_CHECK(int_attr(c, el, "numaid", 0, -1, 1 << 20, -1, &numaid));
    BK_CHECK(int_attr(c, el, "familyid", 0, 0, 0xffff, -1, &fam));
    BK_CHECK(int_attr(c, el, "modelid", 0, 0, 0xffff, -1, &model));
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
            st = what ? el_error2(c, el, what, c->cpus[i].el) : BK_ENOMEM;
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
    BK_CHECK(add_node(c, el, TOPO_CPU, name, NULL, &node));
    c->t->nodes[node].socket = socket;
    BK_CHECK(grow((void **)&c->cpus, &c->cpus_cap, c->ncpus, sizeof *c->cpus));
    c->cpus[c->ncpus++] = (struct cpu_rec){node, socket, f, el};
    for (xmlNodePtr k = el->children; k; k = k->next) {
        int made = 0;
        if (is_el(k, "pci"))
            BK_CHECK(walk_pci(c, k, node, NULL));
        else if (is_el(k, "nic")) /* no PCI placement (a virtual NIC): link speed unknown */
            BK_CHECK(read_nic(c, k, NULL, node, topo_rate_pcie(&c->o->rates, 0, 0), k, &made));
    }
    return BK_OK;
}

BK_MUST_USE
static enum bk_status read_system(struct ctx *c, xmlNodePtr root)
{
    if (!is_el(root, "system"))
        return el_error(c, root, "not an NCCL topology: the root element must be <system>");
    long version;
    BK_CHECK(int_attr(c, root, "version", 0, 0, LONG_MAX, 1, &version));
    if (version != 1)
        return el_error(c, root, "version %ld is not supported (NCCL topology files are "
                                 "version 1)",
                        version);
    char *name = xml_attr(root, "name");
    enum bk_status st = BK_OK;
    if (name && *name && strlen(name) <= NAME_MAX_LEN)
        st = topo_set_name(c->t, name);
    xmlFree(name);
    BK_CHECK(st);
    int position = 0;
    for (xmlNodePtr k = root->children; k; k = k->next)
        if (is_el(k, "cpu"))
            BK_CHECK(read_cpu(c, k, position++));
    return BK_OK;
}

/* ---------------------------------------------------------------- after the walk */

/* A sort key: (a, b, c), then document order. */
struct key3 {
    int a, b, c, idx;
};

static int cmp_key3(const void *pa, const void *pb)
{
    const struct key3 *x = pa, *y = pb;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    if (x->c != y->c)
        return x->c < y->c ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Two <gpu> elements with one dev: name both (sorting keeps this n log n). */
BK_MUST_USE
static enum bk_status check_devs(struct ctx *c)
{
    struct key3 *k = malloc(((size_t)c->ngpus + 1) * sizeof *k);
    if (!k)
        return BK_ENOMEM;
    for (int i = 0; i < c->ngpus; i++)
        k[i] = (struct key3){c->gpus[i].dev, 0, 0, i};
    qsort(k, (size_t)c->ngpus, sizeof *k, cmp_key3);
    enum bk_status st = BK_OK;
    for (int i = 1; i < c->ngpus && st == BK_OK; i++)
        if (k[i].a == k[i - 1].a) {
            char *what = bk_asprintf("dev %d is already used by", k[i].a);
            st = what ? el_error2(c, c->gpus[k[i].idx].el, what, c->gpus[k[i - 1].idx].el)
                      : BK_ENOMEM;
            free(what);
        }
    free(k);
    return st;
}

/* GPUs whose sm= is missing or unknown get one assumed generation for the whole file. */
BK_MUST_USE
static enum bk_status set_gens(struct ctx *c)
{
    int unknown = 0, most = 0;
    for (int g = 0; g < c->ngpus; g++) {
        unknown += c->t->nodes[c->gpus[g].node].nvlink_gen == 0;
        if (c->gpus[g].links > most)
            most = c->gpus[g].links;
    }
    if (!unknown)
        return BK_OK;
    /* The flagship parts' per-GPU link budgets: 4 P100, 6 V100, 12 A100, 18 H100 (or B200). */
    int guess = most == 4 ? 1 : most == 6 ? 2 : most == 12 ? 3 : most == 18 ? 4 : 0;
    char *why = guess ? bk_asprintf("for the GPUs without a known sm= (guessed from %d NVLinks "
                                    "per GPU)",
                                    most)
                      : bk_asprintf("for the GPUs without a known sm=");
    if (!why)
        return BK_ENOMEM;
    int gen = topo_assumed_gen(c->o, guess, why, c->in, c->d);
    free(why);
    if (!gen)
        return BK_EINPUT;
    for (int g = 0; g < c->ngpus; g++)
        if (c->t->nodes[c->gpus[g].node].nvlink_gen == 0)
            c->t->nodes[c->gpus[g].node].nvlink_gen = gen;
    return BK_OK;
}

/* The node at the far end of link record r (an NVSwitch is made on first mention). */
BK_MUST_USE
static enum bk_status peer_node(struct ctx *c, const struct link_rec *r, int *out)
{
    struct topo *t = c->t;
    if (r->peer == PEER_CPU || r->peer == PEER_C2C) {
        *out = c->gpus[r->gpu].cpu;
        return BK_OK;
    }
    int p = topo_find(t, r->target);
    if (r->peer == PEER_NVS) {
        if (p >= 0 && t->nodes[p].kind != TOPO_NVSWITCH)
            return el_error(c, r->el, "target %s is a %s in this file, but tclass 0x068000 says "
                                      "an NVSwitch",
                            r->target, topo_node_kind_name(t->nodes[p].kind));
        /* Every distinct switch bus id is one switch (the VM's hidden fffffff:ff:ff.0 too). */
        if (p < 0)
            BK_CHECK(add_node(c, r->el, TOPO_NVSWITCH, r->target, r->target, &p));
    } else if (p < 0 || t->nodes[p].kind != TOPO_GPU) {
        return el_error(c, r->el, "target %s is not the bus id of a GPU in this file%s", r->target,
                        r->peer == PEER_ANY ? " (and without tclass= it cannot be an NVSwitch or "
                                              "CPU link)"
                                            : "");
    }
    *out = p;
    return BK_OK;
}

/*
 * One full-duplex NVLink per connected pair. NCCL lists GPU-GPU links from both ends, so the two
 * records of a pair merge (the smaller count wins when they disagree: a link only one end sees
 * is not usable); a pair listed by one end only is taken as given. Sorting by (pair, source)
 * groups the two ends and exposes repeats without a quadratic search.
 */
BK_MUST_USE
static enum bk_status resolve_links(struct ctx *c)
{
    int n = c->nlinks;
    struct key3 *k = malloc(((size_t)n + 1) * sizeof *k);
    if (!k)
        return BK_ENOMEM;
    enum bk_status st = BK_OK;
    for (int i = 0; i < n && st == BK_OK; i++) {
        int g = c->gpus[c->links[i].gpu].node, p = -1;
        st = peer_node(c, &c->links[i], &p);
        k[i] = (struct key3){g < p ? g : p, g < p ? p : g, g, i};
    }
    if (st == BK_OK)
        qsort(k, (size_t)n, sizeof *k, cmp_key3);
    for (int i = 0, j; i < n && st == BK_OK; i = j) {
        for (j = i + 1; j < n && k[j].a == k[i].a && k[j].b == k[i].b && st == BK_OK; j++)
            if (k[j].c == k[j - 1].c)
                st = el_error2(c, c->links[k[j].idx].el,
                               "a second link from this GPU to the same peer; already listed by",
                               c->links[k[j - 1].idx].el);
        if (st != BK_OK)
            break;
        /* Distinct sources within a pair can only be the two GPUs of a GPU-GPU link. */
        const struct link_rec *r = &c->links[k[i].idx];
        int count = r->count;
        if (j - i == 2) {
            const struct link_rec *r2 = &c->links[k[i + 1].idx];
            const struct link_rec *first = k[i].idx < k[i + 1].idx ? r : r2;
            const struct link_rec *second = first == r ? r2 : r;
            if (r2->count != r->count) {
                count = r2->count < r->count ? r2->count : r->count;
                char *where = el_where(first->el);
                el_warning(c, second->el,
                           "count %d disagrees with count %d in the <nvlink> at %s for the same "
                           "GPU pair; using %d",
                           second->count, first->count, where ? where : "?", count);
                free(where);
            }
            r = first;
        }
        int g = c->gpus[r->gpu].node, p = k[i].a == g ? k[i].b : k[i].a;
        int gen = c->t->nodes[g].nvlink_gen;
        if (c->t->nodes[p].kind == TOPO_GPU && c->t->nodes[p].nvlink_gen < gen)
            gen = c->t->nodes[p].nvlink_gen;
        double gbps = r->peer == PEER_C2C ? r->gbps : topo_rate_nvlink(&c->o->rates, gen, count);
        st = topo_add_link(c->t, g, p, TOPO_NVLINK, count, gbps, gbps, xml_node_loc(r->el));
    }
    free(k);
    return st;
}

/* Every pair of CPUs shares one inter-socket link at the slower family's rate. */
BK_MUST_USE
static enum bk_status add_smp(struct ctx *c)
{
    for (int i = 0; i < c->ncpus; i++)
        for (int j = i + 1; j < c->ncpus; j++) {
            double a = topo_rate_smp(&c->o->rates, c->cpus[i].fam);
            double b = topo_rate_smp(&c->o->rates, c->cpus[j].fam);
            double r = a < b ? a : b;
            BK_CHECK(topo_add_link(c->t, c->cpus[i].node, c->cpus[j].node, TOPO_SMP, 1, r, r,
                                   xml_node_loc(c->cpus[j].el)));
        }
    return BK_OK;
}

enum bk_status topo_read_nccl(const struct input *in, const struct topo_read_opts *o, struct topo *t,
                              struct diag *d)
{
    xmlDocPtr doc;
    BK_CHECK(xml_safe_parse(in, &doc, d));
    struct ctx c = {.in = in, .o = o, .t = t, .d = d};
    enum bk_status st;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (!root)
        st = diag_error(d, in->name, DIAG_NOWHERE, "no root element: not an NCCL topology file");
    else
        st = read_system(&c, root);
    if (st == BK_OK)
        st = check_devs(&c);
    if (st == BK_OK)
        st = set_gens(&c);
    if (st == BK_OK)
        st = resolve_links(&c);
    if (st == BK_OK)
        st = add_smp(&c);
    free(c.links);
    free(c.gpus);
    free(c.cpus);
    free(c.bus);
    xmlFreeDoc(doc);
    return st;
}
