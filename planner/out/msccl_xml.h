/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_xml.h - plans as MSCCL algorithm files (--msccl-xml DIR), the XML that
 * msccl-executor-nccl and RCCL load from MSCCL_ALGO_DIR.
 *
 * One file per plan and per run of message sizes where the plan's tuning picks one algorithm:
 * the trees, or NCCL's rings as the plan's ring chains. Every file carries minBytes and
 * maxBytes (the executors skip a file without them). Only numbers, canonical GPU ids and fixed
 * words are written, except the algo's name attribute, which quotes the topology's name
 * escaped and shortened.
 */
#ifndef BK_MSCCL_XML_H
#define BK_MSCCL_XML_H

#include <stddef.h>

#include "core/strbuf.h"
#include "plan/plan.h"

/* How many files plan k gives (runs of ranges with one algorithm; 1 when untuned). */
int msccl_xml_count(const struct plan_set *ps, int k);

/*
 * File j of plan k: its name in name[cap] ("allreduce-trees-1M-inf.xml", "broadcast-gpu0-
 * trees.xml", "allgather-trees.xml" when one file covers every size) and its text appended to
 * sb. Errors: BK_ENOMEM.
 */
BK_MUST_USE
enum bk_status msccl_xml_render(struct strbuf *sb, char *name, size_t cap,
                                const struct plan_set *ps, int k, int j);

#endif
