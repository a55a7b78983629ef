/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * strbuf.h - a growable byte buffer and small string helpers shared by every stage.
 *
 * Output (JSON, matrices, generated code) is rendered into a strbuf first and written to disk in
 * one piece, so a failure never leaves half a file. An allocation failure sets `failed` and turns
 * later appends into no-ops; the writer checks it once at the end. A buffer that streams
 * (sb_stream) writes its text to a file as it grows instead, for outputs of gigabytes; that file
 * is a temporary one (outfile.h), so the rule holds.
 */
#ifndef BK_STRBUF_H
#define BK_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "core/bk.h"

struct strbuf {
    char *data; /* always NUL-terminated when len > 0 */
    size_t len, cap;
    int failed;
    int streaming, fd; /* sb_stream: the text so far went to fd, data holds the rest */
    int err;           /* errno of a write to fd that failed (failed is set too) */
};

/* From now on, write the text to fd whenever SB_STREAM_BYTES have gathered; whoever reads the
 * buffer then sees only what was not written yet (never for text that is read back). */
#define SB_STREAM_BYTES ((size_t)4 << 20)
void sb_stream(struct strbuf *sb, int fd);

void sb_init(struct strbuf *sb);
void sb_free(struct strbuf *sb);
void sb_putc(struct strbuf *sb, char c);
void sb_puts(struct strbuf *sb, const char *s);
void sb_putn(struct strbuf *sb, const char *s, size_t n);
void sb_printf(struct strbuf *sb, const char *fmt, ...) BK_PRINTF(2, 3);
/* Detach the string (caller frees); NULL if an allocation failed. */
char *sb_take(struct strbuf *sb);

/* Locale-independent fixed-point rendering of a finite double: at most `decimals` digits after
 * the point, trailing zeros trimmed but at least one decimal kept ("25.0", "12.5", "0.1875"). */
void sb_put_decimal(struct strbuf *sb, double v, int decimals);

char *bk_vasprintf(const char *fmt, va_list ap);
/* Room for `need` elements of `size` bytes in p (capacity *cap, doubled as needed from 16);
 * NULL when out of memory or when the size would overflow, p then still valid. */
void *bk_grow(void *p, size_t *cap, size_t need, size_t size);
/* The same for arrays counted in int: room for element n in *p (capacity *cap). BK_ENOMEM when
 * out of memory or when the capacity would pass INT_MAX; BK_EINTERNAL for n below 0. */
BK_MUST_USE
enum bk_status bk_grow_int(void **p, int *cap, int n, size_t size);

/* One of several parallel arrays that share a capacity: where its pointer lives and the size of
 * its elements. BK_ARRAY(a) describes the array whose pointer is the lvalue a. */
struct bk_array {
    void **p;
    size_t size;
};
#define BK_ARRAY(a) ((struct bk_array){(void **)&(a), sizeof *(a)})

/* bk_grow for the k parallel arrays a[0..k-1] that share the capacity *cap: room for `need`
 * elements in each. All grow to the same new capacity and *cap changes only once all have, so
 * after a failure every array is still valid (some merely larger than *cap says). BK_ENOMEM
 * when out of memory or when a size would overflow. */
BK_MUST_USE
enum bk_status bk_grow_arrays(const struct bk_array *a, int k, size_t *cap, size_t need);
/* bk_grow_int for parallel arrays: room for element n in each of a[0..k-1] (capacity *cap). */
BK_MUST_USE
enum bk_status bk_grow_int_arrays(const struct bk_array *a, int k, int *cap, int n);
char *bk_asprintf(const char *fmt, ...) BK_PRINTF(1, 2);
char *bk_strndup(const char *s, size_t n);

#endif
