/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * mpirun_util.h - what the programs that start mpirun share (mpi_job.c, test_perf.c): finding
 * it, and taking turns, one mpirun at a time across programs.
 */
#ifndef MPIRUN_UTIL_H
#define MPIRUN_UTIL_H

#include <stddef.h>

/* name's full path into path (name itself when it has a slash, else searched on PATH);
 * 0 when there is no such executable. */
int mu_find_mpirun(const char *name, char *path, size_t len);
/* Wait for the turn of this mpirun (a lock file under /tmp); returns what mu_unlock takes. On
 * two cores, 16 ranks beside 8 others would only share out every job's time limit. */
int mu_lock(void);
void mu_unlock(int lock);

#endif
