/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * alloc_util.h - helpers the benchmark programs share: reading built-in and generated
 * topologies, cutting an allocation out of an 8-GPU box by a GPU bit mask, and keying
 * allocations by the isomorphism class of their NVLink graph. Nothing here prints except
 * alloc_read_text, which passes a reader's diagnostics to stderr (programs only, no library).
 */
#ifndef BENCH_ALLOC_UTIL_H
#define BENCH_ALLOC_UTIL_H

#include <stddef.h>

#include "topo/topo.h"
#include "read/topo_read.h"

/* Read a topology from memory with options o (NULL: defaults). 1 on success; on failure the
 * diagnostics go to stderr and t is left empty. */
int alloc_read_text(const char *label, const char *text, size_t len,
                    const struct topo_read_opts *o, struct topo *t);

/* Read the embedded fixture builtin:NAME. 1 on success. */
int alloc_read_builtin(const char *name, struct topo *t);

/* The allocation of the GPUs whose bits are set in mask (GPUs 0..7 of an 8-GPU box), in rank
 * order. 1 on success. */
int alloc_restrict_mask(const struct topo *full, unsigned mask, struct topo *t);

/* The canonical NVLink count matrix of an allocation of n <= 8 GPUs (the smallest matrix over
 * every relabelling, as n*n digits): isomorphic allocations get the same key. */
void alloc_nvlink_key(const struct topo *t, char key[65]);

/* "0,1,3": the box GPU numbers of mask. */
void alloc_mask_text(unsigned mask, char *buf, size_t cap);

#endif
