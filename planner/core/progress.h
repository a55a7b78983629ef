/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * progress.h - what long work is doing, on a terminal.
 *
 * Planning every allocation of a server, a switch fabric of dozens of GPUs or a cluster takes
 * seconds to minutes. While progress is on (main turns it on unless -q was given), the stages
 * report what they are doing on standard error with the time elapsed. On a terminal that is one
 * status line, rewritten in place: a new stage (another format) at once, updates of one stage at
 * most ten times a second; diagnostics clear the line before they print (diag.c). Anywhere else
 * (a pipe, a file, a CI log) it is plain lines, none in a job's first PROGRESS_LINE_SECONDS and
 * then at most one per PROGRESS_LINE_SECONDS, so short jobs print nothing extra.
 */
#ifndef BK_PROGRESS_H
#define BK_PROGRESS_H

#include "core/bk.h"

#define PROGRESS_LINE_SECONDS 5.0

enum progress_mode {
    PROGRESS_OFF,
    PROGRESS_TERMINAL, /* one status line, rewritten in place */
    PROGRESS_LINES     /* a plain line every PROGRESS_LINE_SECONDS, from then on */
};

/* Start the clock in the given mode. */
void progress_enable(enum progress_mode m);
/* PROGRESS_LINES's period, PROGRESS_LINE_SECONDS unless a test wants it shorter. */
void progress_set_interval(double seconds);
/* 1 on a terminal, and in PROGRESS_LINES once a line was printed (a summary may follow). */
int progress_enabled(void);

/* Text put before what progress_say says ("allocation 57 of 247: "); NULL clears it. */
void progress_context(const char *fmt, ...) BK_PRINTF(1, 2);

/* Replace the status line with "blinkc: CONTEXT TEXT (12 s)" (throttled; free when off). */
void progress_say(const char *fmt, ...) BK_PRINTF(1, 2);

/* Erase the status line, if one is shown. */
void progress_clear(void);

/* Seconds since progress_enable. */
double progress_elapsed(void);

#endif
