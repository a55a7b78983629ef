/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * smi_parse.c - the `nvidia-smi topo -m` reader's text side (topo_smi.c has the rules): lines
 * without escapes, the header and its labels, the rows and their cells, the NIC legend, and the
 * checks of the matrix.
 */
#include "read/smi_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/strbuf.h"

static const char *const code_names[] = {"?", "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};
static const char *const trail_words[T_KINDS][3] = {
    {"CPU", "Affinity", NULL}, {"NUMA", "Affinity", NULL}, {"GPU", "NUMA", "ID"}};
static const char *const trail_names[T_KINDS] = {"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"};

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

/* The leftover of an escape sequence whose ESC byte a paste lost: an SGR ("[4m", "[0m",
 * "[1;32m") at p[i] == '[', or the "(B" of tput sgr0's charset reset at p[i] == '('; returns its
 * length, 0 if none. Nothing else in nvidia-smi's output holds '[' or "(B". */
static size_t lost_escape(const char *p, size_t i, size_t len)
{
    if (p[i] == '(')
        return i + 1 < len && (p[i + 1] == 'B' || p[i + 1] == '0') ? 2 : 0;
    size_t j = i + 1;
    while (j < len && ((p[j] >= '0' && p[j] <= '9') || p[j] == ';'))
        j++;
    return j < len && p[j] == 'm' ? j + 1 - i : 0;
}

/* Read and clean the next line into s->ln (escape sequences, their leftovers and CRs removed);
 * returns 0 at the end of the input. */
BK_MUST_USE
static enum bk_status read_line(struct smi *s, int *got)
{
    const char *data = s->rd.in->data;
    *got = 0;
    if (s->off >= s->rd.in->len)
        return BK_OK;
    const char *p = data + s->off;
    size_t rest = s->rd.in->len - s->off;
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
    struct bk_array text[] = {BK_ARRAY(l->s), BK_ARRAY(l->col)};
    BK_CHECK(bk_grow_arrays(text, 2, &l->cap, len + 1));
    size_t i = 0;
    if (p == data && len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len) {
        if (p[i] == 0x1b) {
            i = skip_escape(p, i, len);
            continue;
        }
        size_t lost = p[i] == '[' || p[i] == '(' ? lost_escape(p, i, len) : 0;
        if (lost) {
            i += lost;
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
        return diag_error(s->rd.d, s->rd.in->name, loc,
                          "column '%.*s' comes after the affinity columns; expected CPU Affinity, "
                          "NUMA Affinity or GPU NUMA ID there",
                          quote_len(n), p);
    if (s->ncols >= MAX_COLS)
        return diag_error(s->rd.d, s->rd.in->name, loc, "more than %d GPU and NIC columns", MAX_COLS);
    for (int i = 0; i < s->ncols; i++)
        if (strlen(s->cols[i].label) == n && memcmp(s->cols[i].label, p, n) == 0)
            return diag_error(s->rd.d, s->rd.in->name, loc,
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
            return diag_error(s->rd.d, s->rd.in->name, loc, "GPU number in '%.*s' is absurdly large",
                              quote_len(n), p);
        c->gpu = (int)strtol(p + 3, NULL, 10);
    }
    return BK_OK;
}

/* An affinity label that starts at l->s[i] and goes on at the start of the next header line
 * (wrapped between its words: "CPU" | "Affinity"): its kind, and how far it reaches into next
 * (0: none). */
static size_t trail_across(const struct line *l, size_t i, const struct line *next, int *kind)
{
    char buf[64];
    size_t rest = l->n - i, lead = 0;
    while (rest && is_ws(l->s[i + rest - 1]))
        rest--;
    while (next && lead < next->n && is_ws(next->s[lead]))
        lead++;
    if (!next || rest + 1 + (next->n - lead) >= sizeof buf)
        return 0;
    memcpy(buf, l->s + i, rest);
    buf[rest] = ' ';
    memcpy(buf + rest + 1, next->s + lead, next->n - lead);
    size_t m = match_trail(buf, rest + 1 + (next->n - lead), kind);
    return m > rest + 1 ? lead + (m - rest - 1) : 0;
}

/* The labels of header line l from *start; *start gets where the next line's labels begin
 * (after an affinity label wrapped onto it). */
BK_MUST_USE
static enum bk_status scan_header_line(struct smi *s, const struct line *l, const struct line *next,
                                       size_t *start)
{
    size_t i = *start;
    *start = 0;
    for (;;) {
        while (i < l->n && is_ws(l->s[i]))
            i++;
        if (i >= l->n)
            return BK_OK;
        int kind;
        size_t tl = match_trail(l->s + i, l->n - i, &kind), across = 0;
        if (!tl && (across = trail_across(l, i, next, &kind)) != 0)
            tl = l->n - i, *start = across;
        if (tl) {
            for (int k = 0; k < s->ntrail; k++)
                if (s->trail[k] == kind)
                    return diag_error(s->rd.d, s->rd.in->name, loc_at(l, i),
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

/* Is w[0..n) a word of the affinity labels ("CPU", "Affinity", "NUMA", ...)? */
static int is_trail_word(const char *w, size_t n)
{
    for (int k = 0; k < T_KINDS; k++)
        for (int j = 0; j < 3 && trail_words[k][j]; j++)
            if (strlen(trail_words[k][j]) == n && strncasecmp(trail_words[k][j], w, n) == 0)
                return 1;
    return 0;
}

/* Is w[0..n) a whole header word: a GPU or NIC label, a row label, or a word of the affinity
 * labels? */
static int is_header_word(const struct smi *s, const char *w, size_t n)
{
    if (match_devlabel(w, n) == n || is_trail_word(w, n))
        return 1;
    for (int i = 0; i < s->ndict; i++)
        if (strlen(s->dict[i]) == n && memcmp(s->dict[i], w, n) == 0)
            return 1;
    return 0;
}

/* A wrap inside a header label leaves halves that join to one label ("Af" + "finity",
 * "GPU1" + "0"). Refuse it at the first half: a half may be a whole label of its own, so
 * joining them would be a guess. */
BK_MUST_USE
static enum bk_status check_header_wraps(struct smi *s)
{
    for (int h = 1; h < s->nhdr; h++) {
        const struct line *a = &s->hdr[h - 1], *b = &s->hdr[h];
        size_t ae = a->n, as, pos = 0, bs, bn = next_tok(b, &pos, &bs);
        while (ae && is_ws(a->s[ae - 1]))
            ae--;
        for (as = ae; as && !is_ws(a->s[as - 1]); as--)
            ;
        char joined[64];
        if (as == ae || !bn || ae - as + bn >= sizeof joined ||
            is_header_word(s, b->s + bs, bn))
            continue;
        memcpy(joined, a->s + as, ae - as);
        memcpy(joined + (ae - as), b->s + bs, bn);
        joined[ae - as + bn] = '\0';
        if (is_header_word(s, joined, ae - as + bn))
            return diag_error(s->rd.d, s->rd.in->name, loc_at(a, as),
                              "header label '%s' is split by a line wrap ('%.*s' here, '%.*s' at "
                              "the start of line %d); join the header's lines, or print it on a "
                              "wider terminal",
                              joined, (int)(ae - as), a->s + as, (int)bn, b->s + bs, b->no);
    }
    return BK_OK;
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
    /* Digits start a row's affinity values, unless they end the previous line's "GPU" or
       "NIC" (a wrap inside a label, which check_header_wraps refuses). */
    const struct line *prev = &s->hdr[s->nhdr - 1];
    size_t pe = prev->n;
    while (pe && is_ws(prev->s[pe - 1]))
        pe--;
    int glued = pe >= 3 && (strncmp(prev->s + pe - 3, "GPU", 3) == 0 ||
                            strncmp(prev->s + pe - 3, "NIC", 3) == 0);
    for (pos = 0; (n = next_tok(l, &pos, &st));)
        if ((isdigit((unsigned char)l->s[st]) && !(glued && st == fst)) ||
            (n == 3 && memcmp(l->s + st, "N/A", 3) == 0))
            return 0;
    /* A row starts with a column's label; the words of an affinity label are no row's. */
    const struct line *h = &s->hdr[0];
    for (pos = 0; (n = next_tok(h, &pos, &st));)
        if (n == first && memcmp(h->s + st, l->s + fst, n) == 0 && !is_trail_word(l->s + fst, n))
            return 0;
    return 1;
}

BK_MUST_USE
/* Keep the name of an `nvidia-smi -L` line ("GPU 0: NVIDIA A800-SXM4-80GB (UUID: GPU-...)");
 * other lines before the header are skipped. */
BK_MUST_USE
static enum bk_status note_listed_gpu(struct smi *s)
{
    const struct line *l = &s->ln;
    int gpu, at = 0;
    if (l->too_long || sscanf(l->s, " GPU %d: %n", &gpu, &at) != 1 || !at || gpu < 0 ||
        gpu >= MAX_COLS)
        return BK_OK;
    const char *name = l->s + at, *end = strstr(name, " (UUID:");
    size_t n = end ? (size_t)(end - name) : strlen(name);
    while (n && is_ws(name[n - 1]))
        n--;
    if (!n || !end)
        return BK_OK; /* without its UUID it is not nvidia-smi -L's line */
    BK_CHECK(bk_grow_int((void **)&s->listed, &s->listed_cap, s->nlisted, sizeof *s->listed));
    struct listed_gpu *g = &s->listed[s->nlisted];
    if (!(g->name = bk_strndup(name, n)))
        return BK_ENOMEM;
    g->gpu = gpu;
    g->loc = loc_at(l, (size_t)at);
    s->nlisted++;
    return BK_OK;
}

enum bk_status smi_read_header(struct smi *s)
{
    int got;
    for (;;) {
        BK_CHECK(read_line(s, &got));
        if (!got)
            return diag_error(s->rd.d, s->rd.in->name, DIAG_AT(1, 0),
                              "no 'nvidia-smi topo -m' header: expected a line of column labels "
                              "starting with GPU0");
        size_t pos = 0, st, n = next_tok(&s->ln, &pos, &st);
        const char *p = s->ln.s + st;
        if (!s->ln.too_long && n >= 4 && memcmp(p, "GPU0", 4) == 0 &&
            (n == 4 || isalpha((unsigned char)p[4])))
            break;
        BK_CHECK(note_listed_gpu(s));
    }
    size_t pos = 0, st, n;
    int nv;
    next_tok(&s->ln, &pos, &st);
    if ((n = next_tok(&s->ln, &pos, &st)) && parse_code(s->ln.s + st, n, &nv) != C_NONE)
        return diag_error(s->rd.d, s->rd.in->name, loc_at(&s->ln, 0),
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
    BK_CHECK(check_header_wraps(s));
    if (!(s->cols = calloc(MAX_COLS, sizeof *s->cols)))
        return BK_ENOMEM;
    size_t start = 0;
    for (int i = 0; i < s->nhdr; i++)
        BK_CHECK(scan_header_line(s, &s->hdr[i], i + 1 < s->nhdr ? &s->hdr[i + 1] : NULL, &start));
    int ngpu = 0;
    for (int i = 0; i < s->ncols; i++)
        ngpu += s->cols[i].gpu >= 0;
    if (!ngpu)
        return diag_error(s->rd.d, s->rd.in->name, DIAG_AT(s->hdr[0].no, 0),
                          "the header names no GPU columns (GPU0, GPU1, ...)");
    if (!(s->m = calloc((size_t)s->ncols * (size_t)s->ncols, sizeof *s->m)))
        return BK_ENOMEM;
    return BK_OK;
}

/* A row that a narrow terminal or an e-mail wrapped goes on on the next line, which then starts
 * with what the row still lacks (a cell, or with cells==0 an affinity value) and not with a row
 * label. On 1 s->ln holds that line; on 0 the input is as it was (the line is read again). */
BK_MUST_USE
static enum bk_status wrapped_rest(struct smi *s, int cells, int *more)
{
    size_t off = s->off;
    int lineno = s->lineno, got, nv;
    *more = 0;
    BK_CHECK(read_line(s, &got));
    size_t pos = 0, st, n = got && !s->ln.too_long ? next_tok(&s->ln, &pos, &st) : 0;
    const char *p = s->ln.s + st;
    if (n && smi_find_col(s, p, n) < 0)
        *more = cells ? parse_code(p, n, &nv) != C_NONE
                      : isdigit((unsigned char)p[0]) || p[0] == ',' ||
                            (n == 3 && memcmp(p, "N/A", 3) == 0);
    if (!*more) {
        s->off = off;
        s->lineno = lineno;
    }
    return BK_OK;
}

BK_MUST_USE
static enum bk_status parse_row(struct smi *s, int r, size_t pos)
{
    const struct line *l = &s->ln;
    struct col *c = &s->cols[r];
    size_t st, n;
    int more;
    for (int j = 0; j < s->ncols; j++) {
        n = next_tok(l, &pos, &st);
        if (!n) {
            struct diag_loc end = loc_at(l, st);
            BK_CHECK(wrapped_rest(s, 1, &more));
            if (!more)
                return diag_error(s->rd.d, s->rd.in->name, end,
                                  "row %s has %d matrix cells but the header has %d GPU and NIC "
                                  "columns: the matrix must be square",
                                  c->label, j, s->ncols);
            pos = 0;
            n = next_tok(l, &pos, &st);
        }
        const char *p = l->s + st;
        int nv, code = n ? parse_code(p, n, &nv) : C_NONE;
        if (code != C_NONE) {
            s->m[(size_t)r * s->ncols + j] = (struct cell){(unsigned char)code,
                                                           (unsigned char)nv, loc_at(l, st)};
            continue;
        }
        if (!n || isdigit((unsigned char)p[0]) || (n == 3 && memcmp(p, "N/A", 3) == 0))
            return diag_error(s->rd.d, s->rd.in->name, loc_at(l, st),
                              "row %s has %d matrix cells but the header has %d GPU and NIC "
                              "columns: the matrix must be square",
                              c->label, j, s->ncols);
        return diag_error(s->rd.d, s->rd.in->name, loc_at(l, st),
                          "unknown cell '%.*s' in row %s, column %s: expected X, NV#, PIX, PXB, "
                          "PHB, NODE, SYS or SOC",
                          quote_len(n), p, c->label, s->cols[j].label);
    }
    char *last = NULL; /* the value before a wrap, when it touched the line's end */
    struct diag_loc last_loc = {0, 0};
    for (int k = 0;; k++) {
        if (!(n = next_tok(l, &pos, &st)) && c->gpu >= 0 && k < s->ntrail) {
            if (k > 0 && c->trail[s->trail[k - 1]] && pos == l->n && l->n &&
                !is_ws(l->s[l->n - 1])) {
                last = c->trail[s->trail[k - 1]];
                last_loc = loc_at(l, l->n - strlen(last));
            }
            BK_CHECK(wrapped_rest(s, 0, &more)); /* the affinities wrapped onto the next line? */
            pos = 0;
            n = more ? next_tok(l, &pos, &st) : 0;
            /* No blank on either side of the wrap: it fell inside a value ("0-1" | "9,40-59"),
               or a blank was stripped; either way which values these are is a guess. */
            if (n && last && (st == 0 || l->s[st] == ','))
                return diag_error(s->rd.d, s->rd.in->name, last_loc,
                                  "row %s's affinity value '%.*s' may be split by a line wrap "
                                  "(its rest '%.*s' starts line %d); join the row's lines, or "
                                  "print it on a wider terminal",
                                  c->label, QUOTE, last, quote_len(n), l->s + st, l->no);
        }
        if (!n)
            break;
        if (k >= s->ntrail)
            return diag_error(s->rd.d, s->rd.in->name, loc_at(l, st),
                              "extra cell '%.*s' in row %s: the header has only %d columns",
                              quote_len(n), l->s + st, c->label, s->ncols + s->ntrail);
        if (!(c->trail[s->trail[k]] = bk_strndup(l->s + st, n)))
            return BK_ENOMEM;
    }
    return BK_OK;
}

/* The matrix rows, up to a blank line, a legend, or a line that is not a row. */
BK_MUST_USE
enum bk_status smi_read_rows(struct smi *s, int *nic_legend)
{
    int got, nrows = 0, nv;
    *nic_legend = 0;
    for (;;) {
        BK_CHECK(read_line(s, &got));
        if (!got)
            return BK_OK;
        const struct line *l = &s->ln;
        if (l->too_long)
            return diag_error(s->rd.d, s->rd.in->name, DIAG_AT(l->no, 0),
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
        int r = smi_find_col(s, l->s + st, n);
        if (r < 0) {
            if (n2 && parse_code(l->s + st2, n2, &nv) != C_NONE)
                return diag_error(s->rd.d, s->rd.in->name, loc_at(l, st),
                                  "row '%.*s' names no column of the header", quote_len(n),
                                  l->s + st);
            return BK_OK; /* text after the matrix */
        }
        if (s->cols[r].has_row)
            return diag_error(s->rd.d, s->rd.in->name, loc_at(l, st),
                              "second row for %s (the first is at line %d)", s->cols[r].label,
                              s->cols[r].row_loc.line);
        s->cols[r].has_row = 1;
        s->cols[r].row_loc = loc_at(l, st);
        BK_CHECK(parse_row(s, r, pos));
        nrows++;
    }
}

/* "NIC Legend:" entries, "NIC0: mlx5_0", and a pasted P2P matrix (smi_p2p.c); everything else
 * after the matrix is ignored. */
BK_MUST_USE
enum bk_status smi_read_legend(struct smi *s, int in_nic_legend)
{
    int got;
    struct smi_p2p p2p = {0};
    for (;;) {
        BK_CHECK(read_line(s, &got));
        if (!got)
            return BK_OK;
        const struct line *l = &s->ln;
        int nic;
        if (l->too_long || smi_p2p_line(s, l, &p2p))
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
        int c = smi_find_col(s, l->s + i, ll);
        if (!n || c < 0 || s->cols[c].dev)
            continue;
        if (!(s->cols[c].dev = bk_strndup(l->s + st, n)))
            return BK_ENOMEM;
        s->cols[c].dev_loc = loc_at(l, st);
    }
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
enum bk_status smi_check_matrix(struct smi *s)
{
    const char *f = s->rd.in->name;
    char ta[16], tb[16];
    int warned = 0;
    for (int i = 0; i < s->ncols; i++)
        if (s->cols[i].gpu >= 0 && !s->cols[i].has_row)
            return diag_error(s->rd.d, f, s->cols[i].loc,
                              "no row for column %s: the matrix must be square, with one row per "
                              "GPU column",
                              s->cols[i].label);
    for (int i = 0; i < s->ncols; i++)
        for (int j = 0; j < s->ncols && s->cols[i].has_row; j++) {
            const struct cell *a = cell(s, i, j);
            code_text(a, ta, sizeof ta);
            if (i == j && a->code != C_X)
                return diag_error(s->rd.d, f, a->loc,
                                  "diagonal cell of row %s is %s: a device's own cell must be X",
                                  s->cols[i].label, ta);
            if (i != j && a->code == C_X)
                return diag_error(s->rd.d, f, a->loc,
                                  "X in row %s, column %s: X marks only a device's own cell",
                                  s->cols[i].label, s->cols[j].label);
            if (a->code == C_NV && (s->cols[i].gpu < 0 || s->cols[j].gpu < 0))
                return diag_error(s->rd.d, f, a->loc, "%s between %s and %s: NVLink joins GPUs only",
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
                return diag_error(s->rd.d, f, a->loc,
                                  "asymmetric NVLink cells: row %s, column %s is %s but row %s, "
                                  "column %s (line %d, column %d) is %s",
                                  s->cols[i].label, s->cols[j].label, ta, s->cols[j].label,
                                  s->cols[i].label, b->loc.line, b->loc.col, tb);
            if (!warned++) /* one warning, not one per cell of a bad capture */
                diag_warning(s->rd.d, f, a->loc,
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
