/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * perf_procs.c - blink-perf's ranks as processes (--procs, perf.h): one child per rank, its times and
 * wrong counts up a pipe, and a watch that kills the others when one dies or none progresses.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fork; users build these files on their own */
#define _DEFAULT_SOURCE         /* MAP_ANONYMOUS */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef BLINK_PERF_MPI
#include <mpi.h>
#endif


#include "perf.h"

/* ---------------------------------------------------------------- ranks as processes */

#define DEFAULT_TIMEOUT_S 600.0 /* the runtime's, blink(3) */
#define POLL_MS 100

/* The children, as the parent sees them. */
struct kids {
    int n;
    pid_t pid[MAX_RANKS];
    int fd[MAX_RANKS];          /* read end of each child's pipe */
    int status[MAX_RANKS];      /* wait status, once reaped */
    int reaped[MAX_RANKS];
    int killed;                 /* the parent killed them: a crash or a stall */
    unsigned long *beat;        /* [MAX_RANKS], shared: each rank's steps done */
    unsigned long seen;         /* the sum of beat when it last moved */
    double moved_s, deadline_s;
};

static int write_all(int fd, const void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t w = write(fd, (const char *)buf + done, len - done);
        if (w < 0 && errno != EINTR)
            return 0;
        done += w > 0 ? (size_t)w : 0;
    }
    return 1;
}

struct child_ctx {
    const struct local *l;
    int fd;
};

/* A row for this rank alone: each half's time and wrong count up the pipe. */
static int child_row(void *ctx, const struct opts *c, size_t bytes)
{
    const struct child_ctx *k = ctx;
    size_t count, shown;
    row_size(c, bytes, &count, &shown);
    for (int in_place = 0; in_place < 2; in_place++) {
        struct half h;
        if (!measure(c, k->l, count, in_place, &h) || !write_all(k->fd, &h, sizeof h))
            return 0;
    }
    return 1;
}

/* Every row for this rank alone. */
static int child_rows(const struct opts *o, const struct local *l, int fd)
{
    struct child_ctx k = {l, fd};
    return sweep(o, child_row, &k);
}

/* The physical device rank r runs on: its entry of BLINK_DEVICE_MAP (as blinkCommInitAll reads
 * it, so that ranks of every mode can share one GPU), else the device it plays. */
int run_device(int r, int dev)
{
    const char *p = getenv("BLINK_DEVICE_MAP");
    for (int i = 0; p && *p; i++) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1 << 20)
            break;
        if (i == r)
            return (int)v;
        p = *end == ',' ? end + 1 : NULL;
    }
    return dev;
}

/* Child r: play its device, join the others, send its stats, then every row. Exit status. */
static int child(const struct opts *o, blinkUniqueId id, int r, int fd, unsigned long *beat)
{
    int dev = o->ndevices ? o->devices[r] : r;
    char env[16];
    snprintf(env, sizeof env, "%d", dev);
    struct local l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.rank[0].rank = r;
    l.rank[0].beat = beat;
    blinkResult_t res = setenv("BLINK_DEVICE", env, 1) == 0 && dev_select(run_device(r, dev))
                        ? blinkrtCommInitRankFrom(o->lib, &l.rank[0].comm, o->ndev, id, r)
                        : blinkSystemError;
    if (res != blinkSuccess) {
        fprintf(stderr, "blink-perf: rank %d: blinkCommInitRank: %s: %s\n", r,
                blinkGetErrorString(res), blinkGetLastError(NULL));
        return 1;
    }
    struct blinkrt_stats st;
    int ok = local_open(o, &l) && blinkrtCommStats(l.rank[0].comm, &st) == blinkSuccess;
    if (!ok)
        fprintf(stderr, "blink-perf: rank %d: cannot allocate buffers or a stream\n", r);
    else if (!(ok = write_all(fd, &st, sizeof st) && child_rows(o, &l, fd)))
        fprintf(stderr, "blink-perf: rank %d: %s\n", r, blinkGetLastError(NULL));
    local_close(o, &l);
    return ok ? 0 : 1;
}

/* SIGKILL every child still running and reap it. */
static void kids_kill(struct kids *k)
{
    for (int r = 0; r < k->n; r++)
        if (!k->reaped[r])
            kill(k->pid[r], SIGKILL);
    for (int r = 0; r < k->n; r++)
        if (!k->reaped[r] && waitpid(k->pid[r], &k->status[r], 0) == k->pid[r])
            k->reaped[r] = 1;
    k->killed = 1;
}

/* Reap the children that ended; a crash, or no step anywhere past the deadline, kills the
 * rest. 0 once they are killed. */
static int kids_watch(struct kids *k)
{
    for (int r = 0; r < k->n; r++) {
        if (k->reaped[r] || waitpid(k->pid[r], &k->status[r], WNOHANG) != k->pid[r])
            continue;
        k->reaped[r] = 1;
        if (WIFSIGNALED(k->status[r])) {
            int sig = WTERMSIG(k->status[r]);
            fprintf(stderr, "blink-perf: rank %d (pid %d) died of signal %d (%s); killing the "
                    "other ranks\n", r, (int)k->pid[r], sig, strsignal(sig));
            kids_kill(k);
            return 0;
        }
    }
    unsigned long sum = 0;
    for (int r = 0; r < k->n; r++)
        sum += __atomic_load_n(&k->beat[r], __ATOMIC_RELAXED);
    double now = now_us() * 1e-6;
    if (sum != k->seen) {
        k->seen = sum;
        k->moved_s = now;
    } else if (now - k->moved_s > k->deadline_s) {
        fprintf(stderr, "blink-perf: no rank progressed for %g s (BLINK_TIMEOUT_S + %g s); "
                "killing the ranks\n", k->deadline_s, MARGIN_S);
        kids_kill(k);
        return 0;
    }
    return 1;
}

/* Read len bytes from child r, watching all of them meanwhile; 0 on its end or a kill. */
static int kid_read(struct kids *k, int r, void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        struct pollfd p = {k->fd[r], POLLIN, 0};
        int ready = poll(&p, 1, POLL_MS);
        if (ready < 0 && errno != EINTR)
            return 0;
        if (ready <= 0) {
            if (!kids_watch(k))
                return 0;
            continue;
        }
        ssize_t got = read(k->fd[r], (char *)buf + done, len - done);
        if (got == 0 || (got < 0 && errno != EINTR))
            return 0;
        done += got > 0 ? (size_t)got : 0;
    }
    return 1;
}

/* Wait for every child to exit (still killing on a crash or a stall); 1 when all exited 0. */
static int kids_end(struct kids *k)
{
    for (int left = 1; left;) {
        if (!kids_watch(k))
            break;
        left = 0;
        for (int r = 0; r < k->n; r++)
            left |= !k->reaped[r];
        if (left)
            nanosleep(&(struct timespec){0, POLL_MS * 1000000L}, NULL);
    }
    int ok = !k->killed;
    for (int r = 0; r < k->n; r++) {
        ok = ok && WIFEXITED(k->status[r]) && WEXITSTATUS(k->status[r]) == 0;
        close(k->fd[r]);
    }
    munmap(k->beat, sizeof *k->beat * MAX_RANKS);
    return ok;
}

/* How long no rank may progress: BLINK_TIMEOUT_S (as the runtime reads it) plus the margin. */
static double deadline_s(void)
{
    const char *env = getenv("BLINK_TIMEOUT_S");
    double t = env ? strtod(env, NULL) : 0;
    return (t > 0 && t <= 1e9 ? t : DEFAULT_TIMEOUT_S) + MARGIN_S;
}

/* Fork child r with a pipe to it; 0 when that fails. */
static int kid_spawn(const struct opts *o, blinkUniqueId id, struct kids *k, int r)
{
    int p[2];
    if (pipe(p) != 0)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        for (int q = 0; q < r; q++)
            close(k->fd[q]);
        close(p[0]);
        exit(child(o, id, r, p[1], &k->beat[r]));
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return 0;
    }
    k->pid[r] = pid;
    k->fd[r] = p[0];
    k->n = r + 1;
    return 1;
}

/* A child per rank, all with one id; 0 (and none left running) when one cannot start. */
static int kids_start(const struct opts *o, struct kids *k)
{
    memset(k, 0, sizeof *k);
    blinkUniqueId id;
    blinkResult_t res = blinkGetUniqueId(&id);
    if (res != blinkSuccess) {
        fprintf(stderr, "blink-perf: blinkGetUniqueId: %s: %s\n", blinkGetErrorString(res),
                blinkGetLastError(NULL));
        return 0;
    }
    k->beat = mmap(NULL, sizeof *k->beat * MAX_RANKS, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (k->beat == MAP_FAILED) {
        fprintf(stderr, "blink-perf: mmap: %s\n", strerror(errno));
        return 0;
    }
    k->deadline_s = deadline_s();
    k->moved_s = now_us() * 1e-6;
    fflush(stdout); /* the children must not print what is buffered here */
    fflush(stderr);
    for (int r = 0; r < o->ndev; r++)
        if (!kid_spawn(o, id, k, r)) {
            fprintf(stderr, "blink-perf: cannot start rank %d: %s\n", r, strerror(errno));
            kids_kill(k);
            kids_end(k);
            return 0;
        }
    return 1;
}

/* Half a row: every rank's, the slowest time and all wrong elements. */
static int procs_half(void *ctx, const struct opts *o, size_t count, int in_place,
                      struct half *h)
{
    struct kids *k = ctx;
    (void)count, (void)in_place; /* the children sweep the same rows in the same order */
    h->us = 0;
    h->wrong = 0;
    for (int r = 0; r < k->n; r++) {
        struct half one;
        if (!kid_read(k, r, &one, sizeof one))
            return 0;
        h->us = ranks_time(o->average, h->us, one.us, r, k->n);
        h->wrong += one.wrong;
    }
    return 1;
}

/* A process per rank; this one only prints what they send. */
int run_procs(const struct opts *o)
{
    struct kids k;
    if (!kids_start(o, &k))
        return 1;
    struct blinkrt_stats st, other; /* every rank's says it joined; rank 0's is shown */
    int ok = kid_read(&k, 0, &st, sizeof st);
    for (int r = 1; ok && r < k.n; r++)
        ok = kid_read(&k, r, &other, sizeof other);
    int joined = ok;
    struct tally t = {0, 0, 0};
    if (joined) {
        print_header(o, &st);
        ok = print_rows(o, procs_half, &k, &t);
    }
    ok = kids_end(&k) && ok;
    if (joined)
        print_footer(&t, ok);
    return ok && t.wrong == 0 ? 0 : 1;
}
