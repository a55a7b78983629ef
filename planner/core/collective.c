/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * collective.c - collective names.
 */
#include "core/collective.h"

#include <string.h>

static const char *const names[COLL_COUNT] = {"broadcast", "reduce", "allreduce", "allgather",
                                              "reducescatter"};

const char *collective_name(enum collective c)
{
    return c >= 0 && c < COLL_COUNT ? names[c] : "?";
}

int collective_parse(const char *s, enum collective *out)
{
    /* Accept the plan-file name with or without '_' or '-' (NCCL and nccl-tests spellings). */
    char flat[32];
    size_t n = 0;
    for (; *s && n + 1 < sizeof flat; s++)
        if (*s != '_' && *s != '-')
            flat[n++] = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
    if (*s)
        return 0;
    flat[n] = '\0';
    for (int c = 0; c < COLL_COUNT; c++)
        if (strcmp(flat, names[c]) == 0) {
            *out = (enum collective)c;
            return 1;
        }
    return 0;
}

int collective_has_root(enum collective c)
{
    return c == COLL_BROADCAST || c == COLL_REDUCE;
}
