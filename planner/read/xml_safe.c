/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * xml_safe.c - libxml2 with every dangerous feature off (see xml_safe.h).
 *
 * Entity declarations are refused by a byte scan before libxml2 runs: an entity bomb never
 * reaches the parser, and an external entity can never name a file or URL to fetch.
 */
#include "read/xml_safe.h"

#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

/* The first error libxml2 raises: later ones (e.g. "premature end of data") only echo it. */
struct first_error {
    int set;
    int line, col;
    char text[200];
};

static void record_first(void *data, xmlErrorPtr e)
{
    struct first_error *fe = data;
    if (fe->set || !e || e->level < XML_ERR_ERROR)
        return;
    fe->set = 1;
    fe->line = e->line;
    fe->col = e->int2;
    const char *m = e->message ? e->message : "parse failed";
    size_t n = strcspn(m, "\n");
    if (n >= sizeof fe->text)
        n = sizeof fe->text - 1;
    memcpy(fe->text, m, n);
    fe->text[n] = '\0';
}

/* Silence libxml2's default stderr printer for anything the structured handler misses. */
static void quiet(void *ctx, const char *msg, ...) { (void)ctx, (void)msg; }

enum bk_status xml_safe_parse(const struct input *in, xmlDocPtr *doc, struct diag *d)
{
    *doc = NULL;
    const char *ent = NULL;
    for (const char *p = in->data; (p = memchr(p, '<', in->len - (size_t)(p - in->data)));
         p++) {
        if ((size_t)(in->data + in->len - p) >= 8 && memcmp(p, "<!ENTITY", 8) == 0) {
            ent = p;
            break;
        }
    }
    if (ent)
        return diag_error(d, in->name, input_loc_of(in, (size_t)(ent - in->data)),
                          "XML entity declarations are not allowed (entity expansion and "
                          "external entities are refused)");
    if (in->len > (size_t)0x7fffffff)
        return diag_error(d, in->name, DIAG_NOWHERE, "XML file too large");

    xmlSetGenericErrorFunc(NULL, quiet);
    struct first_error fe = {0};
    xmlSetStructuredErrorFunc(&fe, record_first);
    xmlParserCtxtPtr ctx = xmlNewParserCtxt();
    if (!ctx) {
        xmlSetStructuredErrorFunc(NULL, NULL);
        return BK_ENOMEM;
    }
    int opts = XML_PARSE_NONET | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA | XML_PARSE_BIG_LINES;
    *doc = xmlCtxtReadMemory(ctx, in->data, (int)in->len, in->name, NULL, opts);
    xmlSetStructuredErrorFunc(NULL, NULL);
    if (!*doc || !ctx->wellFormed) {
        diag_error(d, in->name, DIAG_AT(fe.set ? fe.line : 0, fe.set ? fe.col : 0),
                   "malformed XML: %s", fe.set ? fe.text : "parse failed");
        if (*doc)
            xmlFreeDoc(*doc);
        *doc = NULL;
        xmlFreeParserCtxt(ctx);
        return BK_EINPUT;
    }
    xmlFreeParserCtxt(ctx);
    if ((*doc)->intSubset && (*doc)->intSubset->entities) {
        /* Unreachable after the scan above, kept as a second lock on the same door. */
        xmlFreeDoc(*doc);
        *doc = NULL;
        return diag_error(d, in->name, DIAG_NOWHERE, "XML entity declarations are not allowed");
    }
    return BK_OK;
}

char *xml_node_path(xmlNodePtr node)
{
    /* Collect ancestors root-first, each as name[k] when it has same-named siblings. */
    xmlNodePtr chain[64];
    int n = 0;
    for (xmlNodePtr p = node; p && p->type == XML_ELEMENT_NODE && n < 64; p = p->parent)
        chain[n++] = p;
    struct strbuf sb;
    sb_init(&sb);
    for (int i = n - 1; i >= 0; i--) {
        xmlNodePtr e = chain[i];
        int pos = 0, same = 0;
        if (e->parent)
            for (xmlNodePtr s = e->parent->children; s; s = s->next)
                if (s->type == XML_ELEMENT_NODE && xmlStrEqual(s->name, e->name)) {
                    same++;
                    if (s == e)
                        pos = same;
                }
        sb_putc(&sb, '/');
        sb_puts(&sb, (const char *)e->name);
        if (same > 1)
            sb_printf(&sb, "[%d]", pos);
    }
    return sb_take(&sb);
}

struct diag_loc xml_node_loc(xmlNodePtr node)
{
    long line = xmlGetLineNo(node);
    return DIAG_AT(line > 0 && line < 0x7fffffff ? (int)line : 0, 0);
}

char *xml_attr(xmlNodePtr node, const char *name)
{
    return (char *)xmlGetProp(node, (const xmlChar *)name);
}
