/* SPDX-License-Identifier: GPL-3.0-or-later */
/* topo_nccl.c - placeholder until the nccl reader lands. */
#include "topo_read.h"

enum bk_status topo_read_nccl(const struct input *in, const struct topo_read_opts *o, struct topo *t,
                            struct diag *d)
{
    (void)o, (void)t;
    return diag_error(d, in->name, DIAG_NOWHERE, "the nccl reader is not implemented yet");
}
