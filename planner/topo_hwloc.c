/* SPDX-License-Identifier: GPL-3.0-or-later */
/* topo_hwloc.c - placeholder until the hwloc reader lands. */
#include "topo_read.h"

enum bk_status topo_read_hwloc(const struct input *in, const struct topo_read_opts *o, struct topo *t,
                            struct diag *d)
{
    (void)o, (void)t;
    return diag_error(d, in->name, DIAG_NOWHERE, "the hwloc reader is not implemented yet");
}
