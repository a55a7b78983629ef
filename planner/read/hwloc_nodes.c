/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * hwloc_nodes.c - what both halves of the hwloc reader (topo_hwloc.c, hwloc_links.c) ask of an
 * hwloc object: where the file declares it, a node for it by a name no other node has, and the
 * package it hangs below.
 */
#include <hwloc.h>

#include "read/hwloc_internal.h"

/* Where the file declares the object hwloc calls `o` (hwloc keeps the file's gp_index). */
struct diag_loc hwloc_loc_of(const struct ctx *c, hwloc_obj_t o)
{
    int line = o ? hwloc_precheck_line(&c->pc, o->gp_index) : 0;
    return line ? DIAG_AT(line, 0) : DIAG_NOWHERE;
}

BK_MUST_USE
enum bk_status hwloc_add_named(struct ctx *c, enum topo_node_kind kind, const char *name,
                               struct diag_loc loc, int *node)
{
    if (topo_find(c->rd.t, name) >= 0)
        return diag_error(c->rd.d, c->rd.in->name, loc,
                          "two objects are both called '%s' (each GPU, NIC, switch and package "
                          "needs its own name or PCI bus id)",
                          name);
    return topo_add_node(c->rd.t, kind, name, 0, loc, node);
}

/* The cpu node of I/O hanging below normal object `o`: its package, or on a Machine or Group
 * spanning packages the first package it shares CPUs with, else package 0. */
int hwloc_cpu_of(const struct ctx *c, hwloc_obj_t o)
{
    if (!c->npkgs)
        return c->machine_node;
    hwloc_obj_t p = o->type == HWLOC_OBJ_PACKAGE
                        ? o
                        : hwloc_get_ancestor_obj_by_type(c->hw, HWLOC_OBJ_PACKAGE, o);
    if (p && p->userdata)
        return c->pkg_node[(uintptr_t)p->userdata - 1];
    for (int i = 0; i < c->npkgs && o->cpuset; i++)
        if (c->pkgs[i]->cpuset && hwloc_bitmap_intersects(o->cpuset, c->pkgs[i]->cpuset))
            return c->pkg_node[i];
    return c->pkg_node[0];
}
