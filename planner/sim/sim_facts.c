/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_facts.c - what every model of the simulator (sim.c, sim_nccl.c, sim_ring.c, sim_tree.c)
 * reads the same way: the GPUs' generation, which indexes NCCL's constants, and nccl-tests'
 * bus bandwidth factor.
 */
#include "sim/sim.h"

#include "topo/topo_rates.h"

int sim_generation(const struct topo *t)
{
    int sm = 1000;
    for (int g = 0; t && g < t->ngpus; g++)
        sm = t->nodes[g].part && t->nodes[g].part->sm < sm ? t->nodes[g].part->sm : sm;
    return sm >= 1000 ? 0 : sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0;
}

double sim_bus_factor(enum collective c, int n)
{
    switch (c) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_ALLGATHER:
    case COLL_REDUCESCATTER: return (double)(n - 1) / n;
    default: return 1;
    }
}
