/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * outfile.c - atomic output through a temporary file and rename (see outfile.h).
 */
#include "core/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

/* The set whose temporaries a fatal signal removes: planning can take minutes, and an
 * interrupted run must leave nothing behind either. Only unlink, which is async-signal-safe. */
static const struct outfile_set *volatile armed;

static void remove_temporaries(int sig)
{
    const struct outfile_set *s = armed;
    for (int i = 0; s && i < s->n; i++)
        if (s->v[i].tmp)
            unlink(s->v[i].tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

void outfile_set_init(struct outfile_set *s)
{
    memset(s, 0, sizeof *s);
    armed = s;
    static const int fatal[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < BK_ARRAY_LEN(fatal); i++)
        signal(fatal[i], remove_temporaries);
}

void outfile_set_free(struct outfile_set *s)
{
    if (armed == s)
        armed = NULL;
    for (int i = 0; i < s->n; i++) {
        struct outfile *o = &s->v[i];
        if (o->fd >= 0)
            close(o->fd);
        if (o->tmp)
            unlink(o->tmp);
        free(o->tmp);
        free(o->path);
        free(o->data);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

static struct outfile *find(struct outfile_set *s, const char *path)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i].path, path) == 0)
            return &s->v[i];
    return NULL;
}

enum bk_status outfile_reserve(struct outfile_set *s, const char *path, struct diag *d)
{
    if (!path)
        return BK_OK;
    BK_CHECK(bk_grow_int((void **)&s->v, &s->cap, s->n, sizeof *s->v));
    struct outfile *o = &s->v[s->n];
    memset(o, 0, sizeof *o);
    o->fd = -1;
    if (!(o->path = strdup(path)))
        return BK_ENOMEM;
    s->n++; /* counted now, so outfile_set_free cleans up after a failure below */
    struct stat st;
    o->late = strcmp(path, "-") == 0 || (stat(path, &st) == 0 && !S_ISREG(st.st_mode));
    if (strcmp(path, "-") == 0)
        return BK_OK;
    if (o->late) { /* a device or pipe, written in place at commit */
        if (access(path, W_OK) == 0)
            return BK_OK;
        diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot write output: %s", strerror(errno));
        return BK_EIO;
    }
    if (!(o->tmp = bk_asprintf("%s.XXXXXX", path)))
        return BK_ENOMEM;
    if ((o->fd = mkstemp(o->tmp)) < 0) {
        diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot create output: %s", strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return BK_EIO;
    }
    return BK_OK;
}

int outfile_fd(struct outfile_set *s, const char *path)
{
    const struct outfile *o = find(s, path);
    return o && !o->filled && !o->late ? o->fd : -1;
}

enum bk_status outfile_fill(struct outfile_set *s, const char *path, const char *data, size_t len,
                            struct diag *d)
{
    struct outfile *o = find(s, path);
    if (!o || o->filled)
        return BK_EINTERNAL;
    o->filled = 1;
    if (o->late) {
        o->len = len;
        return (o->data = malloc(len + 1)) ? (memcpy(o->data, data, len), BK_OK) : BK_ENOMEM;
    }
    errno = 0;
    if (write_all(o->fd, data, len) == 0)
        return BK_OK;
    diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot write output: %s",
             strerror(errno ? errno : EIO));
    return BK_EIO;
}

enum bk_status outfile_commit(struct outfile_set *s, struct diag *d)
{
    for (int i = 0; i < s->n; i++)
        if (!s->v[i].filled)
            return BK_EINTERNAL;
    /* mkstemp makes 0600; give each file the mode a plain creat() would have. */
    mode_t mask = umask(0);
    umask(mask);
    for (int i = 0; i < s->n; i++) {
        struct outfile *o = &s->v[i];
        if (o->fd < 0)
            continue;
        int err = fchmod(o->fd, 0666 & ~mask) != 0 ? errno : 0;
        if (close(o->fd) != 0 && !err)
            err = errno;
        o->fd = -1;
        if (err) {
            diag_add(d, DIAG_ERROR, o->path, DIAG_NOWHERE, "cannot write output: %s",
                     strerror(err));
            return BK_EIO;
        }
    }
    for (int i = 0; i < s->n; i++) {
        struct outfile *o = &s->v[i];
        if (o->tmp && rename(o->tmp, o->path) != 0) {
            diag_add(d, DIAG_ERROR, o->path, DIAG_NOWHERE, "cannot write output: %s",
                     strerror(errno));
            return BK_EIO;
        }
        free(o->tmp);
        o->tmp = NULL;
    }
    for (int i = 0; i < s->n; i++)
        if (s->v[i].late)
            BK_CHECK(outfile_write(s->v[i].path, s->v[i].data, s->v[i].len, d));
    return BK_OK;
}

int outfile_is_dir(const char *path)
{
    struct stat st;
    return strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

enum bk_status outfile_check_dir(const char *dir, struct diag *d)
{
    if (access(dir, W_OK | X_OK) == 0)
        return BK_OK;
    diag_add(d, DIAG_ERROR, dir, DIAG_NOWHERE, "cannot write into the directory: %s",
             strerror(errno));
    return BK_EIO;
}

enum bk_status outfile_dir_only(const char *dir, const char *const *names, int n,
                                const char *suffix, const char *hint, struct diag *d)
{
    DIR *dp = opendir(dir);
    if (!dp) {
        diag_add(d, DIAG_ERROR, dir, DIAG_NOWHERE, "cannot read the directory: %s",
                 strerror(errno));
        return BK_EIO;
    }
    char *first = NULL;
    int others = 0;
    enum bk_status st = BK_OK;
    struct dirent *e;
    while (st == BK_OK && (e = readdir(dp))) {
        int ours = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
        for (int i = 0; !ours && i < n; i++)
            ours = strcmp(e->d_name, names[i]) == 0;
        size_t len = strlen(e->d_name), slen = suffix ? strlen(suffix) : 0;
        ours |= suffix && len > slen && strcmp(e->d_name + len - slen, suffix) == 0;
        char *path = ours ? NULL : bk_asprintf("%s/%s", dir, e->d_name);
        struct stat sb;
        if (ours || (path && lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))) {
            free(path);
            continue;
        }
        free(path);
        others++;
        if (!first || strcmp(e->d_name, first) < 0) { /* readdir's order is the disk's */
            free(first);
            if (!(first = strdup(e->d_name)))
                st = BK_ENOMEM;
        }
    }
    closedir(dp);
    if (st == BK_OK && others) {
        char more[48] = "";
        if (others > 1)
            snprintf(more, sizeof more, " and %d other file%s", others - 1,
                     others > 2 ? "s" : "");
        diag_add(d, DIAG_ERROR, dir, DIAG_NOWHERE, "holds %s%s, %s", first, more, hint);
        st = BK_EIO;
    }
    free(first);
    return st;
}

/* The directory part of path into dir (cap bytes); returns where the last name starts. */
static const char *split_dir(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, cap, ".");
    else /* "/x" is in "/" */
        snprintf(dir, cap, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return slash ? slash + 1 : path;
}

int outfile_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, "-") == 0 || strcmp(b, "-") == 0)
        return 0;
    int ha = stat(a, &sa) == 0, hb = stat(b, &sb) == 0;
    if (ha || hb)
        return ha && hb && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char da[4096], db[4096];
    const char *na = split_dir(a, da, sizeof da), *nb = split_dir(b, db, sizeof db);
    if (strcmp(na, nb) != 0)
        return 0;
    if (stat(da, &sa) != 0 || stat(db, &sb) != 0)
        return strcmp(a, b) == 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
