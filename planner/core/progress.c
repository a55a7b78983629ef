/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * progress.c - the status line of progress.h, or its plain lines.
 */
#include "core/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static enum progress_mode mode;
static int shown, lines;
static double start, last, every = PROGRESS_LINE_SECONDS;
static const char *last_fmt;
static char context[96];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void progress_enable(enum progress_mode m)
{
    mode = m;
    start = now();
    last = 0;
    lines = 0;
}

void progress_set_interval(double seconds) { every = seconds; }

int progress_enabled(void) { return mode == PROGRESS_TERMINAL || lines > 0; }

double progress_elapsed(void) { return now() - start; }

void progress_context(const char *fmt, ...)
{
    context[0] = '\0';
    if (mode == PROGRESS_OFF || !fmt)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
}

void progress_say(const char *fmt, ...)
{
    if (mode == PROGRESS_OFF)
        return;
    double t = now();
    if (mode == PROGRESS_LINES) {
        /* A log keeps every line: one after the first `every` seconds, then one per `every`. */
        if (t - (lines ? last : start) < every)
            return;
    } else if (shown && fmt == last_fmt && t - last < 0.1) {
        return; /* a new stage shows at once; one stage's updates at most ten times a second */
    }
    last = t;
    last_fmt = fmt;
    char text[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (mode == PROGRESS_LINES) {
        fprintf(stderr, "blinkc: %s%s (%.0f s)\n", context, text, t - start);
        lines++;
    } else {
        /* \r and "erase to the end of the line": every terminal blinkc runs on knows them. */
        fprintf(stderr, "\rblinkc: %s%s (%.0f s)\033[K", context, text, t - start);
        shown = 1;
    }
    fflush(stderr);
}

void progress_clear(void)
{
    if (!shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    shown = 0;
}
