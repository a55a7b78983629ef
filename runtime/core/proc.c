/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * proc.c - proc.h on Linux: CLOCK_MONOTONIC, and /proc/PID/stat's state.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

double bk_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int bk_pid_gone(int pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return access("/proc/self/stat", R_OK) == 0; /* no /proc: assume alive */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the state follows the command name */
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}
