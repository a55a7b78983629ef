/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * ring.h - the baseline: the best set of NCCL-style rings on the same topology and model.
 *
 * A ring is a directed Hamiltonian cycle over the GPUs; each hop is a path (direct, or through
 * switches), and every ring in a set runs concurrently. The rate of a set is the sum of its
 * rings' rates under the arc capacities (a fractional packing, solved as an LP). First only
 * NVLink (and NVSwitch) arcs are tried, as NCCL does at full speed; if no NVLink ring exists,
 * rings over every link kind (PCIe, CPU links, network) are used instead.
 *
 * Ring collectives then run at (nccl-tests algbw, B = summed ring rate, n GPUs):
 *   broadcast, reduce: B;  allreduce: B * n / (2 (n - 1));  allgather, reduce-scatter:
 *   B * n / (n - 1).
 */
#ifndef BK_RING_H
#define BK_RING_H

#include "core/bk.h"
#include "core/collective.h"
#include "core/diag.h"
#include "topo/topo.h"

struct ring_result {
    double gbps;      /* B: summed ring rate, GB/s */
    unsigned kinds;   /* link-kind mask the rings use (PG_NVLINK or PG_ALL_KINDS) */
    int nrings;       /* rings with positive rate in the solution */
    int exhaustive;   /* 1: every Hamiltonian cycle was considered; 0: a heuristic set */
    int n;            /* GPUs per ring */
    int *order;       /* [nrings * n] each ring's GPUs in order, starting at GPU 0 */
    double *rate;     /* [nrings] each ring's rate, GB/s, in the order the LP listed them */
};

/* Best ring set for the GPUs of t (already restricted to the allocation). With one GPU, or
 * where no ring joins the GPUs (the caller says so), the rate is 0 and nrings 0. Free with
 * ring_result_free. */
BK_MUST_USE
enum bk_status ring_best(const struct topo *t, struct ring_result *r, struct diag *d);
void ring_result_free(struct ring_result *r);

/* Algorithm bandwidth of a ring collective from B. */
double ring_algbw(double B, int ngpus, enum collective c);

#endif
