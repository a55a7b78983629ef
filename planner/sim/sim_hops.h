/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_hops.h - NCCL's view of one allocation for the simulator's baseline (sim_ring.c): every
 * GPU pair's widest relay-only path over one link tier, and the ring order over it. Both depend
 * on the allocation and the tier alone, so a struct sim_memo (sim.h) keeps them for all the
 * sizes, chunks and collectives a caller simulates on the flow-level NCCL (on 72 GPUs building
 * them took most of a run).
 */
#ifndef BK_SIM_HOPS_H
#define BK_SIM_HOPS_H

#include "core/bk.h"
#include "graph/pgraph.h"
#include "topo/topo.h"

struct sim_memo;

struct sim_hops {
    const struct topo *topo; /* what the table was built for */
    unsigned kinds;
    int n;                   /* GPUs */
    struct pgraph h;         /* the tier */
    double *w;               /* [n*n] widest relay-only path widths, 0 where none */
    int *path, *plen;        /* [n*n*maxlen] their arcs in h, [n*n] their lengths */
    int maxlen;
    int *order;              /* [n] ring order: the widest Hamiltonian cycle for n <= 9 (rank 0
                                first, the first found wins ties), else rank order */
};

/* The table of topology t's tier `kinds`: from m when it has one, else built into m, or into
 * *own when m is NULL (the caller frees it with sim_hops_free). Fails only with BK_ENOMEM. */
BK_MUST_USE
enum bk_status sim_hops_get(struct sim_memo *m, const struct topo *t, unsigned kinds,
                            struct sim_hops *own, const struct sim_hops **out);
void sim_hops_free(struct sim_hops *h);

#endif
