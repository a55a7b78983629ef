/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_load.h - a saved plan file (--plan-json) read back, for blinkc --from-plan.
 *
 * NCCL can dump the graphs it searched (NCCL_GRAPH_DUMP_FILE) and load them instead of
 * searching (NCCL_GRAPH_FILE); a blinkc plan file plays the same part for code generation. The
 * file gives back what the code generator reads and nothing more: the topology (nodes in the
 * order written, ids, servers, ranks, links), and per plan the collective, its root, its trees
 * (parent of every GPU and rate), its ring chains, the hybrid's PCIe trees and its per-size
 * ranges. Paths, bounds and solver numbers are read past. A plan written with -o in the same run
 * therefore renders the same bytes again (tests/unit/test_from_plan.c checks every fixture).
 *
 * Everything is checked as input, with FILE:LINE:COL at the value refused: the format and
 * version, unique node ids, GPUs first in rank order, server numbers below the node count, no
 * two ranks on one device of a server (topo_gpu_device), links between known nodes with
 * positive finite rates, trees that span every GPU from their root with no cycle, one plan per
 * collective and root, rates the runtime's integer weights can carry, ranges that start at 0
 * and grow (the runtime's plan_check.c refuses the same tables).
 */
#ifndef BK_PLAN_LOAD_H
#define BK_PLAN_LOAD_H

#include "core/bk.h"
#include "core/diag.h"
#include "core/input.h"
#include "plan/plan.h"
#include "topo/topo.h"

/* The plan file's "format" and the one "version" this blinkc writes and reads. */
#define PLAN_FILE_FORMAT "blink-plan"
#define PLAN_FILE_VERSION 1

/* Read `in` into *t (a finalized-like topology: ids, ranks, servers set) and *ps (its plans,
 * ps->topo = t; graphs and bounds empty). On failure both are empty. Errors:
 * BK_EINPUT with a diagnostic, BK_ENOMEM. */
BK_MUST_USE
enum bk_status plan_load(const struct input *in, struct topo *t, struct plan_set *ps,
                         struct diag *d);

#endif
