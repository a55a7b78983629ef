/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * figures.h - the Blink paper's comparisons (Figures 5, 6, 7 and 9b, the last also extended to
 * HGX H100 servers) computed from the planner and the schedule simulator, for `make figures`
 * (bench/figures.c) and its test. Every function computes; only the table writers format, and
 * nothing here prints.
 */
#ifndef BENCH_FIGURES_H
#define BENCH_FIGURES_H

#include <stddef.h>

#include "gen_cluster.h"
#include "sim/sim.h"
#include "core/strbuf.h"

/* Figure 5: packed trees over rings from the plans' rates (no simulation), per GPU count. Per
 * isomorphism class of the allocation's NVLink graph broadcast takes its worst root; ratios
 * (tree algbw / ring algbw) are over the classes that have an NVLink ring. */
struct fig5_row {
    int gpus, allocs, classes, no_ring; /* no_ring: classes without an NVLink ring */
    int ratios;                         /* classes the ratios are taken over */
    double bcast_max, bcast_geomean, ar_max, ar_geomean; /* 0 where ratios == 0 */
};
/* rows[k] for k + 3 GPUs, k = 0..5, on builtin:box. 1 on success. */
int fig5_box(const char *box, struct fig5_row rows[6]);

/* Figure 6: broadcast of `bytes` on every DGX-1V isomorphism class of 3-8 GPUs, simulated. */
struct fig6_row {
    int gpus;
    char alloc[24];    /* the class's first allocation in mask order, box GPU numbers */
    int nvlink_ring;   /* 1: NCCL has an NVLink ring; 0: its rings fall back to PCIe/CPU */
    int root;          /* the root (rank) where blinkc's throughput is lowest */
    double trees_gbps; /* algbw of blinkc's trees from that root */
    double ring_gbps;  /* algbw of NCCL's rings from that root */
    double speedup;    /* ring time / trees time at that root */
    double speedup_min, speedup_max; /* over every root */
};
#define FIG6_MAX_ROWS 64
/* Fills rows (at most FIG6_MAX_ROWS) in GPU-count then class-key order; returns the row count,
 * or -1 on failure (a message in err). */
int fig6_dgx1v(double bytes, const struct sim_params *p, struct fig6_row *rows,
               struct strbuf *err);

/* Figure 7: hybrid PCIe + NVLink broadcast against NVLink alone, root rank 0, every DGX-1V
 * allocation of 3-8 GPUs, means per GPU count. */
struct fig7_row {
    int gpus, allocs;
    int hybrid_allocs;   /* allocations whose plan has a PCIe tree set */
    double nvl_gbps;     /* mean algbw, NVLink trees alone */
    double hybrid_gbps;  /* mean algbw, NVLink and PCIe trees in parallel */
    double gain;         /* mean of hybrid/NVLink-alone throughput ratios */
    int hybrid_wins;     /* allocations where the hybrid is faster by the tuner's 2% margin */
    double code_gain;    /* the same mean where the code keeps the hybrid only there */
    double pcie_share;   /* mean fraction of the bytes sent over PCIe */
};
/* rows[k] for k + 3 GPUs. 1 on success (else a message in err). */
int fig7_dgx1v(double bytes, const struct sim_params *p, struct fig7_row rows[6],
               struct strbuf *err);

/* Figure 9b: allreduce over `servers` DGX-1V servers as the NIC rate varies, and its extension
 * to HGX H100 servers. */
struct fig9_row {
    enum gen_server kind;   /* the servers' kind (gen_cluster.h) */
    int servers, gpus, nics; /* nics: in the whole cluster */
    double nic_gbps;        /* per NIC, per direction */
    int simulated;          /* 1: times from the simulator; 0: the plans' algbw (fluid) */
    double trees_gbps;      /* blinkc's three-phase allreduce, algbw */
    double ring_gbps;       /* NCCL rings */
    double dbt_gbps;        /* NCCL double binary trees (0: none, or not simulated) */
    double speedup;         /* NCCL's faster over blinkc */
    double speedup_ring;    /* ring time / blinkc time */
    double speedup_dbt;     /* double binary tree time / blinkc time (0: no trees) */
    double plan_gbps, plan_ring_gbps; /* the planner's fluid rates, for comparison */
    size_t min_chunk;       /* the chunk search's floor, bytes (0: none) */
    size_t trees_chunk, ring_chunk, dbt_chunk; /* each one's best chunk, bytes (0: none) */
};
/* One row on `servers` servers of `kind` (gen_cluster's NIC rule: nic_gbps 0 for the built
 * rate). simulate: 1 to run the simulator, 0 for the plans' rates only. Each algorithm gets its
 * best chunk from 64 MiB down, the search stopping once a size is over 2% slower than the best
 * so far, or at min_chunk bytes (0: at sim_best_chunk's smallest size). */
int fig9_kind_point(enum gen_server kind, int servers, double nic_gbps, double bytes,
                    int simulate, size_t min_chunk, const struct sim_params *p,
                    struct fig9_row *row, struct strbuf *err);
/* fig9_kind_point on DGX-1V, no floor. */
int fig9_point(int servers, double nic_gbps, double bytes, int simulate,
               const struct sim_params *p, struct fig9_row *row, struct strbuf *err);

/* Table writers: '#' lines first, the last naming the whitespace-separated columns. */
void fig5_table(struct strbuf *sb, const char *const boxes[], const struct fig5_row rows[][6],
                int nboxes);
void fig6_table(struct strbuf *sb, double bytes, const struct fig6_row *rows, int n);
void fig7_table(struct strbuf *sb, double bytes, const struct fig7_row rows[6]);
void fig9_table(struct strbuf *sb, double bytes, const struct fig9_row *rows, int n);
/* Figure 9b extended to HGX H100: every row simulated, speedups over each NCCL algorithm. */
void fig9x_table(struct strbuf *sb, double bytes, const struct fig9_row *rows, int n);

#endif
