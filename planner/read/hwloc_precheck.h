/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * hwloc_precheck.h - the libxml2 pass over an hwloc 2.x XML file before libhwloc 2.9 imports it
 * (topo_hwloc.c). It refuses, naming the element and its line, what libhwloc would crash on,
 * allocate without bound for, or refuse while leaking the object it was building; and it records
 * what the reader's later messages need. It never loads the file into hwloc and never prints.
 */
#ifndef BK_HWLOC_PRECHECK_H
#define BK_HWLOC_PRECHECK_H

#include <libxml/tree.h>

#include "core/bk.h"
#include "core/diag.h"
#include "core/input.h"

/* The line of the <object> that declares a gp_index (hwloc keeps the file's gp_index). */
struct hwloc_gp_line {
    unsigned long long gp;
    int line;
};

/* What the pass learned; zero it before hwloc_precheck_doc, free with hwloc_precheck_free. */
struct hwloc_precheck {
    struct hwloc_gp_line *lines; /* sorted by gp */
    int nlines, lines_cap;
    xmlNodePtr mats[16]; /* the NVLinkBandwidth <distances2> elements, in file order */
    int nmats;
    char *version; /* the root object's hwlocVersion info (xmlMalloc'd), or NULL */
};

/*
 * hwloc_precheck_doc - check a parsed hwloc XML document before libhwloc sees it.
 * in:  the file (its name for messages, its size to bound distance matrices, its raw text to
 *      find CDATA sections, which the parse turned into text).
 * Returns BK_OK, BK_EINPUT with an error in d (a <topology> that is not version 2.x, or an
 * element libhwloc 2.9 mishandles: see hwloc_precheck.c for the rules and why), or BK_ENOMEM.
 * pc may hold partial results on failure; hwloc_precheck_free releases them either way.
 */
BK_MUST_USE
enum bk_status hwloc_precheck_doc(const struct input *in, xmlDocPtr doc, struct hwloc_precheck *pc,
                                  struct diag *d);

/* The line of the <object> with gp_index `gp`, or 0 when the file has none. */
int hwloc_precheck_line(const struct hwloc_precheck *pc, unsigned long long gp);

void hwloc_precheck_free(struct hwloc_precheck *pc);

/* A plain decimal (digits only, no sign or space) that fits unsigned long long: 1 and *out set,
 * else 0. Shared with topo_hwloc.c, which reads the same attributes after hwloc. */
int hwloc_precheck_ull(const char *s, unsigned long long *out);

#endif
