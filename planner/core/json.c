/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * json.c - JSON string escaping and number rendering (see json.h).
 */
#include "core/json.h"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if it is not valid. */
static int utf8_len(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    int n = (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (!n || (n == 2 && p[0] < 0xc2) || (n == 4 && p[0] > 0xf4))
        return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    /* Reject overlong 3/4-byte forms, UTF-16 surrogates and code points above U+10FFFF. */
    if (n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0)))
        return 0;
    if (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90)))
        return 0;
    return n;
}

void json_put_string(struct strbuf *sb, const char *s)
{
    sb_putc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_len(p);
        if (n == 0) {
            sb_puts(sb, "\\ufffd");
            p++;
            continue;
        }
        if (n > 1) {
            sb_putn(sb, (const char *)p, (size_t)n);
            p += n;
            continue;
        }
        switch (*p) {
        case '"': sb_puts(sb, "\\\""); break;
        case '\\': sb_puts(sb, "\\\\"); break;
        case '\n': sb_puts(sb, "\\n"); break;
        case '\r': sb_puts(sb, "\\r"); break;
        case '\t': sb_puts(sb, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                sb_printf(sb, "\\u%04x", *p);
            else
                sb_putc(sb, (char)*p);
        }
        p++;
    }
    sb_putc(sb, '"');
}

void json_put_number(struct strbuf *sb, double v) { sb_put_decimal(sb, v, 6); }
