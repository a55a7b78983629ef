/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * hwloc_precheck.c - the libxml2 pass over an hwloc 2.x XML file before libhwloc 2.9 imports it.
 *
 * libhwloc 2.9 (Debian 12) trusts its input in ways fixed only in later releases: a cpuset
 * without its complete_cpuset crashes it (hwloc PR #783), a distance matrix or a PU os_index is
 * allocated at whatever size the file claims, and when anything inside an <object> is refused
 * (hwloc__xml_import_object's loop over <info>, <page_type> and <userdata>) the object being
 * built leaks (hwloc PR #781; fuzz findings F1, F3, F5 and the 10-minute campaign's 242 leak
 * reports in docs/hardening.md). This pass walks the same elements first and refuses each such
 * input with the element's path and line, so hwloc only ever sees what it imports cleanly.
 * Every rule is one hwloc's own importers enforce (the libxml2 one, or the minimal one chosen
 * by HWLOC_LIBXML_IMPORT=0 or a missing libxml2 plugin) on what `lstopo --of xml` writes; none
 * refuses a file hwloc writes. It also records the object lines, NVLinkBandwidth elements and
 * writer's version that topo_hwloc.c's messages use. It never prints.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "read/hwloc_precheck.h"
#include "read/xml_safe.h"

/* libxml2 already refuses nesting deeper than 256 (no XML_PARSE_HUGE); this is a second guard. */
#define MAX_DEPTH 512
/* libhwloc 2.9 inserts each object by walking its siblings, so a load is quadratic in them:
 * 100,000 PCI devices under one bridge take 90 s. The largest servers' files hold a few
 * thousand objects (PUs, cores, caches, PCI devices). */
#define MAX_OBJECTS 16384

/* A CPU set: words[0] holds bits 0-31; above nwords every word is ~0 when inf, else 0. */
struct cpuset {
    unsigned *words;
    int nwords, inf;
};

struct pctx {
    const struct input *in;
    struct hwloc_precheck *pc;
    struct diag *d;
    struct cpuset allowed; /* the top-level object's allowed_cpuset */
    int has_allowed, npus, pus_allowed; /* PUs seen, and how many meet `allowed` */
    int nobjects;
};

int hwloc_precheck_ull(const char *s, unsigned long long *out)
{
    if (!s || *s < '0' || *s > '9')
        return 0;
    unsigned long long v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (ULLONG_MAX - 9) / 10)
            return 0;
        v = v * 10 + (unsigned long long)(*s - '0');
    }
    *out = v;
    return *s == '\0';
}

static int cmp_gp(const void *pa, const void *pb)
{
    const struct hwloc_gp_line *a = pa, *b = pb;
    return a->gp < b->gp ? -1 : a->gp > b->gp;
}

int hwloc_precheck_line(const struct hwloc_precheck *pc, unsigned long long gp)
{
    struct hwloc_gp_line key = {gp, 0}, *hit = NULL;
    if (pc->nlines)
        hit = bsearch(&key, pc->lines, (size_t)pc->nlines, sizeof key, cmp_gp);
    return hit ? hit->line : 0;
}

void hwloc_precheck_free(struct hwloc_precheck *pc)
{
    free(pc->lines);
    xmlFree(pc->version);
    memset(pc, 0, sizeof *pc);
}

/* Record an error at element e, prefixed with its path. Returns BK_EINPUT. */
BK_MUST_USE
static enum bk_status refuse(struct pctx *c, xmlNodePtr e, const char *fmt, ...) BK_PRINTF(3, 4);
BK_MUST_USE
static enum bk_status refuse(struct pctx *c, xmlNodePtr e, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *path = xml_node_path(e);
    diag_error(c->d, c->in->name, xml_node_loc(e), "%s: %s", path ? path : (const char *)e->name,
               msg);
    free(path);
    return BK_EINPUT;
}

/* 1 when e has attribute `has` but not `needs`. */
static int lacks(xmlNodePtr e, const char *has, const char *needs)
{
    return xmlHasProp(e, BAD_CAST has) && !xmlHasProp(e, BAD_CAST needs);
}

static int is(xmlNodePtr e, const char *name)
{
    return xmlStrEqual(e->name, BAD_CAST name);
}

/* Text of spaces and line breaks only: what hwloc writes between elements. */
static int blank(const xmlChar *s)
{
    for (; s && *s; s++)
        if (!strchr(" \t\r\n", *s))
            return 0;
    return 1;
}

/*
 * A cpuset without its complete_cpuset crashes hwloc 2.9 (F1); a <page_type> without a size or
 * an <info> without a name or value makes it leak the object it was building (F3, F5).
 */
BK_MUST_USE
static enum bk_status refuse_missing(struct pctx *c, xmlNodePtr e)
{
    const char *has = NULL, *needs = NULL;
    if (is(e, "object")) {
        if (lacks(e, "cpuset", "complete_cpuset"))
            has = "cpuset", needs = "complete_cpuset";
        else if (lacks(e, "nodeset", "complete_nodeset"))
            has = "nodeset", needs = "complete_nodeset";
    } else if (is(e, "page_type") && !xmlHasProp(e, BAD_CAST "size")) {
        needs = "size";
    } else if (is(e, "info") &&
               !(xmlHasProp(e, BAD_CAST "name") && xmlHasProp(e, BAD_CAST "value"))) {
        needs = xmlHasProp(e, BAD_CAST "name") ? "value" : "name";
    }
    if (!needs)
        return BK_OK;
    return refuse(c, e, "<%s> has no %s attribute%s%s%s", (const char *)e->name, needs,
                  has ? " (beside " : "", has ? has : "", has ? ")" : "");
}

/* 1 when `name` is one of the space-separated words of `list`. */
static int one_of(const char *list, const xmlChar *name)
{
    size_t n = strlen((const char *)name);
    for (const char *p = list; *p; p += strcspn(p, " "), p += *p == ' ')
        if (strcspn(p, " ") == n && memcmp(p, name, n) == 0)
            return 1;
    return 0;
}

/*
 * hwloc's readers of <info>, <page_type> and <userdata> fail on any attribute but their own, and
 * its minimal parser on any content but the userdata text; either failure leaks the enclosing
 * object. Userdata text must be exactly as long as its length attribute says (base64: encoded).
 */
BK_MUST_USE
static enum bk_status check_special(struct pctx *c, xmlNodePtr e)
{
    int ud = is(e, "userdata");
    const char *known = is(e, "info") ? "name value" : ud ? "name length encoding" : "size count";
    for (xmlAttrPtr a = e->properties; a; a = a->next)
        if (!one_of(known, a->name))
            return refuse(c, e, "<%s> has an attribute '%.40s' hwloc does not read (only: %s)",
                          (const char *)e->name, (const char *)a->name, known);
    /* Comments become spaces before hwloc sees the file (topo_hwloc.c): harmless in <info>,
     * but they would change the userdata text. */
    int ntext = 0, other = 0;
    const xmlChar *text = NULL;
    for (xmlNodePtr n = e->children; n; n = n->next) {
        if (n->type == XML_TEXT_NODE && ud)
            text = n->content, ntext++;
        else if (!(n->type == XML_TEXT_NODE && blank(n->content)) &&
                 !(n->type == XML_COMMENT_NODE && !ud))
            other++;
    }
    if (!ud)
        return other ? refuse(c, e, "<%s> has content: hwloc writes it empty, and its minimal "
                                    "XML parser (HWLOC_LIBXML_IMPORT=0) refuses any there",
                              (const char *)e->name)
                     : BK_OK;
    char *len = xml_attr(e, "length"), *enc = xml_attr(e, "encoding");
    unsigned long long want = 0;
    int isnum = !len || (hwloc_precheck_ull(len, &want) && want <= c->in->len);
    int b64 = enc && strcmp(enc, "base64") == 0;
    if (b64)
        want = 4 * ((want + 2) / 3);
    size_t have = text ? strlen((const char *)text) : 0;
    enum bk_status st = BK_OK;
    if (!isnum)
        st = refuse(c, e, "<userdata length=\"%.24s\">: not a length the file can hold", len);
    else if (other || ntext > 1 || have != want)
        st = refuse(c, e,
                    "<userdata> holds %s, not the %llu characters of text its length=\"%s\"%s "
                    "asks for: hwloc would refuse the file",
                    other || ntext > 1 ? "more than text" : "other text", want, len ? len : "0",
                    b64 ? " in base64" : "");
    xmlFree(len);
    xmlFree(enc);
    return st;
}

/*
 * The children of an <object>, as hwloc__xml_import_object reads them: first any <info>,
 * <page_type> and <userdata>, then the child <object>s, nothing else; a <page_type> only in a
 * NUMANode or the top-level object; no text. hwloc refuses the rest, leaking the object when it
 * is not the top-level one.
 */
BK_MUST_USE
static enum bk_status check_children(struct pctx *c, xmlNodePtr obj, int top)
{
    int seen_object = 0;
    for (xmlNodePtr e = obj->children; e; e = e->next) {
        if (e->type == XML_COMMENT_NODE || (e->type == XML_TEXT_NODE && blank(e->content)))
            continue;
        if (e->type != XML_ELEMENT_NODE)
            return refuse(c, obj, "<object> holds %s: hwloc writes only elements there, and its "
                                  "minimal XML parser (HWLOC_LIBXML_IMPORT=0) refuses anything "
                                  "else",
                          e->type == XML_TEXT_NODE ? "text" : "a non-element node");
        if (is(e, "object")) {
            seen_object = 1;
            continue;
        }
        if (!is(e, "info") && !is(e, "page_type") && !is(e, "userdata"))
            return refuse(c, e, "<%.64s> inside <object>: hwloc reads only <object>, <info>, "
                                "<page_type> and <userdata> there",
                          (const char *)e->name);
        if (seen_object)
            return refuse(c, e, "<%s> after a child <object>: hwloc reads an object's <info>, "
                                "<page_type> and <userdata> only before its child objects",
                          (const char *)e->name);
        if (is(e, "page_type") && !top) {
            char *type = xml_attr(obj, "type");
            enum bk_status st = BK_OK;
            if (!type || strcmp(type, "NUMANode") != 0)
                st = refuse(c, e, "<page_type> inside <object type=\"%.24s\">: hwloc accepts page "
                                  "types only in a NUMANode or the top-level object",
                            type ? type : "");
            xmlFree(type);
            BK_CHECK(st);
        }
    }
    return BK_OK;
}

/*
 * hwloc's bitmap text as hwloc_bitmap_snprintf writes it: "0xf...f" (every bit), or an optional
 * "0xf...f," and then 32-bit words "0x" + 1 to 8 hex digits, most significant first, separated
 * by commas; a zero word below the first may be empty ("0x00000303,,0x1"). hwloc 2.9's own
 * parser aborts on some other strings (an assertion fails on a leading comma). Fills *set when
 * set is not NULL; returns 1 when well-formed, 0 if not, -1 on ENOMEM.
 */
static int parse_set(const char *s, struct cpuset *set)
{
    int inf = 0, n = 1;
    if (strncmp(s, "0xf...f", 7) == 0) {
        s += 7, inf = 1;
        if (!*s)
            return set ? (*set = (struct cpuset){NULL, 0, 1}, 1) : 1;
        if (*s++ != ',')
            return 0;
    }
    for (const char *p = s; *p; p++) {
        n += *p == ',';
        if (*p != ',' && *p != 'x' && !strchr("0123456789abcdefABCDEF", *p))
            return 0;
    }
    unsigned *w = set ? calloc((size_t)n, sizeof *w) : NULL;
    if (set && !w)
        return -1;
    for (int k = n - 1; k >= 0; k--) {
        /* "0x" and 1-8 digits, or nothing for a zero word below the first */
        size_t len = s[0] == '0' && s[1] == 'x' ? 2 + strspn(s + 2, "0123456789abcdefABCDEF") : 0;
        if ((len ? len < 3 || len > 10 : k == n - 1) || s[len] != (k > 0 ? ',' : '\0')) {
            free(w);
            return 0;
        }
        if (w && len)
            w[k] = (unsigned)strtoul(s + 2, NULL, 16);
        s += len + (k > 0);
    }
    if (set)
        *set = (struct cpuset){w, n, inf};
    return 1;
}

static unsigned set_word(const struct cpuset *a, int i)
{
    return i < a->nwords ? a->words[i] : a->inf ? ~0u : 0u;
}

static int sets_meet(const struct cpuset *a, const struct cpuset *b)
{
    int n = a->nwords > b->nwords ? a->nwords : b->nwords;
    for (int i = 0; i < n; i++)
        if (set_word(a, i) & set_word(b, i))
            return 1;
    return a->inf && b->inf;
}

/* Every bitmap attribute of e must be hwloc's own text (parse_set). */
BK_MUST_USE
static enum bk_status check_sets(struct pctx *c, xmlNodePtr e)
{
    static const char *const names[] = {"cpuset", "complete_cpuset", "allowed_cpuset",
                                        "nodeset", "complete_nodeset", "allowed_nodeset"};
    for (size_t i = 0; i < BK_ARRAY_LEN(names); i++) {
        char *v = xml_attr(e, names[i]);
        int ok = !v || parse_set(v, NULL) == 1;
        enum bk_status st = ok ? BK_OK
                               : refuse(c, e, "%s=\"%.40s\" is not a bitmap as hwloc writes it "
                                              "(comma-separated 0x-prefixed hex words of "
                                              "up to 8 digits)",
                                        names[i], v);
        xmlFree(v);
        BK_CHECK(st);
    }
    return BK_OK;
}

/* libhwloc 2.9 dereferences NULL when no PU is left in the allowed CPU set: count the PUs that
 * meet the top-level object's allowed_cpuset (every PU when it has none). */
BK_MUST_USE
static enum bk_status note_cpus(struct pctx *c, xmlNodePtr e, int top)
{
    char *type = xml_attr(e, "type"), *cs = NULL;
    int st = 1;
    if (top) {
        cs = xml_attr(e, "allowed_cpuset");
        if (cs && (st = parse_set(cs, &c->allowed)) == 1)
            c->has_allowed = 1;
    } else if (type && strcmp(type, "PU") == 0) {
        c->npus++;
        struct cpuset pu = {NULL, 0, 0};
        cs = xml_attr(e, "cpuset");
        if (!c->has_allowed)
            c->pus_allowed++;
        else if (cs && (st = parse_set(cs, &pu)) == 1 && sets_meet(&pu, &c->allowed))
            c->pus_allowed++;
        free(pu.words);
    }
    xmlFree(type);
    xmlFree(cs);
    return st < 0 ? BK_ENOMEM : BK_OK;
}

/* The object's line by gp_index, and the PU/NUMA os_index bound. */
BK_MUST_USE
static enum bk_status check_object(struct pctx *c, xmlNodePtr e)
{
    struct hwloc_precheck *pc = c->pc;
    char *gp = xml_attr(e, "gp_index");
    unsigned long long v;
    int ok = gp && hwloc_precheck_ull(gp, &v);
    xmlFree(gp);
    if (ok) {
        BK_CHECK(bk_grow_int((void **)&pc->lines, &pc->lines_cap, pc->nlines, sizeof *pc->lines));
        pc->lines[pc->nlines++] = (struct hwloc_gp_line){v, xml_node_loc(e).line};
    }
    /* hwloc sizes CPU and NUMA bitmaps by these indexes: 4294967295 costs 512 MiB. */
    char *type = xml_attr(e, "type"), *os = xml_attr(e, "os_index");
    int bad = os && type && (!strcmp(type, "PU") || !strcmp(type, "NUMANode")) &&
              (!hwloc_precheck_ull(os, &v) || v >= 1u << 24);
    enum bk_status st = BK_OK;
    if (bad)
        st = refuse(c, e, "<object type=\"%s\" os_index=\"%.24s\">: no machine has that many %s",
                    type, os, strcmp(type, "PU") ? "NUMA nodes" : "hardware threads");
    xmlFree(type);
    xmlFree(os);
    return st;
}

/* hwloc allocates nbobjs^2 values before reading any: a file must hold them all, at least "0 "
 * each, so a larger claim is refused before hwloc sees it. */
BK_MUST_USE
static enum bk_status check_distances(struct pctx *c, xmlNodePtr e)
{
    char *nb = xml_attr(e, "nbobjs"), *name = xml_attr(e, "name");
    unsigned long long n;
    int huge = nb && (!hwloc_precheck_ull(nb, &n) || n > 1u << 16 || n * n * 2 > c->in->len);
    if (!huge && name && strcmp(name, "NVLinkBandwidth") == 0 &&
        c->pc->nmats < (int)BK_ARRAY_LEN(c->pc->mats))
        c->pc->mats[c->pc->nmats++] = e;
    xmlFree(name);
    enum bk_status st = BK_OK;
    if (huge)
        st = refuse(c, e, "nbobjs=\"%.24s\" is not a count the file can hold values for", nb);
    xmlFree(nb);
    return st;
}

/* Walk <topology> (depth 0) and its objects: check, and record what the reader needs. */
BK_MUST_USE
static enum bk_status scan(struct pctx *c, xmlNodePtr parent, int depth)
{
    if (depth > MAX_DEPTH)
        return diag_error(c->d, c->in->name, xml_node_loc(parent), "XML nested too deeply");
    if (depth > 0)
        BK_CHECK(check_children(c, parent, depth == 1));
    for (xmlNodePtr e = parent->children; e; e = e->next) {
        if (e->type != XML_ELEMENT_NODE)
            continue;
        BK_CHECK(refuse_missing(c, e));
        if (is(e, "info") || is(e, "page_type") || is(e, "userdata"))
            BK_CHECK(check_special(c, e));
        if (is(e, "object")) {
            if (++c->nobjects > MAX_OBJECTS)
                return refuse(c, e, "more than %d objects: no machine has that many, and "
                                    "libhwloc's import slows down quadratically with them",
                              MAX_OBJECTS);
            BK_CHECK(check_sets(c, e));
            BK_CHECK(note_cpus(c, e, depth == 0));
            BK_CHECK(check_object(c, e));
            BK_CHECK(scan(c, e, depth + 1));
        } else if (is(e, "info") && depth == 1 && !c->pc->version) {
            /* <topology><object type="Machine"><info name="hwlocVersion" value=...> */
            char *name = xml_attr(e, "name");
            if (name && strcmp(name, "hwlocVersion") == 0)
                c->pc->version = xml_attr(e, "value");
            xmlFree(name);
        } else if (depth == 0 && (is(e, "distances2") || is(e, "distances2hetero"))) {
            BK_CHECK(check_distances(c, e));
        } else if (depth == 0 && is(e, "cpukind")) {
            BK_CHECK(check_sets(c, e));
        }
    }
    return BK_OK;
}

/* The parse (XML_PARSE_NOCDATA) turned CDATA into text: find it in the raw file, outside
 * comments. hwloc never writes CDATA; its minimal parser refuses it inside an object (leaking
 * it), and its libxml2 one refuses it as userdata. Returns the line, or 0. */
static int cdata_line(const struct input *in)
{
    const char *s = in->data, *end = in->data + in->len;
    int line = 1;
    for (const char *p = s; p < end; p++) {
        if (*p == '\n')
            line++;
        else if (*p == '<' && end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
            const char *q = strstr(p + 4, "-->"); /* data[len] == 0 stops it */
            for (const char *r = p; r < (q ? q : end); r++)
                line += *r == '\n';
            p = q ? q + 2 : end;
        } else if (*p == '<' && end - p >= 9 && memcmp(p, "<![CDATA[", 9) == 0) {
            return line;
        }
    }
    return 0;
}

/* "2" or "2.N": the only XML versions hwloc 2.9 imports. */
static int is_v2(const char *v)
{
    unsigned long long minor;
    return v[0] == '2' && (!v[1] || (v[1] == '.' && hwloc_precheck_ull(v + 2, &minor)));
}

enum bk_status hwloc_precheck_doc(const struct input *in, xmlDocPtr doc, struct hwloc_precheck *pc,
                                  struct diag *d)
{
    struct pctx c = {in, pc, d, {NULL, 0, 0}, 0, 0, 0, 0};
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (!root || !xmlStrEqual(root->name, BAD_CAST "topology"))
        return diag_error(d, in->name, root ? xml_node_loc(root) : DIAG_NOWHERE,
                          "root element <%.64s> is not hwloc's <topology> (export the machine "
                          "with hwloc 2.x: lstopo --of xml)",
                          root ? (const char *)root->name : "");
    char *v = xml_attr(root, "version");
    enum bk_status st = BK_OK;
    if (!v)
        st = diag_error(d, in->name, xml_node_loc(root),
                        "<topology> has no version attribute: this is an hwloc 1.x file, which "
                        "carries no NVLink information; hwloc 2.9 reads only 2.x files (export "
                        "with hwloc 2.x: lstopo --of xml)");
    else if (!is_v2(v))
        st = diag_error(d, in->name, xml_node_loc(root),
                        "<topology version=\"%.32s\">: hwloc XML version %.32s is not supported; "
                        "hwloc 2.9 reads only 2.x files (export with hwloc 2.x: lstopo --of xml)",
                        v, v);
    xmlFree(v);
    if (st != BK_OK)
        return st;
    int cdata = cdata_line(in);
    if (cdata)
        return diag_error(d, in->name, DIAG_AT(cdata, 0),
                          "a CDATA section: hwloc never writes one, and cannot import it inside "
                          "an object or as userdata");
    st = scan(&c, root, 0);
    free(c.allowed.words);
    BK_CHECK(st);
    if (!c.pus_allowed)
        return diag_error(d, in->name, xml_node_loc(root),
                          c.npus ? "no <object type=\"PU\"> is in the top-level object's "
                                   "allowed_cpuset: libhwloc 2.9 crashes on such a file"
                                 : "no <object type=\"PU\">: hwloc always writes the hardware "
                                   "threads, and libhwloc 2.9 can crash without them");
    if (pc->nlines > 1) /* no objects: no array, and qsort must not see NULL */
        qsort(pc->lines, (size_t)pc->nlines, sizeof *pc->lines, cmp_gp);
    return BK_OK;
}
