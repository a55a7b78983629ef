/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * backend_host.c - the host backend: the correctness oracle for every schedule blinkc emits,
 * run by the same protocol as the CUDA backend (proto.h, exec_host.c).
 *
 * Memory: each rank's segment is a POSIX shared-memory object, so ranks may be threads of one
 * process or separate processes alike; every rank maps every peer's, and the names are removed
 * as soon as all have (nothing stays in /dev/shm). Streams: each stream (a rank's internal
 * one, or a user's blinkHostStream) is a worker thread with a FIFO queue; an event is a
 * position in one stream. A call is five queue operations however large it is: the rank's
 * stream waits for the user's, runs the launch, records; the user's stream waits for that.
 * Failures are sticky per stream: a failed launch marks its stream, later launches on it are
 * skipped, and a wait on a point at or after the failure fails the waiting stream with
 * blinkRemoteError and the original message. blinkHostStreamSynchronize reports and clears a
 * user stream's error.
 *
 * Environment (read at every init):
 *   BLINK_HOST_THREADS=N     threads per rank that play its threadblocks (default 4, at most
 *                            the schedule's trees)
 *   BLINK_HOST_FAIL_COPY=N   fault injection for tests: the N-th chunk written into a peer's
 *                            staging (from 1, counted per process from the last init) fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "exec_host.h"
#include "rt.h"

#define DEFAULT_THREADS 4

enum op_kind { OP_LAUNCH, OP_WAIT };

struct bk_stream;

struct op {
    struct op *next;
    enum op_kind kind;
    blinkComm_t comm;          /* launch */
    struct bk_launch L;
    struct bk_stream *on;      /* wait: the stream waited for (referenced) */
    unsigned long long pos;    /* wait: until on->done >= pos */
};

struct bk_stream {
    char label[64];
    pthread_t thread;
    pthread_cond_t work_cv, done_cv;
    struct op *head, *tail;
    unsigned long long enq, done;
    int refs, closing;
    blinkResult_t err;         /* first failure (sticky until a user synchronize) */
    unsigned long long err_pos;
    char err_msg[BK_MSG_MAX];
};

/* A user's stream is the same thing under the public name. */
struct blinkHostStream {
    struct bk_stream s;
};

struct bk_event {
    struct bk_stream *s;       /* the stream of the last record (referenced), or NULL */
    unsigned long long pos;
};

/* One rank's resources. */
struct bk_be {
    struct bk_stream *exec;
    struct bk_event in_ev, out_ev;
    struct bk_hx *hx;
    size_t *mapped;            /* [nranks] bytes of each mapping (0: none) */
};

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static int threads_per_rank = DEFAULT_THREADS;

static blinkResult_t configure(void)
{
    const char *t = getenv("BLINK_HOST_THREADS"), *f = getenv("BLINK_HOST_FAIL_COPY");
    char *end;
    long n = DEFAULT_THREADS;
    unsigned long long at = 0;
    if (t) {
        errno = 0;
        n = strtol(t, &end, 10);
        if (end == t || *end || errno || n < 1 || n > 1024)
            return bk_error(blinkInvalidArgument, "BLINK_HOST_THREADS='%s' is not a thread "
                            "count from 1 to 1024", t);
    }
    if (f) {
        errno = 0;
        at = strtoull(f, &end, 10);
        if (end == f || *end || errno || f[0] == '-')
            return bk_error(blinkInvalidArgument, "BLINK_HOST_FAIL_COPY='%s' is not a copy "
                            "number", f);
    }
    threads_per_rank = (int)n;
    bk_hx_fail_write(at);
    return blinkSuccess;
}

static int current_device(void) { return -1; }

static void bus_id(int dev, char *buf, size_t len)
{
    (void)dev;
    snprintf(buf, len, "%s", "");
}

/* ------------------------------------------------------------------ streams */

/* Drop a reference; big is held. */
static void unref(struct bk_stream *s)
{
    if (--s->refs == 0) {
        pthread_cond_destroy(&s->work_cv);
        pthread_cond_destroy(&s->done_cv);
        free(s);
    }
}

static void fail(struct bk_stream *s, blinkResult_t r, const char *msg)
{
    if (s->err != blinkSuccess)
        return;
    s->err = r;
    s->err_pos = s->done + 1;
    snprintf(s->err_msg, sizeof s->err_msg, "%s", msg);
}

/* A wait, run by the worker with big held: a join, bounded by the launches it waits for. */
static void run_wait(struct bk_stream *s, struct op *o)
{
    struct bk_stream *w = o->on;
    while (w->done < o->pos)
        pthread_cond_wait(&w->done_cv, &big);
    if (w->err != blinkSuccess && w->err_pos <= o->pos)
        fail(s, blinkRemoteError, w->err_msg);
}

static void *worker(void *arg)
{
    struct bk_stream *s = arg;
    pthread_mutex_lock(&big);
    for (;;) {
        while (!s->head && !s->closing)
            pthread_cond_wait(&s->work_cv, &big);
        if (!s->head)
            break;
        struct op *o = s->head;
        if (o->kind == OP_WAIT) {
            run_wait(s, o);
        } else if (s->err == blinkSuccess) {
            char msg[BK_MSG_MAX];
            pthread_mutex_unlock(&big);
            blinkResult_t r = bk_hx_run(o->comm->be->hx, &o->L, msg, sizeof msg);
            pthread_mutex_lock(&big);
            if (r != blinkSuccess)
                fail(s, r, msg);
        }
        s->head = o->next;
        if (!s->head)
            s->tail = NULL;
        s->done++;
        if (o->on)
            unref(o->on);
        free(o);
        pthread_cond_broadcast(&s->done_cv);
    }
    pthread_mutex_unlock(&big);
    return NULL;
}

static blinkResult_t stream_create(const char *label, struct bk_stream **out)
{
    /* Room for the public wrapper: a user stream and an internal one are the same object. */
    struct blinkHostStream *hs = calloc(1, sizeof *hs);
    if (!hs)
        return bk_error(blinkSystemError, "host backend: out of memory");
    struct bk_stream *s = &hs->s;
    snprintf(s->label, sizeof s->label, "%s", label);
    s->refs = 1;
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)1 << 20);
    int e = pthread_create(&s->thread, &attr, worker, s);
    pthread_attr_destroy(&attr);
    if (e) {
        pthread_cond_destroy(&s->work_cv);
        pthread_cond_destroy(&s->done_cv);
        free(hs);
        return bk_error(blinkSystemError, "host backend: cannot start a stream thread: %s",
                        strerror(e));
    }
    *out = s;
    return blinkSuccess;
}

static void stream_destroy(struct bk_stream *s)
{
    pthread_mutex_lock(&big);
    s->closing = 1;
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&big);
    pthread_join(s->thread, NULL);
    pthread_mutex_lock(&big);
    unref(s);
    pthread_mutex_unlock(&big);
}

/* Wait (big held) until s has run everything enqueued up to pos; report a failure by then. */
static blinkResult_t sync_to(struct bk_stream *s, unsigned long long pos, int clear)
{
    while (s->done < pos)
        pthread_cond_wait(&s->done_cv, &big);
    blinkResult_t r = blinkSuccess;
    if (s->err != blinkSuccess && s->err_pos <= pos) {
        r = bk_error(s->err, "%s", s->err_msg);
        if (clear)
            s->err = blinkSuccess;
    }
    return r;
}

static blinkResult_t push(struct bk_stream *s, const struct op *o)
{
    struct op *c = malloc(sizeof *c);
    if (!c)
        return bk_error(blinkSystemError, "host backend: out of memory");
    *c = *o;
    c->next = NULL;
    pthread_mutex_lock(&big);
    if (c->on)
        c->on->refs++;
    if (s->tail)
        s->tail->next = c;
    else
        s->head = c;
    s->tail = c;
    s->enq++;
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&big);
    return blinkSuccess;
}

static void event_record(struct bk_event *e, struct bk_stream *s)
{
    pthread_mutex_lock(&big);
    s->refs++;
    if (e->s)
        unref(e->s);
    e->s = s;
    e->pos = s->enq;
    pthread_mutex_unlock(&big);
}

static void event_clear(struct bk_event *e)
{
    pthread_mutex_lock(&big);
    if (e->s)
        unref(e->s);
    e->s = NULL;
    pthread_mutex_unlock(&big);
}

static blinkResult_t stream_wait(struct bk_stream *s, const struct bk_event *e)
{
    if (!e->s)
        return blinkSuccess; /* never recorded: nothing to wait for (as in CUDA) */
    return push(s, &(struct op){.kind = OP_WAIT, .on = e->s, .pos = e->pos});
}

/* ------------------------------------------------------------------ ranks */

static blinkResult_t rank_init(blinkComm_t c)
{
    struct bk_be *be = calloc(1, sizeof *be);
    if (!be)
        return bk_error(blinkSystemError, "host backend: out of memory");
    c->be = be;
    be->mapped = calloc((size_t)c->nranks, sizeof *be->mapped);
    if (!be->mapped)
        return bk_error(blinkSystemError, "host backend: out of memory");
    int threads = threads_per_rank < c->layout.ntrees ? threads_per_rank : c->layout.ntrees;
    char label[64];
    snprintf(label, sizeof label, "rank %d", c->rank);
    blinkResult_t r = stream_create(label, &be->exec);
    if (r == blinkSuccess)
        r = bk_hx_start(c, threads, &be->hx);
    c->nstreams = be->exec ? 1 : 0;
    c->nworkers = threads;
    return r;
}

static void rank_free(blinkComm_t c)
{
    struct bk_be *be = c->be;
    if (be->exec)
        stream_destroy(be->exec); /* runs what is queued first */
    event_clear(&be->in_ev);
    event_clear(&be->out_ev);
    bk_hx_stop(be->hx);
    for (int q = 0; q < c->nranks && be->mapped; q++)
        if (be->mapped[q])
            munmap(c->peer[q].seg, be->mapped[q]);
    free(be->mapped);
    free(be);
    c->be = NULL;
}

static blinkResult_t seg_create(blinkComm_t c, const char *name, size_t bytes, void **seg,
                                void *handle)
{
    (void)handle; /* the name is the handle */
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return bk_error(blinkSystemError, "host backend: cannot create shared memory %s: %s",
                        name, strerror(errno));
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)bytes) == 0)
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(name);
        return bk_error(blinkSystemError, "host backend: cannot map %zu bytes of shared memory "
                        "%s: %s", bytes, name, strerror(e));
    }
    struct bk_seg_header *h = p;
    h->magic = BK_SEG_MAGIC;
    h->rank = (uint32_t)c->prank;
    h->nranks = (uint32_t)c->nranks;
    c->be->mapped[c->prank] = bytes;
    *seg = p;
    return blinkSuccess;
}

static blinkResult_t seg_open(blinkComm_t c, int peer, const char *name, const void *handle,
                              size_t bytes, int same_process, void *seg_ptr, void **seg)
{
    (void)handle;
    (void)same_process;
    (void)seg_ptr; /* a second mapping works in the same process too: one code path */
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0)
        return bk_error(blinkSystemError, "host backend: cannot open rank %d's shared memory "
                        "%s: %s", c->user_of[peer], name, strerror(errno));
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return bk_error(blinkSystemError, "host backend: cannot map rank %d's shared memory %s: "
                        "%s", c->user_of[peer], name, strerror(e));
    const struct bk_seg_header *h = p;
    if (h->magic != BK_SEG_MAGIC || h->rank != (uint32_t)peer) {
        munmap(p, bytes);
        return bk_error(blinkSystemError, "host backend: %s is not rank %d's segment",
                        name, c->user_of[peer]);
    }
    c->be->mapped[peer] = bytes;
    *seg = p;
    return blinkSuccess;
}

static void seg_unlink(const char *name) { shm_unlink(name); }

/* ------------------------------------------------------------------ calls */

static blinkResult_t launch(blinkComm_t c, const struct bk_launch *L, void *user)
{
    struct bk_be *be = c->be;
    struct bk_stream *us = user ? &((struct blinkHostStream *)user)->s : NULL;
    blinkResult_t r = blinkSuccess;
    c->ops = 0;
    if (us) {
        event_record(&be->in_ev, us);
        r = stream_wait(be->exec, &be->in_ev);
        c->ops += 2;
    }
    if (r == blinkSuccess)
        r = push(be->exec, &(struct op){.kind = OP_LAUNCH, .comm = c, .L = *L});
    if (r == blinkSuccess)
        event_record(&be->out_ev, be->exec);
    c->ops += 2;
    if (us) { /* always, so that the user's stream never runs ahead of the call */
        blinkResult_t j = stream_wait(us, &be->out_ev);
        r = r == blinkSuccess ? j : r;
        c->ops++;
    }
    return r;
}

static blinkResult_t wait_last(blinkComm_t c)
{
    struct bk_event *e = &c->be->out_ev;
    pthread_mutex_lock(&big);
    blinkResult_t r = e->s ? sync_to(e->s, e->pos, 0) : blinkSuccess;
    pthread_mutex_unlock(&big);
    return r;
}

static blinkResult_t async_error(blinkComm_t c)
{
    struct bk_stream *s = c->be->exec;
    pthread_mutex_lock(&big);
    blinkResult_t r = s->err;
    if (r != blinkSuccess)
        bk_error(r, "%s", s->err_msg);
    pthread_mutex_unlock(&big);
    return r;
}

static void abort_rank(blinkComm_t c, const char *msg)
{
    bk_hx_abort(c, c->be ? c->be->hx : NULL, msg);
}

static const struct bk_backend host_backend = {
    "host", 1, 1, 0, 0, 1, 1, configure, current_device, bus_id, rank_init, rank_free, seg_create,
    seg_open, seg_unlink, launch, wait_last, async_error, abort_rank,
};

const struct bk_backend *bk_backend(void) { return &host_backend; }

/* ------------------------------------------------------------------ public host streams */

blinkResult_t blinkHostStreamCreate(blinkStream_t *stream)
{
    if (!stream)
        return bk_error(blinkInvalidArgument, "blinkHostStreamCreate: stream is NULL");
    struct bk_stream *s;
    blinkResult_t r = stream_create("user stream", &s);
    if (r == blinkSuccess)
        *stream = (struct blinkHostStream *)s;
    return r;
}

blinkResult_t blinkHostStreamSynchronize(blinkStream_t stream)
{
    if (!stream)
        return blinkSuccess; /* the NULL stream is synchronous */
    pthread_mutex_lock(&big);
    blinkResult_t r = sync_to(&stream->s, stream->s.enq, 1);
    pthread_mutex_unlock(&big);
    return r;
}

blinkResult_t blinkHostStreamDestroy(blinkStream_t stream)
{
    if (!stream)
        return bk_error(blinkInvalidArgument, "blinkHostStreamDestroy: stream is NULL");
    stream_destroy(&stream->s);
    return blinkSuccess;
}
