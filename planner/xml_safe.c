/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * xml_safe.c - libxml2 with every dangerous feature off (see xml_safe.h).
 *
 * Entity declarations are refused by a byte scan before libxml2 runs: an entity bomb never
 * reaches the parser, and an external entity can never name a file or URL to fetch.
 */
#include "xml_safe.h"

#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

/* Silence libxml2's default stderr printer; errors are read back from the context. */
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
    xmlParserCtxtPtr ctx = xmlNewParserCtxt();
    if (!ctx)
        return BK_ENOMEM;
    int opts = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA |
               XML_PARSE_BIG_LINES;
    *doc = xmlCtxtReadMemory(ctx, in->data, (int)in->len, in->name, NULL, opts);
    if (!*doc || !ctx->wellFormed) {
        const xmlError *e = xmlCtxtGetLastError(ctx);
        char *msg = e && e->message ? bk_strndup(e->message, strcspn(e->message, "\n")) : NULL;
        diag_error(d, in->name, DIAG_AT(e ? e->line : 0, e ? e->int2 : 0), "malformed XML: %s",
                   msg ? msg : "parse failed");
        free(msg);
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
