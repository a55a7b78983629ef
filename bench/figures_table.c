/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * figures_table.c - the figures' tables: '#' lines saying what and how, then whitespace
 * columns; the last '#' line names the columns (gnuplot and awk read them; "-" is no value).
 */
#include "figures.h"

static void put_ratio(struct strbuf *sb, int have, double v)
{
    if (have)
        sb_printf(sb, " %8.3f", v);
    else
        sb_printf(sb, " %8s", "-");
}

void fig5_table(struct strbuf *sb, const char *const boxes[], const struct fig5_row rows[][6],
                int nboxes)
{
    sb_puts(sb, "# Figure 5: theoretical speedup of packed trees over NCCL rings (planner rates, "
                "no simulation)\n"
                "# every 3-8 GPU allocation; one allocation per isomorphism class of its NVLink "
                "graph; broadcast: worst root\n"
                "# ratios = trees algbw / rings algbw over the classes that have an NVLink ring "
                "(ratio_classes); '-': none\n");
    sb_printf(sb, "#%5s %4s %6s %7s %7s %13s %8s %8s %8s %8s\n", "box", "gpus", "allocs",
              "classes", "no_ring", "ratio_classes", "bc_max", "bc_gmean", "ar_max",
              "ar_gmean");
    for (int b = 0; b < nboxes; b++)
        for (int k = 0; k < 6; k++) {
            const struct fig5_row *r = &rows[b][k];
            sb_printf(sb, "%6s %4d %6d %7d %7d %13d", boxes[b], r->gpus, r->allocs, r->classes,
                      r->no_ring, r->ratios);
            put_ratio(sb, r->ratios > 0, r->bcast_max);
            put_ratio(sb, r->ratios > 0, r->bcast_geomean);
            put_ratio(sb, r->ratios > 0, r->ar_max);
            put_ratio(sb, r->ratios > 0, r->ar_geomean);
            sb_putc(sb, '\n');
        }
}

static void sim_header(struct strbuf *sb)
{
    sb_puts(sb, "# simulator: blinkc(1) SIMULATION defaults, each algorithm at its best chunk "
                "(powers of two up to 64 MiB); GB/s = 1e9 B/s\n");
}

void fig6_table(struct strbuf *sb, double bytes, const struct fig6_row *rows, int n)
{
    sb_printf(sb, "# Figure 6: broadcast of %.0f bytes on every DGX-1V isomorphism class of 3-8 "
                  "GPUs, blinkc trees vs NCCL rings\n", bytes);
    sb_puts(sb, "# simulator: blinkc(1) SIMULATION defaults; trees at their best chunk (powers of "
                "two up to 64 MiB), NCCL on its calibrated cost model; GB/s = 1e9 B/s\n");
    sb_puts(sb, "# alloc: the class's first allocation (box GPU numbers); nvlink_ring 0: NCCL's "
                "rings fall back to PCIe/CPU links\n"
                "# root: the rank where blinkc is slowest; trees_gbps, ring_gbps, speedup (ring "
                "time / trees time) at that root;\n"
                "# speedup_min/max over every root\n");
    sb_printf(sb, "#%4s %4s %-16s %11s %4s %10s %9s %7s %11s %11s\n", "class", "gpus", "alloc",
              "nvlink_ring", "root", "trees_gbps", "ring_gbps", "speedup", "speedup_min",
              "speedup_max");
    for (int i = 0; i < n; i++) {
        const struct fig6_row *r = &rows[i];
        sb_printf(sb, "%5d %4d %-16s %11d %4d %10.2f %9.2f %7.3f %11.3f %11.3f\n", i + 1, r->gpus,
                  r->alloc, r->nvlink_ring, r->root, r->trees_gbps, r->ring_gbps, r->speedup,
                  r->speedup_min, r->speedup_max);
    }
}

void fig7_table(struct strbuf *sb, double bytes, const struct fig7_row rows[6])
{
    sb_printf(sb, "# Figure 7: hybrid PCIe + NVLink broadcast of %.0f bytes vs NVLink alone, "
                  "root rank 0, every DGX-1V allocation\n", bytes);
    sim_header(sb);
    sb_puts(sb, "# hybrid: the emitted schedule, the NVLink trees and the PCIe trees simulated as "
                "one set (data split by weight, PCIe edges host-staged through CPU memory)\n"
                "# Means over the allocations of each GPU count. hybrid_allocs: allocations "
                "with a PCIe tree set; pcie_share: mean fraction of bytes on PCIe;\n"
                "# gain: mean of NVLink time / hybrid time; wins: allocations where the hybrid is "
                "faster by the per-size choice's 2% margin;\n"
                "# code_gain: the mean gain of what the code runs, the hybrid only where it wins "
                "(else the NVLink trees, gain 1)\n");
    sb_printf(sb, "#%3s %6s %13s %10s %11s %11s %7s %5s %9s\n", "gpus", "allocs",
              "hybrid_allocs", "pcie_share", "nvlink_gbps", "hybrid_gbps", "gain", "wins",
              "code_gain");
    for (int k = 0; k < 6; k++) {
        const struct fig7_row *r = &rows[k];
        sb_printf(sb, "%4d %6d %13d %10.3f %11.2f %11.2f %7.3f %5d %9.3f\n", r->gpus, r->allocs,
                  r->hybrid_allocs, r->pcie_share, r->nvl_gbps, r->hybrid_gbps, r->gain,
                  r->hybrid_wins, r->code_gain);
    }
}

void fig9_table(struct strbuf *sb, double bytes, const struct fig9_row *rows, int n)
{
    sb_printf(sb, "# Figure 9b: allreduce of %.0f bytes over DGX-1V servers (four NICs each) as "
                  "the NIC rate varies\n", bytes);
    sim_header(sb);
    sb_puts(sb, "# nic_gbps: per NIC and direction (its PCIe slot too); GPUs keep PCIe Gen3 x16, "
                "12 GB/s, two per NIC\n"
                "# method sim: simulated (NCCL = the faster of rings and double binary trees, "
                "dbt_gbps 0: none);\n"
                "# method fluid: the plans' algbw (the simulator is too slow at 32 ranks for "
                "make figures), dbt not modelled\n"
                "# plan_gbps, plan_ring_gbps: the planner's own rates; speedup: NCCL time / "
                "blinkc time\n");
    sb_printf(sb, "#%6s %4s %8s %8s %6s %10s %9s %8s %7s %9s %14s\n", "servers", "gpus",
              "nic_gbps", "nic_gbit", "method", "trees_gbps", "ring_gbps", "dbt_gbps", "speedup",
              "plan_gbps", "plan_ring_gbps");
    for (int i = 0; i < n; i++) {
        const struct fig9_row *r = &rows[i];
        sb_printf(sb, "%7d %4d %8.3f %8.0f %6s %10.2f %9.2f %8.2f %7.3f %9.2f %14.2f\n",
                  r->servers, r->gpus, r->nic_gbps, r->nic_gbps * 8, r->simulated ? "sim" : "fluid",
                  r->trees_gbps, r->ring_gbps, r->dbt_gbps, r->speedup, r->plan_gbps,
                  r->plan_ring_gbps);
    }
}

void fig9x_table(struct strbuf *sb, double bytes, const struct fig9_row *rows, int n)
{
    size_t lo = SIM_CHUNK_MIN; /* the search's own smallest size at this message size */
    while ((double)lo * SIM_MAX_CHUNKS < bytes && lo < SIM_CHUNK_MAX)
        lo *= 2;
    sb_printf(sb, "# Figure 9b extended: allreduce of %.0f bytes over 2-8 DGX-1V and HGX H100 "
                  "servers at 100 and 400 Gb/s per NIC\n", bytes);
    sb_puts(sb, "# simulator: blinkc(1) SIMULATION defaults; each algorithm at its best chunk, "
                "searched from 64 MiB down until a size is over 2% slower\n");
    sb_printf(sb, "# than the best so far, or down to floor_kib where it is not 0 (floor_kib 0: "
                  "down to %zu KiB); GB/s = 1e9 B/s\n", lo >> 10);
    sb_puts(sb, "# dgx1v: 4 NICs per server, each behind a PCIe switch with 2 GPUs (Gen3 x16, "
                "12 GB/s), the NIC's slot at the NIC's rate (as in Figure 9b);\n"
                "# hgx-h100: 8 NICs per server, each behind a PCIe Gen5 switch (48 GB/s) with "
                "1 GPU, as topologies/hgx-h100.topo; 4 NVSwitches\n"
                "# blinkc: the three-phase plan; rings, dbt: NCCL's rings and double binary "
                "trees (dbt 0: none); speedup: the faster NCCL time / blinkc time;\n"
                "# x_rings, x_dbt: rings time / blinkc time, dbt time / blinkc time; "
                "fluid_blinkc, fluid_rings: the planner's own rates (no simulation);\n"
                "# chunk_kib: blinkc's best chunk; where it equals floor_kib the floor stopped "
                "the search, and blinkc's rate is a lower bound of its best-chunk rate\n");
    sb_printf(sb, "#%6s %-8s %4s %4s %8s %8s %12s %10s %8s %7s %7s %7s %12s %11s %9s %9s\n",
              "servers", "kind", "gpus", "nics", "nic_gbit", "nic_gbps", "blinkc_gbps",
              "rings_gbps", "dbt_gbps", "speedup", "x_rings", "x_dbt", "fluid_blinkc",
              "fluid_rings", "chunk_kib", "floor_kib");
    for (int i = 0; i < n; i++) {
        const struct fig9_row *r = &rows[i];
        sb_printf(sb, "%7d %-8s %4d %4d %8.0f %8.3f %12.2f %10.2f %8.2f %7.3f %7.3f",
                  r->servers, gen_server_name(r->kind), r->gpus, r->nics, r->nic_gbps * 8,
                  r->nic_gbps, r->trees_gbps, r->ring_gbps, r->dbt_gbps, r->speedup,
                  r->speedup_ring);
        if (r->dbt_gbps > 0)
            sb_printf(sb, " %7.3f", r->speedup_dbt);
        else
            sb_printf(sb, " %7s", "-");
        sb_printf(sb, " %12.2f %11.2f", r->plan_gbps, r->plan_ring_gbps);
        sb_printf(sb, " %9zu %9zu", r->trees_chunk >> 10, r->min_chunk >> 10);
        sb_putc(sb, '\n');
    }
}
