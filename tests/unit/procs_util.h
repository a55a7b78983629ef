/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * procs_util.h - ranks as processes for test_rt_procs: fork one child per rank, each running a
 * body and exiting with a status (and its first failure in a pipe), reap them within a
 * deadline, and check that an id left nothing in /dev/shm.
 */
#ifndef PROCS_UTIL_H
#define PROCS_UTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "blink.h"

#define MAX_RANKS 16
#define MSG_BYTES 512

/* A child's exit status: passed; failed (its reason in the pipe); or a call or init returned
 * result r, an error the test asked for (its message in the pipe). */
#define CHILD_OK 0
#define CHILD_FAILED 1
#define CHILD_GOT(r) (16 + (int)(r))

/* The body of child `rank`: its exit status, with a message in msg. */
typedef int (*child_fn)(int rank, const void *arg, char *msg, size_t len);

struct procs {
    int n;
    pid_t pid[MAX_RANKS];      /* 0 once reaped */
    int fd[MAX_RANKS];         /* read end of each child's pipe */
    int status[MAX_RANKS];     /* exit status, or 128 + the signal that ended it */
    double secs[MAX_RANKS];    /* from the start to its exit (as the parent saw it) */
    double start;
    char msg[MAX_RANKS][MSG_BYTES];
};

/* Whether a child's status is CHILD_GOT(r) of an error r. */
int got_error(int status);
/* Monotonic seconds. */
double now(void);
/* Fork n children, child r running body(r, arg) and exiting with its status (its message in
 * its pipe); they die with the test. */
void spawn(struct procs *p, int n, child_fn body, const void *arg);
/* Child r ended with wait status st. */
void reaped(struct procs *p, int r, int st);
/* Reap the children until deadline_s after the start (all but `except`, or -1): 1 in time. */
int wait_children(struct procs *p, double deadline_s, int except);
/* Each child's message from its pipe. */
void read_messages(struct procs *p);
/* spawn, wait_children and read_messages: 1 where every child ended in time. */
int run_children(struct procs *p, int n, child_fn body, const void *arg, double deadline_s);
/* Nothing of id is left in /dev/shm (a Criterion expectation). */
void expect_shm_clean(const blinkUniqueId *id);
/* This child plays topology device dev (-1: its rank, the default). */
void set_device(int dev);

#endif
