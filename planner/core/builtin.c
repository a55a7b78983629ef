/* SPDX-License-Identifier: GPL-3.0-or-later */
/* builtin.c - lookup of the embedded topology fixtures. */
#include "core/builtin.h"

#include <string.h>

const struct builtin_file *builtin_topo_find(const char *name)
{
    size_t n = strlen(name);
    for (const struct builtin_file *f = builtin_topos; f->name; f++) {
        if (strcmp(f->name, name) == 0)
            return f;
        if (strncmp(f->name, name, n) == 0 && strcmp(f->name + n, ".topo") == 0)
            return f;
    }
    return NULL;
}
