/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * outfile.c - atomic output through a temporary file and rename (see outfile.h).
 */
#include "core/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/strbuf.h"

static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

BK_MUST_USE
static enum bk_status write_in_place(const char *path, const char *data, size_t len,
                                     struct diag *d)
{
    int fd = open(path, O_WRONLY | O_NOCTTY);
    int err = fd < 0 ? errno : 0;
    errno = 0;
    if (!err && write_all(fd, data, len) != 0)
        err = errno ? errno : EIO;
    if (fd >= 0 && close(fd) != 0 && !err)
        err = errno;
    if (err) {
        diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot write output: %s", strerror(err));
        return BK_EIO;
    }
    return BK_OK;
}

enum bk_status outfile_write(const char *path, const char *data, size_t len, struct diag *d)
{
    if (strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
            diag_add(d, DIAG_ERROR, "<stdout>", DIAG_NOWHERE, "write error: %s", strerror(errno));
            return BK_EIO;
        }
        return BK_OK;
    }
    /* A device or pipe (/dev/null, /dev/stdout, a FIFO) is written in place: renaming a file
     * over it would replace the device node itself. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return write_in_place(path, data, len, d);
    char *tmp = bk_asprintf("%s.XXXXXX", path);
    if (!tmp)
        return BK_ENOMEM;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot create output: %s", strerror(errno));
        free(tmp);
        return BK_EIO;
    }
    /* mkstemp makes 0600; give the file the mode a plain creat() would have. */
    mode_t mask = umask(0);
    umask(mask);
    int err = 0;
    errno = 0;
    if (write_all(fd, data, len) != 0)
        err = errno ? errno : EIO;
    else if (fchmod(fd, 0666 & ~mask) != 0)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err) {
        unlink(tmp);
        diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot write output: %s", strerror(err));
        free(tmp);
        return BK_EIO;
    }
    free(tmp);
    return BK_OK;
}

int outfile_same_file(const char *out, const char *in)
{
    struct stat a, b;
    if (strcmp(out, "-") == 0 || strcmp(in, "-") == 0)
        return 0;
    return stat(out, &a) == 0 && stat(in, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
