/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * collective.h - the collectives blinkc plans, with their plan-file names.
 */
#ifndef BK_COLLECTIVE_H
#define BK_COLLECTIVE_H

enum collective {
    COLL_BROADCAST,
    COLL_REDUCE,
    COLL_ALLREDUCE,
    COLL_ALLGATHER,
    COLL_REDUCESCATTER,
    COLL_COUNT
};

/* "broadcast", "reduce", "allreduce", "allgather", "reducescatter". */
const char *collective_name(enum collective c);

/* Parse a name (also accepting "reduce_scatter", "reduce-scatter", "all_reduce" ...); 1 on
 * success. */
int collective_parse(const char *s, enum collective *out);

/* 1 for broadcast and reduce, which have a root. */
int collective_has_root(enum collective c);

#endif
