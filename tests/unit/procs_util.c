/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * procs_util.c - procs_util.h.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procs_util.h"

int got_error(int status)
{
    return status > CHILD_GOT(blinkSuccess) && status < CHILD_GOT(blinkNumResults);
}

double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ launching ranks */

void spawn(struct procs *p, int n, child_fn body, const void *arg)
{
    pid_t parent = getpid();
    cr_assert(n <= MAX_RANKS);
    memset(p, 0, sizeof *p);
    p->n = n;
    p->start = now();
    for (int r = 0; r < n; r++) {
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1, "fork");
        if (pid == 0) {
            close(fds[0]);
            /* Criterion's timeout kills only the test's process: its ranks must go with it. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(CHILD_FAILED);
            char msg[MSG_BYTES] = "";
            int code = body(r, arg, msg, sizeof msg);
            ssize_t w = write(fds[1], msg, strlen(msg));
            /* _exit, not exit: the test process's stdio buffers and Criterion's atexit
             * handlers are not the child's to run. */
            _exit(w < 0 ? CHILD_FAILED : code);
        }
        close(fds[1]);
        p->pid[r] = pid;
        p->fd[r] = fds[0];
    }
}

void reaped(struct procs *p, int r, int st)
{
    p->status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    p->secs[r] = now() - p->start;
    p->pid[r] = 0;
}

/* Wait for every child but `except` (-1: none) until deadline_s from the start; then kill them
 * all. 1 if they all exited in time. */
int wait_children(struct procs *p, double deadline_s, int except)
{
    struct timespec tick = {0, 5 * 1000 * 1000};
    for (;;) {
        int left = 0, st;
        for (int r = 0; r < p->n; r++)
            if (p->pid[r] && r != except) {
                if (waitpid(p->pid[r], &st, WNOHANG) == p->pid[r])
                    reaped(p, r, st);
                else
                    left++;
            }
        if (!left)
            return 1;
        if (now() - p->start > deadline_s)
            break;
        nanosleep(&tick, NULL);
    }
    for (int r = 0; r < p->n; r++)
        if (p->pid[r])
            kill(p->pid[r], SIGKILL);
    for (int r = 0; r < p->n; r++) {
        int st;
        if (p->pid[r] && waitpid(p->pid[r], &st, 0) == p->pid[r])
            reaped(p, r, st);
    }
    return 0;
}

/* Every child's message, once all have exited. */
void read_messages(struct procs *p)
{
    for (int r = 0; r < p->n; r++) {
        ssize_t got = read(p->fd[r], p->msg[r], MSG_BYTES - 1);
        p->msg[r][got > 0 ? got : 0] = '\0';
        close(p->fd[r]);
    }
}

/* Run n children to the end (deadline_s, then killed): 1 if all exited in time. */
int run_children(struct procs *p, int n, child_fn body, const void *arg, double deadline_s)
{
    spawn(p, n, body, arg);
    int ok = wait_children(p, deadline_s, -1);
    read_messages(p);
    return ok;
}

/* Names in /dev/shm of the id's token: its rendezvous and its segments (blink-TOKEN...).
 * Other tests of this program run beside this one, so only this id's names count. */
static int shm_left(const blinkUniqueId *id, char *names, size_t len)
{
    char token[17];
    memcpy(token, id->internal + 8, 16); /* after the magic "blinkid1" (rendezvous.h) */
    token[16] = '\0';
    DIR *d = opendir("/dev/shm");
    int count = 0;
    names[0] = '\0';
    cr_assert(d != NULL, "/dev/shm");
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "blink-", 6) == 0 && strstr(e->d_name, token)) {
            size_t at = strlen(names);
            snprintf(names + at, len - at, "%s%s", at ? " " : "", e->d_name);
            count++;
        }
    closedir(d);
    return count;
}

void expect_shm_clean(const blinkUniqueId *id)
{
    char names[1024];
    cr_expect_eq(shm_left(id, names, sizeof names), 0, "left in /dev/shm: %s", names);
}

/* This child plays topology device dev (-1: its rank, the default). */
void set_device(int dev)
{
    char s[16];
    snprintf(s, sizeof s, "%d", dev);
    if (dev >= 0)
        setenv("BLINK_DEVICE", s, 1);
    else
        unsetenv("BLINK_DEVICE");
}
