/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * mpi_job.h - running tests/nccl/nccl_client under mpirun with a drop-in in LD_PRELOAD, one
 * MPMD app context per rank (its BLINK_DEVICE, and BLINK_SERVER where the job emulates several
 * servers), with a wall-clock limit and a check that nothing is left in /dev/shm.
 * Used by test_nccl_mpi (one server) and test_cluster_mpi (several).
 */
#ifndef MPI_JOB_H
#define MPI_JOB_H

#include <stddef.h>

#define MAX_RANKS 16
#define LIMIT_S 240            /* one mpirun, from its start to its exit */
#define INSTALL "install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin)"

struct job {
    const char *label, *dropin;
    int n;
    const int *devs;             /* the device rank r plays */
    const char *args[12];        /* the client's, NULL-terminated */
    long cases;                  /* what the summary must count, or -1 for any */
    const char *debug;           /* BLINK_DEBUG, or NULL */
    const char *env;             /* NAME=VALUE for every rank, several apart by spaces, or NULL */
    const int *servers;          /* the server rank r is on (BLINK_SERVER=s<k>), or NULL */
    const char *fault;           /* NCCL_CLIENT_FAULT for fault_rank (tests/nccl), or NULL */
    int fault_rank;
};

struct run {
    int status;                  /* exit status; -1 if killed or not started */
    double secs;
    char *out;                   /* stdout and stderr of mpirun and every rank */
};

/* mpirun for j, its output in r (skips the test where mpirun or the client is missing). */
void run_job(const struct job *j, struct run *r);
/* run_job, then the checks every run has: in time, exit 0, nothing left in /dev/shm. */
void run_checked(const struct job *j, struct run *r);
/* A sweep: the summary with the job's rank count, no wrong result and no error. */
void run_sweep(const struct job *j);
/* The output's last 3000 bytes, for messages. */
const char *tail(const char *s);
/* The number of lines that start with `start` and contain `has`. */
int count_lines(const char *s, const char *start, const char *has);
/* The number of the runtime's log lines of `level` (WARN, INFO, TRACE; NULL: any) that contain
 * `has`: lines "HOST:PID:TID [DEV] blink LEVEL ...", as BLINK_DEBUG prints them. */
int count_log_lines(const char *s, const char *level, const char *has);
/* run_job's checks of /dev/shm alone, for runs that are meant to fail. */
void shm_mark(void);
int shm_left_since_mark(char *out, size_t len);

#endif
