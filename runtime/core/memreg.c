/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * memreg.c - blinkMemAlloc's memory, blinkCommRegister's ranges, and the peers' registered
 * outputs mapped here (proto.h, Registered).
 *
 * On the host backend blinkMemAlloc maps an anonymous memory file (memfd), so another process
 * of the same user can map the same pages through /proc/PID/fd/FD: nothing is named in
 * /dev/shm, and the pages go when the last mapping does. A call whose output lies in such
 * memory, registered with its communicator, publishes the region, and its parent in each tree
 * writes the output itself. On CUDA, blinkMemAlloc is cudaMalloc and its region's CUDA IPC
 * handle, which a parent's host opens when its kernel asks (kernel_reg.h).
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef BLINK_BACKEND_CUDA
#include <cuda_runtime_api.h>
#endif

#include "log.h"
#include "rt.h"

/* A blinkMemAlloc region, process-wide. */
struct region {
    unsigned char *base;
    size_t len;
    int fd;                       /* host: the memory file (CUDA: -1) */
    uint64_t ino, serial;         /* ino: the file's inode (CUDA: 1 where handle is set, else 0) */
    uint64_t handle[BK_REG_HANDLE_WORDS]; /* what opens it in another process */
    struct region *next;
};

/* A range registered with a communicator. */
struct bk_reg {
    unsigned char *base;
    size_t len;
    struct bk_reg *next;
};

/* A peer's region mapped here. */
struct bk_peer_map {
    int peer;
    uint64_t serial;
    unsigned char *base;
    size_t len;
    uint64_t used;             /* the last call that looked it up (c's call count) */
    struct bk_peer_map *next;
};


static pthread_mutex_t regions_mu = PTHREAD_MUTEX_INITIALIZER;
static struct region *regions;
static uint64_t regions_made; /* serials: 1, 2, ... */

static void add_region(struct region *r)
{
    pthread_mutex_lock(&regions_mu);
    r->serial = ++regions_made;
    r->next = regions;
    regions = r;
    pthread_mutex_unlock(&regions_mu);
}

/* The region at ptr, taken off the list, or NULL. */
static struct region *take_region(void *ptr)
{
    pthread_mutex_lock(&regions_mu);
    struct region **at = &regions;
    while (*at && (*at)->base != ptr)
        at = &(*at)->next;
    struct region *r = *at;
    if (r)
        *at = r->next;
    pthread_mutex_unlock(&regions_mu);
    return r;
}

blinkResult_t blinkMemAlloc(void **ptr, size_t size)
{
    if (!ptr)
        return bk_error(blinkInvalidArgument, "blinkMemAlloc: ptr is NULL");
    *ptr = NULL;
    size_t len = size ? size : 1;
#ifdef BLINK_BACKEND_CUDA
    struct region *r = calloc(1, sizeof *r);
    if (!r)
        return bk_error(blinkSystemError, "blinkMemAlloc: out of memory");
    void *p = NULL;
    cudaIpcMemHandle_t h;
    _Static_assert(sizeof h <= sizeof r->handle, "a CUDA IPC handle must fit");
    cudaError_t e = cudaMalloc(&p, len);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        free(r);
        return bk_error(blinkUnhandledCudaError, "blinkMemAlloc: cudaMalloc of %zu bytes: %s",
                        size, cudaGetErrorString(e));
    }
    r->base = p;
    r->len = len;
    r->fd = -1;
    /* Memory without an IPC handle is still memory: only its outputs keep the staging. */
    if (cudaIpcGetMemHandle(&h, p) == cudaSuccess) {
        memcpy(r->handle, &h, sizeof h);
        r->ino = 1; /* shareable */
    } else {
        (void)cudaGetLastError();
    }
    add_region(r);
    *ptr = p;
    return blinkSuccess;
#else
    struct region *r = calloc(1, sizeof *r);
    int fd = memfd_create("blink-mem", MFD_CLOEXEC);
    struct stat sb;
    if (!r || fd < 0 || ftruncate(fd, (off_t)len) != 0 || fstat(fd, &sb) != 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        free(r);
        return bk_error(blinkSystemError, "blinkMemAlloc: %zu bytes of shareable memory: %s",
                        size, strerror(err));
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        close(fd);
        free(r);
        return bk_error(blinkSystemError, "blinkMemAlloc: mapping %zu bytes: %s", size,
                        strerror(err));
    }
    *r = (struct region){p, len, fd, (uint64_t)sb.st_ino, 0, {0}, NULL};
    r->handle[0] = (uint64_t)getpid();
    r->handle[1] = (uint64_t)fd;
    r->handle[2] = r->ino;
    add_region(r);
    *ptr = p;
    return blinkSuccess;
#endif
}

blinkResult_t blinkMemFree(void *ptr)
{
    if (!ptr)
        return blinkSuccess;
    struct region *r = take_region(ptr);
    if (!r)
        return bk_error(blinkInvalidArgument, "blinkMemFree: %p is not from blinkMemAlloc",
                        ptr);
#ifdef BLINK_BACKEND_CUDA
    free(r);
    cudaError_t e = cudaFree(ptr);
    if (e != cudaSuccess)
        return bk_error(blinkUnhandledCudaError, "blinkMemFree: %s", cudaGetErrorString(e));
    return blinkSuccess;
#else
    munmap(r->base, r->len);
    close(r->fd);
    free(r);
    return blinkSuccess;
#endif
}

blinkResult_t blinkCommRegister(blinkComm_t comm, void *buff, size_t size, void **handle)
{
    if (!comm || !handle || (!buff && size))
        return bk_error(blinkInvalidArgument, "blinkCommRegister: %s is NULL",
                        !comm ? "comm" : !handle ? "handle" : "buff");
    struct bk_reg *g = malloc(sizeof *g);
    if (!g)
        return bk_error(blinkSystemError, "blinkCommRegister: out of memory");
    *g = (struct bk_reg){buff, size, NULL};
    pthread_mutex_lock(&comm->reg_mu);
    g->next = comm->regs;
    comm->regs = g;
    pthread_mutex_unlock(&comm->reg_mu);
    *handle = g;
    return blinkSuccess;
}

blinkResult_t blinkCommDeregister(blinkComm_t comm, void *handle)
{
    if (!comm)
        return bk_error(blinkInvalidArgument, "blinkCommDeregister: comm is NULL");
    pthread_mutex_lock(&comm->reg_mu);
    struct bk_reg **at = &comm->regs;
    while (*at && *at != handle)
        at = &(*at)->next;
    struct bk_reg *g = *at;
    if (g)
        *at = g->next;
    pthread_mutex_unlock(&comm->reg_mu);
    if (!g)
        return bk_error(blinkInvalidArgument, "blinkCommDeregister: %p is no registration of "
                        "this communicator", handle);
    free(g);
    return blinkSuccess;
}

int bk_region_here(uint64_t serial, unsigned char **base, size_t *len)
{
    pthread_mutex_lock(&regions_mu);
    const struct region *r = regions;
    while (r && r->serial != serial)
        r = r->next;
    if (r) {
        *base = r->base;
        *len = r->len;
    }
    pthread_mutex_unlock(&regions_mu);
    return r != NULL;
}

/* Does [base, base + len) hold [p, p + bytes)? */
static int holds(const unsigned char *base, size_t len, const unsigned char *p, size_t bytes)
{
    return p >= base && bytes <= len && (size_t)(p - base) <= len - bytes;
}

int bk_reg_find(blinkComm_t c, const void *buf, size_t bytes, struct bk_out_reg *out)
{
    memset(out, 0, sizeof *out);
    const unsigned char *p = buf;
    int found = 0;
    pthread_mutex_lock(&c->reg_mu);
    for (const struct bk_reg *g = c->regs; g && !found; g = g->next)
        found = holds(g->base, g->len, p, bytes);
    pthread_mutex_unlock(&c->reg_mu);
    if (!found)
        return 0;
    found = 0;
    pthread_mutex_lock(&regions_mu);
    for (const struct region *r = regions; r && !found; r = r->next)
        if (r->ino && holds(r->base, r->len, p, bytes)) { /* ino 0: not shareable (CUDA) */
            *out = (struct bk_out_reg){(uint32_t)getpid(), (uint32_t)r->fd, r->ino,
                                       (uint64_t)(p - r->base), r->serial, r->len, {0}};
            memcpy(out->handle, r->handle, sizeof out->handle);
            found = 1;
        }
    pthread_mutex_unlock(&regions_mu);
    return found;
}

/* Unmap peer's least recently used mapping of a call before `call`, if it has too many
 * (reg_mu held). */
static void evict(blinkComm_t c, int peer, uint64_t call)
{
    int count = 0;
    struct bk_peer_map **oldest = NULL;
    for (struct bk_peer_map **at = &c->maps; *at; at = &(*at)->next) {
        if ((*at)->peer != peer)
            continue;
        count++;
        if ((*at)->used < call && (!oldest || (*at)->used < (*oldest)->used))
            oldest = at;
    }
    if (count < BK_REG_MAPS_PER_PEER || !oldest)
        return;
    struct bk_peer_map *m = *oldest;
    *oldest = m->next;
    munmap(m->base, m->len);
    free(m);
}

unsigned char *bk_reg_map(blinkComm_t c, int peer, const struct bk_out_reg *reg, size_t need,
                          uint64_t call, char *why, size_t len)
{
    pthread_mutex_lock(&c->reg_mu);
    struct bk_peer_map *m = c->maps;
    while (m && !(m->peer == peer && m->serial == reg->serial))
        m = m->next;
    if (m) {
        m->used = call;
        size_t have = m->len;
        unsigned char *base = have >= need ? m->base : NULL;
        pthread_mutex_unlock(&c->reg_mu);
        if (!base)
            snprintf(why, len, "its region of %zu bytes is short of %zu", have, need);
        return base;
    }
    evict(c, peer, call);
    size_t got = 0;
    m = malloc(sizeof *m);
    unsigned char *p = m ? bk_region_map(reg->pid, reg->fd, reg->ino, need, &got, why, len) : NULL;
    if (!m)
        snprintf(why, len, "out of memory");
    if (!p) {
        pthread_mutex_unlock(&c->reg_mu);
        free(m);
        return NULL;
    }
    *m = (struct bk_peer_map){peer, reg->serial, p, got, call, c->maps};
    c->maps = m;
    pthread_mutex_unlock(&c->reg_mu);
    bk_reg_said(c, peer, got);
    return p;
}

unsigned char *bk_region_map(uint32_t pid, uint32_t fd_there, uint64_t ino, size_t need,
                             size_t *got, char *why, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/fd/%u", pid, fd_there);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat sb;
    void *p = MAP_FAILED;
    if (fd < 0 || fstat(fd, &sb) != 0)
        snprintf(why, len, "opening %s: %s", path, strerror(errno));
    else if ((uint64_t)sb.st_ino != ino || (size_t)sb.st_size < need)
        snprintf(why, len, "%s is not its region (inode %llu of %lld bytes)", path,
                 (unsigned long long)sb.st_ino, (long long)sb.st_size);
    else if ((p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
             MAP_FAILED)
        snprintf(why, len, "mapping %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED)
        return NULL;
    *got = (size_t)sb.st_size;
    return p;
}

void bk_reg_said(blinkComm_t c, int peer, size_t bytes)
{
    if (bk_logs(&c->env, BK_LOG_INFO, BK_SUB_COLL))
        bk_log(BK_LOG_INFO, bk_log_dev(c), "rank %d: writes rank %d's registered output "
               "directly (region of %zu bytes)", c->rank, c->user_of[peer], bytes);
}

unsigned long long bk_reg_mapped(blinkComm_t c, int *count)
{
    unsigned long long mask = 0;
    *count = 0;
    pthread_mutex_lock(&c->reg_mu);
    for (const struct bk_peer_map *m = c->maps; m; m = m->next) {
        mask |= m->peer < 64 ? 1ull << m->peer : 0;
        ++*count;
    }
    pthread_mutex_unlock(&c->reg_mu);
    return mask;
}

void bk_reg_free(blinkComm_t c)
{
    while (c->regs) {
        struct bk_reg *g = c->regs;
        c->regs = g->next;
        free(g);
    }
    while (c->maps) {
        struct bk_peer_map *m = c->maps;
        c->maps = m->next;
        munmap(m->base, m->len);
        free(m);
    }
}
