/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * xml_safe.h - the only way blinkc parses XML with libxml2.
 *
 * Never expands entities, never loads a DTD, never touches the network: XML_PARSE_NONET without
 * NOENT, DTDLOAD or HUGE, and any <!ENTITY declaration is refused before parsing, which stops
 * entity bombs and external entities. Errors carry libxml2's line and column.
 */
#ifndef BK_XML_SAFE_H
#define BK_XML_SAFE_H

#include <libxml/tree.h>

#include "core/bk.h"
#include "core/diag.h"
#include "core/input.h"

/* Parse in->data. On success *doc is set (free with xmlFreeDoc). */
BK_MUST_USE
enum bk_status xml_safe_parse(const struct input *in, xmlDocPtr *doc, struct diag *d);

/* The element's path for messages, e.g. "/system/cpu[2]/pci[1]/gpu". Caller frees. */
char *xml_node_path(xmlNodePtr node);

/* Location of an element (line from libxml2; column unknown). */
struct diag_loc xml_node_loc(xmlNodePtr node);

/* Attribute value as a new string (caller frees with xmlFree), or NULL. */
char *xml_attr(xmlNodePtr node, const char *name);

#endif
