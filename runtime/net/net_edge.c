/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * net_edge.c - net_edge.h: the messages every executor exchanges with other servers.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "net_edge.h"
#include "proc.h"
#include "proto.h"

void bk_net_describe(const uint64_t *d, char *buf, size_t len)
{
    int coll = (int)d[1], has_op = bk_has_op(coll);
    int n = snprintf(buf, len, "%s count %llu %s", bk_coll_name(coll), (unsigned long long)d[5],
                     bk_dtype_name((blinkDataType_t)d[3]));
    if (has_op && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " %s", bk_op_name((blinkRedOp_t)d[4]));
    if ((int64_t)d[2] >= 0 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " root (plan rank) %lld", (long long)d[2]);
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", %s%s%s, chunk %llu",
                 d[6] & BK_ALGO_RING_SET     ? "rings"
                 : d[6] & BK_ALGO_HYBRID_SET ? "hybrid"
                                             : "trees",
                 d[6] & BK_ALGO_LL ? ", LL" : "",
                 d[6] & BK_ALGO_DIRECT ? ", direct" : "", (unsigned long long)d[7]);
}

void bk_net_mismatch(blinkComm_t c, int q, const uint64_t *mine, const uint64_t *theirs,
                     char *msg, size_t len)
{
    char a[160], b[160];
    bk_net_describe(mine, a, sizeof a);
    bk_net_describe(theirs, b, sizeof b);
    snprintf(msg, len, "mismatched collective calls (call %u of the communicator): rank %d: %s; "
             "rank %d (server %d): %s (call %u)", (uint32_t)mine[0], c->rank, a, c->user_of[q],
             c->peer[q].server, b, (uint32_t)theirs[0]);
}

int bk_net_crosses(blinkComm_t c, int set, int ti, int q)
{
    const struct bk_roleset *s = &c->sets[set];
    const int *parent = s->trees[s->tree_of[ti]].parent;
    int here = c->peer[q].server;
    if (parent[q] >= 0 && c->peer[parent[q]].server != here)
        return 1;
    for (int v = 0; v < c->nranks; v++)
        if (parent[v] == q && c->peer[v].server != here)
            return 1;
    return 0;
}

int bk_net_heard_abort(blinkComm_t c, char *msg, size_t len)
{
    int q = -1;
    if (!c->net || !bk_net_probe(c->net, BK_NET_TAG_ABORT, &q) || q < 0 || q >= c->nranks)
        return 0;
    char text[sizeof ((struct bk_seg_header *)0)->abort_msg] = "", why[128];
    struct bk_net_req req = {0};
    int done = 0;
    double t0 = bk_now();
    if (bk_net_irecv(c->net, q, BK_NET_TAG_ABORT, text, sizeof text, &req, why, sizeof why) == 0)
        while ((done = bk_net_test(&req, NULL, NULL, why, sizeof why)) == 0 && bk_now() - t0 < 1)
            sched_yield();
    bk_net_drop(&req);
    text[sizeof text - 1] = '\0';
    snprintf(msg, len, "rank %d (server %d) gave up: %s", c->user_of[q], c->peer[q].server,
             done == 1 ? text : "(its reason was lost)");
    return q + 1;
}

void bk_net_send_abort(blinkComm_t c, const char *reason, size_t bytes, struct bk_net_req *reqs)
{
    char why[BK_MSG_MAX];
    for (int q = 0; c->net && q < c->nranks; q++)
        if (c->peer[q].remote && !reqs[q].live)
            bk_net_isend(c->net, q, BK_NET_TAG_ABORT, reason, bytes, &reqs[q], why, sizeof why);
}

void bk_net_finish_aborts(blinkComm_t c, struct bk_net_req *reqs)
{
    for (int q = 0; q < c->nranks; q++) {
        /* An abort's few bytes leave at once; give them a moment, then let them go. */
        char why[64];
        double t0 = bk_now();
        while (bk_net_test(&reqs[q], NULL, NULL, why, sizeof why) == 0 && bk_now() - t0 < 1)
            sched_yield();
        bk_net_drop(&reqs[q]);
    }
}

void bk_net_say(blinkComm_t c, const unsigned long long *sent, const unsigned long long *recvd)
{
    if (!bk_logs(&c->env, BK_LOG_INFO, BK_SUB_NET))
        return;
    for (int q = 0; q < c->nranks; q++)
        if (c->peer[q].remote && (sent[q] || recvd[q]))
            bk_log(BK_LOG_INFO, bk_log_dev(c), "rank %d/%d (server %d): MPI with rank %d "
                   "(server %d): sent %llu bytes, received %llu bytes", c->rank, c->nranks,
                   c->peer[c->prank].server, c->user_of[q], c->peer[q].server, sent[q],
                   recvd[q]);
}
