/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * input.h - reading an input file whole, with a size limit, before any parser sees it.
 *
 * Every reader works on an in-memory, NUL-terminated copy: hwloc takes it through
 * hwloc_topology_set_xmlbuffer, libxml2 through xmlCtxtReadMemory, the text readers directly.
 */
#ifndef BK_INPUT_H
#define BK_INPUT_H

#include <stddef.h>

#include "core/bk.h"
#include "core/diag.h"

/* Inputs larger than this are refused before parsing (real topology files are < 1 MB). */
#define INPUT_MAX_BYTES (64u * 1024u * 1024u)

struct input {
    char *name;  /* as given on the command line, for messages */
    char *data;  /* contents plus a terminating NUL (data[len] == 0) */
    size_t len;
};

/* Read `path` ("-" is stdin). Errors: BK_EIO (unreadable), BK_EINPUT (too large). */
BK_MUST_USE
enum bk_status input_read(const char *path, struct input *in, struct diag *d);

/* Wrap a memory buffer (copied), e.g. a built-in fixture or a test string. */
BK_MUST_USE
enum bk_status input_from_memory(const char *name, const char *data, size_t len, struct input *in);

void input_free(struct input *in);

/*
 * Line and column (1-based, columns in bytes) of byte offset `off`, for readers that keep byte
 * offsets rather than counting as they go.
 */
struct diag_loc input_loc_of(const struct input *in, size_t off);

#endif
