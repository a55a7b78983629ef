/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * builtin.h - topology fixtures embedded in the binary at build time (tools/embed.sh).
 *
 * `blinkc` with no TOPOLOGY plans the built-in DGX-1V; `builtin:NAME` names any embedded file.
 */
#ifndef BK_BUILTIN_H
#define BK_BUILTIN_H

#include <stddef.h>

struct builtin_file {
    const char *name; /* file name, e.g. "dgx1v.topo" */
    const char *data;
    size_t size;
};

extern const struct builtin_file builtin_topos[]; /* ends with {NULL, NULL, 0} */

/* The embedded file called NAME or NAME.topo, or NULL. */
const struct builtin_file *builtin_topo_find(const char *name);

#define BUILTIN_PREFIX "builtin:"
#define BUILTIN_DEFAULT "dgx1v"

#endif
