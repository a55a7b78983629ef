/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * text_lex.h - the line lexer shared by blinkc's hand-written text formats: the .topo reader
 * (topo_text.c) and the cluster file reader (topo_cluster.c), so both check bytes, quote and
 * escape exactly as blinkc-topology(5), "Lexical structure", says.
 *
 * A line is checked for NUL bytes, control characters other than tab and invalid UTF-8, then
 * split into tokens: blanks separate them, '#' outside quotes starts a comment, double quotes
 * (with \" and \\) may hold blanks, '#' and '='. Errors name FILE:LINE:COL of the offending byte.
 * The lexer never prints and keeps no pointer into the input after lex_line returns.
 */
#ifndef BK_TEXT_LEX_H
#define BK_TEXT_LEX_H

#include <stdarg.h>
#include <stddef.h>

#include "core/bk.h"
#include "core/diag.h"
#include "core/input.h"

/* One token of a line, unescaped into the lexer's line buffer. */
struct lex_tok {
    const char *text;
    int col, end; /* column of the first byte, and the column just past the token */
    int eq;       /* offset in text of the first unquoted '=', or -1: not an attribute */
    int vcol;     /* column of the value after that '=' */
};

struct lexer {
    const char *file; /* the input's name, for messages */
    struct diag *d;
    int line;         /* current line, 1-based; 0 before the first */
    char *buf;        /* unescaped token text of the current line */
    size_t buf_cap;
    struct lex_tok *toks;
    int ntoks;
    size_t toks_cap;
    const char *next, *end; /* the rest of the input */
};

/* Start at in's first byte, after a UTF-8 byte order mark (columns count from after it). */
void lex_init(struct lexer *lx, const struct input *in, struct diag *d);
void lex_free(struct lexer *lx);

/*
 * Check and split the next line (LF or CR LF ends it). Sets *more to 0 at the end of the input
 * and 1 otherwise; lx->toks then holds the line's tokens (none for a blank or comment line).
 * Errors: BK_EINPUT with a diagnostic, BK_ENOMEM.
 */
BK_MUST_USE
enum bk_status lex_next(struct lexer *lx, int *more);

/* Record "FILE:LINE:COL: error: ..." for the current line; returns BK_EINPUT. */
BK_MUST_USE
enum bk_status lex_error(struct lexer *lx, int col, const char *fmt, ...) BK_PRINTF(3, 4);
BK_MUST_USE
enum bk_status lex_verror(struct lexer *lx, int col, const char *fmt, va_list ap);

/* The value of an attribute token KEY=VALUE (tk->eq >= 0). */
const char *lex_value(const struct lex_tok *tk);

#endif
