/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * backend_shim.cc - a test backend that runs the CUDA backend's own kernel (kernel_cuda.cuh)
 * on the CPU through cuda_shim.h: the runtime's core (comm.c, call.c, roles.c) drives it as it
 * drives the CUDA backend, and the kernel's arguments are built by the CUDA backend's own code
 * (kernel_args.h: the table image, the launch arguments, the shared memory size). Segments are
 * ordinary process memory (ranks are threads of one process); the "device" tables are a
 * malloc'ed copy of the image; a launch is gridDim x blockDim OS threads. Where the plan has
 * host-staged edges beside direct ones (a hybrid's PCIe trees, with BLINK_HOST_STAGED=1), each
 * segment has a second one after it that stands for its pinned host memory: every flag and
 * slot of a host-staged tree must be found there by its writer and its reader alike.
 *
 * Test knobs (read at every init; this library is never installed):
 *   BK_SHIM_THREADS=N      threads per block (default 32: one warp)
 *   BK_SHIM_MAX_BLOCKS=N   blocks per launch at most (default 4), as the CUDA backend's
 *                          occupancy limit: fewer blocks than work items (kitems_for) make a
 *                          block play several
 *
 * Streams: a launch waits for the rank's previous one (its stream order); a NULL stream waits
 * for the launch itself; a blinkHostStream remembers the rank it last ran, and synchronizing it
 * waits for that rank's launch. The kernel's status block is read once its launch is joined.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "kernel_cuda.cuh"
#include "proxy.h"
#define KARGS_WHO "shim backend"
#include "kernel_args.h"
#include "kernel_reg.h"

/* The rendezvous orders a segment's header before its peers read it, but through its own shared
 * memory, which each rank maps at another address, where ThreadSanitizer cannot see it: say so. */
#ifdef __SANITIZE_THREAD__
extern "C" void __tsan_acquire(void *addr);
extern "C" void __tsan_release(void *addr);
#define SEG_PUBLISHED(p) __tsan_release(p)
#define SEG_SEEN(p) __tsan_acquire(p)
#else
#define SEG_PUBLISHED(p) ((void)(p))
#define SEG_SEEN(p) ((void)(p))
#endif

struct bk_be {
    int max_blocks, threads;      /* per launch, per block */
    unsigned char *tables;        /* the "device" copy of the tables' image */
    struct ktables k;
    struct kstatus status;
    struct bk_trace_ring *trace;  /* BLINK_TRACE's events, or NULL */
    unsigned char *own;           /* this rank's segment */
    size_t own_bytes;             /* its size, where it is shared memory (else 0) */
    size_t *mapped;               /* [nranks] peers' shared memory mapped here (bytes, or 0) */
    unsigned char **mirror;       /* [nranks] peers on other servers: their mirrors (proxy.h) */
    struct bk_proxy *px;          /* the network proxy, from the first launch of a cluster */
    struct kparams p;             /* the running launch's arguments (the threads read them) */
    shim_launch run;
    int running;                  /* run started and not yet joined */
    unsigned int launches;        /* launched so far (each joined before the next) */
    void *regmem;                 /* the kernel's requests (kernel_reg.h), or NULL */
    void *regtab;                 /* the table of peers' registered regions, or NULL */
    struct kreg reg;
};

struct blinkHostStream {
    blinkComm_t last;             /* the rank whose launch it last ordered */
};

/* Every rank's init reads the environment: the knobs under a lock. */
static pthread_mutex_t knob_mu = PTHREAD_MUTEX_INITIALIZER;
static int shim_threads = 32, shim_max_blocks = 4;

static blinkResult_t read_knob(const char *name, int *out, int lo, int hi)
{
    const char *s = getenv(name);
    if (!s)
        return blinkSuccess;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return bk_error(blinkInvalidArgument, "%s='%s' is not a number from %d to %d", name, s,
                        lo, hi);
    *out = (int)v;
    return blinkSuccess;
}

static blinkResult_t configure(void)
{
    int threads = 32, blocks = 4;
    blinkResult_t r = read_knob("BK_SHIM_THREADS", &threads, 1, 1024);
    if (r == blinkSuccess)
        r = read_knob("BK_SHIM_MAX_BLOCKS", &blocks, 1, 128);
    pthread_mutex_lock(&knob_mu);
    shim_threads = threads;
    shim_max_blocks = blocks;
    pthread_mutex_unlock(&knob_mu);
    return r;
}

static int current_device(void) { return -1; }

static void bus_id(int dev, char *buf, size_t len)
{
    (void)dev;
    snprintf(buf, len, "%s", "");
}

/* Registered (kernel_reg.h): a region of another process is its memory file (blinkMemAlloc's on
 * the host backend's memreg.c, which this library links), mapped here. */
struct opened_region {
    unsigned char *base;
    size_t len;
};

static int reg_open(void *ctx, int peer, const struct kreg_req *rq, void **opened,
                    unsigned char **base, char *why, size_t len)
{
    (void)ctx;
    (void)peer;
    struct opened_region *o = (struct opened_region *)calloc(1, sizeof *o);
    if (!o) {
        snprintf(why, len, "out of memory");
        return 0;
    }
    o->base = bk_region_map((uint32_t)rq->handle[0], (uint32_t)rq->handle[1], rq->handle[2],
                            (size_t)rq->len, &o->len, why, len);
    if (!o->base) {
        free(o);
        return 0;
    }
    *base = o->base;
    *opened = o;
    return 1;
}

static int reg_put(void *ctx, struct kreg_entry *tab, int k, uint64_t serial, uint64_t base)
{
    (void)ctx;
    __atomic_store_n(&tab[k].base, base, __ATOMIC_RELAXED);
    __atomic_store_n(&tab[k].serial, serial, __ATOMIC_RELEASE);
    return 1;
}

static void reg_close(void *ctx, void *opened)
{
    (void)ctx;
    struct opened_region *o = (struct opened_region *)opened;
    munmap(o->base, o->len);
    free(o);
}

static blinkResult_t rank_init(blinkComm_t c)
{
    struct bk_be *be = (struct bk_be *)calloc(1, sizeof *be);
    if (!be)
        return bk_error(blinkSystemError, "shim backend: out of memory");
    c->be = be;
    pthread_mutex_lock(&knob_mu);
    be->max_blocks = shim_max_blocks;
    be->threads = shim_threads;
    pthread_mutex_unlock(&knob_mu);
    c->nstreams = 1;
    c->nworkers = 1;
    for (int i = 0; i < BK_SETS * c->plan->nschedules; i++) {
        int b = kblocks_for(be->max_blocks, c->sets[i].ntrees, c->plan->schedules[i / BK_SETS].coll);
        c->nworkers = b > c->nworkers ? b : c->nworkers;
    }
    /* Every peer is reachable with native atomics: one process. */
    unsigned char *yes = (unsigned char *)malloc((size_t)c->nranks);
    if (!yes)
        return bk_error(blinkSystemError, "shim backend: out of memory");
    memset(yes, 1, (size_t)c->nranks);
    struct kimage im;
    blinkResult_t r = kimage_build(c, yes, yes, &im);
    free(yes);
    if (r != blinkSuccess)
        return r;
    be->tables = (unsigned char *)aligned_alloc(64, kalign_up(im.bytes, 64));
    if (!be->tables) {
        kimage_free(&im);
        return bk_error(blinkSystemError, "shim backend: out of memory");
    }
    memcpy(be->tables, im.host, im.bytes);
    r = ktables_point(c, &im, be->tables, &be->k);
    kimage_free(&im);
    be->mapped = (size_t *)calloc((size_t)c->nranks, sizeof *be->mapped);
    be->mirror = (unsigned char **)calloc((size_t)c->nranks, sizeof *be->mirror);
    if (r == blinkSuccess && (!be->mapped || !be->mirror))
        return bk_error(blinkSystemError, "shim backend: out of memory");
    for (int q = 0; r == blinkSuccess && q < c->nranks; q++) {
        if (!c->peer[q].remote)
            continue;
        size_t bytes = kalign_up(c->layout.seg_bytes[q], 4096);
        if (!(be->mirror[q] = (unsigned char *)aligned_alloc(4096, bytes)))
            return bk_error(blinkSystemError, "shim backend: out of memory");
        memset(be->mirror[q], 0, bytes);
        be->k.seg[q] = be->k.hseg[q] = be->mirror[q];
    }
    if (r == blinkSuccess && c->env.direct && !c->nremote && !c->one_process &&
        !c->plan->host_staged) { /* as the CUDA backend's bk_cuda_reg_init */
        if (!(be->regmem = calloc(1, kreg_bytes(c->nranks))) ||
            !(be->regtab = calloc(1, kreg_tab_bytes(c->nranks))))
            return bk_error(blinkSystemError, "shim backend: out of memory");
        r = kreg_init(&be->reg, c->nranks, be->regmem, be->regmem,
                      (struct kreg_entry *)be->regtab, reg_open, reg_close, reg_put, c);
    }
    if (r == blinkSuccess && c->env.trace_dir[0]) {
        be->trace = (struct bk_trace_ring *)calloc(
            1, offsetof(struct bk_trace_ring, rec) + c->env.trace_records * sizeof(bk_trace_rec));
        if (!be->trace)
            return bk_error(blinkSystemError, "shim backend: out of memory");
        be->trace->cap = c->env.trace_records;
    }
    return r;
}

static void join_run(struct bk_be *be)
{
    if (be->running) {
        shim_launch_join(&be->run);
        be->running = 0;
    }
}

static void rank_free(blinkComm_t c)
{
    struct bk_be *be = c->be;
    if (!be)
        return;
    join_run(be);
    bk_proxy_stop(be->px);
    be->px = NULL;
    kreg_free(&be->reg);
    free(be->regmem);
    free(be->regtab);
    if (be->trace)
        bk_trace_write(c, "shim", "CLOCK_MONOTONIC", be->trace->rec, be->trace->head,
                       be->trace->cap);
    free(be->trace);
    for (int q = 0; be->mapped && q < c->nranks; q++)
        if (be->mapped[q])
            munmap(be->k.seg[q], be->mapped[q]);
    for (int q = 0; be->mirror && q < c->nranks; q++)
        free(be->mirror[q]);
    free(be->mapped);
    free(be->mirror);
    if (be->own_bytes)
        munmap(be->own, be->own_bytes);
    else
        free(be->own);
    free(be->tables);
    free(be->k.sets);
    free(be);
    c->be = NULL;
}

static blinkResult_t seg_create(blinkComm_t c, const char *name, size_t bytes, void **seg,
                                void *handle)
{
    struct bk_be *be = c->be;
    size_t room = kalign_up(bytes, 4096), all = kneeds_hseg(c) ? 2 * room : room;
    if (c->one_process) {
        be->own = (unsigned char *)aligned_alloc(4096, all);
        if (!be->own)
            return bk_error(blinkSystemError, "shim backend: out of memory");
        memset(be->own, 0, all);
    } else { /* ranks in processes of one server: shared memory, as the host backend's */
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            return bk_error(blinkSystemError, "shim backend: shm_open %s: %s", name,
                            strerror(errno));
        void *m = ftruncate(fd, (off_t)all) == 0
                      ? mmap(NULL, all, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                      : MAP_FAILED;
        int e = errno;
        close(fd);
        if (m == MAP_FAILED) {
            shm_unlink(name);
            return bk_error(blinkSystemError, "shim backend: mapping %s: %s", name, strerror(e));
        }
        be->own = (unsigned char *)m;
        be->own_bytes = all;
    }
    struct bk_seg_header *h = (struct bk_seg_header *)be->own;
    h->magic = BK_SEG_MAGIC;
    h->rank = (uint32_t)c->prank;
    h->nranks = (uint32_t)c->nranks;
    memset(handle, 0, BK_HANDLE_BYTES);
    be->k.seg[c->prank] = be->own;
    be->k.hseg[c->prank] = all > room ? be->own + room : be->own;
    SEG_PUBLISHED(be->own);
    *seg = be->own;
    return blinkSuccess;
}

static blinkResult_t seg_open(blinkComm_t c, int peer, const char *name, const void *handle,
                              size_t bytes, int same_process, void *seg_ptr, void **seg)
{
    (void)handle;
    size_t room = kalign_up(bytes, 4096), all = kneeds_hseg(c) ? 2 * room : room;
    if (!same_process) {
        int fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0)
            return bk_error(blinkSystemError, "shim backend: shm_open %s (rank %d): %s", name,
                            c->user_of[peer], strerror(errno));
        void *m = mmap(NULL, all, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        int e = errno;
        close(fd);
        if (m == MAP_FAILED)
            return bk_error(blinkSystemError, "shim backend: mapping %s (rank %d): %s", name,
                            c->user_of[peer], strerror(e));
        c->be->mapped[peer] = all;
        seg_ptr = m;
    }
    const struct bk_seg_header *h = (const struct bk_seg_header *)seg_ptr;
    if (h)
        SEG_SEEN(seg_ptr);
    c->be->k.seg[peer] = (unsigned char *)seg_ptr;
    if (!h || h->magic != BK_SEG_MAGIC || h->rank != (uint32_t)peer)
        return bk_error(blinkSystemError, "shim backend: rank %d's segment (%zu bytes) is not "
                        "what it published", c->user_of[peer], bytes);
    c->be->k.hseg[peer] = (unsigned char *)seg_ptr + (all > room ? room : 0);
    *seg = seg_ptr;
    return blinkSuccess;
}

static void seg_unlink(const char *name) { shm_unlink(name); /* ENOENT: in one process */ }

/* The three datatype lists in this one object (the CUDA build's are three: local.mk). */
BK_KERNEL_OF(bk_kernel_8_16bit, BK_KERNEL_8_16BIT)
BK_KERNEL_OF(bk_kernel_32bit, BK_KERNEL_32BIT)
BK_KERNEL_OF(bk_kernel_64bit, BK_KERNEL_64BIT)

static void run_kernel(const void *arg)
{
    const kparams *p = (const kparams *)arg;
    kernel_for((int)p->d[3])(*p);
}

static void abort_rank(blinkComm_t c, const char *msg);

/* A cluster's first launch: every slot's segment table (all segments are mapped now), and the
 * network proxy (the MPI communicator is made now); then each call is queued for it. */
static blinkResult_t net_launch(blinkComm_t c, const struct bk_launch *L)
{
    struct bk_be *be = c->be;
    if (!be->px) {
        for (int i = 0; i < be->k.nsets; i++)
            if (be->k.sets[i].tseg)
                ktseg_fill(c, i, be->k.seg, be->k.hseg, be->k.sets[i].staged_slot,
                           be->k.sets[i].tseg);
        struct bk_proxy_mem mem = {be->k.hseg, be->mirror, abort_rank};
        blinkResult_t r = bk_proxy_start(c, &mem, &be->px);
        if (r != blinkSuccess)
            return r;
    }
    return bk_proxy_post(be->px, L);
}

static blinkResult_t launch(blinkComm_t c, const struct bk_launch *L, void *user)
{
    struct bk_be *be = c->be;
    join_run(be); /* the rank's stream: one launch after the other */
    blinkResult_t r = c->nremote > 0 ? net_launch(c, L) : blinkSuccess;
    if (r != blinkSuccess)
        return r;
    int blocks = kblocks_for(be->max_blocks, be->k.sets[L->set_index].ntrees, (int)L->d.coll);
    kparams_fill(&be->p, c, &be->k, L, blocks, &be->status);
    be->p.trace = be->trace;
    if (be->reg.slot) { /* every earlier launch was joined: none uses a retired region */
        kreg_serve(&be->reg, c, be->launches, be->launches, 1);
        kreg_params(&be->p, &be->reg, L);
    }
    be->launches++;
    if (shim_launch_start(&be->run, run_kernel, &be->p, (unsigned)blocks, (unsigned)be->threads,
                          ksmem(be->p.tpb, c->nranks))) {
        shim_launch_join(&be->run);
        return bk_error(blinkSystemError, "shim backend: out of memory");
    }
    be->running = 1;
    if (user)
        ((struct blinkHostStream *)user)->last = c;
    c->ops = 1;
    return blinkSuccess;
}

/* The kernel's report, if it failed (its launch joined). */
static blinkResult_t status_error(struct bk_be *be)
{
    const struct kstatus *st = &be->status;
    if (!st->code)
        return blinkSuccess;
    char msg[BK_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", st->msg);
    blinkResult_t r = st->code == blinkInvalidUsage ? blinkInvalidUsage
                      : st->code == blinkRemoteError ? blinkRemoteError : blinkSystemError;
    return bk_error(r, "%s", msg);
}

static blinkResult_t wait_last(blinkComm_t c)
{
    join_run(c->be);
    return status_error(c->be);
}

static blinkResult_t async_error(blinkComm_t c)
{
    /* A running kernel's status block is its own until the join. */
    return c->be->running ? blinkSuccess : status_error(c->be);
}

/* The host's abort (exec_host.c's bk_hx_abort): reason, then 1 + prank into every header. */
static void abort_rank(blinkComm_t c, const char *msg)
{
    if (!c->peer || !c->peer[c->prank].seg)
        return;
    struct bk_seg_header *me = (struct bk_seg_header *)c->peer[c->prank].seg;
    uint32_t mine = (uint32_t)c->prank + 1;
    if (__atomic_load_n(&me->abort, __ATOMIC_ACQUIRE) == 0)
        snprintf(me->abort_msg, sizeof me->abort_msg, "%s", msg);
    for (int i = 0; i < c->nranks; i++) {
        int v = (i + c->prank) % c->nranks;
        struct bk_seg_header *h = (struct bk_seg_header *)c->peer[v].seg;
        uint32_t none = 0;
        if (h)
            __atomic_compare_exchange_n(&h->abort, &none, mine, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
    }
    bk_proxy_abort(c->be ? c->be->px : NULL, msg); /* the other servers */
}

static const struct bk_backend shim_backend = {
    "shim", 1, 2, 1, 1, 2, 2, configure, current_device, bus_id, rank_init, rank_free, seg_create,
    seg_open, seg_unlink, launch, wait_last, async_error, abort_rank,
};

extern "C" const struct bk_backend *bk_backend(void) { return &shim_backend; }

/* ------------------------------------------------------------------ public host streams */

extern "C" blinkResult_t blinkHostStreamCreate(blinkStream_t *stream)
{
    if (!stream)
        return bk_error(blinkInvalidArgument, "blinkHostStreamCreate: stream is NULL");
    *stream = (blinkStream_t)calloc(1, sizeof **stream);
    return *stream ? blinkSuccess : bk_error(blinkSystemError, "blinkHostStreamCreate: out of "
                                             "memory");
}

extern "C" blinkResult_t blinkHostStreamSynchronize(blinkStream_t stream)
{
    if (!stream || !stream->last)
        return blinkSuccess;
    blinkComm_t c = stream->last;
    stream->last = NULL;
    return wait_last(c);
}

extern "C" blinkResult_t blinkHostStreamDestroy(blinkStream_t stream)
{
    if (!stream)
        return bk_error(blinkInvalidArgument, "blinkHostStreamDestroy: stream is NULL");
    free(stream);
    return blinkSuccess;
}
