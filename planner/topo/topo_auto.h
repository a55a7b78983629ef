/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_auto.h - a topology's symmetries: relabellings of its nodes (automorphisms) that map
 * every node onto one of the same kind and part, and every link onto a link of the same kind,
 * count and rate in the same direction, so that anything planned or simulated on it holds,
 * relabelled, for the image.
 *
 * Switch fabrics are full of them: on an NVSwitch server every GPU looks like every other, so a
 * broadcast planned from one root is, relabelled, a plan from any root with the same rate and
 * the same simulated times; and --all-allocations' GPU sets of one size are one set relabelled.
 * The search is individualisation and refinement (colour refinement of the nodes by their
 * links, then fixing one node at a time, backtracking where a choice fails); every relabelling
 * it returns has been checked link by link. A search that runs past a fixed budget gives up and
 * reports no symmetry, which only costs time later: callers then plan each case themselves.
 * Deterministic: the same topology gives the same relabellings on any machine.
 */
#ifndef BK_TOPO_AUTO_H
#define BK_TOPO_AUTO_H

#include "core/bk.h"
#include "topo/topo.h"

struct topo_orbits {
    int ngpus, nnodes;
    int *rep;  /* [ngpus] the lowest GPU rank of each GPU's orbit (a rank is its own rep) */
    int *perm; /* [ngpus * nnodes] row g: an automorphism (node -> node) taking node rep[g] to
                  node g; the identity for a rep */
    int ngens; /* generators found */
    int *gens; /* [ngens * nnodes] */
};

/* The orbits of t's GPUs under its automorphisms. Fails only with BK_ENOMEM. */
BK_MUST_USE
enum bk_status topo_gpu_orbits(const struct topo *t, struct topo_orbits *o);

/* Automorphisms that, with the orbits' generators, generate every automorphism of t as far as
 * its GPUs go: a strong generating set along the base GPU 0, 1, ... (the stabiliser of GPUs
 * 0..k-1 is searched for each k). Its gens replace o's; rep and perm are left as they were.
 * Fails only with BK_ENOMEM. */
BK_MUST_USE
enum bk_status topo_gpu_group(const struct topo *t, struct topo_orbits *o);

void topo_orbits_free(struct topo_orbits *o);

/* 1 when perm (node -> node) is an automorphism of t, checked link by link; independent of the
 * search. */
int topo_is_automorphism(const struct topo *t, const int *perm);

/* Where each node's out-links start among t's links, which a finalized topology keeps sorted
 * by (src, dst, kind): a link's image under a relabelling is found in a few steps. */
struct topo_link_index {
    const struct topo *t;
    int *off; /* [nnodes + 1] node v's links: t->links[off[v] .. off[v + 1]) */
};

/* Fails with BK_ENOMEM, or BK_EINTERNAL where t's links are not sorted (not finalized). */
BK_MUST_USE
enum bk_status topo_link_index_build(struct topo_link_index *ix, const struct topo *t);
void topo_link_index_free(struct topo_link_index *ix);

/* The link src -> dst of that kind, or -1. */
int topo_link_find(const struct topo_link_index *ix, int src, int dst, enum topo_link_kind kind);

/*
 * Identical servers of a cluster. Swapping servers a and b trades the k-th node of one for the
 * k-th node of the other (in index order, network switches apart, which belong to no server)
 * and leaves every other node; on a cluster of copies of one server joined to one switch, or
 * by rails, every swap is a symmetry, so whatever is planned from a GPU of one server holds,
 * relabelled, from the same GPU of every other.
 *
 * twin[sv] (an array of t->nservers): the first server whose swap with sv is an automorphism
 * of t, checked link by link at the two servers; sv itself where none is. Costs about one
 * pass over the links per server. Fails only with BK_ENOMEM.
 */
BK_MUST_USE
enum bk_status topo_server_twins(const struct topo *t, int *twin);

/* perm[t->nnodes]: the swap of servers a and b. */
void topo_server_swap(const struct topo *t, int a, int b, int *perm);

/*
 * Interchangeable blocks of a server's GPUs: GPUs grouped by the one CPU each links to (a Grace
 * and its two GPUs on the GB200 NVL72), or one block of all where no GPU links to a CPU. They
 * count when every permutation of the blocks (the k-th GPU of one for the k-th of another, and
 * their CPUs) and every permutation of a block's GPUs is an automorphism; that is checked link
 * by link on swaps that generate them. A set of GPUs is then, up to symmetry, known by how many
 * GPUs of each block it holds, sorted.
 *
 * block[t->ngpus]: the block of each GPU, numbered by their first GPUs; *nblocks 0 where t (a
 * cluster, or a server without such blocks) has none. Fails only with BK_ENOMEM.
 */
BK_MUST_USE
enum bk_status topo_gpu_blocks(const struct topo *t, int *block, int *nblocks);

#endif
