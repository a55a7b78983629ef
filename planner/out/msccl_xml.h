/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_xml.h - plans as MSCCL algorithm files (--msccl-xml DIR), the XML that
 * msccl-executor-nccl and RCCL load from MSCCL_ALGO_DIR.
 *
 * One file per plan and per run of message sizes where the plan's tuning runs the trees; sizes
 * where it runs NCCL get none, so the executors fall back to the library's own algorithms
 * there, and a plan that runs NCCL at every size gets no file. Every file carries minBytes and
 * maxBytes (a file without them stops the executors' start), and its name and its name
 * attribute carry the allocation in rank order, since the executors choose a file by rank
 * count, never by GPUs. Only numbers, canonical GPU ids and fixed words are written, except
 * the name attribute, which quotes the topology's name escaped and cut to fit 255 bytes.
 */
#ifndef BK_MSCCL_XML_H
#define BK_MSCCL_XML_H

#include <stddef.h>

#include "core/strbuf.h"
#include "plan/plan.h"

#define MSCCL_XML_NAME_MAX 192 /* a file name's bytes, NUL included */
#define MSCCL_XML_TAG_MAX 96   /* the allocation tag's bytes before a long one is cut and hashed */

/* The allocation in rank order as every file name of t's export ends: "gpu5.4.7.6" in
 * "....gpu5.4.7.6.xml". cap: MSCCL_XML_TAG_MAX + 16 bytes or more. */
void msccl_xml_alloc_tag(char *out, size_t cap, const struct topo *t);

/* How many files plan k gives: runs of ranges where the trees run (1 when untuned; 0 when
 * NCCL runs at every size). */
int msccl_xml_count(const struct plan_set *ps, int k);

/* The plans that get no file, appended to sb as a list ("allgather, broadcast (every root)");
 * nothing when every plan gets one. */
void msccl_xml_none(struct strbuf *sb, const struct plan_set *ps);

/*
 * File j of plan k: its name in name[cap], at most MSCCL_XML_NAME_MAX bytes
 * ("allreduce-trees-1M-inf.gpu0-7.xml", "broadcast-gpu5-trees-0-2M.gpu5.4.7.6.xml",
 * "allgather-trees.gpu0-3.xml" when one file covers every size) and its text appended to sb.
 * Errors: BK_ENOMEM.
 */
BK_MUST_USE
enum bk_status msccl_xml_render(struct strbuf *sb, char *name, size_t cap,
                                const struct plan_set *ps, int k, int j);

#endif
