/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * net.h - the runtime's one door to the network between servers: MPI's point-to-point
 * messages, never sockets of our own (net_mpi.c; net_none.c where the runtime was built
 * without MPI). MPI is the program's: net_mpi.c finds the library the program loaded, and
 * nothing links libmpi, so a single server never needs it.
 *
 * The application starts MPI (MPI_Init_thread, as nccl-tests and Horovod do); the runtime
 * never initializes or finalizes it. Every call here is made under one lock, so the runtime's
 * threads (the host executor's, the CUDA backend's network proxy) need only
 * MPI_THREAD_SERIALIZED among themselves; as they run while a call is in flight, a program
 * that calls MPI itself meanwhile needs MPI_THREAD_MULTIPLE (the docs say so). Messages travel on
 * MPI_COMM_WORLD (the rendezvous, whose tags are drawn from its token) or on a
 * communicator's own MPI communicator (the data path), never on the application's.
 */
#ifndef BK_NET_H
#define BK_NET_H

#include <stddef.h>

#include "blink.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_NET_TAG_MAX 32767 /* every MPI's MPI_TAG_UB is at least this */

struct bk_net_comm;          /* an MPI communicator of the ranks of one blink communicator */

/* A pending message; zeroed means none. */
struct bk_net_req {
    int live;
    unsigned char handle[16]; /* the MPI_Request */
};

/* This process's rank in MPI_COMM_WORLD and its size, or -1 where MPI is not running (not
 * initialized, finalized, or not built in). */
int bk_net_world_rank(void);
int bk_net_world_size(void);
/* Why MPI is not running here, naming its library ("" where it runs); per thread, valid until
 * the thread's next call. */
const char *bk_net_why(void);
/* Whether MPI runs with MPI_THREAD_SERIALIZED or more; *level gets its name. */
int bk_net_threads_ok(const char **level);

/* Start a message to or from peer (a rank of comm, or of MPI_COMM_WORLD where comm is NULL;
 * peer -1 on a receive: any sender). On failure: -1 and the reason in msg. */
int bk_net_isend(struct bk_net_comm *comm, int peer, int tag, const void *buf, size_t bytes,
                 struct bk_net_req *req, char *msg, size_t len);
int bk_net_irecv(struct bk_net_comm *comm, int peer, int tag, void *buf, size_t bytes,
                 struct bk_net_req *req, char *msg, size_t len);
/* 1 when req is done (it is then no longer live; *source and *bytes say what came, either may
 * be NULL), 0 while it is pending, -1 on an error (msg). */
int bk_net_test(struct bk_net_req *req, int *source, size_t *bytes, char *msg, size_t len);
/* Give a pending message up (cancel a receive; let a send finish on its own). */
void bk_net_drop(struct bk_net_req *req);
/* Whether a message with tag waits from any sender of comm (its sender into *source). */
int bk_net_probe(struct bk_net_comm *comm, int tag, int *source);

/* The MPI communicator of the world ranks world[0..n-1], rank i being world[i]: made by every
 * one of them together (MPI_Comm_create_group, tag). */
int bk_net_comm_create(const int *world, int n, int tag, struct bk_net_comm **out, char *msg,
                       size_t len);
void bk_net_comm_free(struct bk_net_comm *comm);

#ifdef __cplusplus
}
#endif

#endif
