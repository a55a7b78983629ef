/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * emit_intern.h - the int tables of a generated source, each written once: a tree's parent and
 * order, a ring chain, a rank map. Trees of one shape recur across collectives and roots (a
 * star from rank r serves its broadcast, its reduce and its allgather share; a ring's chains
 * serve every collective), so the source names each distinct table once, by first use.
 */
#ifndef BK_EMIT_INTERN_H
#define BK_EMIT_INTERN_H

#include "core/bk.h"

struct emit_intern {
    int n;            /* distinct tables, numbered 0.. by first use */
    int **v;          /* [n] each table's values */
    int *len;         /* [n] */
    int *slot;        /* hash slots: 1 + a table's number, 0 empty */
    int nslots, cap;
};

void emit_intern_init(struct emit_intern *in);
void emit_intern_free(struct emit_intern *in);

/* The number of the table v[0..n) (a copy is kept where it is new); -1 when out of memory. */
int emit_intern_add(struct emit_intern *in, const int *v, int n);

#endif
