/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_smi.c - reader for the text that `nvidia-smi topo -m` prints: a GPU/NIC relation matrix
 * with optional affinity columns and legends. It turns that matrix into the normalised graph of
 * topo.h (GPUs, one NVSwitch plane or direct NVLinks, inferred PCIe switches, CPUs, NICs).
 *
 * The text names no GPU model, no bus id and no PCIe switch, so most of the graph is inferred;
 * the rules below are the contract (they go into the man page). The reader parses by row and
 * column labels, never by fixed widths, because real captures come with tabs or spaces, colour
 * escapes and collapsed or wrapped headers. It never prints and never trusts a count or a name
 * it has not checked; every rejected cell is reported at FILE:LINE:COL.
 *
 * INPUT. Lines before the header (a shell prompt, "nvidia-smi topo -m") are skipped, except
 * the "GPU k: NAME (UUID: ...)" lines of `nvidia-smi -L`, which name the GPUs (see NVLINK). ANSI
 * escapes (ESC[...m), carriage returns and a UTF-8 byte-order mark are ignored; cells are
 * separated by tabs or runs of spaces. The header is the first line whose first label is GPU0
 * (or starts "GPU0GPU1..."); labels glued together are split by a token scan that knows GPUk,
 * NICk, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID" and the row labels below the header. Up to
 * three following lines without cell codes continue a wrapped header. GPU columns are GPUk;
 * every other matrix column is a NIC (NICk, or an old driver's device name such as mlx5_0). A
 * row starts with its column's label, then one cell per GPU/NIC column, then the affinity values
 * left to right (missing ones are empty; "N/A" counts as empty). Cells: X, NV#, PIX, PXB, PHB,
 * NODE, SYS, and SOC (old drivers' SYS); anything else is an error at its position. Every GPU
 * column needs a row; NIC rows are optional. The diagonal must be X, X appears nowhere else,
 * NV# only joins two GPUs and must be symmetric; an asymmetric PCIe cell pair gets a warning and
 * the farther relation. "NIC Legend:" entries ("NIC0: mlx5_0") give NIC nodes their device
 * names; the rest of the legend is ignored.
 *
 * NVLINK. The matrix never names the GPU, so its part (topo_rates.h's parts table: NVLink
 * generation, NVLinks per GPU, GB/s per link) comes from --gpu-model, else from `nvidia-smi -L`
 * lines above the matrix when all of them name one part of the table, else from the shape, with a
 * warning that names the part and rate assumed and the other boards that print the same:
 * every pair of 3 or more GPUs at NV6, NV8, NV12 or NV18 is the NVSwitch plane of V100, A800
 * (or H800), A100 or H100 (or H200, H20, B200) boards; GPUs NVLinked in pairs only are bridge
 * cards with that many links (NV4: an RTX 3090-class GA102 bridge at 14.0625 GB/s per link; NV12
 * A100; NV2 TITAN RTX-class; ...); otherwise direct links on the smallest board with direct
 * links that has a row's links (4 P100, 6 V100, 12 A100, 18 H100). The GPU nodes record the part
 * and whether it was assumed. Then the rule, by the part's link budget L: no NV# cell may exceed
 * L; when no row of NV# cells adds up to more than L, the cells are direct links (NV# is the
 * pair's bond); when a row does, they cannot be direct links and describe one NVSwitch plane
 * (one nvswitch node, each GPU with the largest NV# of its row as its links to it; a full mesh
 * would overstate bandwidth about (n-1) times), which needs every GPU pair to show NV#. Cells no
 * reading fits are refused, so the graph never gives a GPU more NVLink bandwidth than it has.
 * A box without NVLink needs no part (generation 0, no warning).
 *
 * PCIE. An NV# cell hides the PCIe relation of its pair, so NIC rows and columns are used too.
 * Devices (GPUs and NICs) that are PIX to each other, directly or through others, share one leaf
 * PCIe switch. Groups (leaf switches, or single devices) with a PXB cell between any of their
 * members share one switch above them, which holds those leaf switches and single devices. A
 * device whose switch partners cannot be told sits directly under its CPU; so does a leaf
 * switch with no PXB partner. A top switch links to the CPU of its first device. All PCIe links
 * are of unknown generation and width (NCCL's Gen3 x16, 12 GB/s).
 *
 * CPUS. Devices are grouped by the NUMA Affinity column when every GPU has a value there, else
 * by CPU Affinity likewise, else by relations alone. Devices without a value (NICs) join the
 * group of a device they are PIX to, else PXB, PHB, NODE (never merging two different affinity
 * values). A group still without a value joins the first group it has no SYS cell with, so the
 * reader builds the fewest CPUs the SYS cells allow. CPUs are numbered in the order their first
 * device appears in the header; that number is the socket. Every pair of CPUs gets one smp link
 * of unknown CPU family (charged like QPI).
 *
 * Files: smi_parse.c reads and checks the matrix, smi_infer.c builds the graph from it.
 */
#include "read/reader.h"

#include <stdlib.h>
#include <string.h>

#include "read/smi_internal.h"

static void smi_free(struct smi *s)
{
    free(s->ln.s);
    free(s->ln.col);
    for (int i = 0; i < s->nhdr; i++)
        free(s->hdr[i].s), free(s->hdr[i].col);
    for (int i = 0; i < s->ndict; i++)
        free(s->dict[i]);
    free(s->dict);
    for (int i = 0; i < s->ncols; i++) {
        free(s->cols[i].label);
        free(s->cols[i].dev);
        for (int k = 0; k < T_KINDS; k++)
            free(s->cols[i].trail[k]);
    }
    free(s->cols);
    free(s->m);
    for (int i = 0; i < s->nlisted; i++)
        free(s->listed[i].name);
    free(s->listed);
}

enum bk_status topo_read_smi(const struct reader *r)
{
    struct smi s;
    memset(&s, 0, sizeof s);
    s.rd = *r;
    int nic_legend;
    enum bk_status st;
    BK_CHECK_GOTO(smi_read_header(&s), st, out);
    BK_CHECK_GOTO(smi_read_rows(&s, &nic_legend), st, out);
    BK_CHECK_GOTO(smi_read_legend(&s, nic_legend), st, out);
    BK_CHECK_GOTO(smi_check_matrix(&s), st, out);
    st = smi_build(&s);
out:
    smi_free(&s);
    return st;
}
