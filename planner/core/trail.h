/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * trail.h - the places a failure passed on its way up (trail.c); bk.h's checking macros add
 * them (bk_trail_add). main.c prints them under --debug or BLINKC_DEBUG=1, and names the first
 * in an internal error that left no diagnostic.
 */
#ifndef BK_TRAIL_H
#define BK_TRAIL_H

#include <stdio.h>

#include "core/bk.h"

/* Forget every place (a new run). */
void bk_trail_clear(void);
/* The oldest place kept; 0 when there is none. */
int bk_trail_first(const char **file, int *line, const char **func);
/* Every place kept, oldest first, one "blinkc: trail: FILE:LINE: FUNCTION: STATUS" line each. */
void bk_trail_print(FILE *f);

#endif
