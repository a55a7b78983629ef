/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * strbuf.c - growable buffers and locale-independent number rendering.
 *
 * Numbers in plans and code must be byte-identical under every locale, so decimals are rendered
 * from integers here rather than through printf's %f, which honours LC_NUMERIC.
 */
#include "core/strbuf.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sb_init(struct strbuf *sb) { memset(sb, 0, sizeof *sb); }

void sb_free(struct strbuf *sb)
{
    free(sb->data);
    memset(sb, 0, sizeof *sb);
}

static int reserve(struct strbuf *sb, size_t extra)
{
    if (sb->failed)
        return 0;
    if (sb->len + extra + 1 <= sb->cap)
        return 1;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) {
        if (cap > (size_t)-1 / 2) {
            sb->failed = 1;
            return 0;
        }
        cap *= 2;
    }
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = 1;
        return 0;
    }
    sb->data = p;
    sb->cap = cap;
    return 1;
}

void sb_stream(struct strbuf *sb, int fd)
{
    sb->streaming = 1;
    sb->fd = fd;
}

/* Write out what has gathered (streaming). */
static void drain(struct strbuf *sb)
{
    for (size_t at = 0; at < sb->len && !sb->failed;) {
        ssize_t w = write(sb->fd, sb->data + at, sb->len - at);
        if (w > 0) {
            at += (size_t)w;
        } else if (w < 0 && errno != EINTR) {
            sb->err = errno;
            sb->failed = 1;
        } else if (w == 0) {
            sb->err = EIO;
            sb->failed = 1;
        }
    }
    sb->len = 0;
    if (sb->data)
        sb->data[0] = '\0';
}

void sb_putn(struct strbuf *sb, const char *s, size_t n)
{
    if (!reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
    if (sb->streaming && sb->len >= SB_STREAM_BYTES)
        drain(sb);
}

void sb_putc(struct strbuf *sb, char c) { sb_putn(sb, &c, 1); }
void sb_puts(struct strbuf *sb, const char *s) { sb_putn(sb, s, strlen(s)); }

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = bk_vasprintf(fmt, ap);
    va_end(ap);
    if (!s) {
        sb->failed = 1;
        return;
    }
    sb_puts(sb, s);
    free(s);
}

char *sb_take(struct strbuf *sb)
{
    char *s = NULL;
    if (!sb->failed)
        s = sb->data ? sb->data : strdup("");
    else
        free(sb->data);
    memset(sb, 0, sizeof *sb);
    return s;
}

void sb_put_decimal(struct strbuf *sb, double v, int decimals)
{
    if (!isfinite(v) || decimals < 1 || decimals > 9 || fabs(v) >= 1e15) {
        sb_puts(sb, "0.0"); /* callers validate first; never emit nan or inf */
        return;
    }
    long long scale = 1;
    for (int i = 0; i < decimals; i++)
        scale *= 10;
    long long q = llround(fabs(v) * (double)scale);
    if (v < 0 && q != 0)
        sb_putc(sb, '-');
    char frac[32];
    snprintf(frac, sizeof frac, "%0*lld", decimals, q % scale);
    int keep = decimals;
    while (keep > 1 && frac[keep - 1] == '0')
        keep--;
    frac[keep] = '\0';
    sb_printf(sb, "%lld.%s", q / scale, frac);
}

char *bk_vasprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *bk_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = bk_vasprintf(fmt, ap);
    va_end(ap);
    return s;
}

char *bk_strndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

void *bk_grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return NULL;
        c *= 2;
    }
    if (size && c > SIZE_MAX / size)
        return NULL;
    void *q = realloc(p, c * size);
    if (q)
        *cap = c;
    return q;
}

enum bk_status bk_grow_arrays(const struct bk_array *a, int k, size_t *cap, size_t need)
{
    if (need <= *cap)
        return BK_OK;
    /* bk_grow picks the new capacity from *cap and need alone, so each array gets the same. */
    size_t grown = *cap;
    for (int i = 0; i < k; i++) {
        size_t c = *cap;
        void *q = bk_grow(*a[i].p, &c, need, a[i].size);
        if (!q)
            return BK_ENOMEM;
        *a[i].p = q;
        grown = c;
    }
    *cap = grown;
    return BK_OK;
}

enum bk_status bk_grow_int_arrays(const struct bk_array *a, int k, int *cap, int n)
{
    if (n < 0)
        return BK_EINTERNAL; /* a count below zero: the caller's bug */
    if (n < *cap)
        return BK_OK;
    if (n >= INT_MAX / 2)
        return BK_ENOMEM;
    size_t c = *cap > 0 ? (size_t)*cap : 0;
    BK_CHECK(bk_grow_arrays(a, k, &c, (size_t)n + 1));
    *cap = (int)c; /* below 2 (n + 1) <= INT_MAX */
    return BK_OK;
}

enum bk_status bk_grow_int(void **p, int *cap, int n, size_t size)
{
    struct bk_array a = {p, size};
    return bk_grow_int_arrays(&a, 1, cap, n);
}
