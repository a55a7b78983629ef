/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_smi.c - reader for the text that `nvidia-smi topo -m` prints: a GPU/NIC relation matrix
 * with optional affinity columns and legends. It turns that matrix into the normalised graph of
 * topo.h (GPUs, one NVSwitch plane or direct NVLinks, inferred PCIe switches, CPUs, NICs).
 *
 * The text names no GPU model, no bus id and no PCIe switch, so most of the graph is inferred;
 * the rules below are the contract (they go into the man page). The reader parses by row and
 * column labels, never by fixed widths, because real captures come with tabs or spaces, colour
 * escapes and collapsed or wrapped headers. It never prints and never trusts a count or a name
 * it has not checked; every rejected cell is reported at FILE:LINE:COL.
 *
 * INPUT. Lines before the header (a shell prompt, "nvidia-smi topo -m") are skipped. ANSI
 * escapes (ESC[...m), carriage returns and a UTF-8 byte-order mark are ignored; cells are
 * separated by tabs or runs of spaces. The header is the first line whose first label is GPU0
 * (or starts "GPU0GPU1..."); labels glued together are split by a token scan that knows GPUk,
 * NICk, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID" and the row labels below the header. Up to
 * three following lines without cell codes continue a wrapped header. GPU columns are GPUk;
 * every other matrix column is a NIC (NICk, or an old driver's device name such as mlx5_0). A
 * row starts with its column's label, then one cell per GPU/NIC column, then the affinity values
 * left to right (missing ones are empty; "N/A" counts as empty). Cells: X, NV#, PIX, PXB, PHB,
 * NODE, SYS, and SOC (old drivers' SYS); anything else is an error at its position. Every GPU
 * column needs a row; NIC rows are optional. The diagonal must be X, X appears nowhere else,
 * NV# only joins two GPUs and must be symmetric; an asymmetric PCIe cell pair gets a warning and
 * the farther relation. "NIC Legend:" entries ("NIC0: mlx5_0") give NIC nodes their device
 * names; the rest of the legend is ignored.
 *
 * NVLINK. On a switchless board NV# is the pair's number of direct links. When there are at
 * least 3 GPUs and every GPU pair shows the same NV#, equal to a GPU's whole link budget (6, 12
 * or 18; with --gpu-model, that model's budget), the GPUs hang off an NVSwitch plane: one
 * nvswitch node with # links from each GPU (a full mesh would overstate bandwidth about (n-1)
 * times). The text never names the GPU, so its NVLink generation comes from --gpu-model, else
 * from the shape with a warning: plane NV6 V100, NV12 A100, NV18 H100; switchless, 4 links per
 * GPU P100, 6 V100, anything else V100. A box without NVLink needs no generation (0, no
 * warning). A switchless GPU with more links than its model has gets a warning.
 *
 * PCIE. An NV# cell hides the PCIe relation of its pair, so NIC rows and columns are used too.
 * Devices (GPUs and NICs) that are PIX to each other, directly or through others, share one leaf
 * PCIe switch. Groups (leaf switches, or single devices) with a PXB cell between any of their
 * members share one switch above them, which holds those leaf switches and single devices. A
 * device whose switch partners cannot be told sits directly under its CPU; so does a leaf
 * switch with no PXB partner. A top switch links to the CPU of its first device. All PCIe links
 * are of unknown generation and width (NCCL's Gen3 x16, 12 GB/s).
 *
 * CPUS. Devices are grouped by the NUMA Affinity column when every GPU has a value there, else
 * by CPU Affinity likewise, else by relations alone. Devices without a value (NICs) join the
 * group of a device they are PIX to, else PXB, PHB, NODE (never merging two different affinity
 * values). A group still without a value joins the first group it has no SYS cell with, so the
 * reader builds the fewest CPUs the SYS cells allow. CPUs are numbered in the order their first
 * device appears in the header; that number is the socket. Every pair of CPUs gets one smp link
 * of unknown CPU family (charged like QPI).
 */
#include "read/topo_read.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/strbuf.h"

#define MAX_COLS 1024          /* GPU + NIC columns: real boxes have under 64 */
#define MAX_LINE (1u << 20)    /* longer lines are not nvidia-smi output */
#define MAX_NV 64              /* no GPU has more NVLinks than this */
#define MAX_HDR_LINES 4        /* a header wrapped onto at most 3 more lines */
#define QUOTE 40               /* longest input text quoted in a message */

enum code { C_NONE, C_X, C_NV, C_PIX, C_PXB, C_PHB, C_NODE, C_SYS };
static const char *const code_names[] = {"?", "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};

enum trail { T_CPU, T_NUMA, T_GPUNUMA, T_KINDS };
static const char *const trail_words[T_KINDS][3] = {
    {"CPU", "Affinity", NULL}, {"NUMA", "Affinity", NULL}, {"GPU", "NUMA", "ID"}};
static const char *const trail_names[T_KINDS] = {"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"};

struct cell {
    unsigned char code, nv;
    struct diag_loc loc;
};

struct col {
    char *label;          /* header label */
    int gpu;              /* k of GPUk, else -1 (a NIC) */
    struct diag_loc loc;  /* the label in the header */
    int has_row;
    struct diag_loc row_loc;
    char *trail[T_KINDS]; /* this row's affinity values, NULL when absent */
    char *dev;            /* device name from the NIC Legend */
    struct diag_loc dev_loc;
    int node;             /* topo node index */
};

/* One input line with escapes and CRs removed; col[i] is the input column of s[i]. */
struct line {
    char *s;
    int *col;
    size_t n, cap;
    int no;
    int too_long;
};

struct smi {
    const struct input *in;
    const struct topo_read_opts *o;
    struct topo *t;
    struct diag *d;
    size_t off;
    int lineno;
    struct line ln;
    struct line hdr[MAX_HDR_LINES];
    int nhdr;
    char **dict; /* row labels seen below the header, for splitting a collapsed header */
    int ndict;
    struct col *cols;
    int ncols;
    int trail[T_KINDS]; /* trailing columns in header order */
    int ntrail;
    struct cell *m;     /* ncols x ncols: m[r * ncols + c] is row r's cell in column c */
};

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
static int quote_len(size_t n) { return n > QUOTE ? QUOTE : (int)n; }

static struct diag_loc loc_at(const struct line *l, size_t i)
{
    if (i < l->n)
        return DIAG_AT(l->no, l->col[i]);
    return DIAG_AT(l->no, l->n ? l->col[l->n - 1] + 1 : 1);
}

/* Skip an escape sequence starting at p[i] == ESC; returns the index after it. */
static size_t skip_escape(const char *p, size_t i, size_t len)
{
    size_t j = i + 1;
    if (j < len && p[j] == '[') { /* CSI: parameters, then a final byte 0x40..0x7e */
        for (j++; j < len && !(p[j] >= 0x40 && p[j] <= 0x7e); j++)
            ;
        return j < len ? j + 1 : len;
    }
    while (j < len && p[j] >= 0x20 && p[j] <= 0x2f) /* ESC ( B and friends */
        j++;
    return j < len && p[j] >= 0x30 && p[j] <= 0x7e ? j + 1 : j;
}

/* Read and clean the next line into s->ln; returns 0 at the end of the input. */
BK_MUST_USE
static enum bk_status read_line(struct smi *s, int *got)
{
    const char *data = s->in->data;
    *got = 0;
    if (s->off >= s->in->len)
        return BK_OK;
    const char *p = data + s->off;
    size_t rest = s->in->len - s->off;
    const char *nl = memchr(p, '\n', rest);
    size_t len = nl ? (size_t)(nl - p) : rest;
    s->off += len + (nl != NULL);
    struct line *l = &s->ln;
    l->no = ++s->lineno;
    l->n = 0;
    l->too_long = len > MAX_LINE;
    *got = 1;
    if (l->too_long)
        return BK_OK;
    if (len + 1 > l->cap) {
        char *ns = realloc(l->s, len + 1);
        if (ns)
            l->s = ns;
        int *nc = realloc(l->col, (len + 1) * sizeof *nc);
        if (nc)
            l->col = nc;
        if (!ns || !nc)
            return BK_ENOMEM;
        l->cap = len + 1;
    }
    size_t i = 0;
    if (p == data && len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len) {
        if (p[i] == 0x1b) {
            i = skip_escape(p, i, len);
            continue;
        }
        if (p[i] != '\r') {
            l->s[l->n] = p[i];
            l->col[l->n++] = (int)i + 1;
        }
        i++;
    }
    l->s[l->n] = '\0';
    return BK_OK;
}

BK_MUST_USE
static enum bk_status copy_line(struct line *dst, const struct line *src)
{
    dst->s = malloc(src->n + 1);
    dst->col = malloc((src->n + 1) * sizeof *dst->col);
    if (!dst->s || !dst->col)
        return BK_ENOMEM;
    memcpy(dst->s, src->s, src->n + 1);
    memcpy(dst->col, src->col, (src->n + 1) * sizeof *dst->col);
    dst->n = dst->cap = src->n;
    dst->no = src->no;
    return BK_OK;
}

/* Next whitespace-separated token at or after *pos; returns its length (0: none left). */
static size_t next_tok(const struct line *l, size_t *pos, size_t *start)
{
    size_t i = *pos;
    while (i < l->n && is_ws(l->s[i]))
        i++;
    *start = i;
    while (i < l->n && !is_ws(l->s[i]))
        i++;
    *pos = i;
    return i - *start;
}

/* A cell code, or C_NONE; *nv gets the count of NV#. */
static int parse_code(const char *p, size_t n, int *nv)
{
    *nv = 0;
    if (n >= 3 && p[0] == 'N' && p[1] == 'V') {
        int v = 0;
        for (size_t i = 2; i < n; i++) {
            if (!isdigit((unsigned char)p[i]) || v > MAX_NV)
                return C_NONE;
            v = v * 10 + (p[i] - '0');
        }
        if (v < 1 || v > MAX_NV)
            return C_NONE;
        *nv = v;
        return C_NV;
    }
    static const struct {
        const char *s;
        int code;
    } codes[] = {{"X", C_X},     {"PIX", C_PIX}, {"PXB", C_PXB}, {"PHB", C_PHB},
                 {"NODE", C_NODE}, {"SYS", C_SYS}, {"SOC", C_SYS}};
    for (size_t i = 0; i < BK_ARRAY_LEN(codes); i++)
        if (strlen(codes[i].s) == n && memcmp(codes[i].s, p, n) == 0)
            return codes[i].code;
    return C_NONE;
}

static int line_has_code(const struct line *l)
{
    size_t pos = 0, st, n;
    int nv;
    while ((n = next_tok(l, &pos, &st)))
        if (parse_code(l->s + st, n, &nv) != C_NONE)
            return 1;
    return 0;
}

/* Is l a "Legend:" or "NIC Legend:" heading? */
static int is_legend(const struct line *l, int *nic)
{
    size_t pos = 0, st, n = next_tok(l, &pos, &st);
    *nic = 0;
    if (n == 3 && strncasecmp(l->s + st, "NIC", 3) == 0) {
        *nic = 1;
        n = next_tok(l, &pos, &st);
    }
    return n >= 6 && strncasecmp(l->s + st, "Legend", 6) == 0;
}

/* Length of a trailing-column label ("CPU Affinity"...) at p, words separated by any blanks. */
static size_t match_trail(const char *p, size_t n, int *kind)
{
    for (int k = 0; k < T_KINDS; k++) {
        size_t i = 0;
        int w;
        for (w = 0; w < 3 && trail_words[k][w]; w++) {
            while (w > 0 && i < n && is_ws(p[i]))
                i++;
            size_t wl = strlen(trail_words[k][w]);
            if (n - i < wl || strncasecmp(p + i, trail_words[k][w], wl) != 0)
                break;
            i += wl;
        }
        if (w == 3 || !trail_words[k][w]) {
            *kind = k;
            return i;
        }
    }
    return 0;
}

/* Length of "GPU<digits>" or "NIC<digits>" at p (greedy digits), or 0. */
static size_t match_devlabel(const char *p, size_t n)
{
    if (n < 4 || (strncmp(p, "GPU", 3) != 0 && strncmp(p, "NIC", 3) != 0) ||
        !isdigit((unsigned char)p[3]))
        return 0;
    size_t i = 3;
    while (i < n && isdigit((unsigned char)p[i]))
        i++;
    return i;
}

/* Length of the next column label in the word p[0..n) of a header (see the file comment). */
static size_t label_len(const struct smi *s, const char *p, size_t n)
{
    size_t best = 0;
    for (int i = 0; i < s->ndict; i++) {
        size_t dl = strlen(s->dict[i]);
        if (dl <= n && dl > best && memcmp(p, s->dict[i], dl) == 0)
            best = dl;
    }
    if (best == n || match_devlabel(p, n) == n)
        return n;
    if (best)
        return best;
    size_t dl = match_devlabel(p, n);
    if (dl)
        return dl;
    /* Another name: it ends where a known label starts. */
    int kind;
    for (size_t q = 1; q < n; q++)
        if (match_devlabel(p + q, n - q) || match_trail(p + q, n - q, &kind))
            return q;
    return n;
}

BK_MUST_USE
static enum bk_status add_col(struct smi *s, const struct line *l, size_t st, size_t n)
{
    struct diag_loc loc = loc_at(l, st);
    const char *p = l->s + st;
    if (s->ntrail)
        return diag_error(s->d, s->in->name, loc,
                          "column '%.*s' comes after the affinity columns; expected CPU Affinity, "
                          "NUMA Affinity or GPU NUMA ID there",
                          quote_len(n), p);
    if (s->ncols >= MAX_COLS)
        return diag_error(s->d, s->in->name, loc, "more than %d GPU and NIC columns", MAX_COLS);
    for (int i = 0; i < s->ncols; i++)
        if (strlen(s->cols[i].label) == n && memcmp(s->cols[i].label, p, n) == 0)
            return diag_error(s->d, s->in->name, loc,
                              "column '%.*s' appears twice in the header (first at line %d, "
                              "column %d)",
                              quote_len(n), p, s->cols[i].loc.line, s->cols[i].loc.col);
    struct col *c = &s->cols[s->ncols];
    memset(c, 0, sizeof *c);
    c->gpu = -1;
    c->node = -1;
    c->loc = loc;
    if (!(c->label = bk_strndup(p, n)))
        return BK_ENOMEM;
    s->ncols++;
    if (match_devlabel(p, n) == n && p[0] == 'G') {
        if (n > 9) /* GPU + 6 digits */
            return diag_error(s->d, s->in->name, loc, "GPU number in '%.*s' is absurdly large",
                              quote_len(n), p);
        c->gpu = (int)strtol(p + 3, NULL, 10);
    }
    return BK_OK;
}

BK_MUST_USE
static enum bk_status scan_header_line(struct smi *s, const struct line *l)
{
    size_t i = 0;
    for (;;) {
        while (i < l->n && is_ws(l->s[i]))
            i++;
        if (i >= l->n)
            return BK_OK;
        int kind;
        size_t tl = match_trail(l->s + i, l->n - i, &kind);
        if (tl) {
            for (int k = 0; k < s->ntrail; k++)
                if (s->trail[k] == kind)
                    return diag_error(s->d, s->in->name, loc_at(l, i),
                                      "column '%s' appears twice in the header", trail_names[kind]);
            s->trail[s->ntrail++] = kind;
            i += tl;
            continue;
        }
        size_t we = i;
        while (we < l->n && !is_ws(l->s[we]))
            we++;
        size_t n = label_len(s, l->s + i, we - i);
        BK_CHECK(add_col(s, l, i, n));
        i += n;
    }
}

/* Collect the first labels of the rows below the header, then rewind. */
BK_MUST_USE
static enum bk_status collect_row_labels(struct smi *s)
{
    size_t off = s->off;
    int lineno = s->lineno, got, seen = 0;
    s->dict = calloc(MAX_COLS, sizeof *s->dict);
    if (!s->dict)
        return BK_ENOMEM;
    for (int guard = 0; guard < 2 * MAX_COLS && s->ndict < MAX_COLS; guard++) {
        BK_CHECK(read_line(s, &got));
        if (!got || s->ln.too_long)
            break;
        size_t pos = 0, st, st2, n = next_tok(&s->ln, &pos, &st);
        if (!n) {
            if (seen)
                break;
            continue;
        }
        seen = 1;
        int nv;
        size_t n2 = next_tok(&s->ln, &pos, &st2);
        if (n2 && parse_code(s->ln.s + st2, n2, &nv) != C_NONE &&
            !(s->dict[s->ndict++] = bk_strndup(s->ln.s + st, n)))
            return BK_ENOMEM;
    }
    s->off = off;
    s->lineno = lineno;
    return BK_OK;
}

/* Is l the continuation of a wrapped header: labels only, none repeating the first line's? */
static int is_header_cont(const struct smi *s, const struct line *l)
{
    int nic;
    size_t pos = 0, st, n;
    if (l->too_long || is_legend(l, &nic) || line_has_code(l))
        return 0;
    size_t first = next_tok(l, &pos, &st), fst = st;
    if (!first)
        return 0;
    for (pos = 0; (n = next_tok(l, &pos, &st));)
        if (isdigit((unsigned char)l->s[st]) || (n == 3 && memcmp(l->s + st, "N/A", 3) == 0))
            return 0;
    const struct line *h = &s->hdr[0];
    for (pos = 0; (n = next_tok(h, &pos, &st));)
        if (n == first && memcmp(h->s + st, l->s + fst, n) == 0)
            return 0;
    return 1;
}

BK_MUST_USE
static enum bk_status read_header(struct smi *s)
{
    int got;
    for (;;) {
        BK_CHECK(read_line(s, &got));
        if (!got)
            return diag_error(s->d, s->in->name, DIAG_AT(1, 0),
                              "no 'nvidia-smi topo -m' header: expected a line of column labels "
                              "starting with GPU0");
        size_t pos = 0, st, n = next_tok(&s->ln, &pos, &st);
        const char *p = s->ln.s + st;
        if (!s->ln.too_long && n >= 4 && memcmp(p, "GPU0", 4) == 0 &&
            (n == 4 || isalpha((unsigned char)p[4])))
            break;
    }
    size_t pos = 0, st, n;
    int nv;
    next_tok(&s->ln, &pos, &st);
    if ((n = next_tok(&s->ln, &pos, &st)) && parse_code(s->ln.s + st, n, &nv) != C_NONE)
        return diag_error(s->d, s->in->name, loc_at(&s->ln, 0),
                          "matrix row GPU0 comes before any header: expected a line of column "
                          "labels (GPU0 GPU1 ... CPU Affinity) above the matrix");
    BK_CHECK(copy_line(&s->hdr[s->nhdr++], &s->ln));
    while (s->nhdr < MAX_HDR_LINES) {
        size_t off = s->off;
        int lineno = s->lineno;
        BK_CHECK(read_line(s, &got));
        if (!got || !is_header_cont(s, &s->ln)) {
            s->off = off;
            s->lineno = lineno;
            break;
        }
        BK_CHECK(copy_line(&s->hdr[s->nhdr++], &s->ln));
    }
    BK_CHECK(collect_row_labels(s));
    if (!(s->cols = calloc(MAX_COLS, sizeof *s->cols)))
        return BK_ENOMEM;
    for (int i = 0; i < s->nhdr; i++)
        BK_CHECK(scan_header_line(s, &s->hdr[i]));
    int ngpu = 0;
    for (int i = 0; i < s->ncols; i++)
        ngpu += s->cols[i].gpu >= 0;
    if (!ngpu)
        return diag_error(s->d, s->in->name, DIAG_AT(s->hdr[0].no, 0),
                          "the header names no GPU columns (GPU0, GPU1, ...)");
    if (!(s->m = calloc((size_t)s->ncols * (size_t)s->ncols, sizeof *s->m)))
        return BK_ENOMEM;
    return BK_OK;
}

static int find_col(const struct smi *s, const char *p, size_t n)
{
    for (int i = 0; i < s->ncols; i++)
        if (strlen(s->cols[i].label) == n && memcmp(s->cols[i].label, p, n) == 0)
            return i;
    return -1;
}

BK_MUST_USE
static enum bk_status parse_row(struct smi *s, int r, size_t pos)
{
    const struct line *l = &s->ln;
    struct col *c = &s->cols[r];
    size_t st, n;
    for (int j = 0; j < s->ncols; j++) {
        n = next_tok(l, &pos, &st);
        const char *p = l->s + st;
        int nv, code = n ? parse_code(p, n, &nv) : C_NONE;
        if (code != C_NONE) {
            s->m[(size_t)r * s->ncols + j] = (struct cell){(unsigned char)code,
                                                           (unsigned char)nv, loc_at(l, st)};
            continue;
        }
        if (!n || isdigit((unsigned char)p[0]) || (n == 3 && memcmp(p, "N/A", 3) == 0))
            return diag_error(s->d, s->in->name, loc_at(l, st),
                              "row %s has %d matrix cells but the header has %d GPU and NIC "
                              "columns: the matrix must be square",
                              c->label, j, s->ncols);
        return diag_error(s->d, s->in->name, loc_at(l, st),
                          "unknown cell '%.*s' in row %s, column %s: expected X, NV#, PIX, PXB, "
                          "PHB, NODE, SYS or SOC",
                          quote_len(n), p, c->label, s->cols[j].label);
    }
    for (int k = 0; (n = next_tok(l, &pos, &st)); k++) {
        if (k >= s->ntrail)
            return diag_error(s->d, s->in->name, loc_at(l, st),
                              "extra cell '%.*s' in row %s: the header has only %d columns",
                              quote_len(n), l->s + st, c->label, s->ncols + s->ntrail);
        if (!(c->trail[s->trail[k]] = bk_strndup(l->s + st, n)))
            return BK_ENOMEM;
    }
    return BK_OK;
}

/* The matrix rows, up to a blank line, a legend, or a line that is not a row. */
BK_MUST_USE
static enum bk_status read_rows(struct smi *s, int *nic_legend)
{
    int got, nrows = 0, nv;
    *nic_legend = 0;
    for (;;) {
        BK_CHECK(read_line(s, &got));
        if (!got)
            return BK_OK;
        const struct line *l = &s->ln;
        if (l->too_long)
            return diag_error(s->d, s->in->name, DIAG_AT(l->no, 0),
                              "line longer than %u bytes in the matrix", MAX_LINE);
        size_t pos = 0, st, st2, n = next_tok(l, &pos, &st);
        if (!n) {
            if (nrows)
                return BK_OK;
            continue;
        }
        if (is_legend(l, nic_legend))
            return BK_OK;
        size_t pos2 = pos, n2 = next_tok(l, &pos2, &st2);
        int r = find_col(s, l->s + st, n);
        if (r < 0) {
            if (n2 && parse_code(l->s + st2, n2, &nv) != C_NONE)
                return diag_error(s->d, s->in->name, loc_at(l, st),
                                  "row '%.*s' names no column of the header", quote_len(n),
                                  l->s + st);
            return BK_OK; /* text after the matrix */
        }
        if (s->cols[r].has_row)
            return diag_error(s->d, s->in->name, loc_at(l, st),
                              "second row for %s (the first is at line %d)", s->cols[r].label,
                              s->cols[r].row_loc.line);
        s->cols[r].has_row = 1;
        s->cols[r].row_loc = loc_at(l, st);
        BK_CHECK(parse_row(s, r, pos));
        nrows++;
    }
}

/* "NIC Legend:" entries, "NIC0: mlx5_0"; everything else after the matrix is ignored. */
BK_MUST_USE
static enum bk_status read_legend(struct smi *s, int in_nic_legend)
{
    int got;
    for (;;) {
        BK_CHECK(read_line(s, &got));
        if (!got)
            return BK_OK;
        const struct line *l = &s->ln;
        int nic;
        if (l->too_long)
            continue;
        if (is_legend(l, &nic)) {
            in_nic_legend = nic;
            continue;
        }
        size_t i = 0;
        while (i < l->n && is_ws(l->s[i]))
            i++;
        size_t ll = match_devlabel(l->s + i, l->n - i);
        if (!in_nic_legend || !ll || l->s[i] != 'N')
            continue;
        size_t j = i + ll;
        while (j < l->n && is_ws(l->s[j]))
            j++;
        if (j >= l->n || l->s[j] != ':')
            continue;
        size_t pos = j + 1, st, n = next_tok(l, &pos, &st);
        int c = find_col(s, l->s + i, ll);
        if (!n || c < 0 || s->cols[c].dev)
            continue;
        if (!(s->cols[c].dev = bk_strndup(l->s + st, n)))
            return BK_ENOMEM;
        s->cols[c].dev_loc = loc_at(l, st);
    }
}

static struct cell *cell(const struct smi *s, int r, int c)
{
    return &s->m[(size_t)r * s->ncols + c];
}

static void code_text(const struct cell *c, char *buf, size_t cap)
{
    if (c->code == C_NV)
        snprintf(buf, cap, "NV%d", c->nv);
    else
        snprintf(buf, cap, "%s", code_names[c->code]);
}

/* Every GPU has a row; diagonal X; NVLink only between GPUs; then symmetry. */
BK_MUST_USE
static enum bk_status check_matrix(struct smi *s)
{
    const char *f = s->in->name;
    char ta[16], tb[16];
    int warned = 0;
    for (int i = 0; i < s->ncols; i++)
        if (s->cols[i].gpu >= 0 && !s->cols[i].has_row)
            return diag_error(s->d, f, s->cols[i].loc,
                              "no row for column %s: the matrix must be square, with one row per "
                              "GPU column",
                              s->cols[i].label);
    for (int i = 0; i < s->ncols; i++)
        for (int j = 0; j < s->ncols && s->cols[i].has_row; j++) {
            const struct cell *a = cell(s, i, j);
            code_text(a, ta, sizeof ta);
            if (i == j && a->code != C_X)
                return diag_error(s->d, f, a->loc,
                                  "diagonal cell of row %s is %s: a device's own cell must be X",
                                  s->cols[i].label, ta);
            if (i != j && a->code == C_X)
                return diag_error(s->d, f, a->loc,
                                  "X in row %s, column %s: X marks only a device's own cell",
                                  s->cols[i].label, s->cols[j].label);
            if (a->code == C_NV && (s->cols[i].gpu < 0 || s->cols[j].gpu < 0))
                return diag_error(s->d, f, a->loc, "%s between %s and %s: NVLink joins GPUs only",
                                  ta, s->cols[i].label, s->cols[j].label);
        }
    for (int i = 0; i < s->ncols; i++)
        for (int j = i + 1; j < s->ncols && s->cols[i].has_row; j++) {
            struct cell *a = cell(s, i, j), *b = cell(s, j, i);
            if (!s->cols[j].has_row || (a->code == b->code && a->nv == b->nv))
                continue;
            code_text(a, ta, sizeof ta);
            code_text(b, tb, sizeof tb);
            if (a->code == C_NV || b->code == C_NV)
                return diag_error(s->d, f, a->loc,
                                  "asymmetric NVLink cells: row %s, column %s is %s but row %s, "
                                  "column %s (line %d, column %d) is %s",
                                  s->cols[i].label, s->cols[j].label, ta, s->cols[j].label,
                                  s->cols[i].label, b->loc.line, b->loc.col, tb);
            if (!warned++) /* one warning, not one per cell of a bad capture */
                diag_warning(s->d, f, a->loc,
                             "asymmetric cells: row %s, column %s is %s but row %s, column %s "
                             "(line %d, column %d) is %s; using the farther relation here and "
                             "for any other asymmetric PCIe cell",
                             s->cols[i].label, s->cols[j].label, ta, s->cols[j].label,
                             s->cols[i].label, b->loc.line, b->loc.col, tb);
            if (a->code < b->code)
                a->code = b->code;
            else
                b->code = a->code;
        }
    return BK_OK;
}

/* The relation of two devices, from whichever of their rows exists. */
static int rel(const struct smi *s, int a, int b)
{
    if (s->cols[a].has_row)
        return cell(s, a, b)->code;
    if (s->cols[b].has_row)
        return cell(s, b, a)->code;
    return C_NONE;
}

/* Union-find with the smallest index as root, so classes are named by their first device. */
static int uf_find(int *p, int a)
{
    while (p[a] != a)
        a = p[a] = p[p[a]];
    return a;
}

static void uf_union(int *p, int a, int b)
{
    a = uf_find(p, a);
    b = uf_find(p, b);
    if (a < b)
        p[b] = a;
    else if (b < a)
        p[a] = b;
}

/* A usable affinity value: present, not "N/A". */
static const char *aff_value(const struct col *c, int kind)
{
    const char *v = kind >= 0 ? c->trail[kind] : NULL;
    return v && *v && strcmp(v, "N/A") != 0 ? v : NULL;
}

/* Join the classes of a and b unless they carry different affinity values. */
static void key_union(int *uf, const char **key, int a, int b)
{
    a = uf_find(uf, a);
    b = uf_find(uf, b);
    if (a == b || (key[a] && key[b] && strcmp(key[a], key[b]) != 0))
        return;
    const char *k = key[a] ? key[a] : key[b];
    uf_union(uf, a, b);
    key[uf_find(uf, a)] = k;
}

/* CPU number (first-appearance order) of every device into cpu[]; returns the count. */
static int group_cpus(const struct smi *s, int *uf, const char **key, int *cpu, char *mark)
{
    int n = s->ncols, keycol = -1;
    static const int prefer[2] = {T_NUMA, T_CPU};
    for (int k = 0; k < 2 && keycol < 0; k++) {
        int ok = 1;
        for (int i = 0; i < n; i++)
            if (s->cols[i].gpu >= 0)
                ok &= aff_value(&s->cols[i], prefer[k]) != NULL;
        if (ok)
            keycol = prefer[k];
    }
    for (int i = 0; i < n; i++) {
        uf[i] = i;
        key[i] = aff_value(&s->cols[i], keycol);
    }
    /* Equal affinity values share a CPU. */
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (key[a] && key[b] && strcmp(key[a], key[b]) == 0)
                key_union(uf, key, a, b);
    /* Then relations, nearest first, never joining two different affinity values. */
    for (int code = C_PIX; code <= C_NODE; code++)
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                if (rel(s, a, b) == code)
                    key_union(uf, key, a, b);
    /* Groups without an affinity value join the first group no SYS cell separates them from. */
    for (int r = 0; r < n; r++) {
        if (uf_find(uf, r) != r || key[r])
            continue;
        memset(mark, 0, (size_t)n);
        for (int a = 0; a < n; a++)
            if (uf_find(uf, a) == r)
                for (int b = 0; b < n; b++)
                    if (rel(s, a, b) == C_SYS)
                        mark[uf_find(uf, b)] = 1;
        for (int q = 0; q < n; q++)
            if (q != r && uf_find(uf, q) == q && !mark[q]) {
                key_union(uf, key, q, r);
                break;
            }
    }
    int ncpu = 0;
    for (int i = 0; i < n; i++)
        cpu[i] = -1;
    for (int i = 0; i < n; i++) {
        int r = uf_find(uf, i);
        if (cpu[r] < 0)
            cpu[r] = ncpu++;
        cpu[i] = cpu[r];
    }
    return ncpu;
}

/* Add a node with a synthetic name base+num that no input label uses. */
BK_MUST_USE
static enum bk_status add_synth(struct smi *s, enum topo_node_kind kind, const char *base, int num,
                                int *out)
{
    for (int attempt = 0; attempt <= s->t->nnodes; attempt++) {
        char *name = attempt ? bk_asprintf("%s%d-%d", base, num, attempt)
                             : bk_asprintf("%s%d", base, num);
        if (!name)
            return BK_ENOMEM;
        enum bk_status st = BK_OK;
        int free_name = topo_find(s->t, name) < 0;
        if (free_name)
            st = topo_add_node(s->t, kind, name, 0, DIAG_AT(s->hdr[0].no, 0), out);
        free(name);
        if (free_name)
            return st;
    }
    return BK_EINTERNAL;
}

/* Switch classes and the PCIe/CPU part of the graph (see PCIE and CPUS in the file comment). */
BK_MUST_USE
static enum bk_status build_pcie(struct smi *s)
{
    int n = s->ncols;
    enum bk_status st = BK_ENOMEM;
    int *buf = calloc((size_t)n * 9, sizeof *buf); /* nine int arrays of n, carved below */
    const char **key = malloc((size_t)n * sizeof *key);
    char *mark = malloc((size_t)n);
    if (!buf || !key || !mark)
        goto out;
    int *leaf = buf, *up = buf + n, *cuf = buf + 2 * n, *cpu = buf + 3 * n, *size = buf + 4 * n;
    int *groups = buf + 5 * n, *leaf_node = buf + 6 * n, *up_node = buf + 7 * n;
    int *cpu_node = buf + 8 * n;
    for (int i = 0; i < n; i++)
        leaf[i] = up[i] = i, leaf_node[i] = up_node[i] = -1;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (rel(s, a, b) == C_PIX)
                uf_union(leaf, a, b);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (rel(s, a, b) == C_PXB)
                uf_union(up, uf_find(leaf, a), uf_find(leaf, b));
    for (int a = 0; a < n; a++) {
        size[uf_find(leaf, a)]++;
        if (uf_find(leaf, a) == a)
            groups[uf_find(up, a)]++;
    }
    int ncpu = group_cpus(s, cuf, key, cpu, mark);
    struct topo_rates const *rt = &s->o->rates;
    for (int c = 0; c < ncpu; c++) {
        BK_CHECK_GOTO(add_synth(s, TOPO_CPU, "CPU", c, &cpu_node[c]), st, out);
        s->t->nodes[cpu_node[c]].socket = c;
        double smp = topo_rate_smp(rt, TOPO_CPU_UNKNOWN);
        for (int c2 = 0; c2 < c; c2++)
            BK_CHECK_GOTO(topo_add_link(s->t, cpu_node[c2], cpu_node[c], TOPO_SMP, 1, smp, smp,
                                        DIAG_NOWHERE),
                          st, out);
    }
    double pcie = topo_rate_pcie(rt, 0, 0);
    int nsw = 0;
    for (int a = 0; a < n; a++) {
        int g = uf_find(leaf, a), p = uf_find(up, g), parent = -1;
        struct diag_loc loc = s->cols[a].loc;
        if (groups[p] >= 2) {
            if (up_node[p] < 0) {
                BK_CHECK_GOTO(add_synth(s, TOPO_PCIE_SWITCH, "PCIeSwitch", nsw++, &up_node[p]),
                              st, out);
                BK_CHECK_GOTO(topo_add_link(s->t, up_node[p], cpu_node[cpu[p]], TOPO_PCIE, 1,
                                            pcie, pcie, loc),
                              st, out);
            }
            parent = up_node[p];
        }
        int attach = parent >= 0 ? parent : cpu_node[cpu[a]];
        if (size[g] >= 2) {
            if (leaf_node[g] < 0) {
                int pa = parent >= 0 ? parent : cpu_node[cpu[g]];
                BK_CHECK_GOTO(add_synth(s, TOPO_PCIE_SWITCH, "PCIeSwitch", nsw++, &leaf_node[g]),
                              st, out);
                BK_CHECK_GOTO(topo_add_link(s->t, leaf_node[g], pa, TOPO_PCIE, 1, pcie, pcie, loc),
                              st, out);
            }
            attach = leaf_node[g];
        }
        BK_CHECK_GOTO(topo_add_link(s->t, s->cols[a].node, attach, TOPO_PCIE, 1, pcie, pcie, loc),
                      st, out);
    }
    st = BK_OK;
out:
    free(buf), free(key), free(mark);
    return st;
}

/* The NVLink generation, from --gpu-model or the matrix's shape; 0 when nothing needs one. */
BK_MUST_USE
static enum bk_status nvlink_model(struct smi *s, int *gen, int *plane, int *per_gpu)
{
    int uniform = -1, any = 0, maxsum = 0, ng = 0, mgen = 0;
    *gen = *plane = 0;
    if (s->o->gpu_model && !(mgen = topo_assumed_gen(s->o, 0, NULL, s->in, s->d)))
        return BK_EINPUT;
    for (int i = 0; i < s->ncols; i++) {
        if (s->cols[i].gpu < 0)
            continue;
        int sum = 0;
        ng++;
        for (int j = 0; j < s->ncols; j++) {
            if (j == i || s->cols[j].gpu < 0)
                continue;
            const struct cell *c = cell(s, i, j);
            int v = c->code == C_NV ? c->nv : 0;
            sum += v;
            any |= v > 0;
            uniform = uniform == -1 || uniform == v ? v : 0;
        }
        maxsum = sum > maxsum ? sum : maxsum;
    }
    int budget_ok = mgen ? uniform == topo_nvlink_budget(mgen)
                         : uniform == 6 || uniform == 12 || uniform == 18;
    *plane = ng >= 3 && uniform > 0 && budget_ok;
    *per_gpu = uniform;
    if (mgen) {
        *gen = mgen;
    } else if (any) {
        char why[96];
        int guess = 0;
        if (*plane) {
            guess = uniform == 6 ? 2 : uniform == 12 ? 3 : 4;
            snprintf(why, sizeof why, "from NV%d between every GPU pair (an NVSwitch plane)",
                     uniform);
        } else {
            guess = maxsum == 4 ? 1 : maxsum == 6 ? 2 : 0;
            if (guess)
                snprintf(why, sizeof why, "from %d NVLinks per GPU", maxsum);
            else
                snprintf(why, sizeof why, "(no known board has %d NVLinks per GPU)", maxsum);
        }
        if (!(*gen = topo_assumed_gen(s->o, guess, why, s->in, s->d)))
            return BK_EINPUT;
    }
    if (!*plane && *gen && maxsum > topo_nvlink_budget(*gen))
        diag_warning(s->d, s->in->name, DIAG_AT(s->hdr[0].no, 0),
                     "a GPU shows %d NVLinks, more than the %d of a %s: if the NV# cells are "
                     "NVSwitch totals, the graph overstates NVLink bandwidth",
                     maxsum, topo_nvlink_budget(*gen), topo_gen_model(*gen));
    return BK_OK;
}

BK_MUST_USE
static enum bk_status build(struct smi *s)
{
    struct topo *t = s->t;
    int gen, plane, per_gpu, nvs = -1;
    BK_CHECK(nvlink_model(s, &gen, &plane, &per_gpu));
    for (int pass = 0; pass < 2; pass++) /* GPUs first, then NICs */
        for (int i = 0; i < s->ncols; i++) {
            struct col *c = &s->cols[i];
            if ((c->gpu >= 0) != (pass == 0))
                continue;
            const char *name = c->dev ? c->dev : c->label;
            struct diag_loc loc = c->dev ? c->dev_loc : c->loc;
            if (topo_find(t, name) >= 0)
                return diag_error(s->d, s->in->name, loc,
                                  "device name '%s' is used twice; every GPU and NIC needs its "
                                  "own name",
                                  name);
            BK_CHECK(topo_add_node(t, pass ? TOPO_NIC : TOPO_GPU, name, 0, loc, &c->node));
            if (pass)
                continue;
            t->nodes[c->node].gpu_order = c->gpu;
            t->nodes[c->node].nvlink_gen = gen;
            if (s->o->gpu_model)
                BK_CHECK(topo_node_set_model(t, c->node, s->o->gpu_model));
        }
    if (plane) { /* one bundle of per_gpu links from each GPU to the plane */
        double r = topo_rate_nvlink(&s->o->rates, gen, per_gpu);
        BK_CHECK(add_synth(s, TOPO_NVSWITCH, "NVSwitch", 0, &nvs));
        for (int i = 0; i < s->ncols; i++)
            if (s->cols[i].gpu >= 0)
                BK_CHECK(topo_add_link(t, s->cols[i].node, nvs, TOPO_NVLINK, per_gpu, r, r,
                                       s->cols[i].row_loc));
    } else {
        for (int i = 0; i < s->ncols; i++)
            for (int j = i + 1; j < s->ncols && s->cols[i].gpu >= 0; j++) {
                const struct cell *c = cell(s, i, j);
                if (c->code != C_NV || s->cols[j].gpu < 0)
                    continue;
                double r = topo_rate_nvlink(&s->o->rates, gen, c->nv);
                BK_CHECK(topo_add_link(t, s->cols[i].node, s->cols[j].node, TOPO_NVLINK, c->nv,
                                       r, r, c->loc));
            }
    }
    return build_pcie(s);
}

static void smi_free(struct smi *s)
{
    free(s->ln.s);
    free(s->ln.col);
    for (int i = 0; i < s->nhdr; i++)
        free(s->hdr[i].s), free(s->hdr[i].col);
    for (int i = 0; i < s->ndict; i++)
        free(s->dict[i]);
    free(s->dict);
    for (int i = 0; i < s->ncols; i++) {
        free(s->cols[i].label);
        free(s->cols[i].dev);
        for (int k = 0; k < T_KINDS; k++)
            free(s->cols[i].trail[k]);
    }
    free(s->cols);
    free(s->m);
}

enum bk_status topo_read_smi(const struct input *in, const struct topo_read_opts *o, struct topo *t,
                            struct diag *d)
{
    struct smi s;
    memset(&s, 0, sizeof s);
    s.in = in;
    s.o = o;
    s.t = t;
    s.d = d;
    int nic_legend;
    enum bk_status st;
    BK_CHECK_GOTO(read_header(&s), st, out);
    BK_CHECK_GOTO(read_rows(&s, &nic_legend), st, out);
    BK_CHECK_GOTO(read_legend(&s, nic_legend), st, out);
    BK_CHECK_GOTO(check_matrix(&s), st, out);
    st = build(&s);
out:
    smi_free(&s);
    return st;
}
