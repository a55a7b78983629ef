/* SPDX-License-Identifier: GPL-3.0-or-later */
/* mpirun_util.c - see mpirun_util.h. */
#define _DEFAULT_SOURCE /* flock */
#include "mpirun_util.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int mu_find_mpirun(const char *name, char *path, size_t len)
{
    if (strchr(name, '/')) {
        snprintf(path, len, "%s", name);
        return access(path, X_OK) == 0;
    }
    for (const char *p = getenv("PATH"); p && *p;) {
        const char *colon = strchr(p, ':');
        int k = colon ? (int)(colon - p) : (int)strlen(p);
        snprintf(path, len, "%.*s/%s", k, k ? p : ".", name);
        if (access(path, X_OK) == 0)
            return 1;
        p = colon ? colon + 1 : NULL;
    }
    return 0;
}

int mu_lock(void)
{
    int lock = open("/tmp/blinkc-test-nccl-mpi.lock", O_RDWR | O_CREAT, 0600);
    cr_assert(lock >= 0 && flock(lock, LOCK_EX) == 0, "cannot lock /tmp/blinkc-test-nccl-mpi.lock");
    return lock;
}

void mu_unlock(int lock) { close(lock); }
