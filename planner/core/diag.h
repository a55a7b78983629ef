/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * diag.h - diagnostics: errors, warnings and notes with a source position.
 *
 * Readers and planner stages record what went wrong here instead of printing. main.c prints the
 * records as "blinkc: FILE:LINE:COL: error: MESSAGE". Messages may quote input text; diag_print
 * escapes control bytes so a hostile name cannot drive the terminal.
 */
#ifndef BK_DIAG_H
#define BK_DIAG_H

#include <stddef.h>
#include <stdio.h>

#include "core/bk.h"

enum diag_level { DIAG_NOTE, DIAG_WARNING, DIAG_ERROR };

/* A position in an input file; 0 means unknown (line 0: the whole file; col 0: the whole line). */
struct diag_loc {
    int line;
    int col;
};

struct diag_msg {
    enum diag_level level;
    char *file; /* NULL: not about a file */
    struct diag_loc loc;
    char *text;
};

struct diag {
    struct diag_msg *msgs;
    size_t n, cap;
    int nerrors;
    int nwarnings;
    int lost;              /* messages that could not be stored (out of memory) */
    FILE *echo;            /* when set, each message from echo_from up is printed there as it
                              is recorded, so warnings come when found, not after the table */
    enum diag_level echo_from;
};

void diag_init(struct diag *d);
void diag_free(struct diag *d);

/* Record a message. diag_error returns BK_EINPUT so a reader can write `return diag_error(...)`. */
enum bk_status diag_error(struct diag *d, const char *file, struct diag_loc loc, const char *fmt, ...)
    BK_PRINTF(4, 5);
void diag_warning(struct diag *d, const char *file, struct diag_loc loc, const char *fmt, ...)
    BK_PRINTF(4, 5);
void diag_note(struct diag *d, const char *file, struct diag_loc loc, const char *fmt, ...)
    BK_PRINTF(4, 5);
void diag_add(struct diag *d, enum diag_level level, const char *file, struct diag_loc loc,
              const char *fmt, ...) BK_PRINTF(5, 6);

/* Print every record as "blinkc: FILE:LINE:COL: LEVEL: TEXT", escaping control bytes (then
 * the count of lost messages, if any). */
void diag_print(const struct diag *d, FILE *out);

/* Record every message of from in d, in order (echoed as d echoes). */
void diag_append(struct diag *d, const struct diag *from);

/* Only the count of lost messages, if any (after echoing). */
void diag_print_lost(const struct diag *d, FILE *out);

/* The first error's text, or NULL (tests use it). */
const char *diag_first_error(const struct diag *d);

/* Does any record contain needle? (tests use it) */
int diag_contains(const struct diag *d, enum diag_level level, const char *needle);

#define DIAG_NOWHERE ((struct diag_loc){0, 0})
#define DIAG_AT(l, c) ((struct diag_loc){(l), (c)})

#endif
