/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * hbm_bound.c - bytes the protocol kernel moves through device memory per byte of a call
 * (hbm_bound.h). Per tree, with k_v the children of rank v (the sum of k_v over a spanning tree
 * is n - 1, so no tree shape changes the total):
 *   up (reduce, allreduce, reduce-scatter): rank v reads its input and k_v child slots and
 *     writes one result: 2 + k_v; summed, 3n - 1.
 *   down (broadcast, allreduce, allgather): a rank other than the root reads its slot, writes
 *     its output, and per child reads the chunk again and writes the child's slot: 2(1 + k_v);
 *     the root only forwards, 2 k_root, plus the copy of its input into its output when the two
 *     differ (broadcast and allgather out of place): 4n - 4, or 4n - 2.
 * The trees of a group share its data by weight, so a group moves its size times that sum;
 * allgather and reduce-scatter run n groups of S / n each. For 8 ranks: allreduce 51, broadcast
 * and allgather 30 (28 in place), reduce and reduce-scatter 23 bytes per byte.
 */
#include "hbm_bound.h"

#include "blink_plan.h"

double hbm_bytes_per_byte(int coll, int n, int in_place)
{
    if (n < 2)
        return 0;
    double up = 3.0 * n - 1, down = 4.0 * n - 4 + (in_place ? 0 : 2);
    switch (coll) {
    case BLINK_PLAN_REDUCE:
    case BLINK_PLAN_REDUCESCATTER: return up;
    case BLINK_PLAN_BROADCAST:
    case BLINK_PLAN_ALLGATHER: return down;
    case BLINK_PLAN_ALLREDUCE: return up + 4.0 * n - 4;
    default: return 0;
    }
}
