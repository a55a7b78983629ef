/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * progress.c - the status line of progress.h.
 */
#include "core/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static int enabled, shown;
static double start, last;
static const char *last_fmt;
static char context[96];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void progress_enable(int on)
{
    enabled = on;
    start = now();
    last = 0;
}

int progress_enabled(void) { return enabled; }

double progress_elapsed(void) { return now() - start; }

void progress_context(const char *fmt, ...)
{
    context[0] = '\0';
    if (!enabled || !fmt)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
}

void progress_say(const char *fmt, ...)
{
    if (!enabled)
        return;
    double t = now();
    /* A new stage shows at once; one stage's updates at most ten times a second. */
    if (shown && fmt == last_fmt && t - last < 0.1)
        return;
    last = t;
    last_fmt = fmt;
    char text[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* \r and "erase to the end of the line": every terminal blinkc runs on knows them. */
    fprintf(stderr, "\rblinkc: %s%s (%.0f s)\033[K", context, text, t - start);
    fflush(stderr);
    shown = 1;
}

void progress_clear(void)
{
    if (!shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    shown = 0;
}
