/* SPDX-License-Identifier: GPL-3.0-or-later */
/* gpu_list.c - GPU lists as users write them (gpu_list.h). */
#include "core/gpu_list.h"

#include <errno.h>
#include <stdlib.h>

int gpu_list_parse(const char *s, int *gpus, int cap)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        if (*p < '0' || *p > '9')
            return 0;
        long a = strtol(p, &end, 10), b = a;
        if (errno || a > 1000000)
            return 0;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                return 0;
            b = strtol(p, &end, 10);
            if (errno || b < a || b > 1000000)
                return 0;
            p = end;
        }
        for (long g = a; g <= b; g++) {
            if (n == cap)
                return -1;
            gpus[n++] = (int)g;
        }
        if (*p == ',' && p[1])
            p++;
        else if (*p)
            return 0;
    }
    return n;
}
