/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * text_lex.c - the line lexer of blinkc's text formats (see text_lex.h): byte checks, then
 * tokens with quotes and escapes resolved. Moved out of the .topo reader unchanged so the
 * cluster file reader follows the very same rules.
 */
#include "read/text_lex.h"

#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

void lex_init(struct lexer *lx, const struct input *in, struct diag *d)
{
    memset(lx, 0, sizeof *lx);
    lx->file = in->name;
    lx->d = d;
    lx->next = in->data;
    lx->end = in->data + in->len;
    if (in->len >= 3 && memcmp(lx->next, "\xef\xbb\xbf", 3) == 0)
        lx->next += 3; /* a UTF-8 byte order mark; columns count from after it */
}

void lex_free(struct lexer *lx)
{
    free(lx->buf);
    free(lx->toks);
    lx->buf = NULL;
    lx->toks = NULL;
    lx->buf_cap = lx->toks_cap = 0;
    lx->ntoks = 0;
}

enum bk_status lex_verror(struct lexer *lx, int col, const char *fmt, va_list ap)
{
    char *msg = bk_vasprintf(fmt, ap);
    diag_error(lx->d, lx->file, DIAG_AT(lx->line, col), "%s",
               msg ? msg : "(out of memory while formatting this message)");
    free(msg);
    return BK_EINPUT;
}

enum bk_status lex_error(struct lexer *lx, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum bk_status st = lex_verror(lx, col, fmt, ap);
    va_end(ap);
    return st;
}

const char *lex_value(const struct lex_tok *tk) { return tk->text + tk->eq + 1; }

/* Reject what no text file should hold, before anything is split: a UTF-8 decoder per byte. */
BK_MUST_USE
static enum bk_status check_bytes(struct lexer *lx, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned c = s[i];
        int col = (int)i + 1;
        if (c == 0)
            return lex_error(lx, col, "embedded NUL byte: this is not a text file");
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return lex_error(lx, col,
                             "control character 0x%02x; only spaces and tabs separate tokens", c);
        if (c < 0x80)
            continue;
        /* Lead byte, number of continuation bytes, and the allowed range of the second byte
           (which excludes overlong forms, surrogates and code points above U+10FFFF). */
        size_t more = 0;
        unsigned lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
            more = 1;
        else if (c >= 0xe0 && c <= 0xef) {
            more = 2;
            lo = c == 0xe0 ? 0xa0 : 0x80;
            hi = c == 0xed ? 0x9f : 0xbf;
        } else if (c >= 0xf0 && c <= 0xf4) {
            more = 3;
            lo = c == 0xf0 ? 0x90 : 0x80;
            hi = c == 0xf4 ? 0x8f : 0xbf;
        } else
            return lex_error(lx, col, "invalid UTF-8 (byte 0x%02x)", c);
        for (size_t k = 1; k <= more; k++) {
            unsigned b = i + k < n ? s[i + k] : 0;
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf))
                return lex_error(lx, col, "invalid UTF-8 (byte 0x%02x)", c);
        }
        i += more;
    }
    return BK_OK;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Split one line into tokens; quotes and escapes are resolved here. */
BK_MUST_USE
static enum bk_status tokenize(struct lexer *lx, const char *s, size_t n)
{
    lx->ntoks = 0;
    char *out = bk_grow(lx->buf, &lx->buf_cap, n + 1, 1);
    if (!out)
        return BK_ENOMEM;
    lx->buf = out;
    size_t i = 0;
    for (;;) {
        while (i < n && is_blank(s[i]))
            i++;
        if (i >= n || s[i] == '#')
            return BK_OK;
        struct lex_tok *toks = bk_grow(lx->toks, &lx->toks_cap, (size_t)lx->ntoks + 1,
                                       sizeof *toks);
        if (!toks)
            return BK_ENOMEM;
        lx->toks = toks;
        struct lex_tok *tk = &lx->toks[lx->ntoks++];
        char *start = out;
        *tk = (struct lex_tok){start, (int)i + 1, 0, -1, 0};
        while (i < n && !is_blank(s[i]) && s[i] != '#') {
            if (s[i] != '"') {
                if (s[i] == '=' && tk->eq < 0) {
                    tk->eq = (int)(out - start);
                    tk->vcol = (int)i + 2;
                }
                *out++ = s[i++];
                continue;
            }
            size_t open = i++;
            for (;;) {
                if (i >= n)
                    return lex_error(lx, (int)open + 1, "unterminated quoted string");
                if (s[i] == '"')
                    break;
                if (s[i] == '\\' && i + 1 < n) {
                    if (s[i + 1] != '"' && s[i + 1] != '\\')
                        return lex_error(lx, (int)i + 1,
                                         "unknown escape in a quoted string: only \\\" and \\\\ "
                                         "are allowed");
                    i++;
                }
                *out++ = s[i++];
            }
            i++; /* the closing quote ends the token */
            if (i < n && !is_blank(s[i]) && s[i] != '#')
                return lex_error(lx, (int)i + 1, "expected a space after the closing quote");
            break;
        }
        *out++ = '\0';
        tk->end = (int)i + 1;
    }
}

enum bk_status lex_next(struct lexer *lx, int *more)
{
    lx->ntoks = 0;
    *more = lx->next < lx->end;
    if (!*more)
        return BK_OK;
    const char *p = lx->next;
    const char *nl = memchr(p, '\n', (size_t)(lx->end - p));
    const char *eol = nl ? nl : lx->end;
    size_t n = (size_t)(eol - p);
    if (n > 0 && p[n - 1] == '\r')
        n--; /* CRLF line ends */
    lx->line++; /* at most 64 MiB of input: no overflow */
    lx->next = eol + 1;
    BK_CHECK(check_bytes(lx, (const unsigned char *)p, n));
    return tokenize(lx, p, n);
}
