/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_blocks.c - a server's GPUs in interchangeable blocks (topo_auto.h): found by the CPU each
 * GPU links to, proven by automorphisms checked link by link.
 */
#include <stdlib.h>
#include <string.h>

#include "topo/topo_auto.h"

/* cpu[g]: the one CPU GPU g links to directly, -1 where none, -2 where several. */
static void gpu_cpus(const struct topo *t, int *cpu)
{
    for (int g = 0; g < t->ngpus; g++)
        cpu[g] = -1;
    for (int l = 0; l < t->nlinks; l++) {
        int a = t->links[l].src, b = t->links[l].dst;
        if (t->nodes[a].kind != TOPO_GPU || t->nodes[b].kind != TOPO_CPU)
            continue;
        int g = t->nodes[a].rank;
        if (g >= 0 && g < t->ngpus)
            cpu[g] = cpu[g] == -1 || cpu[g] == b ? b : -2;
    }
}

/* Swap nodes a and b in perm (an identity before). */
static void swap_nodes(int *perm, int a, int b)
{
    perm[a] = b;
    perm[b] = a;
}

/* The swaps that generate the blocks' symmetries are automorphisms: block 0 with each other
 * block (its k-th GPU for the other's k-th, its CPU for theirs), and block 0's first GPU with
 * each other of its GPUs. */
static int blocks_are_symmetric(const struct topo *t, const int *block, const int *cpu_of_block,
                                int nblocks, int size, int *perm)
{
    int n = t->ngpus;
    for (int j = 1; j < nblocks; j++) {
        for (int v = 0; v < t->nnodes; v++)
            perm[v] = v;
        for (int g = 0, h = 0; g < n; g++) {
            if (block[g] != 0)
                continue;
            while (h < n && block[h] != j)
                h++;
            if (h >= n)
                return 0;
            swap_nodes(perm, topo_gpu_node(t, g), topo_gpu_node(t, h));
            h++;
        }
        if (cpu_of_block[0] >= 0)
            swap_nodes(perm, cpu_of_block[0], cpu_of_block[j]);
        if (!topo_is_automorphism(t, perm))
            return 0;
    }
    int first = -1;
    for (int g = 0, k = 0; g < n && k < size; g++) {
        if (block[g] != 0)
            continue;
        k++;
        if (first < 0) {
            first = g;
            continue;
        }
        for (int v = 0; v < t->nnodes; v++)
            perm[v] = v;
        swap_nodes(perm, topo_gpu_node(t, first), topo_gpu_node(t, g));
        if (!topo_is_automorphism(t, perm))
            return 0;
    }
    return 1;
}

enum bk_status topo_gpu_blocks(const struct topo *t, int *block, int *nblocks)
{
    int n = t->ngpus;
    *nblocks = 0;
    if (n < 2 || t->nservers > 1)
        return BK_OK;
    int *cpu = malloc((size_t)n * sizeof *cpu), *cpu_of_block = malloc((size_t)n * sizeof *cpu);
    int *size = calloc((size_t)n, sizeof *size);
    int *perm = malloc((size_t)t->nnodes * sizeof *perm);
    if (!cpu || !cpu_of_block || !size || !perm) {
        free(cpu), free(cpu_of_block), free(size), free(perm);
        return BK_ENOMEM;
    }
    gpu_cpus(t, cpu);
    int m = 0, ok = 1;
    for (int g = 0; g < n && ok; g++) {
        ok = cpu[g] >= -1 && (cpu[g] == -1) == (cpu[0] == -1);
        int b = 0;
        while (b < m && cpu_of_block[b] != cpu[g])
            b++;
        if (b == m)
            cpu_of_block[m++] = cpu[g];
        block[g] = b;
        size[b]++;
    }
    for (int b = 1; b < m && ok; b++)
        ok = size[b] == size[0];
    if (ok && blocks_are_symmetric(t, block, cpu_of_block, m, size[0], perm))
        *nblocks = m;
    free(cpu), free(cpu_of_block), free(size), free(perm);
    return BK_OK;
}
