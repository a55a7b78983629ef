/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * diag.c - the diagnostic record every stage fills and only main.c prints.
 *
 * A record is kept even when memory runs short: the message is then replaced by a fixed text, so
 * an error is never lost silently.
 */
#include "core/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "core/strbuf.h"

static void print_one(FILE *out, const struct diag_msg *m);

void diag_init(struct diag *d) { memset(d, 0, sizeof *d); }

void diag_free(struct diag *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->msgs[i].file);
        free(d->msgs[i].text);
    }
    free(d->msgs);
    memset(d, 0, sizeof *d);
}

static void vadd(struct diag *d, enum diag_level level, const char *file, struct diag_loc loc,
                 const char *fmt, va_list ap)
{
    if (level == DIAG_ERROR)
        d->nerrors++;
    else if (level == DIAG_WARNING)
        d->nwarnings++;
    struct diag_msg *grown = bk_grow(d->msgs, &d->cap, d->n + 1, sizeof *d->msgs);
    if (!grown) {
        d->lost++; /* diag_print says so: no error may pass unsaid */
        return;
    }
    d->msgs = grown;
    struct diag_msg *m = &d->msgs[d->n++];
    m->level = level;
    m->loc = loc;
    m->file = file ? strdup(file) : NULL;
    m->text = bk_vasprintf(fmt, ap);
    if (d->echo && level >= d->echo_from) {
        progress_clear();
        print_one(d->echo, m);
    }
}

void diag_add(struct diag *d, enum diag_level level, const char *file, struct diag_loc loc,
              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(d, level, file, loc, fmt, ap);
    va_end(ap);
}

void diag_append(struct diag *d, const struct diag *from)
{
    for (size_t i = 0; i < from->n; i++) {
        const struct diag_msg *m = &from->msgs[i];
        diag_add(d, m->level, m->file, m->loc, "%s", m->text ? m->text : "");
    }
    d->lost += from->lost;
}

enum bk_status diag_error(struct diag *d, const char *file, struct diag_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(d, DIAG_ERROR, file, loc, fmt, ap);
    va_end(ap);
    return BK_EINPUT;
}

void diag_warning(struct diag *d, const char *file, struct diag_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(d, DIAG_WARNING, file, loc, fmt, ap);
    va_end(ap);
}

void diag_note(struct diag *d, const char *file, struct diag_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(d, DIAG_NOTE, file, loc, fmt, ap);
    va_end(ap);
}

/* Terminal-safe text: printable ASCII and UTF-8 bytes pass; control bytes become \ooo. */
static void put_safe(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\%03o", *p);
        else
            fputc(*p, out);
    }
}

static void print_one(FILE *out, const struct diag_msg *m)
{
    static const char *const names[] = {"note", "warning", "error"};
    fputs("blinkc: ", out);
    if (m->file) {
        put_safe(out, m->file);
        if (m->loc.line > 0) {
            fprintf(out, ":%d", m->loc.line);
            if (m->loc.col > 0)
                fprintf(out, ":%d", m->loc.col);
        }
        fputs(": ", out);
    }
    fprintf(out, "%s: ", names[m->level]);
    put_safe(out, m->text ? m->text : "(out of memory while formatting this message)");
    fputc('\n', out);
}

void diag_print_lost(const struct diag *d, FILE *out)
{
    if (d->lost)
        fprintf(out, "blinkc: error: %d more message%s lost: out of memory\n", d->lost,
                d->lost == 1 ? " was" : "s were");
}

void diag_print(const struct diag *d, FILE *out)
{
    for (size_t i = 0; i < d->n; i++)
        print_one(out, &d->msgs[i]);
    diag_print_lost(d, out);
}

const char *diag_first_error(const struct diag *d)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->msgs[i].level == DIAG_ERROR)
            return d->msgs[i].text;
    return NULL;
}

int diag_contains(const struct diag *d, enum diag_level level, const char *needle)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->msgs[i].level == level && d->msgs[i].text && strstr(d->msgs[i].text, needle))
            return 1;
    return 0;
}
