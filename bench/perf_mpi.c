/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * perf_mpi.c - blink-perf's ranks as MPI processes (--mpi, where BLINK_PERF_MPI is defined; perf.h): the
 * id broadcast from rank 0, each half-row reduced to rank 0, the job's worst status.
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

/* ---------------------------------------------------------------- ranks as MPI processes */

#ifdef BLINK_PERF_MPI
struct mpi_ctx {
    const struct opts *o;
    const struct local *l;
    int me;                     /* this process's MPI rank, the communicator's rank too */
};

/* Half a row on this rank, then the job's: the slowest time and all wrong elements (on rank
 * 0). Every rank makes the same MPI calls whatever happened, and all learn whether a rank
 * failed: 0 then, on every rank. */
static int mpi_half(void *ctx, const struct opts *o, size_t count, int in_place,
                    struct half *h)
{
    const struct mpi_ctx *c = ctx;
    struct half mine = {0, 0};
    int bad = !measure(o, c->l, count, in_place, &mine), any = bad, size = 1;
    if (bad)
        fprintf(stderr, "blink-perf: rank %d: %s\n", c->me, blinkGetLastError(NULL));
    *h = mine;
    /* -a: rank 0's own time, or the job's sum (mean), least or most. */
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op = o->average == 2 ? MPI_MIN : o->average == 3 ? MPI_MAX : MPI_SUM;
    MPI_Reduce(&mine.us, &h->us, 1, MPI_DOUBLE, op, 0, MPI_COMM_WORLD);
    if (o->average == 0)
        h->us = mine.us;
    else if (o->average == 1)
        h->us /= size;
    MPI_Reduce(&mine.wrong, &h->wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return !any;
}

/* The sweep on a rank other than 0: the same halves in the same order, nothing printed. */
static int mpi_row(void *ctx, const struct opts *c, size_t bytes)
{
    size_t count, shown;
    row_size(c, bytes, &count, &shown);
    for (int in_place = 0; in_place < 2; in_place++) {
        struct half h;
        if (!mpi_half(ctx, c, count, in_place, &h))
            return 0;
    }
    return 1;
}

static int mpi_sweep(const struct opts *o, struct mpi_ctx *c)
{
    return sweep(o, mpi_row, c);
}

#define SERVER_CHARS 64

/* The job's distinct servers, as the ranks name them (BLINK_SERVER, else the host name); on
 * rank 0 only. */
static int mpi_servers(int me, int size)
{
    static char all[MAX_RANKS][SERVER_CHARS];
    char mine[SERVER_CHARS] = "";
    const char *env = getenv("BLINK_SERVER");
    if (env && *env)
        snprintf(mine, sizeof mine, "%s", env);
    else if (gethostname(mine, sizeof mine - 1) != 0)
        mine[0] = '\0';
    MPI_Gather(mine, SERVER_CHARS, MPI_CHAR, all, SERVER_CHARS, MPI_CHAR, 0, MPI_COMM_WORLD);
    int n = 0;
    for (int r = 0; me == 0 && r < size; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = strncmp(all[q], all[r], SERVER_CHARS) == 0;
        n += !seen;
    }
    return n;
}

/* This rank: join the others, then every row. Its exit status (the job's is the worst). */
static int mpi_rank(struct opts *o, int me, int size)
{
    o->servers = mpi_servers(me, size);
    struct {
        blinkUniqueId id;
        int ok;
    } made;
    memset(&made, 0, sizeof made);
    if (me == 0) {
        blinkResult_t res = blinkGetUniqueId(&made.id);
        made.ok = res == blinkSuccess;
        if (!made.ok)
            fprintf(stderr, "blink-perf: rank 0: blinkGetUniqueId: %s: %s\n",
                    blinkGetErrorString(res), blinkGetLastError(NULL));
    }
    MPI_Bcast(&made, (int)sizeof made, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!made.ok)
        return 1;
    struct local l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.rank[0].rank = me;
    /* -D names each rank's device; else BLINK_DEVICE (as mpirun -x sets it) says it. */
    char env[16];
    const char *dev_env = getenv("BLINK_DEVICE");
    int dev = o->ndevices ? o->devices[me] : dev_env ? atoi(dev_env) : 0;
    snprintf(env, sizeof env, "%d", dev);
    int placed = 1;
    if (o->ndevices)
        placed = setenv("BLINK_DEVICE", env, 1) == 0 && dev_select(run_device(me, dev));
    else if (dev_env)
        placed = dev_select(run_device(me, dev));
    blinkResult_t res = placed ? blinkrtCommInitRankFrom(o->lib, &l.rank[0].comm, size,
                                                         made.id, me)
                               : blinkSystemError;
    struct blinkrt_stats st;
    int ok = res == blinkSuccess, bad, any;
    if (!ok)
        fprintf(stderr, "blink-perf: rank %d: blinkCommInitRank: %s: %s\n", me,
                blinkGetErrorString(res), blinkGetLastError(NULL));
    else if (!(ok = local_open(o, &l) && blinkrtCommStats(l.rank[0].comm, &st) == blinkSuccess))
        fprintf(stderr, "blink-perf: rank %d: cannot allocate buffers or a stream\n", me);
    bad = !ok;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    struct tally t = {0, 0, 0};
    if (!any) {
        struct mpi_ctx c = {o, &l, me};
        if (me == 0) {
            print_header(o, &st);
            ok = print_rows(o, mpi_half, &c, &t);
            print_footer(&t, ok);
        } else {
            ok = mpi_sweep(o, &c);
        }
    }
    local_close(o, &l);
    return ok && !any && t.wrong == 0 ? 0 : 1;
}

/* One rank of an MPI job; every rank returns the job's worst status, after MPI_Finalize. */
int run_mpi(struct opts *o)
{
    int provided = MPI_THREAD_SINGLE, me = 0, size = 0, status = 0, worst;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "blink-perf: MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* The same on every rank: only rank 0 says it. */
    int per_process = o->nthreads * o->ngpus;
    if (size > MAX_RANKS || per_process != 1 || (o->ndevices && o->ndevices != size)) {
        if (me == 0 && size > MAX_RANKS)
            fprintf(stderr, "blink-perf: the MPI job has %d ranks, blink-perf runs %d at "
                    "most\n", size, MAX_RANKS);
        else if (me == 0 && per_process != 1)
            fprintf(stderr, "blink-perf: --mpi runs one rank per process, and -t %d -g %d "
                    "asks for %d (nccl-tests' -t and -g count a process's ranks)\n",
                    o->nthreads, o->ngpus, per_process);
        else if (me == 0)
            fprintf(stderr, "blink-perf: the MPI job has %d ranks, --devices lists %d\n", size,
                    o->ndevices);
        status = 2;
    } else if ((o->ndev = size), is_rooted(o) && !o->root_all && o->root >= size) {
        if (me == 0)
            fprintf(stderr, "blink-perf: root %d, but the MPI job has %d ranks\n", o->root,
                    size);
        status = 2;
    }
    if (status == 2 && me == 0)
        fprintf(stderr, "Try 'blink-perf --help' for more information.\n");
    if (status == 0)
        status = mpi_rank(o, me, size);
    worst = status;
    MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
}
#endif
