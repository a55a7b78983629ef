/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * trail.c - where failures passed (bk.h, trail.h): the places BK_CHECK and BK_CHECK_GOTO
 * returned a failure from, oldest first. A failure that a caller handles (a fallback that
 * goes on) also leaves its places here, so the trail is read from its end: the last run of
 * places that ends at main is the failure that stopped blinkc. The trail is process-wide;
 * the tuning's threads (tune_jobs.c) add to it under a lock.
 */
#include "core/trail.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define TRAIL_MAX 64 /* places kept; older ones are counted, not kept */

static struct {
    enum bk_status st;
    const char *file, *func;
    int line;
} places[TRAIL_MAX];
static int nplaces;
static long dropped;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* planner/FILE.c, whatever the build directory's path to the source. */
static const char *source_name(const char *file)
{
    const char *p = strstr(file, "planner/");
    return p ? p : file;
}

void bk_trail_add(enum bk_status st, const char *file, int line, const char *func)
{
    pthread_mutex_lock(&lock);
    if (nplaces == TRAIL_MAX) {
        for (int i = 1; i < TRAIL_MAX; i++)
            places[i - 1] = places[i];
        nplaces--;
        dropped++;
    }
    places[nplaces].st = st;
    places[nplaces].file = file;
    places[nplaces].func = func;
    places[nplaces].line = line;
    nplaces++;
    pthread_mutex_unlock(&lock);
}

void bk_trail_clear(void)
{
    nplaces = 0;
    dropped = 0;
}

int bk_trail_first(const char **file, int *line, const char **func)
{
    if (nplaces == 0)
        return 0;
    *file = source_name(places[0].file);
    *line = places[0].line;
    *func = places[0].func;
    return 1;
}

static const char *status_name(enum bk_status st)
{
    switch (st) {
    case BK_OK: return "ok";
    case BK_EINPUT: return "input";
    case BK_EUSAGE: return "usage";
    case BK_EIO: return "io";
    case BK_ESOLVE: return "solve";
    case BK_ENOMEM: return "nomem";
    case BK_EINTERNAL: return "internal";
    }
    return "?";
}

void bk_trail_print(FILE *f)
{
    if (dropped)
        fprintf(f, "blinkc: trail: %ld older places not kept\n", dropped);
    for (int i = 0; i < nplaces; i++)
        fprintf(f, "blinkc: trail: %s:%d: %s: %s\n", source_name(places[i].file),
                places[i].line, places[i].func, status_name(places[i].st));
}
