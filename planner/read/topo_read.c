/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_read.c - the path every read takes: detect (topo_format.c), begin (reader.c), the
 * format's reader, finish (name and finalize). The cluster reader reads each server's file
 * through this very path, which the reader it is given carries (struct reader's read), so no
 * reader calls back up into this file.
 */
#include "read/topo_read.h"

#include "read/reader.h"

enum bk_status topo_read(const struct input *in, const struct topo_read_opts *o, struct topo *t,
                         struct diag *d)
{
    struct reader r;
    reader_begin(&r, in, o, t, d);
    r.read = topo_read; /* a cluster's server files */
    enum topo_format f = o->format;
    if (f == TOPO_FMT_AUTO && (f = topo_detect_format(in, d)) == TOPO_FMT_AUTO)
        return BK_EINPUT;
    enum bk_status st;
    switch (f) {
    case TOPO_FMT_TEXT: st = topo_read_text(&r); break;
    case TOPO_FMT_HWLOC: st = topo_read_hwloc(&r); break;
    case TOPO_FMT_NCCL: st = topo_read_nccl(&r); break;
    case TOPO_FMT_SMI: st = topo_read_smi(&r); break;
    case TOPO_FMT_CLUSTER: st = topo_read_cluster(&r); break;
    default: return BK_EINTERNAL;
    }
    st = reader_finish(&r, f, st);
    for (int i = 0; st == BK_OK && o->no_p2p && i < t->nnodes; i++)
        t->nodes[i].no_p2p |= t->nodes[i].kind == TOPO_GPU;
    return st;
}
