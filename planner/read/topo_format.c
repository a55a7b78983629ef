/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_format.c - what a topology file is: the formats' names, opening a file, and detection.
 *
 * Detection looks at content only, never at file names: an XML root of <topology> is hwloc,
 * <system> is NCCL; a "GPU0 ..." header row is nvidia-smi topo -m; a first statement that is a
 * .topo keyword is blinkc's own format, and a first statement "cluster" a cluster file (which
 * the .topo format has no keyword for).
 */
#include "read/topo_read.h"

#include <ctype.h>
#include <string.h>

static const char *const format_names[] = {"auto", "text", "hwloc", "nccl", "smi", "cluster"};

const char *topo_format_name(enum topo_format f) { return format_names[f]; }

int topo_format_parse(const char *s, enum topo_format *out)
{
    for (size_t i = 0; i < BK_ARRAY_LEN(format_names); i++)
        if (strcmp(s, format_names[i]) == 0) {
            *out = (enum topo_format)i;
            return 1;
        }
    return 0;
}

enum bk_status topo_open_file(void *ctx, const char *path, struct input *in, struct diag *d)
{
    (void)ctx;
    return input_read(path, in, d);
}

void topo_read_opts_default(struct topo_read_opts *o)
{
    memset(o, 0, sizeof *o);
    o->format = TOPO_FMT_AUTO;
    topo_rates_default(&o->rates);
    o->open_file = topo_open_file;
}

/*
 * Skip whitespace, XML declarations, comments and the doctype (with its internal subset); return
 * the root element's start and copy its name, or NULL.
 */
static const char *xml_root_name(const char *p, const char *end, char *name, size_t cap)
{
    for (;;) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p >= end || *p != '<')
            return NULL;
        const char *q;
        if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
            q = strstr(p + 4, "-->");
            if (!q || q >= end)
                return NULL;
            p = q + 3;
        } else if (p[1] == '?' || p[1] == '!') {
            q = p + 2;
            while (q < end && *q != '>' && *q != '[')
                q++;
            if (q < end && *q == '[') { /* internal subset: skip to "]" then ">" */
                q = memchr(q, ']', (size_t)(end - q));
                q = q ? memchr(q, '>', (size_t)(end - q)) : NULL;
            }
            if (!q || q >= end)
                return NULL;
            p = q + 1;
        } else {
            const char *start = p;
            size_t n = 0;
            for (p++; p < end && (isalnum((unsigned char)*p) || *p == '_' || *p == ':' ||
                                  *p == '-' || *p == '.');
                 p++)
                if (n + 1 < cap)
                    name[n++] = *p;
            name[n] = '\0';
            return n > 0 ? start : NULL;
        }
    }
}

/* First token of a line with ANSI escapes (ESC [ ... letter) removed. */
static size_t first_token(const char *line, const char *end, char *tok, size_t cap)
{
    size_t n = 0;
    const char *p = line;
    while (p < end && *p != '\n') {
        if (*p == 0x1b && p + 1 < end && p[1] == '[') {
            p += 2;
            while (p < end && !isalpha((unsigned char)*p) && *p != '\n')
                p++;
            if (p < end && *p != '\n')
                p++;
            continue;
        }
        if (isspace((unsigned char)*p)) {
            if (n)
                break;
            p++;
            continue;
        }
        if (n + 1 < cap)
            tok[n++] = *p;
        p++;
    }
    tok[n] = '\0';
    return n;
}

static int is_text_keyword(const char *w)
{
    static const char *const kw[] = {"topology", "server",  "gpu",        "nvswitch", "pcie-switch",
                                     "cpu",      "nic",     "net-switch", "link"};
    for (size_t i = 0; i < BK_ARRAY_LEN(kw); i++)
        if (strcmp(w, kw[i]) == 0)
            return 1;
    return 0;
}

enum topo_format topo_detect_format(const struct input *in, struct diag *d)
{
    const char *p = in->data, *end = in->data + in->len;
    if (in->len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
        p += 3;
    const char *q = p;
    while (q < end && isspace((unsigned char)*q))
        q++;
    if (q == end) {
        diag_error(d, in->name, DIAG_NOWHERE, "empty file: no topology to read");
        return TOPO_FMT_AUTO;
    }
    if (memchr(in->data, '\0', in->len)) {
        diag_error(d, in->name, input_loc_of(in, (size_t)((const char *)memchr(in->data, '\0',
                                                                               in->len) -
                                                          in->data)),
                   "unknown format: the file contains NUL bytes (binary data, not a topology)");
        return TOPO_FMT_AUTO;
    }
    if (*q == '<') {
        char root[64];
        const char *at = xml_root_name(q, end, root, sizeof root);
        if (!at) {
            diag_error(d, in->name, input_loc_of(in, (size_t)(q - in->data)),
                       "unknown format: looks like XML but has no root element");
            return TOPO_FMT_AUTO;
        }
        if (strcmp(root, "topology") == 0)
            return TOPO_FMT_HWLOC;
        if (strcmp(root, "system") == 0)
            return TOPO_FMT_NCCL;
        diag_error(d, in->name, input_loc_of(in, (size_t)(at - in->data)),
                   "unknown XML format: root element <%s>; expected <topology> (hwloc) or "
                   "<system> (NCCL topology)",
                   root);
        return TOPO_FMT_AUTO;
    }
    /* Look at the first statements for an smi header or a .topo keyword. */
    int seen = 0;
    for (const char *line = p; line < end && seen < 40;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *eol = nl ? nl : end;
        char tok[64];
        if (first_token(line, eol, tok, sizeof tok) && tok[0] != '#') {
            seen++;
            if (strncmp(tok, "GPU0", 4) == 0)
                return TOPO_FMT_SMI;
            /* A .topo file starts with a keyword; an smi paste may start with a prompt line. */
            if (seen == 1 && is_text_keyword(tok))
                return TOPO_FMT_TEXT;
            if (seen == 1 && strcmp(tok, "cluster") == 0)
                return TOPO_FMT_CLUSTER;
        }
        line = eol + 1;
    }
    diag_error(d, in->name, DIAG_AT(1, 0),
               "unknown format: not hwloc XML, NCCL topology XML, 'nvidia-smi topo -m' output or "
               "a blinkc .topo or cluster file (see blinkc-topology(5); --format forces one)");
    return TOPO_FMT_AUTO;
}
