/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_values.c - the NCCL topology reader's messages (naming the element path and line),
 * attribute values (integers, classes, bus ids, PCIe link speeds, SM versions) and nodes by
 * name, which both its halves (topo_nccl.c, nccl_links.c) use.
 */
#include "read/nccl_internal.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "read/xml_safe.h"

/* ---------------------------------------------------------------- messages */

enum bk_status nccl_el_msg(struct ctx *c, enum diag_level lvl, xmlNodePtr el, const char *fmt,
                           ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = bk_vasprintf(fmt, ap);
    va_end(ap);
    char *path = xml_node_path(el);
    diag_add(c->rd.d, lvl, c->rd.in->name, xml_node_loc(el), "<%s> at %s: %s",
             (const char *)el->name, path ? path : "?",
             msg ? msg : "(out of memory formatting the message)");
    free(msg);
    free(path);
    return BK_EINPUT;
}

/* "/system/cpu[2]/pci/gpu (line 14)" for naming a second element in a message. Caller frees. */
char *nccl_el_where(xmlNodePtr el)
{
    char *path = xml_node_path(el);
    char *s = bk_asprintf("%s (line %d)", path ? path : "?", xml_node_loc(el).line);
    free(path);
    return s;
}

/* An error at `el` that points back at an earlier element `first`. */
BK_MUST_USE
enum bk_status nccl_el_error2(struct ctx *c, xmlNodePtr el, const char *what, xmlNodePtr first)
{
    char *where = nccl_el_where(first);
    enum bk_status st = el_error(c, el, "%s the <%s> at %s", what, (const char *)first->name,
                                 where ? where : "?");
    free(where);
    return st;
}

int nccl_is_el(xmlNodePtr n, const char *name)
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
enum bk_status nccl_int_attr(struct ctx *c, xmlNodePtr el, const char *name, int required,
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
enum bk_status nccl_class_attr(struct ctx *c, xmlNodePtr el, const char *name, long *out)
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
enum bk_status nccl_busid_attr(struct ctx *c, xmlNodePtr el, const char *name, char *out)
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
enum bk_status nccl_pci_rate(struct ctx *c, xmlNodePtr el, double *gbps)
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
        BK_CHECK(nccl_int_attr(c, el, "link_width", 0, 0, 32, 0, &width));
    *gbps = topo_rate_pcie(&c->rd.o->rates, gen, (int)width);
    return BK_OK;
}

/* NVLink generation from the compute capability x 10; 0 when unknown. */
int nccl_gen_from_sm(long sm)
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

/* Add a node called `name`, refusing a name another node already has. */
BK_MUST_USE
enum bk_status nccl_add_node(struct ctx *c, xmlNodePtr el, enum topo_node_kind kind,
                             const char *name, const char *busid, int *out)
{
    int other = topo_find(c->rd.t, name);
    if (other >= 0)
        return el_error(c, el, "the name '%s' is already used by a %s declared at line %d", name,
                        topo_node_kind_name(c->rd.t->nodes[other].kind),
                        c->rd.t->nodes[other].loc.line);
    BK_CHECK(topo_add_node(c->rd.t, kind, name, 0, xml_node_loc(el), out));
    return busid ? topo_node_set_busid(c->rd.t, *out, busid) : BK_OK;
}
