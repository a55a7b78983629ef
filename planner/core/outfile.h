/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * outfile.h - writing an output file atomically.
 *
 * Output is written to a temporary file beside the target (mkstemp) and renamed over it only
 * when complete, so a failed run never leaves a partial file and never touches an existing one.
 * Devices and pipes (/dev/null, a FIFO) are written in place instead.
 */
#ifndef BK_OUTFILE_H
#define BK_OUTFILE_H

#include <stddef.h>

#include "core/bk.h"
#include "core/diag.h"

/* Write data to path ("-" is stdout). Errors: BK_EIO with a diagnostic naming the path. */
BK_MUST_USE
enum bk_status outfile_write(const char *path, const char *data, size_t len, struct diag *d);

/* Is `out` the same existing file as `in`? (refuse to overwrite the input) */
int outfile_same_file(const char *out, const char *in);

#endif
