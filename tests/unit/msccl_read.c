/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_read.c - MSCCL files read by the executors' rules (see msccl_read.h).
 *
 * Written from the parser of msccl-executor-nccl (https://github.com/Azure/msccl-executor-nccl
 * at commit c6f6b36d1a4c7ae44916fcc5c8e32c95cce2ae54: src/misc/msccl/msccl_parser.cc, "P"
 * below, and src/include/msccl/msccl_parser.h, "H") and of RCCL (https://github.com/ROCm/rccl
 * at commit 0cbce2a7571c907554199fad7e905f16ec0a565c, same paths and H constants; its parser's
 * lines are P's up to 710 and two later past 721). Each rule and its lines:
 *  - Between elements only ' ', '\n' and '\r' may stand, then '<' (P 104-113): a tab or text
 *    there is an error. "<!--" starts a comment that runs to "-->" (P 81-102, 117-121).
 *  - A name ends at ' ', '>', '/', '\n' or '\r', an attribute's name at '=' (P 55-78); one of
 *    254 bytes or more is refused (P 69-73).
 *  - A value opens with '"' or '\'' and runs to the next '"' whatever opened it, and no entity
 *    is decoded: "&amp;" stays five bytes (P 26-52; without INT_OK a bare value is refused,
 *    P 29-42). Its buffer holds 255 bytes and the copy is not bounded (H 20, 34): a longer
 *    value is refused here.
 *  - Attributes follow one another while the byte after a value is ' ' (P 137-146), so a
 *    newline or tab inside a tag is an error; the tag ends with '>' or with '/' and '>'
 *    (P 147-155). Attributes past the 16th are read but not kept (P 141-144, H 21).
 *  - A close tag must name the open element (P 185-190); the end of the file inside one is an
 *    error (P 176-179).
 *  - Only <algo> at the top, <gpu> in it, <tb> in a gpu and <step> in a tb are kept
 *    (P 211-254); any other element is skipped with all it holds (P 204-207). A <step> with
 *    an element inside makes P 193-194 use a NULL handler table (P 211-214): refused.
 *  - At most 4095 kept elements for one rank: <algo>, every <gpu>, and that rank's <tb> and
 *    <step> (H 23, P 169-172, 224-234); at most 1024 kept children of one element (H 22,
 *    unchecked at P 195).
 *  - The metadata pass, which decides whether a file is used at all, reads only the file's
 *    first element (P 705-708, 721-790): it must be <algo>.
 *  - Lookup: the first kept attribute of that key (H 48-65); a missing one is an error
 *    (H 67-74); numbers are strtol/strtoll with base 0, the rest of the value ignored (H 75-87).
 * Where the executors' behaviour is undefined (a close tag at the top level, which P 192-199
 * would take for a new element), this reader refuses the file.
 */
#include "msccl_read.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_NONE, T_OPEN, T_CLOSE, T_SINGLE };

#define MR_MAX_NODES 4096 /* H 23 */
#define MR_MAX_SUBS 1024  /* H 22 */

struct src {
    const char *p;
    size_t n, at;
    char *why;
    int cap, bad;
};

static int fail(struct src *s, const char *fmt, ...)
{
    if (!s->bad) {
        int line = 1;
        for (size_t i = 0; i < s->at && i < s->n; i++)
            line += s->p[i] == '\n';
        int k = snprintf(s->why, (size_t)s->cap, "line %d: ", line);
        va_list ap;
        va_start(ap, fmt);
        if (k >= 0 && k < s->cap)
            vsnprintf(s->why + k, (size_t)(s->cap - k), fmt, ap);
        va_end(ap);
    }
    s->bad = 1;
    return -1;
}

static int next(struct src *s, char *c)
{
    if (s->at >= s->n)
        return fail(s, "unexpected end of file");
    *c = s->p[s->at++];
    return 0;
}

/* A value after '=': see the head for the quote rule. */
static int value(struct src *s, char **out, char *last)
{
    char c = 0;
    if (next(s, &c) < 0)
        return -1;
    if (c != '"' && c != '\'')
        return fail(s, "a value must open with a quote");
    size_t from = s->at;
    do {
        if (next(s, &c) < 0)
            return -1;
    } while (c != '"');
    size_t len = s->at - 1 - from;
    if (len > MR_STR)
        return fail(s, "a value of %zu bytes overflows the executors' %d", len, MR_STR);
    if (!(*out = malloc(len + 1)))
        return fail(s, "out of memory");
    memcpy(*out, s->p + from, len);
    (*out)[len] = '\0';
    return next(s, last);
}

/* A name, and its value when one follows '=' (val NULL: a value is an error). */
static int token(struct src *s, char **name, char **val, char *last)
{
    size_t from = s->at;
    char c = 0;
    for (;;) {
        if (next(s, &c) < 0)
            return -1;
        if (c == '=')
            break;
        if (s->at - from >= MR_STR)
            return fail(s, "a name of %d bytes or more", MR_STR - 1);
        if (c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r')
            break;
    }
    size_t len = s->at - 1 - from;
    if (!(*name = malloc(len + 1)))
        return fail(s, "out of memory");
    memcpy(*name, s->p + from, len);
    (*name)[len] = '\0';
    if (c != '=') {
        *last = c;
        return 0;
    }
    if (!val)
        return fail(s, "a value after the element name %s", *name);
    return value(s, val, last);
}

static void node_clear(struct mr_node *n)
{
    free(n->name);
    for (int i = 0; i <= MR_ATTRS; i++)
        free(n->key[i]), free(n->val[i]);
    for (int i = 0; i < n->nsub; i++)
        node_clear(&n->sub[i]);
    free(n->sub);
    memset(n, 0, sizeof *n);
}

static int skip_comment(struct src *s, const char *start, char c)
{
    char end[4] = "...";
    for (const char *q = start; *q; q++)
        end[0] = end[1], end[1] = end[2], end[2] = *q;
    end[0] = end[1], end[1] = end[2], end[2] = c;
    while (strcmp(end, "-->") != 0) {
        if (next(s, &c) < 0)
            return fail(s, "unterminated comment");
        end[0] = end[1], end[1] = end[2], end[2] = c;
    }
    return 0;
}

/* One tag into n; returns its T_ kind, or -1. */
static int get_node(struct src *s, struct mr_node *n)
{
    memset(n, 0, sizeof *n);
    char c = ' ';
    while (c == ' ' || c == '\n' || c == '\r') {
        if (s->at >= s->n)
            return T_NONE;
        c = s->p[s->at++];
    }
    if (c != '<')
        return fail(s, "'%c' where '<' must come", c);
    if (token(s, &n->name, NULL, &c) < 0)
        return -1;
    if (strncmp(n->name, "!--", 3) == 0) {
        int e = skip_comment(s, n->name + 3, c);
        node_clear(n);
        return e < 0 ? -1 : get_node(s, n);
    }
    if (n->name[0] == '\0' && c == '/') {
        free(n->name);
        if (token(s, &n->name, NULL, &c) < 0)
            return -1;
        return c == '>' ? T_CLOSE : fail(s, "'%c' in the close tag of %s", c, n->name);
    }
    while (c == ' ') {
        int a = n->nattr;
        free(n->key[a]), free(n->val[a]);
        n->key[a] = n->val[a] = NULL;
        if (token(s, &n->key[a], &n->val[a], &c) < 0)
            return -1;
        if (a < MR_ATTRS)
            n->nattr++;
    }
    int type = T_OPEN;
    if (c == '/') {
        char *rest = NULL;
        int e = token(s, &rest, NULL, &c);
        free(rest);
        if (e < 0)
            return -1;
        type = T_SINGLE;
    }
    return c == '>' ? type : fail(s, "'%c' where a tag must end", c);
}

/* The elements inside head (NULL: the file): those named keep are kept in head->sub, the rest
 * skipped. depth 0 file, 1 algo, 2 gpu, 3 tb, 4 step; -1 skipping. */
struct top {
    struct mr_node *algo; /* the first <algo>, which P's FindTag takes */
    int nalgo;
};

static int load(struct src *s, struct mr_node *head, int type, int depth, struct top *top)
{
    static const char *const keep_at[] = {"algo", "gpu", "tb", "step", NULL};
    const char *keep = depth >= 0 ? keep_at[depth] : NULL;
    if (type == T_SINGLE)
        return 0;
    for (;;) {
        struct mr_node n;
        int t = get_node(s, &n);
        if (t < 0 || (t == T_NONE && head)) {
            node_clear(&n);
            return t < 0 ? -1 : fail(s, "<%s> is not closed", head->name);
        }
        if (t == T_NONE)
            return 0;
        if (t == T_CLOSE) {
            int same = head && strcmp(n.name, head->name) == 0;
            node_clear(&n);
            return same ? 0 : fail(s, "a close tag that closes nothing open");
        }
        if (depth == 4) {
            node_clear(&n);
            return fail(s, "an element inside <step> (the executors' parser then crashes)");
        }
        if (keep && strcmp(n.name, keep) == 0) {
            if (head && head->nsub == MR_MAX_SUBS) {
                node_clear(&n);
                return fail(s, "over %d <%s> in one <%s>", MR_MAX_SUBS, keep, head->name);
            }
            struct mr_node *dst = &n;
            if (head) {
                struct mr_node *v = realloc(head->sub, (size_t)(head->nsub + 1) * sizeof *v);
                if (!v) {
                    node_clear(&n);
                    return fail(s, "out of memory");
                }
                head->sub = v;
                dst = &head->sub[head->nsub++];
                *dst = n;
            } else if (top->nalgo++ > 0) { /* a later <algo>: read, not used */
                struct mr_node skip = n;
                int e = load(s, &skip, t, -1, top);
                node_clear(&skip);
                if (e < 0)
                    return -1;
                continue;
            } else {
                *top->algo = n;
                dst = top->algo;
            }
            if (load(s, dst, t, depth + 1, top) < 0)
                return -1;
        } else {
            struct mr_node skip = n;
            int e = load(s, &skip, t, -1, top);
            node_clear(&skip);
            if (e < 0)
                return -1;
        }
    }
}

const char *mr_attr(const struct mr_node *n, const char *key)
{
    for (int i = 0; i < n->nattr; i++)
        if (strcmp(n->key[i], key) == 0)
            return n->val[i];
    return NULL;
}

int mr_int(const struct mr_node *n, const char *key, int *ok)
{
    const char *v = mr_attr(n, key);
    if (!v)
        *ok = 0;
    return v ? (int)strtol(v, NULL, 0) : 0;
}

int64_t mr_int64(const struct mr_node *n, const char *key, int *ok)
{
    const char *v = mr_attr(n, key);
    if (!v)
        *ok = 0;
    return v ? (int64_t)strtoll(v, NULL, 0) : 0;
}

void mr_free(struct mr_node *algo)
{
    if (algo)
        node_clear(algo);
    free(algo);
}

struct mr_node *mr_read(const char *path, char *why, int cap)
{
    snprintf(why, (size_t)cap, "%s", "");
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, (size_t)cap, "cannot open");
        return NULL;
    }
    struct {
        char *p;
        size_t n, cap;
    } b = {NULL, 0, 0};
    for (;;) {
        if (b.n == b.cap) {
            size_t c = b.cap ? 2 * b.cap : 65536;
            char *v = realloc(b.p, c);
            if (!v)
                break;
            b.p = v, b.cap = c;
        }
        size_t got = fread(b.p + b.n, 1, b.cap - b.n, f);
        if (got == 0)
            break;
        b.n += got;
    }
    fclose(f);
    struct src s = {b.p ? b.p : "", b.n, 0, why, cap, 0};
    struct mr_node first;
    int t = get_node(&s, &first); /* the metadata pass */
    int is_algo = t == T_OPEN && strcmp(first.name, "algo") == 0;
    node_clear(&first);
    struct mr_node *algo = calloc(1, sizeof *algo);
    struct top top = {algo, 0};
    if (!s.bad && !is_algo)
        fail(&s, "the file does not open with <algo ...>");
    s.at = 0;
    if (!s.bad && algo && load(&s, NULL, T_OPEN, 0, &top) == 0 && top.nalgo == 0)
        fail(&s, "no <algo>");
    free(b.p);
    if (!s.bad && algo) { /* kept elements per rank (see the head) */
        long most = 0;
        for (int g = 0; g < algo->nsub; g++) {
            long k = algo->sub[g].nsub;
            for (int t2 = 0; t2 < algo->sub[g].nsub; t2++)
                k += algo->sub[g].sub[t2].nsub;
            most = k > most ? k : most;
        }
        if (1 + algo->nsub + most >= MR_MAX_NODES)
            fail(&s, "%ld elements for one rank: the executors read at most %d",
                 1 + algo->nsub + most, MR_MAX_NODES - 1);
    }
    if (s.bad || !algo) {
        if (!algo)
            snprintf(why, (size_t)cap, "out of memory");
        mr_free(algo);
        return NULL;
    }
    return algo;
}
