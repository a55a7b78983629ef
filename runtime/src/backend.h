/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * backend.h - the small interface that the backend-independent core (exec.c) drives.
 *
 * A backend provides internal streams bound to one device, memory on a device, copies between
 * devices, element-wise reductions, and events with CUDA's semantics: a wait refers to the most
 * recent record of the event at the time the wait is enqueued. The host backend (backend_host.c)
 * and the CUDA backend (backend_cuda.cu) implement the same table; exactly one is linked into a
 * runtime library and bk_backend() returns it.
 *
 * User streams (blinkStream_t) cross this interface as void *: a cudaStream_t on CUDA, a
 * struct blinkHostStream * on the host. Every function returns blinkSuccess or an error whose
 * message it has stored with bk_set_error (rt.h).
 */
#ifndef BK_BACKEND_H
#define BK_BACKEND_H

#include <stddef.h>

#include "blink.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bk_stream; /* an internal stream: ordered work on one device */

/* The label of the stream that joins a call's streams at its end. A join waits as long as its
 * streams work: only the waits inside a schedule can be stuck, and those are what a watchdog
 * bounds; a join that gave up early would return while copies still touch the user's buffers. */
#define BK_JOIN_LABEL "hub"
struct bk_event;  /* a point in a stream's work */

struct bk_backend {
    const char *name;
    /* Non-zero where a NULL user stream means "synchronous" (host): the core then skips the
     * join with the user stream and blocks the calling rank on the call's final event. */
    int null_stream_sync;
    /* Read the backend's environment (called by every blinkCommInitAll). */
    blinkResult_t (*configure)(void);

    /* label names the stream in error messages ("rank 2 tree 1 up"). */
    blinkResult_t (*stream_create)(int dev, const char *label, struct bk_stream **s);
    void (*stream_destroy)(struct bk_stream *s); /* waits for its work first */
    blinkResult_t (*stream_synchronize)(struct bk_stream *s);

    blinkResult_t (*mem_alloc)(int dev, size_t bytes, void **p);
    void (*mem_free)(int dev, void *p);

    /* Enqueue on s (which belongs to one of the two devices). */
    blinkResult_t (*copy)(struct bk_stream *s, int dst_dev, void *dst, int src_dev,
                          const void *src, size_t bytes);
    /* dst[i] = a[i] op b[i] on s's device; dst may equal a or b. op is never blinkAvg. */
    blinkResult_t (*reduce)(struct bk_stream *s, void *dst, const void *a, const void *b,
                            size_t count, blinkDataType_t dt, blinkRedOp_t op);
    /* buf[i] /= n (integers: truncating division), for blinkAvg. */
    blinkResult_t (*divide)(struct bk_stream *s, void *buf, size_t count, blinkDataType_t dt,
                            int n);

    blinkResult_t (*event_create)(int dev, struct bk_event **e);
    void (*event_destroy)(struct bk_event *e);
    blinkResult_t (*event_record)(struct bk_event *e, struct bk_stream *s);
    blinkResult_t (*stream_wait)(struct bk_stream *s, struct bk_event *e);
    /* Block the calling thread until e's last record has run; reports a failure before it. */
    blinkResult_t (*event_synchronize)(struct bk_event *e);

    /* The joins with a user stream on device dev: record e on it, make it wait for e. */
    blinkResult_t (*user_record)(struct bk_event *e, void *user, int dev);
    blinkResult_t (*user_wait)(void *user, struct bk_event *e, int dev);
};

const struct bk_backend *bk_backend(void);

#ifdef __cplusplus
}
#endif

#endif
