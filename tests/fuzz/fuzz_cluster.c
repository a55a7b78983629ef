/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_cluster.c - libFuzzer harness: a cluster file (topo_cluster.c) and the server files it
 * names, all from one buffer, opened through an in-memory topo_read_opts.open_file that never
 * touches the file system.
 *
 * The input is the cluster file, then any number of files, each after a line "@file NAME":
 *
 *     cluster c
 *     server a x.topo
 *     server b x.topo
 *     @file x.topo
 *     gpu gpu0 ...
 *
 * The cluster file is named "cluster" (no directory), so a server's PATH resolves to itself and
 * opens the first file of that NAME; any other path is a missing file. Besides the readers'
 * contract (fuzz_read.c) it checks the cluster reader's: each distinct file is opened once.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "core/input.h"
#include "read/topo_read.h"

#define MAX_FILES 32

static const char marker[] = "\n@file ";

struct mem_file {
    const char *name, *data;
    size_t name_len, len;
    int opened;
};

struct bundle {
    struct mem_file f[MAX_FILES];
    int n;
    int twice; /* a file was opened a second time */
};

/* The first offset >= from where the marker starts, or size. */
static size_t find_marker(const char *s, size_t size, size_t from)
{
    size_t m = sizeof marker - 1;
    for (size_t i = from; i + m <= size; i++)
        if (memcmp(s + i, marker, m) == 0)
            return i;
    return size;
}

/* Split data: the cluster file's length, and the files after it into b. */
static size_t split(const char *s, size_t size, struct bundle *b)
{
    size_t first = find_marker(s, size, 0), at = first;
    while (at < size && b->n < MAX_FILES) {
        size_t name = at + sizeof marker - 1, eol = name;
        while (eol < size && s[eol] != '\n')
            eol++;
        size_t body = eol < size ? eol + 1 : size;
        size_t next = find_marker(s, size, eol < size ? eol : size);
        if (next < body)
            next = body;
        b->f[b->n++] = (struct mem_file){s + name, s + body, eol - name, next - body, 0};
        at = next;
    }
    return first;
}

static enum bk_status open_mem(void *ctx, const char *path, struct input *in, struct diag *d)
{
    struct bundle *b = ctx;
    size_t plen = strlen(path);
    for (int i = 0; i < b->n; i++) {
        struct mem_file *f = &b->f[i];
        if (f->name_len == plen && memcmp(f->name, path, plen) == 0) {
            b->twice |= f->opened++ > 0;
            return input_from_memory(path, f->data, f->len, in);
        }
    }
    diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot open: No such file or directory");
    return BK_EIO;
}

int fuzz_cluster_one(const uint8_t *data, size_t size)
{
    struct bundle b;
    memset(&b, 0, sizeof b);
    size_t len = split((const char *)data, size, &b);
    struct input in;
    if (input_from_memory("cluster", (const char *)data, len, &in) != BK_OK)
        return 0; /* out of memory: nothing to test */
    struct topo_read_opts o;
    topo_read_opts_default(&o);
    o.format = TOPO_FMT_CLUSTER;
    o.open_file = open_mem;
    o.open_ctx = &b;
    int bad = fuzz_read_check(&in, &o);
    input_free(&in);
    return bad ? bad : b.twice ? 4 : 0;
}

#ifndef BK_FUZZ_NO_ENTRY
FUZZ_ENTRY(fuzz_cluster_one)
#endif
