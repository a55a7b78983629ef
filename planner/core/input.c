/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * input.c - whole-file input with a size cap, so no parser streams from an unbounded source.
 */
#include "core/input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

enum bk_status input_from_memory(const char *name, const char *data, size_t len, struct input *in)
{
    memset(in, 0, sizeof *in);
    in->name = strdup(name);
    in->data = malloc(len + 1);
    if (!in->name || !in->data) {
        input_free(in);
        return BK_ENOMEM;
    }
    memcpy(in->data, data, len);
    in->data[len] = '\0';
    in->len = len;
    return BK_OK;
}

enum bk_status input_read(const char *path, struct input *in, struct diag *d)
{
    memset(in, 0, sizeof *in);
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot open: %s", strerror(errno)),
               BK_EIO;
    enum bk_status st = BK_OK;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        st = BK_ENOMEM;
    while (st == BK_OK) {
        if (cap - len < 2) {
            if (cap >= (size_t)INPUT_MAX_BYTES + 2) {
                st = diag_error(d, path, DIAG_NOWHERE,
                                "file is larger than %u MiB; not a topology file",
                                INPUT_MAX_BYTES >> 20);
                break;
            }
            char *p = bk_grow(buf, &cap, len + 2, 1); /* doubles cap */
            if (!p) {
                st = BK_ENOMEM;
                break;
            }
            buf = p;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "read error: %s", strerror(errno));
                st = BK_EIO;
            }
            break;
        }
    }
    if (!is_stdin)
        fclose(f);
    if (st == BK_OK && len > INPUT_MAX_BYTES)
        st = diag_error(d, path, DIAG_NOWHERE, "file is larger than %u MiB; not a topology file",
                        INPUT_MAX_BYTES >> 20);
    if (st == BK_OK && !(in->name = strdup(path)))
        st = BK_ENOMEM;
    if (st != BK_OK) {
        free(buf);
        free(in->name);
        memset(in, 0, sizeof *in);
        return st;
    }
    buf[len] = '\0';
    in->data = buf;
    in->len = len;
    return BK_OK;
}

void input_free(struct input *in)
{
    free(in->name);
    free(in->data);
    memset(in, 0, sizeof *in);
}

struct diag_loc input_loc_of(const struct input *in, size_t off)
{
    int line = 1, col = 1;
    for (size_t i = 0; i < off && i < in->len; i++) {
        if (in->data[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return DIAG_AT(line, col);
}
