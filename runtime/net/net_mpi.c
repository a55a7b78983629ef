/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * net_mpi.c - net.h on MPI: non-blocking point-to-point messages, tested, never waited on, so
 * every wait of the runtime stays bounded by BLINK_TIMEOUT_S. One lock serializes the calls.
 *
 * MPI is never linked: a library that needed libmpi at load time would keep LD_PRELOAD from
 * loading the NCCL drop-in on a machine without Open MPI, and glibc then only warns and the
 * program silently runs the real NCCL. The runtime never starts MPI itself, so the only MPI it
 * can use is one the program has already loaded: the library of BK_MPI_SONAME, found with
 * RTLD_NOLOAD (never loaded here), its functions called through the table below. Where it is
 * not loaded, MPI is not running in this process, and bk_net_why() says so, naming it.
 */
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

#ifndef BK_MPI_SONAME
#define BK_MPI_SONAME "libmpi.so.40" /* Open MPI 3 to 5; configure reads it from mpi-c */
#endif

_Static_assert(sizeof(MPI_Request) <= sizeof(((struct bk_net_req *)0)->handle),
               "an MPI_Request must fit struct bk_net_req");

struct bk_net_comm {
    MPI_Comm comm;
};

/* The MPI functions the runtime calls, typed by mpi.h (__typeof__ does not reference them). */
#define BK_MPI_FUNCS(X) \
    X(Initialized) X(Finalized) X(Comm_rank) X(Comm_size) X(Query_thread) X(Error_string) \
    X(Isend) X(Irecv) X(Test) X(Get_count) X(Cancel) X(Request_free) X(Iprobe) \
    X(Comm_group) X(Group_incl) X(Group_free) X(Comm_create_group) X(Comm_set_errhandler) \
    X(Comm_free)

static struct {
#define BK_MPI_SLOT(f) __typeof__(&MPI_##f) f;
    BK_MPI_FUNCS(BK_MPI_SLOT)
#undef BK_MPI_SLOT
    MPI_Comm world;
    MPI_Datatype byte;
    MPI_Errhandler errors_return;
} mpi;

static int bound;       /* mpi is filled in */
static char why[256];   /* why it is not, or why MPI is not running */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Fill mpi in from the loaded MPI library (lock held); 0 where it is not loaded. */
static int bind_mpi(void)
{
    if (bound)
        return 1;
    void *h = dlopen(BK_MPI_SONAME, RTLD_NOW | RTLD_NOLOAD);
    if (!h) {
        snprintf(why, sizeof why, "%s is not loaded in this process: the program has not "
                 "started MPI", BK_MPI_SONAME);
        return 0;
    }
    const char *missing = NULL;
#define BK_MPI_BIND(f) \
    if (!missing && !(*(void **)&mpi.f = dlsym(h, "MPI_" #f))) \
        missing = "MPI_" #f;
    BK_MPI_FUNCS(BK_MPI_BIND)
#undef BK_MPI_BIND
#ifdef OPEN_MPI
    /* Open MPI's predefined handles are the addresses of its objects (mpi.h:
     * OMPI_PREDEFINED_GLOBAL), so they are looked up, not linked: first in the global scope,
     * where a program that names MPI_COMM_WORLD holds the object itself (a copy relocation,
     * which libmpi then uses too), else in the library. */
    static const struct {
        const char *name;
        void **slot;
    } handles[] = {{"ompi_mpi_comm_world", (void **)&mpi.world},
                   {"ompi_mpi_byte", (void **)&mpi.byte},
                   {"ompi_mpi_errors_return", (void **)&mpi.errors_return}};
    for (size_t i = 0; i < sizeof handles / sizeof handles[0] && !missing; i++)
        if (!(*handles[i].slot = dlsym(RTLD_DEFAULT, handles[i].name)) &&
            !(*handles[i].slot = dlsym(h, handles[i].name)))
            missing = handles[i].name;
#else
    /* Elsewhere (MPICH's ABI) they are integer constants. */
    mpi.world = MPI_COMM_WORLD;
    mpi.byte = MPI_BYTE;
    mpi.errors_return = MPI_ERRORS_RETURN;
#endif
    if (missing) {
        snprintf(why, sizeof why, "%s has no %s: not the MPI this runtime was built for",
                 BK_MPI_SONAME, missing);
        dlclose(h);
        return 0;
    }
    bound = 1; /* the handle is kept: the table points into the library */
    return 1;
}

static int running(void)
{
    if (!bind_mpi())
        return 0;
    int init = 0, fin = 0;
    mpi.Initialized(&init);
    mpi.Finalized(&fin);
    if (!init || fin)
        snprintf(why, sizeof why, "MPI (%s) is %s in this process", BK_MPI_SONAME,
                 fin ? "finalized" : "loaded but not initialized");
    return init && !fin;
}

const char *bk_net_why(void)
{
    static _Thread_local char copy[sizeof why];
    pthread_mutex_lock(&lock);
    int ok = running();
    snprintf(copy, sizeof copy, "%s", ok ? "" : why);
    pthread_mutex_unlock(&lock);
    return copy;
}

/* The reason every message fails where MPI is not there (lock held). */
static int absent(char *msg, size_t len)
{
    if (bind_mpi())
        return 0;
    snprintf(msg, len, "MPI: %s", why);
    return 1;
}

int bk_net_world_rank(void)
{
    int r = -1;
    pthread_mutex_lock(&lock);
    if (running())
        mpi.Comm_rank(mpi.world, &r);
    pthread_mutex_unlock(&lock);
    return r;
}

int bk_net_world_size(void)
{
    int n = -1;
    pthread_mutex_lock(&lock);
    if (running())
        mpi.Comm_size(mpi.world, &n);
    pthread_mutex_unlock(&lock);
    return n;
}

int bk_net_threads_ok(const char **level)
{
    int got = MPI_THREAD_SINGLE;
    pthread_mutex_lock(&lock);
    if (running())
        mpi.Query_thread(&got);
    pthread_mutex_unlock(&lock);
    *level = got == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
             : got == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
             : got == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED" : "MPI_THREAD_SINGLE";
    return got == MPI_THREAD_SERIALIZED || got == MPI_THREAD_MULTIPLE;
}

static int failed(int rc, const char *what, char *msg, size_t len)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int n = 0;
    mpi.Error_string(rc, text, &n);
    snprintf(msg, len, "MPI: %s failed: %s", what, text);
    return -1;
}

static MPI_Comm comm_of(struct bk_net_comm *c) { return c ? c->comm : mpi.world; }

int bk_net_isend(struct bk_net_comm *comm, int peer, int tag, const void *buf, size_t bytes,
                 struct bk_net_req *req, char *msg, size_t len)
{
    if (bytes > (size_t)0x7fffffff)
        return snprintf(msg, len, "MPI: a message of %zu bytes is over 2 GiB", bytes), -1;
    MPI_Request r;
    pthread_mutex_lock(&lock);
    if (absent(msg, len))
        return pthread_mutex_unlock(&lock), -1;
    int rc = mpi.Isend(buf, (int)bytes, mpi.byte, peer, tag, comm_of(comm), &r);
    pthread_mutex_unlock(&lock);
    if (rc != MPI_SUCCESS)
        return failed(rc, "MPI_Isend", msg, len);
    memcpy(req->handle, &r, sizeof r);
    req->live = 1;
    return 0;
}

int bk_net_irecv(struct bk_net_comm *comm, int peer, int tag, void *buf, size_t bytes,
                 struct bk_net_req *req, char *msg, size_t len)
{
    if (bytes > (size_t)0x7fffffff)
        return snprintf(msg, len, "MPI: a message of %zu bytes is over 2 GiB", bytes), -1;
    MPI_Request r;
    pthread_mutex_lock(&lock);
    if (absent(msg, len))
        return pthread_mutex_unlock(&lock), -1;
    int rc = mpi.Irecv(buf, (int)bytes, mpi.byte, peer < 0 ? MPI_ANY_SOURCE : peer, tag,
                       comm_of(comm), &r);
    pthread_mutex_unlock(&lock);
    if (rc != MPI_SUCCESS)
        return failed(rc, "MPI_Irecv", msg, len);
    memcpy(req->handle, &r, sizeof r);
    req->live = 1;
    return 0;
}

int bk_net_test(struct bk_net_req *req, int *source, size_t *bytes, char *msg, size_t len)
{
    if (!req->live)
        return 1;
    MPI_Request r;
    MPI_Status s;
    int done = 0, count = 0;
    memcpy(&r, req->handle, sizeof r);
    pthread_mutex_lock(&lock);
    int rc = mpi.Test(&r, &done, &s);
    if (rc == MPI_SUCCESS && done)
        mpi.Get_count(&s, mpi.byte, &count);
    pthread_mutex_unlock(&lock);
    memcpy(req->handle, &r, sizeof r);
    if (rc != MPI_SUCCESS) {
        req->live = 0;
        return failed(rc, "MPI_Test", msg, len);
    }
    if (!done)
        return 0;
    req->live = 0;
    if (source)
        *source = s.MPI_SOURCE;
    if (bytes)
        *bytes = (size_t)count;
    return 1;
}

void bk_net_drop(struct bk_net_req *req)
{
    if (!req->live)
        return;
    MPI_Request r;
    memcpy(&r, req->handle, sizeof r);
    pthread_mutex_lock(&lock);
    if (running()) {
        int done = 0;
        /* A receive is cancelled; a send is left to finish (freeing it does not stop it). */
        mpi.Test(&r, &done, MPI_STATUS_IGNORE);
        if (!done) {
            MPI_Status s;
            mpi.Cancel(&r);
            mpi.Test(&r, &done, &s);
            if (!done)
                mpi.Request_free(&r);
        }
    }
    pthread_mutex_unlock(&lock);
    req->live = 0;
}

int bk_net_probe(struct bk_net_comm *comm, int tag, int *source)
{
    int flag = 0;
    MPI_Status s;
    pthread_mutex_lock(&lock);
    if (!bound || mpi.Iprobe(MPI_ANY_SOURCE, tag, comm_of(comm), &flag, &s) != MPI_SUCCESS)
        flag = 0;
    pthread_mutex_unlock(&lock);
    if (flag && source)
        *source = s.MPI_SOURCE;
    return flag;
}

int bk_net_comm_create(const int *world, int n, int tag, struct bk_net_comm **out, char *msg,
                       size_t len)
{
    struct bk_net_comm *c = calloc(1, sizeof *c);
    if (!c)
        return snprintf(msg, len, "out of memory"), -1;
    MPI_Group all, mine;
    pthread_mutex_lock(&lock);
    if (absent(msg, len)) {
        pthread_mutex_unlock(&lock);
        free(c);
        return -1;
    }
    int rc = mpi.Comm_group(mpi.world, &all);
    if (rc == MPI_SUCCESS)
        rc = mpi.Group_incl(all, n, world, &mine);
    if (rc == MPI_SUCCESS) {
        rc = mpi.Comm_create_group(mpi.world, mine, tag, &c->comm);
        mpi.Group_free(&mine);
    }
    if (rc == MPI_SUCCESS)
        mpi.Group_free(&all);
    /* Errors on our own communicator come back as codes, never abort the job. */
    if (rc == MPI_SUCCESS)
        rc = mpi.Comm_set_errhandler(c->comm, mpi.errors_return);
    pthread_mutex_unlock(&lock);
    if (rc != MPI_SUCCESS) {
        free(c);
        return failed(rc, "MPI_Comm_create_group", msg, len);
    }
    *out = c;
    return 0;
}

void bk_net_comm_free(struct bk_net_comm *comm)
{
    if (!comm)
        return;
    pthread_mutex_lock(&lock);
    if (running())
        mpi.Comm_free(&comm->comm);
    pthread_mutex_unlock(&lock);
    free(comm);
}
