/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * net_none.c - net.h where the runtime was built without MPI: no world, and every message
 * fails with the reason.
 */
#include <stdio.h>

#include "net.h"

#define WHY "this runtime was built without MPI (configure found no mpi-c; apt-get install " \
            "libopenmpi-dev)"

const char *bk_net_why(void) { return WHY; }
int bk_net_world_rank(void) { return -1; }
int bk_net_world_size(void) { return -1; }

int bk_net_threads_ok(const char **level)
{
    *level = "none";
    return 0;
}

int bk_net_isend(struct bk_net_comm *comm, int peer, int tag, const void *buf, size_t bytes,
                 struct bk_net_req *req, char *msg, size_t len)
{
    (void)comm, (void)peer, (void)tag, (void)buf, (void)bytes, (void)req;
    return snprintf(msg, len, WHY), -1;
}

int bk_net_irecv(struct bk_net_comm *comm, int peer, int tag, void *buf, size_t bytes,
                 struct bk_net_req *req, char *msg, size_t len)
{
    (void)comm, (void)peer, (void)tag, (void)buf, (void)bytes, (void)req;
    return snprintf(msg, len, WHY), -1;
}

int bk_net_test(struct bk_net_req *req, int *source, size_t *bytes, char *msg, size_t len)
{
    (void)req, (void)source, (void)bytes, (void)msg, (void)len;
    return 1;
}

void bk_net_drop(struct bk_net_req *req) { req->live = 0; }

int bk_net_probe(struct bk_net_comm *comm, int tag, int *source)
{
    (void)comm, (void)tag, (void)source;
    return 0;
}

int bk_net_comm_create(const int *world, int n, int tag, struct bk_net_comm **out, char *msg,
                       size_t len)
{
    (void)world, (void)n, (void)tag, (void)out;
    return snprintf(msg, len, WHY), -1;
}

void bk_net_comm_free(struct bk_net_comm *comm) { (void)comm; }
