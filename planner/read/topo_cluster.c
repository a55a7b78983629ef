/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_cluster.c - the reader for cluster files (blinkc-topology(5), CLUSTER FILES): a few lines
 * that name one topology file per server, in any format blinkc reads, and the NICs' rate.
 *
 *     cluster NAME
 *     nic-speed BW              (optional)
 *     server NAME PATH          (one per server, 2 to TOPO_JOIN_MAX_SERVERS)
 *
 * The file is lexed like a .topo file (text_lex.c) and checked whole before any server file is
 * opened, so a typo is reported before a missing file. Each distinct PATH (relative to the
 * cluster file's directory) is read once through topo_read, detected on its own, and the
 * servers are joined on the model (topo_join.c). The files are opened through the read options'
 * open_file (the file system unless a test reads from memory). Errors name FILE:LINE:COL of the
 * cluster file; an error inside a server file names that file's position and gets a note at
 * the server line. Like every reader it leaves finalizing to topo_read.
 */
#include "read/reader.h"

#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "read/text_lex.h"
#include "topo/topo_join.h"
#include "read/topo_read.h"

struct server_line {
    char *name, *path;  /* as written */
    int line, col, pcol; /* the statement and its PATH token */
    int file;            /* index into the distinct files read */
};

struct file_read {
    char *path;          /* resolved */
    struct topo t;
    int read;            /* t holds a finalized topology */
};

struct cluster_reader {
    struct reader rd;    /* rd.t: the servers joined */
    struct lexer lx;
    int cluster_line, cluster_col;
    double nic_gbps;     /* 0: not given */
    char *nic_text;
    int nic_line, nic_col;
    struct server_line *s;
    int ns, s_cap;
    struct file_read *f;
    int nf, f_cap;
};

/* Check the statement has exactly `want` tokens, none empty, the form being `usage`. */
BK_MUST_USE
static enum bk_status arity(struct cluster_reader *r, int want, const char *usage)
{
    const struct lexer *lx = &r->lx;
    if (lx->ntoks < want)
        return lex_error(&r->lx, lx->toks[lx->ntoks - 1].end, "missing argument: the form is '%s'",
                         usage);
    if (lx->ntoks > want)
        return lex_error(&r->lx, lx->toks[want].col, "unexpected '%s': the form is '%s'%s",
                         lx->toks[want].text, usage,
                         want == 3 ? " (quote a PATH that contains spaces)" : "");
    for (int k = 1; k < want; k++)
        if (!lx->toks[k].text[0])
            return lex_error(&r->lx, lx->toks[k].col, "empty argument: the form is '%s'", usage);
    return BK_OK;
}

BK_MUST_USE
static enum bk_status stmt_server(struct cluster_reader *r)
{
    BK_CHECK(arity(r, 3, "server NAME PATH"));
    const struct lex_tok *nm = &r->lx.toks[1], *path = &r->lx.toks[2];
    /* Node names become NAME.node: without a dot in NAME no two servers' names can collide. */
    if (strchr(nm->text, '.'))
        return lex_error(&r->lx, nm->col, "a server name cannot contain '.' (it prefixes the "
                                          "server's node names as NAME.node)");
    for (int k = 0; k < r->ns; k++)
        if (strcmp(r->s[k].name, nm->text) == 0)
            return lex_error(&r->lx, nm->col, "server '%s' already named on line %d", nm->text,
                             r->s[k].line);
    if (strcmp(path->text, "-") == 0)
        return lex_error(&r->lx, path->col, "a server file cannot be standard input ('-')");
    if (r->ns == TOPO_JOIN_MAX_SERVERS)
        return lex_error(&r->lx, r->lx.toks[0].col, "more than %d servers",
                         TOPO_JOIN_MAX_SERVERS);
    BK_CHECK(bk_grow_int((void **)&r->s, &r->s_cap, r->ns, sizeof *r->s));
    struct server_line *sl = &r->s[r->ns];
    *sl = (struct server_line){strdup(nm->text), strdup(path->text), r->lx.line,
                               r->lx.toks[0].col, path->col, -1};
    r->ns++;
    return sl->name && sl->path ? BK_OK : BK_ENOMEM;
}

BK_MUST_USE
static enum bk_status stmt_nic_speed(struct cluster_reader *r)
{
    BK_CHECK(arity(r, 2, "nic-speed BW"));
    const struct lex_tok *bw = &r->lx.toks[1];
    if (r->nic_line)
        return lex_error(&r->lx, r->lx.toks[0].col,
                         "second 'nic-speed' statement (the rate was given on line %d)",
                         r->nic_line);
    const char *why = "not a bandwidth";
    if (!topo_parse_bandwidth(bw->text, &r->nic_gbps, &why))
        return lex_error(&r->lx, bw->col, "bad bandwidth '%s' for nic-speed: %s", bw->text, why);
    r->nic_line = r->lx.line;
    r->nic_col = r->lx.toks[0].col;
    return (r->nic_text = bk_asprintf("nic-speed %s", bw->text)) ? BK_OK : BK_ENOMEM;
}

BK_MUST_USE
static enum bk_status statement(struct cluster_reader *r)
{
    const struct lex_tok *kw = &r->lx.toks[0];
    if (!r->cluster_line) {
        if (strcmp(kw->text, "cluster") != 0)
            return lex_error(&r->lx, kw->col,
                             "a cluster file starts with 'cluster NAME', not '%s'", kw->text);
        BK_CHECK(arity(r, 2, "cluster NAME"));
        r->cluster_line = r->lx.line;
        r->cluster_col = kw->col;
        return topo_set_name(r->rd.t, r->lx.toks[1].text);
    }
    if (strcmp(kw->text, "server") == 0)
        return stmt_server(r);
    if (strcmp(kw->text, "nic-speed") == 0)
        return stmt_nic_speed(r);
    if (strcmp(kw->text, "cluster") == 0)
        return lex_error(&r->lx, kw->col, "second 'cluster' statement (the first is on line %d)",
                         r->cluster_line);
    return lex_error(&r->lx, kw->col,
                     "unknown statement '%s' in a cluster file (expected server or nic-speed)",
                     kw->text);
}

/* PATH relative to the cluster file's directory (the current one for a bare name or stdin). */
static char *resolve(const char *cluster, const char *path)
{
    const char *slash = strrchr(cluster, '/');
    if (path[0] == '/' || !slash || strcmp(cluster, "-") == 0)
        return strdup(path);
    return bk_asprintf("%.*s%s", (int)(slash - cluster + 1), cluster, path);
}

/* Read server file k once (every server naming the same file shares it). */
BK_MUST_USE
static enum bk_status read_server(struct cluster_reader *r, int k)
{
    struct server_line *sl = &r->s[k];
    struct diag_loc at = DIAG_AT(sl->line, sl->pcol);
    char *path = resolve(r->rd.in->name, sl->path);
    if (!path)
        return BK_ENOMEM;
    for (int i = 0; i < r->nf; i++)
        if (strcmp(r->f[i].path, path) == 0) {
            free(path);
            sl->file = i;
            return BK_OK;
        }
    enum bk_status st = bk_grow_int((void **)&r->f, &r->f_cap, r->nf, sizeof *r->f);
    if (st != BK_OK) {
        free(path);
        return st;
    }
    struct file_read *f = &r->f[r->nf++];
    memset(f, 0, sizeof *f);
    f->path = path;
    sl->file = r->nf - 1;

    struct input in;
    struct diag why;
    diag_init(&why);
    topo_open_fn open_file = r->rd.o->open_file ? r->rd.o->open_file : topo_open_file;
    st = open_file(r->rd.o->open_ctx, path, &in, &why);
    if (st != BK_OK) {
        const char *text = diag_first_error(&why);
        if (st != BK_ENOMEM)
            st = diag_error(r->rd.d, r->rd.in->name, at, "server '%s': cannot read '%s': %s",
                            sl->name, path, text ? text : "error");
        diag_free(&why);
        return st;
    }
    diag_free(&why);
    struct topo_read_opts o = *r->rd.o;
    o.format = topo_detect_format(&in, r->rd.d);
    if (o.format == TOPO_FMT_CLUSTER) {
        input_free(&in);
        return diag_error(r->rd.d, r->rd.in->name, at,
                          "server '%s': '%s' is a cluster file; name one server's topology",
                          sl->name, path);
    }
    /* TOPO_FMT_AUTO: the detector has said why. */
    st = o.format == TOPO_FMT_AUTO ? BK_EINPUT
         : r->rd.read             ? r->rd.read(&in, &o, &f->t, r->rd.d)
                                  : BK_EINTERNAL;
    input_free(&in);
    if (st == BK_OK) {
        f->read = 1;
        char why_unfit[160];
        if (topo_join_unfit(&f->t, why_unfit, sizeof why_unfit))
            st = diag_error(r->rd.d, r->rd.in->name, at,
                            "server '%s': '%s' cannot be one server of a cluster: %s", sl->name,
                            path, why_unfit);
    } else if (st == BK_EINPUT || st == BK_EIO) {
        diag_note(r->rd.d, r->rd.in->name, at, "in server '%s', read from '%s'", sl->name, path);
    }
    return st;
}

BK_MUST_USE
static enum bk_status join(struct cluster_reader *r)
{
    struct diag_loc cl = DIAG_AT(r->cluster_line, r->cluster_col);
    if (r->ns < 2)
        return diag_error(r->rd.d, r->rd.in->name, cl,
                          "the cluster has %d server%s; name 2 to %d with 'server NAME PATH'",
                          r->ns, r->ns == 1 ? "" : "s", TOPO_JOIN_MAX_SERVERS);
    for (int k = 0; k < r->ns; k++)
        BK_CHECK(read_server(r, k));
    struct topo_join_server *js = calloc((size_t)r->ns, sizeof *js);
    struct diag_loc *at = calloc((size_t)r->ns, sizeof *at);
    enum bk_status st = js && at ? BK_OK : BK_ENOMEM;
    for (int k = 0; k < r->ns && st == BK_OK; k++) {
        at[k] = DIAG_AT(r->s[k].line, r->s[k].col);
        js[k] = (struct topo_join_server){&r->f[r->s[k].file].t, r->s[k].name, &at[k]};
    }
    struct topo_join_opts jo = {r->rd.in->name, cl, r->nic_gbps, &r->rd.o->rates, r->nic_text,
                                r->rd.in->name, DIAG_AT(r->nic_line, r->nic_col)};
    if (st == BK_OK)
        st = topo_join(js, r->ns, &jo, r->rd.t, r->rd.d);
    free(js);
    free(at);
    return st;
}

enum bk_status topo_read_cluster(const struct reader *rd)
{
    struct cluster_reader r;
    memset(&r, 0, sizeof r);
    r.rd = *rd;
    lex_init(&r.lx, rd->in, rd->d);
    enum bk_status st = BK_OK;
    for (int more = 1; st == BK_OK && more;) {
        st = lex_next(&r.lx, &more);
        if (st == BK_OK && more && r.lx.ntoks)
            st = statement(&r);
    }
    if (st == BK_OK && !r.cluster_line)
        st = diag_error(rd->d, rd->in->name, DIAG_AT(1, 0),
                        "no 'cluster NAME' statement: a cluster file starts with one");
    if (st == BK_OK)
        st = join(&r);
    lex_free(&r.lx);
    for (int k = 0; k < r.ns; k++) {
        free(r.s[k].name);
        free(r.s[k].path);
    }
    for (int i = 0; i < r.nf; i++) {
        free(r.f[i].path);
        if (r.f[i].read)
            topo_free(&r.f[i].t);
    }
    free(r.s);
    free(r.f);
    free(r.nic_text);
    return st;
}
