/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * net_mpi.c - net.h on MPI: non-blocking point-to-point messages, tested, never waited on, so
 * every wait of the runtime stays bounded by BLINK_TIMEOUT_S. One lock serializes the calls.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

_Static_assert(sizeof(MPI_Request) <= sizeof(((struct bk_net_req *)0)->handle),
               "an MPI_Request must fit struct bk_net_req");

struct bk_net_comm {
    MPI_Comm comm;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int running(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

int bk_net_world_rank(void)
{
    int r = -1;
    pthread_mutex_lock(&lock);
    if (running())
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    pthread_mutex_unlock(&lock);
    return r;
}

int bk_net_world_size(void)
{
    int n = -1;
    pthread_mutex_lock(&lock);
    if (running())
        MPI_Comm_size(MPI_COMM_WORLD, &n);
    pthread_mutex_unlock(&lock);
    return n;
}

int bk_net_threads_ok(const char **level)
{
    int got = MPI_THREAD_SINGLE;
    pthread_mutex_lock(&lock);
    if (running())
        MPI_Query_thread(&got);
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
    MPI_Error_string(rc, text, &n);
    snprintf(msg, len, "MPI: %s failed: %s", what, text);
    return -1;
}

static MPI_Comm comm_of(struct bk_net_comm *c) { return c ? c->comm : MPI_COMM_WORLD; }

int bk_net_isend(struct bk_net_comm *comm, int peer, int tag, const void *buf, size_t bytes,
                 struct bk_net_req *req, char *msg, size_t len)
{
    if (bytes > (size_t)0x7fffffff)
        return snprintf(msg, len, "MPI: a message of %zu bytes is over 2 GiB", bytes), -1;
    MPI_Request r;
    pthread_mutex_lock(&lock);
    int rc = MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, comm_of(comm), &r);
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
    int rc = MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer < 0 ? MPI_ANY_SOURCE : peer, tag,
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
    int rc = MPI_Test(&r, &done, &s);
    if (rc == MPI_SUCCESS && done)
        MPI_Get_count(&s, MPI_BYTE, &count);
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
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (!done) {
            MPI_Status s;
            MPI_Cancel(&r);
            MPI_Test(&r, &done, &s);
            if (!done)
                MPI_Request_free(&r);
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
    if (MPI_Iprobe(MPI_ANY_SOURCE, tag, comm_of(comm), &flag, &s) != MPI_SUCCESS)
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
    int rc = MPI_Comm_group(MPI_COMM_WORLD, &all);
    if (rc == MPI_SUCCESS)
        rc = MPI_Group_incl(all, n, world, &mine);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Comm_create_group(MPI_COMM_WORLD, mine, tag, &c->comm);
        MPI_Group_free(&mine);
    }
    if (rc == MPI_SUCCESS)
        MPI_Group_free(&all);
    /* Errors on our own communicator come back as codes, never abort the job. */
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
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
        MPI_Comm_free(&comm->comm);
    pthread_mutex_unlock(&lock);
    free(comm);
}
