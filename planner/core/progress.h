/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * progress.h - what long work is doing, on a terminal.
 *
 * Planning every allocation of a server, a switch fabric of dozens of GPUs or a cluster takes
 * seconds to minutes. While progress is on (main turns it on only when standard error is a
 * terminal and -q was not given, so pipes, files and tests see nothing), the stages report what
 * they are doing on one status line of standard error, rewritten in place with the time
 * elapsed: a new stage (another format) at once, updates of one stage at most ten times a
 * second; diagnostics clear the line before they print (diag.c).
 */
#ifndef BK_PROGRESS_H
#define BK_PROGRESS_H

#include "core/bk.h"

void progress_enable(int on);
int progress_enabled(void);

/* Text put before what progress_say says ("allocation 57 of 247: "); NULL clears it. */
void progress_context(const char *fmt, ...) BK_PRINTF(1, 2);

/* Replace the status line with "blinkc: CONTEXT TEXT (12 s)" (throttled; free when off). */
void progress_say(const char *fmt, ...) BK_PRINTF(1, 2);

/* Erase the status line, if one is shown. */
void progress_clear(void);

/* Seconds since progress_enable(1). */
double progress_elapsed(void);

#endif
