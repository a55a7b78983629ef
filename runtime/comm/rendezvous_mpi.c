/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * rendezvous_mpi.c - rendezvous_mpi.h: the rounds of rendezvous.h as all-gathers through the
 * id's maker, on MPI_COMM_WORLD.
 *
 * Messages of one token share one tag (drawn from the token, so concurrent rendezvous of other
 * communicators rarely share it) and carry the token, so a stray message is told apart. MPI
 * keeps each sender's messages of one tag in order, which orders the rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net.h"
#include "rendezvous.h"
#include "rendezvous_mpi.h"

#define HEAD_MAGIC "blinkrvm"
#define SEND_WAIT_S 5.0 /* the most close waits for its last sends to leave */

struct head {
    char magic[8];
    char token[24];
    int32_t round, rank, nranks, failed; /* failed: 1 + the rank that gave up */
    char msg[384];
};

struct bk_rvm {
    char token[BK_TOKEN_CHARS + 1];
    int root, nranks, rank, tag, is_root, round;
    double timeout_s;
    int *world;                 /* [nranks] world rank of each rank (the root's knowledge) */
    unsigned char *out;         /* what this rank last sent, kept until the sends are done */
    struct bk_net_req *sends;   /* [nranks] */
};

static void pause_a_little(int *spins)
{
    struct timespec ts = {0, *spins < 200 ? 20000 : 1000000};
    (*spins)++;
    nanosleep(&ts, NULL);
}

/* Wait (bounded) until every send of this rank has left, then forget them. */
static void finish_sends(struct bk_rvm *m, double limit_s)
{
    double start = bk_now();
    int spins = 0;
    char msg[128];
    for (int q = 0; q < m->nranks; q++)
        while (m->sends[q].live && bk_net_test(&m->sends[q], NULL, NULL, msg, sizeof msg) == 0) {
            if (bk_now() - start > limit_s) {
                bk_net_drop(&m->sends[q]);
                break;
            }
            pause_a_little(&spins);
        }
}

blinkResult_t bk_rvm_open(const char *token, int root, int nranks, int rank, double timeout_s,
                          struct bk_rvm **out, const char *fn)
{
    int me = bk_net_world_rank(), size = bk_net_world_size();
    if (me < 0)
        return bk_error(blinkInvalidUsage, "%s: the unique id was made in an MPI job (by MPI "
                        "rank %d), but MPI is not running in this process: %s", fn, root,
                        bk_net_why());
    if (root >= size)
        return bk_error(blinkInvalidArgument, "%s: the unique id names MPI rank %d, but the "
                        "job has %d", fn, root, size);
    struct bk_rvm *m = calloc(1, sizeof *m);
    if (m) {
        m->world = malloc(sizeof *m->world * (size_t)nranks);
        m->sends = calloc((size_t)nranks, sizeof *m->sends);
    }
    if (!m || !m->world || !m->sends) {
        if (m) {
            free(m->world);
            free(m->sends);
        }
        free(m);
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    }
    snprintf(m->token, sizeof m->token, "%s", token);
    unsigned h = bk_rv_token_hash(token);
    m->tag = BK_NET_TAG_MAX / 2 + (int)(h % (unsigned)(BK_NET_TAG_MAX / 2 - 16));
    m->root = root;
    m->nranks = nranks;
    m->rank = rank;
    m->timeout_s = timeout_s;
    m->is_root = me == root;
    for (int q = 0; q < nranks; q++)
        m->world[q] = -1;
    m->world[rank] = me;
    *out = m;
    return blinkSuccess;
}

static void fill_head(struct bk_rvm *m, struct head *h, int round, int failed, const char *msg)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, HEAD_MAGIC, 8);
    snprintf(h->token, sizeof h->token, "%s", m->token);
    h->round = round;
    h->rank = m->rank;
    h->nranks = m->nranks;
    h->failed = failed;
    snprintf(h->msg, sizeof h->msg, "%s", msg ? msg : "");
}

/* Send out[0..bytes) to rank q (the root: to every rank it knows, q = -1). */
static int post_out(struct bk_rvm *m, int q, size_t bytes, char *msg, size_t len)
{
    for (int v = 0; v < m->nranks; v++) {
        if ((q >= 0 && v != q) || (q < 0 && (v == m->rank || m->world[v] < 0)))
            continue;
        if (bk_net_isend(NULL, m->world[v], m->tag, m->out, bytes, &m->sends[v], msg, len) != 0)
            return -1;
    }
    return 0;
}

/* The root tells every rank it knows that rank `who` gave up. */
static void root_fail(struct bk_rvm *m, int who, const char *why)
{
    finish_sends(m, SEND_WAIT_S);
    free(m->out);
    m->out = malloc(sizeof(struct head));
    if (!m->out)
        return;
    fill_head(m, (struct head *)m->out, m->round, who + 1, why);
    char msg[128];
    post_out(m, -1, sizeof(struct head), msg, sizeof msg);
}

static blinkResult_t root_round(struct bk_rvm *m, int round, const void *rec, void *all,
                                const char *fn)
{
    size_t rec_bytes = sizeof(struct head) + BK_RV_REC;
    size_t table = sizeof(struct head) + (size_t)m->nranks * BK_RV_REC;
    unsigned char *in = malloc(rec_bytes);
    unsigned char *got = calloc((size_t)m->nranks, 1);
    finish_sends(m, m->timeout_s);
    free(m->out);
    m->out = malloc(table);
    if (!in || !got || !m->out) {
        free(in);
        free(got);
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    }
    unsigned char *recs = m->out + sizeof(struct head);
    memcpy(recs + (size_t)m->rank * BK_RV_REC, rec, BK_RV_REC);
    got[m->rank] = 1;
    int have = 1, spins = 0;
    double start = bk_now();
    struct bk_net_req req = {0};
    char msg[BK_MSG_MAX] = "";
    blinkResult_t r = blinkSuccess;
    while (have < m->nranks && r == blinkSuccess) {
        if (!req.live && bk_net_irecv(NULL, -1, m->tag, in, rec_bytes, &req, msg, sizeof msg))
            r = bk_error(blinkSystemError, "%s: %s", fn, msg);
        int src = -1, t = r == blinkSuccess ? bk_net_test(&req, &src, NULL, msg, sizeof msg) : 0;
        if (t < 0)
            r = bk_error(blinkSystemError, "%s: %s", fn, msg);
        if (t == 0 && r == blinkSuccess) {
            if (bk_now() - start > m->timeout_s) {
                char missing[128] = "";
                int n = 0;
                for (int q = 0; q < m->nranks; q++)
                    if (!got[q] && n++ < 8)
                        snprintf(missing + strlen(missing), sizeof missing - strlen(missing),
                                 "%s%d", missing[0] ? "," : "", q);
                r = bk_error(blinkSystemError, "%s: rank %d waited %g s for %d of %d ranks "
                             "(%s%s) (BLINK_TIMEOUT_S)", fn, m->rank, m->timeout_s, n,
                             m->nranks, missing, n > 8 ? ",..." : "");
                root_fail(m, m->rank, bk_last_error());
            } else {
                pause_a_little(&spins);
            }
            continue;
        }
        if (r != blinkSuccess)
            break;
        struct head h;
        memcpy(&h, in, sizeof h);
        h.msg[sizeof h.msg - 1] = '\0';
        if (memcmp(h.magic, HEAD_MAGIC, 8) != 0 || strncmp(h.token, m->token, sizeof h.token))
            continue; /* another communicator's rendezvous on this tag: not ours */
        if (h.rank < 0 || h.rank >= m->nranks) {
            r = bk_error(blinkInvalidUsage, "%s: MPI rank %d joined as rank %d of %d", fn, src,
                         h.rank, m->nranks);
        } else if (h.failed) {
            m->world[h.rank] = src;
            r = bk_error(blinkRemoteError, "%s: rank %d: rank %d gave up: %s", fn, m->rank,
                         h.failed - 1, h.msg);
            root_fail(m, h.failed - 1, h.msg);
            break;
        } else if (h.nranks != m->nranks) {
            m->world[h.rank] = src;
            r = bk_error(blinkInvalidUsage, "%s: rank %d was given nranks %d, but rank %d "
                         "(the id's maker) nranks %d", fn, h.rank, h.nranks, m->rank, m->nranks);
        } else if (got[h.rank] || (m->world[h.rank] >= 0 && m->world[h.rank] != src)) {
            r = bk_error(blinkInvalidUsage, "%s: rank %d joined twice with the same id (every "
                         "rank must have its own rank number)", fn, h.rank);
        } else if (h.round == round) {
            m->world[h.rank] = src;
            got[h.rank] = 1;
            have++;
            memcpy(recs + (size_t)h.rank * BK_RV_REC, in + sizeof h, BK_RV_REC);
        }
        if (r != blinkSuccess && r != blinkRemoteError)
            root_fail(m, m->rank, bk_last_error());
    }
    bk_net_drop(&req);
    free(in);
    free(got);
    if (r != blinkSuccess)
        return r;
    fill_head(m, (struct head *)m->out, round, 0, NULL);
    if (post_out(m, -1, table, msg, sizeof msg) != 0)
        return bk_error(blinkSystemError, "%s: %s", fn, msg);
    memcpy(all, recs, (size_t)m->nranks * BK_RV_REC);
    return blinkSuccess;
}

static blinkResult_t member_round(struct bk_rvm *m, int round, const void *rec, void *all,
                                  const char *fn)
{
    size_t table = sizeof(struct head) + (size_t)m->nranks * BK_RV_REC;
    unsigned char *in = malloc(table);
    finish_sends(m, m->timeout_s);
    free(m->out);
    m->out = malloc(sizeof(struct head) + BK_RV_REC);
    if (!in || !m->out) {
        free(in);
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    }
    fill_head(m, (struct head *)m->out, round, 0, NULL);
    memcpy(m->out + sizeof(struct head), rec, BK_RV_REC);
    char msg[BK_MSG_MAX] = "";
    struct bk_net_req req = {0};
    blinkResult_t r = blinkSuccess;
    if (bk_net_irecv(NULL, m->root, m->tag, in, table, &req, msg, sizeof msg) != 0 ||
        bk_net_isend(NULL, m->root, m->tag, m->out, sizeof(struct head) + BK_RV_REC,
                     &m->sends[m->rank], msg, sizeof msg) != 0)
        r = bk_error(blinkSystemError, "%s: %s", fn, msg);
    double start = bk_now();
    int spins = 0, t = 0;
    /* The root's verdict (who is missing) comes at its own timeout: give it time to arrive. */
    double limit = m->timeout_s + 1 + m->timeout_s / 10;
    while (r == blinkSuccess && (t = bk_net_test(&req, NULL, NULL, msg, sizeof msg)) == 0) {
        if (bk_now() - start > limit) {
            r = bk_error(blinkSystemError, "%s: rank %d waited %g s for the rendezvous at MPI "
                         "rank %d, the id's maker (BLINK_TIMEOUT_S)", fn, m->rank, limit,
                         m->root);
            break;
        }
        pause_a_little(&spins);
    }
    if (t < 0)
        r = bk_error(blinkSystemError, "%s: %s", fn, msg);
    bk_net_drop(&req);
    struct head h;
    memcpy(&h, in, sizeof h);
    h.msg[sizeof h.msg - 1] = '\0';
    if (r == blinkSuccess && h.failed)
        r = bk_error(blinkRemoteError, "%s: rank %d: rank %d gave up: %s", fn, m->rank,
                     h.failed - 1, h.msg);
    if (r == blinkSuccess)
        memcpy(all, in + sizeof h, (size_t)m->nranks * BK_RV_REC);
    free(in);
    return r;
}

blinkResult_t bk_rvm_allgather(struct bk_rvm *m, int round, const void *rec, void *all,
                               const char *fn)
{
    m->round = round;
    blinkResult_t r = m->is_root ? root_round(m, round, rec, all, fn)
                                 : member_round(m, round, rec, all, fn);
    m->round = round + 1;
    return r;
}

void bk_rvm_fail(struct bk_rvm *m, const char *msg)
{
    if (m->is_root) {
        root_fail(m, m->rank, msg);
        return;
    }
    /* Tell the root, which tells the others in the round it is gathering. */
    finish_sends(m, SEND_WAIT_S);
    free(m->out);
    m->out = malloc(sizeof(struct head) + BK_RV_REC);
    if (!m->out)
        return;
    memset(m->out, 0, sizeof(struct head) + BK_RV_REC);
    fill_head(m, (struct head *)m->out, m->round, m->rank + 1, msg);
    char why[128];
    bk_net_isend(NULL, m->root, m->tag, m->out, sizeof(struct head) + BK_RV_REC,
                 &m->sends[m->rank], why, sizeof why);
}

void bk_rvm_close(struct bk_rvm *m)
{
    if (!m)
        return;
    finish_sends(m, m->timeout_s < SEND_WAIT_S ? m->timeout_s : SEND_WAIT_S);
    free(m->out);
    free(m->world);
    free(m->sends);
    free(m);
}
