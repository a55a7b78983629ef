/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * smi_util.c - smi_util.h.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "smi_util.h"

enum bk_status read_rel(const char *rel, const char *model, struct topo *t, struct diag *d)
{
    char *path = tu_src_path(rel);
    diag_init(d);
    enum bk_status st = tu_read_file(path, TOPO_FMT_AUTO, model, t, d);
    free(path);
    return st;
}

void read_ok(const char *rel, const char *model, struct topo *t, struct diag *d)
{
    enum bk_status st = read_rel(rel, model, t, d);
    cr_assert_eq(st, BK_OK, "%s: %s", rel, diag_first_error(d) ? diag_first_error(d) : "?");
}

void read_str_ok(const char *text, const char *model, struct topo *t, struct diag *d)
{
    diag_init(d);
    enum bk_status st = tu_read_string("inline.smi", text, TOPO_FMT_SMI, model, t, d);
    cr_assert_eq(st, BK_OK, "%s", diag_first_error(d) ? diag_first_error(d) : "?");
}

/* The node a GPU or NIC hangs from: its only pcie neighbour. */
int up(const struct topo *t, int n)
{
    int found = -1, count = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == n && t->links[i].kind == TOPO_PCIE)
            found = t->links[i].dst, count++;
    cr_assert_eq(count, 1, "%s has %d pcie links", t->nodes[n].name, count);
    return found;
}

void assert_same_graph(const struct topo *a, const struct topo *b)
{
    cr_assert_eq(a->nnodes, b->nnodes);
    cr_assert_eq(a->nlinks, b->nlinks);
    for (int i = 0; i < a->nnodes; i++) {
        const struct topo_node *x = &a->nodes[i], *y = &b->nodes[i];
        cr_assert_eq(x->kind, y->kind);
        cr_assert_str_eq(x->name, y->name);
        cr_assert_eq(x->socket, y->socket);
        cr_assert_eq(x->gpu_order, y->gpu_order);
        cr_assert_eq(x->nvlink_gen, y->nvlink_gen);
    }
    for (int i = 0; i < a->nlinks; i++) {
        const struct topo_link *x = &a->links[i], *y = &b->links[i];
        cr_assert(x->src == y->src && x->dst == y->dst && x->kind == y->kind);
        cr_assert(x->count == y->count && x->gbps == y->gbps);
    }
}
