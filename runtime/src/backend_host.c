/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * backend_host.c - the host backend: the correctness oracle for every schedule blinkc emits.
 *
 * Each device is a memory domain of plain host memory; each stream (internal, or a user's
 * blinkHostStream) is a worker thread with a FIFO queue; an event is a position in one stream
 * (streams count enqueued and completed operations; a wait blocks until the count is reached).
 * One process-wide lock guards the queues and counters; the work itself runs unlocked.
 *
 * Failures are sticky per stream: a failed operation marks its stream, later copies and
 * reductions on it are skipped (but counted; waits are still honoured), and a wait on a point at or after the failure fails the waiting
 * stream with blinkRemoteError and the original message - so every dependent wait is released,
 * as failed, and the error reaches every rank. blinkHostStreamSynchronize reports and clears a
 * user stream's error.
 *
 * Environment (read by every blinkCommInitAll):
 *   BLINK_HOST_TIMEOUT_MS=N  a wait that has not been satisfied after N ms (default 30000)
 *                            fails its stream with blinkSystemError instead of hanging.
 *   BLINK_HOST_FAIL_COPY=N   fault injection for tests: the N-th copy (from 1, counted from the
 *                            last init) fails with blinkSystemError.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "reduce_host.h"
#include "rt.h"

enum op_kind { OP_COPY, OP_REDUCE, OP_DIVIDE, OP_WAIT };

struct op {
    struct op *next;
    enum op_kind kind;
    void *dst;
    const void *a, *b;
    size_t n;                  /* bytes (copy) or elements */
    blinkDataType_t dt;
    blinkRedOp_t rop;
    int divisor;
    struct bk_stream *on;      /* wait: the stream waited for (referenced) */
    unsigned long long pos;    /* wait: until on->done >= pos */
};

struct bk_stream {
    int dev;
    char label[64];
    pthread_t thread;
    pthread_cond_t work_cv, done_cv;
    struct op *head, *tail;
    unsigned long long enq, done;
    int refs, closing;
    int join;                  /* the hub or a user stream: its waits have no deadline */
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

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static atomic_long timeout_ms = 30000;
static atomic_ullong fail_copy_at, copies;

static blinkResult_t configure(void)
{
    const char *t = getenv("BLINK_HOST_TIMEOUT_MS"), *f = getenv("BLINK_HOST_FAIL_COPY");
    char *end;
    long ms = 30000;
    unsigned long long at = 0;
    if (t) {
        errno = 0;
        ms = strtol(t, &end, 10);
        if (end == t || *end || errno || ms <= 0)
            return bk_error(blinkInvalidArgument, "BLINK_HOST_TIMEOUT_MS='%s' is not a positive "
                            "number of milliseconds", t);
    }
    if (f) {
        errno = 0;
        at = strtoull(f, &end, 10);
        if (end == f || *end || errno || f[0] == '-')
            return bk_error(blinkInvalidArgument, "BLINK_HOST_FAIL_COPY='%s' is not a copy "
                            "number", f);
    }
    atomic_store(&timeout_ms, ms);
    atomic_store(&fail_copy_at, at);
    atomic_store(&copies, 0);
    return blinkSuccess;
}

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

/* A wait, run by the worker with big held. */
static void run_wait(struct bk_stream *s, struct op *o)
{
    struct bk_stream *w = o->on;
    struct timespec dl;
    long ms = atomic_load(&timeout_ms);
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    while (w->done < o->pos) {
        if (s->join) {
            pthread_cond_wait(&w->done_cv, &big);
            continue;
        }
        if (pthread_cond_timedwait(&w->done_cv, &big, &dl) == ETIMEDOUT && w->done < o->pos) {
            char msg[BK_MSG_MAX];
            snprintf(msg, sizeof msg, "host backend: stream '%s' waited %ld ms for stream '%s' "
                     "(BLINK_HOST_TIMEOUT_MS)", s->label, ms, w->label);
            fail(s, blinkSystemError, msg);
            return;
        }
    }
    if (w->err != blinkSuccess && w->err_pos <= o->pos)
        fail(s, blinkRemoteError, w->err_msg);
}

/* Copies, reductions, divisions: run unlocked; returns a message on failure. */
static blinkResult_t run_work(struct bk_stream *s, struct op *o, char *msg, size_t len)
{
    switch (o->kind) {
    case OP_COPY: {
        unsigned long long at = atomic_load(&fail_copy_at);
        if (at && atomic_fetch_add(&copies, 1) + 1 == at) {
            snprintf(msg, len, "host backend: injected failure of copy %llu on stream '%s' "
                     "(BLINK_HOST_FAIL_COPY)", at, s->label);
            return blinkSystemError;
        }
        if (o->n)
            memmove(o->dst, o->a, o->n);
        return blinkSuccess;
    }
    case OP_REDUCE:
        if (bk_host_reduce(o->dst, o->a, o->b, o->n, o->dt, o->rop) == 0)
            return blinkSuccess;
        break;
    case OP_DIVIDE:
        if (bk_host_divide(o->dst, o->n, o->dt, o->divisor) == 0)
            return blinkSuccess;
        break;
    default:
        break;
    }
    snprintf(msg, len, "host backend: stream '%s': invalid operation", s->label);
    return blinkInternalError;
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
        /* A failed stream still honours its waits, so that it completes only after the work
         * it depends on (buffers stay in use until then); it skips everything else. */
        if (o->kind == OP_WAIT) {
            run_wait(s, o);
        } else if (s->err == blinkSuccess) {
            char msg[BK_MSG_MAX];
            pthread_mutex_unlock(&big);
            blinkResult_t r = run_work(s, o, msg, sizeof msg);
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

static blinkResult_t stream_create(int dev, const char *label, struct bk_stream **out)
{
    /* Room for the public wrapper: a user stream and an internal one are the same object. */
    struct blinkHostStream *hs = calloc(1, sizeof *hs);
    if (!hs)
        return bk_error(blinkSystemError, "host backend: out of memory");
    struct bk_stream *s = &hs->s;
    s->dev = dev;
    snprintf(s->label, sizeof s->label, "%s", label);
    s->join = strcmp(label, BK_JOIN_LABEL) == 0;
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

static blinkResult_t stream_synchronize(struct bk_stream *s)
{
    pthread_mutex_lock(&big);
    blinkResult_t r = sync_to(s, s->enq, 0);
    pthread_mutex_unlock(&big);
    return r;
}

static blinkResult_t push(struct bk_stream *s, struct op *o)
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

static blinkResult_t mem_alloc(int dev, size_t bytes, void **p)
{
    *p = malloc(bytes ? bytes : 1);
    if (!*p)
        return bk_error(blinkSystemError, "host backend: cannot allocate %zu bytes on device %d",
                        bytes, dev);
    return blinkSuccess;
}

static void mem_free(int dev, void *p) { free(p); }

static blinkResult_t copy(struct bk_stream *s, int dst_dev, void *dst, int src_dev,
                          const void *src, size_t bytes)
{
    return push(s, &(struct op){.kind = OP_COPY, .dst = dst, .a = src, .n = bytes});
}

static blinkResult_t reduce(struct bk_stream *s, void *dst, const void *a, const void *b,
                            size_t count, blinkDataType_t dt, blinkRedOp_t op)
{
    return push(s, &(struct op){.kind = OP_REDUCE, .dst = dst, .a = a, .b = b, .n = count,
                                .dt = dt, .rop = op});
}

static blinkResult_t divide(struct bk_stream *s, void *buf, size_t count, blinkDataType_t dt,
                            int n)
{
    return push(s, &(struct op){.kind = OP_DIVIDE, .dst = buf, .n = count, .dt = dt,
                                .divisor = n});
}

static blinkResult_t event_create(int dev, struct bk_event **e)
{
    *e = calloc(1, sizeof **e);
    return *e ? blinkSuccess : bk_error(blinkSystemError, "host backend: out of memory");
}

static void event_destroy(struct bk_event *e)
{
    pthread_mutex_lock(&big);
    if (e->s)
        unref(e->s);
    pthread_mutex_unlock(&big);
    free(e);
}

static blinkResult_t event_record(struct bk_event *e, struct bk_stream *s)
{
    pthread_mutex_lock(&big);
    s->refs++;
    if (e->s)
        unref(e->s);
    e->s = s;
    e->pos = s->enq;
    pthread_mutex_unlock(&big);
    return blinkSuccess;
}

static blinkResult_t stream_wait(struct bk_stream *s, struct bk_event *e)
{
    pthread_mutex_lock(&big);
    struct op o = {.kind = OP_WAIT, .on = e->s, .pos = e->pos};
    if (o.on)
        o.on->refs++; /* held across the unlock until push takes its own */
    pthread_mutex_unlock(&big);
    if (!o.on)
        return blinkSuccess; /* never recorded: nothing to wait for (as in CUDA) */
    blinkResult_t r = push(s, &o);
    pthread_mutex_lock(&big);
    unref(o.on);
    pthread_mutex_unlock(&big);
    return r;
}

static blinkResult_t event_synchronize(struct bk_event *e)
{
    pthread_mutex_lock(&big);
    blinkResult_t r = e->s ? sync_to(e->s, e->pos, 0) : blinkSuccess;
    pthread_mutex_unlock(&big);
    return r;
}

static blinkResult_t user_record(struct bk_event *e, void *user, int dev)
{
    if (!user)
        return blinkSuccess;
    return event_record(e, &((struct blinkHostStream *)user)->s);
}

static blinkResult_t user_wait(void *user, struct bk_event *e, int dev)
{
    if (!user)
        return blinkSuccess;
    return stream_wait(&((struct blinkHostStream *)user)->s, e);
}

static const struct bk_backend host_backend = {
    "host", 1, configure, stream_create, stream_destroy, stream_synchronize, mem_alloc, mem_free,
    copy, reduce, divide, event_create, event_destroy, event_record, stream_wait,
    event_synchronize, user_record, user_wait,
};

const struct bk_backend *bk_backend(void) { return &host_backend; }

/* ------------------------------------------------------------------ public host streams */

blinkResult_t blinkHostStreamCreate(blinkStream_t *stream)
{
    if (!stream)
        return bk_error(blinkInvalidArgument, "blinkHostStreamCreate: stream is NULL");
    struct bk_stream *s;
    blinkResult_t r = stream_create(-1, "user stream", &s);
    if (r == blinkSuccess) {
        s->join = 1;
        *stream = (struct blinkHostStream *)s;
    }
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
