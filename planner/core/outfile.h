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

/*
 * A run's outputs, all or nothing. outfile_reserve creates each output's temporary file before
 * the work starts, so a path that cannot be written fails in milliseconds, not after the
 * planning; outfile_fill writes an output's contents into it; outfile_commit renames every
 * file into place only once all were filled, then writes the devices and standard output ("-"),
 * which cannot be taken back. outfile_set_free removes whatever was not committed, so a failed
 * run leaves every existing output as it was; so does SIGINT, SIGTERM or SIGHUP while the last
 * set initialised is alive (the process then dies of the signal as it would have).
 */
struct outfile {
    char *path;
    char *tmp;         /* a regular file's temporary beside it, NULL for "-" and devices */
    int fd;            /* tmp's descriptor until commit, -1 otherwise */
    int filled;
    int late;          /* "-", a device or a pipe: written at commit, in place */
    char *data;        /* late: the contents */
    size_t len;
};

struct outfile_set {
    struct outfile *v;
    int n, cap;
};

void outfile_set_init(struct outfile_set *s);
void outfile_set_free(struct outfile_set *s);

/* Reserve path (NULL: nothing to do). Errors: BK_EIO naming the path, BK_ENOMEM. */
BK_MUST_USE
enum bk_status outfile_reserve(struct outfile_set *s, const char *path, struct diag *d);

/* The contents of the reserved output `path`. Errors: BK_EIO (disk full...), BK_EINTERNAL for a
 * path never reserved, BK_ENOMEM. */
BK_MUST_USE
enum bk_status outfile_fill(struct outfile_set *s, const char *path, const char *data, size_t len,
                            struct diag *d);

/* The open temporary file of the reserved output `path`, for writing its contents as they are
 * made before outfile_fill adds the rest; -1 where it has none ("-", a device or a pipe, whose
 * contents wait for the commit) or was filled. */
int outfile_fd(struct outfile_set *s, const char *path);

/* Put every output in place. Errors: BK_EIO, BK_EINTERNAL when one was never filled. */
BK_MUST_USE
enum bk_status outfile_commit(struct outfile_set *s, struct diag *d);

/* Is path an existing directory? */
int outfile_is_dir(const char *path);

/* Can files be created in the directory? Errors: BK_EIO naming it. */
BK_MUST_USE
enum bk_status outfile_check_dir(const char *dir, struct diag *d);

/* Does dir hold nothing but the n files names[], files whose names end in `suffix` (NULL: none)
 * and subdirectories? A program that loads every file of a directory (the MSCCL executors) must
 * not find others there. Errors: BK_EIO naming the first other file in name order, how many
 * more there are, and `hint`; BK_ENOMEM. */
BK_MUST_USE
enum bk_status outfile_dir_only(const char *dir, const char *const *names, int n,
                                const char *suffix, const char *hint, struct diag *d);

/* Do paths a and b name one file ("./x" and "x", a link and its target)? Existing files
 * compare by device and inode; a file not made yet by its directory's and its own name. "-"
 * names no file. */
int outfile_same_file(const char *a, const char *b);

#endif
