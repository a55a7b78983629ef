/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_text.c - the reader for blinkc's own line-based topology format (.topo), specified in
 * blinkc-topology(5).
 *
 * It is the one format a person writes by hand, so it is strict and says exactly where it stops:
 * every error names LINE:COL of the offending token (columns count bytes from 1), and reading stops
 * at the first error. Lines are checked for NUL bytes, control characters and invalid UTF-8
 * before they are split into tokens (text_lex.c, shared with the cluster file). Declarations
 * become nodes at once; links are collected and their default capacities computed only at the
 * end of the file, because an NVSwitch trunk takes the NVLink generation of GPUs that may be
 * declared after it. Like every reader it only adds
 * nodes and links; topo_read() finalizes. It never prints and never trusts a number it has not
 * range-checked.
 */
#include "read/reader.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "read/text_lex.h"

enum attr {
    AT_MODEL, AT_BUS, AT_SOCKET, AT_VENDOR, AT_FAMILY, AT_CPUMODEL, AT_ARCH, AT_SPEED,
    AT_KIND, AT_COUNT, AT_GEN, AT_WIDTH, AT_BW, AT_BWREV, AT_P2P, AT_N
};
static const char *const attr_names[AT_N] = {
    "model", "bus", "socket", "vendor", "family", "cpumodel", "arch", "speed",
    "kind", "count", "gen", "width", "bw", "bw-rev", "p2p"};

#define BIT(a) (1u << (a))
/* Attributes each node kind accepts, indexed by enum topo_node_kind. */
static const unsigned node_attrs[TOPO_NODE_KINDS] = {
    BIT(AT_MODEL) | BIT(AT_BUS) | BIT(AT_P2P),
    BIT(AT_BUS),
    BIT(AT_BUS),
    BIT(AT_SOCKET) | BIT(AT_MODEL) | BIT(AT_VENDOR) | BIT(AT_FAMILY) | BIT(AT_CPUMODEL) |
        BIT(AT_ARCH),
    BIT(AT_BUS) | BIT(AT_SPEED),
    0};
static const unsigned link_attrs = BIT(AT_KIND) | BIT(AT_COUNT) | BIT(AT_GEN) | BIT(AT_WIDTH) |
                                   BIT(AT_BW) | BIT(AT_BWREV);

/* The attribute tokens of one statement, NULL where absent. */
struct attrs {
    const struct lex_tok *at[AT_N];
};

/* A link as declared; capacities are computed once the whole file is read. */
struct pend_link {
    int a, b;
    enum topo_link_kind kind;
    int count, gen, width; /* gen and width 0: not given */
    double bw, bwrev;      /* 0: not given */
    struct diag_loc loc;
};

/* What the model has no field for, per node index: a CPU's family. */
struct extra {
    enum topo_cpu_family fam;
};

/*
 * A string -> int map (open addressing, FNV-1a) for server names, bus ids and link pairs, so a
 * 100,000-line file is still read in linear time. Keys carry a one-letter namespace prefix.
 */
struct smap {
    char **keys;
    int *vals;
    size_t cap, n;
};

struct text_reader {
    struct reader rd;
    struct lexer lx;     /* the current line's tokens, and the line number */
    int server;          /* current server index */
    int server_lines;    /* `server` statements seen */
    int section_nodes;   /* nodes declared in the current section */
    int section_line;    /* line of the current `server` statement, 0 before any */
    char *section_name;
    int ngpus;
    int topology_line;
    struct extra *extra;
    size_t extra_cap;
    struct pend_link *links;
    int nlinks;
    size_t links_cap;
    struct smap map;
    int assumed_gen; /* cached topo_assumed_gen() result, 0 until asked */
};

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t smap_slot(const struct smap *m, const char *key)
{
    size_t mask = m->cap - 1, i = fnv(key) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

static int smap_get(const struct smap *m, const char *key)
{
    if (!m->cap)
        return -1;
    size_t i = smap_slot(m, key);
    return m->keys[i] ? m->vals[i] : -1;
}

/* Insert a key known to be absent. */
BK_MUST_USE
static enum bk_status smap_put(struct smap *m, const char *key, int val)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct smap g = {NULL, NULL, m->cap ? 2 * m->cap : 64, 0};
        g.keys = calloc(g.cap, sizeof *g.keys);
        g.vals = calloc(g.cap, sizeof *g.vals);
        if (!g.keys || !g.vals) {
            free(g.keys), free(g.vals);
            return BK_ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = smap_slot(&g, m->keys[i]);
                g.keys[j] = m->keys[i];
                g.vals[j] = m->vals[i];
            }
        g.n = m->n;
        free(m->keys), free(m->vals);
        *m = g;
    }
    size_t i = smap_slot(m, key);
    if (!(m->keys[i] = strdup(key)))
        return BK_ENOMEM;
    m->vals[i] = val;
    m->n++;
    return BK_OK;
}

static void smap_free(struct smap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys), free(m->vals);
}

static enum bk_status err(struct text_reader *r, int col, const char *fmt, ...) BK_PRINTF(3, 4);
static enum bk_status err(struct text_reader *r, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum bk_status st = lex_verror(&r->lx, col, fmt, ap);
    va_end(ap);
    return st;
}

/* Names of the attributes in `mask`, for messages. */
static void list_attrs(struct strbuf *sb, unsigned mask)
{
    const char *sep = "";
    for (int a = 0; a < AT_N; a++)
        if (mask & BIT(a)) {
            sb_printf(sb, "%s%s", sep, attr_names[a]);
            sep = ", ";
        }
}

/*
 * Check the statement's positional names (tokens 1..npos) and collect its KEY=VALUE attributes.
 * `usage` is the statement's form, for the message when names are missing.
 */
BK_MUST_USE
static enum bk_status parse_stmt(struct text_reader *r, int npos, unsigned allowed,
                                 const char *usage, struct attrs *a)
{
    memset(a, 0, sizeof *a);
    const char *kw = r->lx.toks[0].text;
    for (int k = 1; k <= npos; k++) {
        if (k >= r->lx.ntoks || r->lx.toks[k].eq >= 0)
            return err(r, k < r->lx.ntoks ? r->lx.toks[k].col : r->lx.toks[k - 1].end,
                       "missing name: the form is '%s' (quote a name that contains '=')", usage);
        if (!r->lx.toks[k].text[0])
            return err(r, r->lx.toks[k].col, "empty name");
    }
    for (int i = npos + 1; i < r->lx.ntoks; i++) {
        const struct lex_tok *tk = &r->lx.toks[i];
        if (tk->eq < 0)
            return err(r, tk->col, "unexpected '%s': attributes are written KEY=VALUE", tk->text);
        if (tk->eq == 0)
            return err(r, tk->col, "attribute with no name before '='");
        int k;
        for (k = 0; k < AT_N; k++)
            if ((allowed & BIT(k)) && strlen(attr_names[k]) == (size_t)tk->eq &&
                memcmp(attr_names[k], tk->text, (size_t)tk->eq) == 0)
                break;
        if (k == AT_N) {
            if (!allowed)
                return err(r, tk->col, "'%s' takes no attributes", kw);
            struct strbuf sb;
            sb_init(&sb);
            list_attrs(&sb, allowed);
            enum bk_status st = err(r, tk->col, "unknown attribute '%.*s' for %s (known: %s)",
                                    tk->eq, tk->text, kw, sb.data ? sb.data : "?");
            sb_free(&sb);
            return st;
        }
        if (a->at[k])
            return err(r, tk->col, "attribute '%s' given twice (first at column %d)",
                       attr_names[k], a->at[k]->col);
        if (!*lex_value(tk))
            return err(r, tk->vcol, "attribute '%s' has no value", attr_names[k]);
        a->at[k] = tk;
    }
    return BK_OK;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                 : -1;
}

/* A decimal (or, with `hex`, 0x-prefixed hexadecimal) integer attribute in [lo, hi]. */
BK_MUST_USE
static enum bk_status int_attr(struct text_reader *r, const struct lex_tok *tk, int hex,
                               long lo, long hi, long *out)
{
    const char *s = lex_value(tk);
    int base = 10;
    if (hex && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2]) {
        base = 16;
        s += 2;
    }
    long v = 0;
    for (; *s; s++) {
        int dv = hexval(*s);
        if (dv < 0 || dv >= base || v > hi) /* v > hi: stop before it can overflow */
            break;
        v = v * base + dv;
    }
    if (*s || v < lo || v > hi)
        return err(r, tk->vcol, "%.*s=%s: expected an integer from %ld to %ld", tk->eq, tk->text,
                   lex_value(tk), lo, hi);
    *out = v;
    return BK_OK;
}

BK_MUST_USE
static enum bk_status bw_attr(struct text_reader *r, const struct lex_tok *tk, double *out)
{
    const char *why = "not a bandwidth";
    if (!topo_parse_bandwidth(lex_value(tk), out, &why))
        return err(r, tk->vcol, "bad bandwidth '%s' for %.*s=: %s", lex_value(tk), tk->eq,
                   tk->text, why);
    return BK_OK;
}

/* A run of 1..maxd hex digits; NULL when there is none or it is longer. */
static const char *hex_run(const char *p, int maxd, unsigned long *v)
{
    int n = 0;
    *v = 0;
    for (; hexval(p[n]) >= 0; n++) {
        if (n == maxd)
            return NULL;
        *v = *v * 16 + (unsigned long)hexval(p[n]);
    }
    return n ? p + n : NULL;
}

/*
 * A PCI bus id "[DOMAIN:]BUS:DEV.FN", any case, the domain up to 8 digits as nvidia-smi prints
 * it, into the model's lowercase "dddd:bb:dd.f". Returns 0 when malformed.
 */
static int parse_busid(const char *s, char out[16])
{
    unsigned long x, y, dom = 0, bus, dev, fn;
    const char *p = hex_run(s, 8, &x);
    if (!p || *p != ':' || !(p = hex_run(p + 1, 2, &y)))
        return 0;
    if (*p == ':') {
        dom = x, bus = y;
        if (!(p = hex_run(p + 1, 2, &dev)))
            return 0;
    } else {
        bus = x, dev = y;
    }
    if (*p != '.' || p[1] < '0' || p[1] > '7' || p[2])
        return 0;
    fn = (unsigned long)(p[1] - '0');
    if (dom > 0xffff || bus > 0xff || dev > 0x1f)
        return 0;
    snprintf(out, 16, "%04lx:%02lx:%02lx.%lu", dom, bus, dev, fn);
    return 1;
}

/* NVLink generation used when the input gives none: asked once, so it warns once. */
static int assumed_gen(struct text_reader *r, const char *why)
{
    if (!r->assumed_gen)
        r->assumed_gen = topo_assumed_gen(r->rd.o, 0, why, r->rd.in, r->rd.d);
    return r->assumed_gen;
}

BK_MUST_USE
static enum bk_status stmt_topology(struct text_reader *r)
{
    struct attrs a;
    BK_CHECK(parse_stmt(r, 1, 0, "topology NAME", &a));
    if (r->topology_line)
        return err(r, r->lx.toks[0].col,
                   "second 'topology' statement (the name was given on line %d)",
                   r->topology_line);
    r->topology_line = r->lx.line;
    return topo_set_name(r->rd.t, r->lx.toks[1].text);
}

static void warn_empty_section(struct text_reader *r)
{
    if (r->section_line && !r->section_nodes)
        diag_warning(r->rd.d, r->rd.in->name, DIAG_AT(r->section_line, 0),
                     "server '%s' declares no nodes", r->section_name);
}

BK_MUST_USE
static enum bk_status stmt_server(struct text_reader *r)
{
    struct attrs a;
    BK_CHECK(parse_stmt(r, 1, 0, "server NAME", &a));
    const char *name = r->lx.toks[1].text;
    char *key = bk_asprintf("s\x1f%s", name);
    if (!key)
        return BK_ENOMEM;
    int prev = smap_get(&r->map, key);
    enum bk_status st = BK_OK;
    if (prev >= 0)
        st = err(r, r->lx.toks[1].col, "server '%s' already declared on line %d", name, prev);
    else
        st = smap_put(&r->map, key, r->lx.line);
    free(key);
    BK_CHECK(st);
    warn_empty_section(r);
    /* Nodes declared before any `server` line form server 0; a first `server` line names that
       server when nothing was declared yet, else it starts server 1. */
    if (r->server_lines++ > 0 || r->rd.t->nnodes > 0)
        r->server++;
    r->section_nodes = 0;
    r->section_line = r->lx.line;
    free(r->section_name);
    return (r->section_name = strdup(name)) ? BK_OK : BK_ENOMEM;
}

BK_MUST_USE
static enum bk_status stmt_node(struct text_reader *r, enum topo_node_kind kind)
{
    static const char *const usage[TOPO_NODE_KINDS] = {
        "gpu NAME [model=TEXT] [bus=BUSID] [p2p=yes|no]",
        "nvswitch NAME [bus=BUSID]",
        "pcie-switch NAME [bus=BUSID]",
        "cpu NAME [socket=N] [model=TEXT] [vendor=TEXT] [family=N] [cpumodel=N] [arch=TEXT]",
        "nic NAME [bus=BUSID] [speed=BW]",
        "net-switch NAME"};
    struct attrs a;
    BK_CHECK(parse_stmt(r, 1, node_attrs[kind], usage[kind], &a));
    const struct lex_tok *kw = &r->lx.toks[0], *nm = &r->lx.toks[1];
    int prev = topo_find(r->rd.t, nm->text);
    if (prev >= 0) {
        struct diag_loc pl = r->rd.t->nodes[prev].loc;
        err(r, nm->col, "duplicate name '%s': already declared on line %d", nm->text, pl.line);
        diag_note(r->rd.d, r->rd.in->name, pl, "'%s' was first declared here", nm->text);
        return BK_EINPUT;
    }
    char busid[16] = "";
    if (a.at[AT_BUS]) {
        const struct lex_tok *tk = a.at[AT_BUS];
        if (!parse_busid(lex_value(tk), busid))
            return err(r, tk->vcol, "bad PCI bus id '%s' (expected DOMAIN:BUS:DEVICE.FUNCTION such "
                       "as 0000:06:00.0)", lex_value(tk));
        char key[48];
        snprintf(key, sizeof key, "b\x1f%d\x1f%s", r->server, busid);
        int other = smap_get(&r->map, key);
        if (other >= 0)
            return err(r, tk->vcol, "bus id %s is already used by '%s' (line %d) in this server",
                       busid, r->rd.t->nodes[other].name, r->rd.t->nodes[other].loc.line);
        BK_CHECK(smap_put(&r->map, key, r->rd.t->nnodes));
    }
    long socket = -1, family = -1, cpumodel = -1;
    if (a.at[AT_SOCKET])
        BK_CHECK(int_attr(r, a.at[AT_SOCKET], 0, 0, 65535, &socket));
    if (a.at[AT_FAMILY])
        BK_CHECK(int_attr(r, a.at[AT_FAMILY], 1, 0, 65535, &family));
    if (a.at[AT_CPUMODEL])
        BK_CHECK(int_attr(r, a.at[AT_CPUMODEL], 1, 0, 65535, &cpumodel));
    double speed = 0;
    if (a.at[AT_SPEED])
        BK_CHECK(bw_attr(r, a.at[AT_SPEED], &speed));
    int no_p2p = 0;
    if (a.at[AT_P2P]) {
        const char *v = lex_value(a.at[AT_P2P]);
        if (strcmp(v, "no") != 0 && strcmp(v, "yes") != 0)
            return err(r, a.at[AT_P2P]->vcol, "p2p=%s: expected p2p=yes or p2p=no", v);
        no_p2p = strcmp(v, "no") == 0;
    }

    struct extra *x = bk_grow(r->extra, &r->extra_cap, (size_t)r->rd.t->nnodes + 1, sizeof *x);
    if (!x)
        return BK_ENOMEM;
    r->extra = x;
    int idx;
    BK_CHECK(topo_add_node(r->rd.t, kind, nm->text, r->server, DIAG_AT(r->lx.line, kw->col), &idx));
    struct topo_node *n = &r->rd.t->nodes[idx];
    const char *model = a.at[AT_MODEL] ? lex_value(a.at[AT_MODEL]) : NULL;
    if (busid[0])
        BK_CHECK(topo_node_set_busid(r->rd.t, idx, busid));
    if (model)
        BK_CHECK(topo_node_set_model(r->rd.t, idx, model));
    r->extra[idx] = (struct extra){TOPO_CPU_UNKNOWN};
    n->nic_gbps = speed; /* 0: unknown */
    if (kind == TOPO_GPU) {
        n->gpu_order = r->ngpus++;
        n->no_p2p = no_p2p;
        n->nvlink_gen = topo_gpu_model_gen(model);
        /* --gpu-model stands in for a missing or unknown model; without it the generation is
           only assumed (with a warning) if an NVLink needs it. */
        if (!n->nvlink_gen && r->rd.o->gpu_model && !(n->nvlink_gen = assumed_gen(r, NULL)))
            return BK_EINPUT;
        if (!n->part && r->rd.o->gpu_model) /* --gpu-model stands in for the part too */
            n->part = topo_gpu_part_find(r->rd.o->gpu_model);
    } else if (kind == TOPO_CPU) {
        n->socket = (int)socket;
        r->extra[idx].fam = topo_cpu_family_of(
            a.at[AT_VENDOR] ? lex_value(a.at[AT_VENDOR]) : NULL, (int)family, (int)cpumodel, model,
            a.at[AT_ARCH] ? lex_value(a.at[AT_ARCH]) : NULL);
    }
    r->section_nodes++;
    return BK_OK;
}

static enum topo_link_kind default_kind(enum topo_node_kind x, enum topo_node_kind y)
{
    int xg = x == TOPO_GPU || x == TOPO_NVSWITCH, yg = y == TOPO_GPU || y == TOPO_NVSWITCH;
    int xn = x == TOPO_NIC || x == TOPO_NET_SWITCH, yn = y == TOPO_NIC || y == TOPO_NET_SWITCH;
    if (xg && yg)
        return TOPO_NVLINK;
    if (x == TOPO_CPU && y == TOPO_CPU)
        return TOPO_SMP;
    if (xn && yn)
        return TOPO_NET;
    return TOPO_PCIE;
}

/* Which node kinds a link kind may join; NULL when allowed, else what it joins. */
static const char *kind_forbids(enum topo_link_kind k, enum topo_node_kind x, enum topo_node_kind y)
{
    int ok = 0;
    switch (k) {
    case TOPO_NVLINK:
        /* GPU-GPU, GPU-NVSwitch, NVSwitch-NVSwitch, and GPU-CPU for POWER's NPU. */
        ok = (x == TOPO_GPU && (y == TOPO_GPU || y == TOPO_NVSWITCH || y == TOPO_CPU)) ||
             (y == TOPO_GPU && (x == TOPO_NVSWITCH || x == TOPO_CPU)) ||
             (x == TOPO_NVSWITCH && y == TOPO_NVSWITCH);
        return ok ? NULL : "NVLinks join GPUs, NVSwitches and (on POWER) CPUs";
    case TOPO_PCIE: {
        int xu = x == TOPO_PCIE_SWITCH || x == TOPO_CPU;
        int yu = y == TOPO_PCIE_SWITCH || y == TOPO_CPU;
        ok = x != TOPO_NET_SWITCH && y != TOPO_NET_SWITCH && (xu || yu) &&
             !(x == TOPO_CPU && y == TOPO_CPU);
        return ok ? NULL : "PCIe links join a device or PCIe switch to a PCIe switch or CPU";
    }
    case TOPO_SMP:
        return x == TOPO_CPU && y == TOPO_CPU ? NULL : "smp links join two CPUs";
    case TOPO_NET:
        ok = (x == TOPO_NIC || x == TOPO_NET_SWITCH) && (y == TOPO_NIC || y == TOPO_NET_SWITCH);
        return ok ? NULL : "net links join NICs and network switches";
    default:
        return "unknown link kind";
    }
}

BK_MUST_USE
static enum bk_status stmt_link(struct text_reader *r)
{
    struct attrs a;
    BK_CHECK(parse_stmt(r, 2, link_attrs,
                        "link A B [kind=K] [count=N] [gen=G] [width=W] [bw=BW] [bw-rev=BW]", &a));
    struct topo *t = r->rd.t;
    int end[2];
    for (int k = 0; k < 2; k++)
        if ((end[k] = topo_find(t, r->lx.toks[1 + k].text)) < 0)
            return err(r, r->lx.toks[1 + k].col,
                       "link to undeclared node '%s' (declare nodes before the links that use "
                       "them)",
                       r->lx.toks[1 + k].text);
    if (end[0] == end[1])
        return err(r, r->lx.toks[2].col, "link from '%s' to itself", r->lx.toks[1].text);
    const struct topo_node *na = &t->nodes[end[0]], *nb = &t->nodes[end[1]];
    struct pend_link l = {end[0], end[1], default_kind(na->kind, nb->kind), 1, 0, 0, 0, 0,
                          DIAG_AT(r->lx.line, r->lx.toks[0].col)};
    int kcol = r->lx.toks[2].col;
    if (a.at[AT_KIND]) {
        kcol = a.at[AT_KIND]->vcol;
        if (!topo_link_kind_parse(lex_value(a.at[AT_KIND]), &l.kind))
            return err(r, kcol, "unknown link kind '%s' (nvlink, pcie, smp or net)",
                       lex_value(a.at[AT_KIND]));
    }
    const char *kn = topo_link_kind_name(l.kind);
    const char *why = kind_forbids(l.kind, na->kind, nb->kind);
    if (why)
        return err(r, kcol, "a%s %s link cannot join %s '%s' and %s '%s': %s",
                   l.kind == TOPO_NVLINK ? "n" : "", kn, topo_node_kind_name(na->kind), na->name,
                   topo_node_kind_name(nb->kind), nb->name, why);
    if ((l.kind == TOPO_PCIE || l.kind == TOPO_SMP) && na->server != nb->server)
        return err(r, kcol,
                   "a %s link cannot join servers ('%s' is in server %d, '%s' in server %d); "
                   "servers are joined by net links",
                   kn, na->name, na->server, nb->name, nb->server);
    long v;
    if (a.at[AT_COUNT]) {
        BK_CHECK(int_attr(r, a.at[AT_COUNT], 0, 1, 1024, &v));
        l.count = (int)v;
    }
    if (a.at[AT_GEN]) {
        if (l.kind != TOPO_NVLINK && l.kind != TOPO_PCIE)
            return err(r, a.at[AT_GEN]->col, "gen= applies only to nvlink and pcie links");
        BK_CHECK(int_attr(r, a.at[AT_GEN], 0, 1,
                          l.kind == TOPO_NVLINK ? TOPO_NVLINK_GENS : TOPO_PCIE_GENS, &v));
        l.gen = (int)v;
    }
    if (a.at[AT_WIDTH]) {
        if (l.kind != TOPO_PCIE)
            return err(r, a.at[AT_WIDTH]->col, "width= applies only to pcie links");
        BK_CHECK(int_attr(r, a.at[AT_WIDTH], 0, 1, 32, &v));
        if (v & (v - 1) && v != 12)
            return err(r, a.at[AT_WIDTH]->vcol, "width=%ld: PCIe widths are 1, 2, 4, 8, 12, 16 "
                       "or 32 lanes", v);
        l.width = (int)v;
    }
    if (a.at[AT_BW])
        BK_CHECK(bw_attr(r, a.at[AT_BW], &l.bw));
    if (a.at[AT_BWREV])
        BK_CHECK(bw_attr(r, a.at[AT_BWREV], &l.bwrev));

    char key[64];
    snprintf(key, sizeof key, "l\x1f%d\x1f%d\x1f%d", l.a < l.b ? l.a : l.b, l.a < l.b ? l.b : l.a,
             (int)l.kind);
    int prev = smap_get(&r->map, key);
    if (prev >= 0) {
        struct diag_loc pl = r->links[prev].loc;
        err(r, l.loc.col, "duplicate %s link between '%s' and '%s' (first on line %d): declare "
            "one link with count= instead", kn, na->name, nb->name, pl.line);
        diag_note(r->rd.d, r->rd.in->name, pl, "the first %s link between '%s' and '%s'", kn,
                  na->name, nb->name);
        return BK_EINPUT;
    }
    struct pend_link *pl = bk_grow(r->links, &r->links_cap, (size_t)r->nlinks + 1, sizeof *pl);
    if (!pl)
        return BK_ENOMEM;
    r->links = pl;
    BK_CHECK(smap_put(&r->map, key, r->nlinks));
    r->links[r->nlinks++] = l;
    return BK_OK;
}

/* The statement on the lexer's current line. */
BK_MUST_USE
static enum bk_status statement(struct text_reader *r)
{
    if (!r->lx.ntoks)
        return BK_OK;
    const char *kw = r->lx.toks[0].text;
    enum topo_node_kind nk;
    if (strcmp(kw, "link") == 0)
        return stmt_link(r);
    if (topo_node_kind_parse(kw, &nk))
        return stmt_node(r, nk);
    if (strcmp(kw, "server") == 0)
        return stmt_server(r);
    if (strcmp(kw, "topology") == 0)
        return stmt_topology(r);
    return err(r, r->lx.toks[0].col,
               "unknown statement '%s' (expected topology, server, gpu, nvswitch, pcie-switch, "
               "cpu, nic, net-switch or link)",
               kw);
}

/*
 * NVLink generation of a link without gen=: its GPU ends' (the lower if they differ), else for a
 * switch-to-switch trunk that of the GPUs in its server, else the assumed one.
 */
static int link_gen(struct text_reader *r, const struct pend_link *l, const int *server_gen)
{
    const struct topo_node *ends[2] = {&r->rd.t->nodes[l->a], &r->rd.t->nodes[l->b]};
    int gen = 0, gpus = 0;
    for (int k = 0; k < 2; k++)
        if (ends[k]->kind == TOPO_GPU) {
            gpus++;
            int g = ends[k]->nvlink_gen;
            if (g > 0 && (!gen || g < gen))
                gen = g;
        }
    if (!gen && !gpus)
        gen = server_gen[ends[0]->server];
    if (!gen) {
        char why[64];
        snprintf(why, sizeof why, "for the NVLink on line %d", l->loc.line);
        gen = assumed_gen(r, why);
    }
    return gen;
}

/* Turn the collected links into model links with their capacities. */
BK_MUST_USE
static enum bk_status add_links(struct text_reader *r)
{
    struct topo *t = r->rd.t;
    const struct topo_rates *rates = &r->rd.o->rates;
    int *server_gen = calloc((size_t)r->server + 1, sizeof *server_gen);
    if (!server_gen)
        return BK_ENOMEM;
    for (int i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        int *g = &server_gen[n->server];
        if (n->kind == TOPO_GPU && n->nvlink_gen > 0 && (!*g || n->nvlink_gen < *g))
            *g = n->nvlink_gen;
    }
    enum bk_status st = BK_OK;
    for (int i = 0; i < r->nlinks && st == BK_OK; i++) {
        const struct pend_link *l = &r->links[i];
        double fwd = l->bw, rev;
        if (!(l->bw > 0)) {
            switch (l->kind) {
            case TOPO_NVLINK: {
                int gen = l->gen ? l->gen : link_gen(r, l, server_gen);
                if (!gen) {
                    st = BK_EINPUT; /* topo_assumed_gen recorded why */
                    break;
                }
                const struct topo_node *na = &t->nodes[l->a], *nb = &t->nodes[l->b];
                fwd = topo_rate_nvlink_parts(rates, na->kind == TOPO_GPU ? na->part : NULL,
                                             nb->kind == TOPO_GPU ? nb->part : NULL, gen,
                                             l->count);
                /* A GPU of unknown model takes the generation its NVLinks run at. */
                if (t->nodes[l->a].kind == TOPO_GPU && !t->nodes[l->a].nvlink_gen)
                    t->nodes[l->a].nvlink_gen = gen;
                if (t->nodes[l->b].kind == TOPO_GPU && !t->nodes[l->b].nvlink_gen)
                    t->nodes[l->b].nvlink_gen = gen;
                break;
            }
            case TOPO_PCIE: fwd = topo_rate_pcie(rates, l->gen, l->width) * l->count; break;
            case TOPO_SMP: fwd = topo_rate_smp(rates, r->extra[l->a].fam) * l->count; break;
            default: {
                double sa = t->nodes[l->a].nic_gbps, sb = t->nodes[l->b].nic_gbps;
                double s = sa > 0 && sb > 0 ? (sa < sb ? sa : sb) : sa > 0 ? sa : sb;
                fwd = (s > 0 ? s : rates->net) * l->count;
                break;
            }
            }
        }
        rev = l->bwrev > 0 ? l->bwrev : fwd;
        if (st == BK_OK)
            st = topo_add_link(t, l->a, l->b, l->kind, l->count, fwd, rev, l->loc);
    }
    free(server_gen);
    return st;
}

enum bk_status topo_read_text(const struct reader *rd)
{
    struct text_reader r;
    memset(&r, 0, sizeof r);
    r.rd = *rd;
    lex_init(&r.lx, rd->in, rd->d);
    enum bk_status st = BK_OK;
    for (int more = 1; st == BK_OK && more;) {
        st = lex_next(&r.lx, &more);
        if (st == BK_OK && more)
            st = statement(&r);
    }
    if (st == BK_OK) {
        warn_empty_section(&r);
        st = add_links(&r);
    }
    lex_free(&r.lx);
    free(r.extra);
    free(r.links);
    free(r.section_name);
    smap_free(&r.map);
    return st;
}
