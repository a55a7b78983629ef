/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_comm.c - NCCL's communicator calls in libblink-nccl: unique ids, the inits, split and
 * shrink, finalize, destroy, abort, revoke and the queries.
 *
 * Every init is blink's (rt.h: the shared-memory rendezvous, the plan for the ranks' devices,
 * NCCL's communicator made from an ncclUniqueId that the rendezvous carries). A device set with
 * no plan, and a non-blocking config, make a communicator of the real NCCL alone. Split needs
 * every rank's color and key: one all-gather under an id derived from the parent's, then each
 * color's ranks init under an id derived from the parent's and the color.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "rendezvous.h"
#include "shim.h"

_Static_assert(sizeof(ncclUniqueId) == sizeof(blinkUniqueId), "ids must have one size");

SHIM_API(ncclGetUniqueId);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
    if (!uniqueId)
        return shim_result(bk_error(blinkInvalidArgument, "ncclGetUniqueId: uniqueId is NULL"));
    blinkUniqueId id;
    blinkResult_t r = blinkGetUniqueId(&id);
    if (r == blinkSuccess)
        memcpy(uniqueId, &id, sizeof id);
    return shim_result(r);
}

/* The init flags a config asks for; an unset or foreign config is refused as NCCL does. */
static blinkResult_t config_flags(const ncclConfig_t *cfg, int parent_blocking, int *blocking,
                                  unsigned *flags, const char *fn)
{
    *blocking = parent_blocking;
    *flags = BK_INIT_PLANLESS;
    if (cfg) {
        if (cfg->magic != NCCL_CONFIG_MAGIC ||
            cfg->size < offsetof(ncclConfig_t, blocking) + sizeof cfg->blocking)
            return bk_error(blinkInvalidArgument, "%s: the config was not set with "
                            "NCCL_CONFIG_INITIALIZER (magic 0x%x, size %zu)", fn, cfg->magic,
                            cfg->size);
        if (cfg->blocking != NCCL_CONFIG_UNDEF_INT)
            *blocking = cfg->blocking != 0;
    }
    if (!*blocking)
        *flags |= BK_INIT_NCCL_ONLY;
    return blinkSuccess;
}

static ncclResult_t init_one(ncclComm_t *out, int nranks, const blinkUniqueId *id, int rank,
                             int topo_dev, int phys_dev, int blocking, unsigned flags,
                             const char *fn)
{
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c)
        return shim_result(bk_error(blinkSystemError, "%s: out of memory", fn));
    c->blocking = blocking;
    blinkResult_t r = bk_init_rank(blinkPlanLibrary(), &c->bk, nranks, id, rank, topo_dev,
                                   phys_dev, flags, fn);
    if (r != blinkSuccess) {
        free(c);
        return shim_result(r);
    }
    *out = c;
    return ncclSuccess;
}

SHIM_API(ncclCommInitRankConfig);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config)
{
    const char *fn = "ncclCommInitRankConfig";
    if (!comm)
        return shim_result(bk_error(blinkInvalidArgument, "%s: comm is NULL", fn));
    *comm = NULL;
    int blocking;
    unsigned flags;
    blinkResult_t r = config_flags(config, 1, &blocking, &flags, fn);
    if (r != blinkSuccess)
        return shim_result(r);
    blinkUniqueId id;
    memcpy(&id, &commId, sizeof id);
    return init_one(comm, nranks, &id, rank, -1, -1, blocking, flags, fn);
}

SHIM_API(ncclCommInitRank);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return ncclCommInitRankConfig(comm, nranks, commId, rank, NULL);
}

/* Several ids spread NCCL's bootstrap; one rendezvous needs one, and every rank has the first. */
SHIM_API(ncclCommInitRankScalable);
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId *commIds, ncclConfig_t *config)
{
    if (nId < 1 || !commIds)
        return shim_result(bk_error(blinkInvalidArgument, "ncclCommInitRankScalable: %s",
                                    commIds ? "nId < 1" : "commIds is NULL"));
    return ncclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
}

SHIM_API(ncclCommInitAll);
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    const char *fn = "ncclCommInitAll";
    if (!comms || ndev < 1)
        return shim_result(bk_error(blinkInvalidArgument, "%s: %s", fn,
                                    comms ? "ndev < 1" : "comms is NULL"));
    blinkComm_t *bks = calloc((size_t)ndev, sizeof *bks);
    blinkResult_t r = bks ? bk_init_all(blinkPlanLibrary(), bks, ndev, devlist,
                                        BK_INIT_PLANLESS, fn)
                          : bk_error(blinkSystemError, "%s: out of memory", fn);
    for (int i = 0; i < ndev; i++) {
        comms[i] = r == blinkSuccess ? calloc(1, sizeof *comms[i]) : NULL;
        if (r == blinkSuccess && !comms[i])
            r = bk_error(blinkSystemError, "%s: out of memory", fn);
        else if (comms[i])
            *comms[i] = (struct ncclComm){.bk = bks[i], .blocking = 1};
    }
    if (r != blinkSuccess)
        for (int i = 0; i < ndev; i++) {
            if (bks && bks[i])
                bk_comm_free(bks[i]);
            free(comms[i]);
            comms[i] = NULL;
        }
    free(bks);
    return shim_result(r);
}

/* ------------------------------------------------------------------ split and shrink */

struct split_rec {
    int32_t color, key, rank;
};

static int by_key(const struct split_rec *a, const struct split_rec *b)
{
    return a->key != b->key ? (a->key < b->key ? -1 : 1) : a->rank - b->rank;
}

SHIM_API(ncclCommSplit);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config)
{
    const char *fn = "ncclCommSplit";
    if (!comm || !newcomm)
        return shim_result(bk_error(blinkInvalidArgument, "%s: %s is NULL", fn,
                                    comm ? "newcomm" : "comm"));
    *newcomm = NULL;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return shim_result(bk_error(blinkInvalidArgument, "%s: color %d is negative and not "
                                    "NCCL_SPLIT_NOCOLOR", fn, color));
    blinkComm_t p = comm->bk;
    int blocking;
    unsigned flags;
    blinkResult_t r = config_flags(config, comm->blocking, &blocking, &flags, fn);
    if (r != blinkSuccess)
        return shim_result(r);
    unsigned seq = ++p->nsplits;
    blinkUniqueId xid;
    char token[BK_TOKEN_CHARS + 1];
    int xroot = -1, croot = -1;
    bk_rv_derive_id(p->token, "split", seq, 0, p->mpi_root, &xid);
    r = bk_rv_token(&xid, token, &xroot, fn);
    unsigned char rec[BK_RV_REC] = {0};
    struct split_rec mine = {color, key, p->rank};
    memcpy(rec, &mine, sizeof mine);
    unsigned char *all = malloc((size_t)p->nranks * BK_RV_REC);
    if (r == blinkSuccess)
        r = all ? bk_rv_exchange(token, xroot, p->nranks, p->rank, p->env.timeout_s, rec, all,
                                 fn)
                : bk_error(blinkSystemError, "%s: out of memory", fn);
    int n = 0, me = 0;
    struct split_rec first = {0, 0, -1};
    for (int u = 0; u < p->nranks && r == blinkSuccess; u++) {
        struct split_rec o;
        memcpy(&o, all + (size_t)u * BK_RV_REC, sizeof o);
        if (o.color != color)
            continue;
        n++;
        me += by_key(&o, &mine) < 0;
        if (first.rank < 0 || by_key(&o, &first) < 0)
            first = o;
    }
    /* Over MPI, the child's ranks meet at its rank 0. */
    if (p->mpi_root >= 0 && first.rank >= 0)
        croot = p->peer[p->plan_of[first.rank]].world;
    free(all);
    if (r != blinkSuccess || color == NCCL_SPLIT_NOCOLOR)
        return shim_result(r);
    blinkUniqueId cid;
    bk_rv_derive_id(p->token, "child", seq, (uint64_t)color, croot, &cid);
    const struct bk_peer *self = &p->peer[p->prank];
    return init_one(newcomm, n, &cid, me, self->topo_dev, self->phys_dev, blocking, flags, fn);
}

/* The excluded ranks do not take part (they may be gone): the others know the list. */
SHIM_API(ncclCommShrink);
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                            ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    const char *fn = "ncclCommShrink";
    if (!comm || !newcomm || (excludeRanksCount > 0 && !excludeRanksList) ||
        excludeRanksCount < 0)
        return shim_result(bk_error(blinkInvalidArgument, "%s: %s", fn, !comm ? "comm is NULL"
                                    : !newcomm ? "newcomm is NULL" : "bad exclude list"));
    *newcomm = NULL;
    blinkComm_t p = comm->bk;
    int n = p->nranks, me = p->rank, first = -1;
    for (int i = 0; i < excludeRanksCount; i++) {
        int x = excludeRanksList[i];
        if (x < 0 || x >= p->nranks || x == p->rank)
            return shim_result(bk_error(blinkInvalidArgument, "%s: excluded rank %d is out of "
                                        "range or this rank", fn, x));
        n--;
        me -= x < p->rank;
    }
    /* Over MPI, the child's ranks meet at its rank 0: the first rank not excluded. */
    for (int u = 0; u < p->nranks && first < 0; u++) {
        first = u;
        for (int i = 0; i < excludeRanksCount; i++)
            if (excludeRanksList[i] == u)
                first = -1;
    }
    if (shrinkFlags & NCCL_SHRINK_ABORT && p->be)
        bk_backend()->abort(p, "ncclCommShrink with NCCL_SHRINK_ABORT");
    int blocking;
    unsigned flags;
    blinkResult_t r = config_flags(config, comm->blocking, &blocking, &flags, fn);
    if (r != blinkSuccess)
        return shim_result(r);
    blinkUniqueId cid;
    bk_rv_derive_id(p->token, "shrink", ++p->nsplits, (uint64_t)n,
                    p->mpi_root >= 0 ? p->peer[p->plan_of[first]].world : -1, &cid);
    const struct bk_peer *self = &p->peer[p->prank];
    return init_one(newcomm, n, &cid, me, self->topo_dev, self->phys_dev, blocking, flags, fn);
}

/* ------------------------------------------------------------------ ending */

SHIM_API(ncclCommFinalize);
ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    if (!comm)
        return shim_result(bk_error(blinkInvalidArgument, "ncclCommFinalize: comm is NULL"));
    blinkResult_t r = comm->bk->be ? bk_backend()->wait(comm->bk) : blinkSuccess;
    ncclComm_t real = shim_real_comm(comm);
    const struct bk_real_nccl *n = bk_real_nccl();
    if (r == blinkSuccess && real && n->CommFinalize)
        r = (blinkResult_t)n->CommFinalize(real);
    return shim_result(r);
}

SHIM_API(ncclCommDestroy);
ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return shim_result(bk_error(blinkInvalidArgument, "ncclCommDestroy: comm is NULL"));
    blinkCommDestroy(comm->bk);
    free(comm);
    return ncclSuccess;
}

SHIM_API(ncclCommAbort);
ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess; /* NCCL accepts a NULL communicator here */
    blinkCommAbort(comm->bk);
    free(comm);
    return ncclSuccess;
}

SHIM_API(ncclCommRevoke);
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    if (!comm || revokeFlags != NCCL_REVOKE_DEFAULT)
        return shim_result(bk_error(blinkInvalidArgument, "ncclCommRevoke: %s", comm ?
                                    "revokeFlags must be NCCL_REVOKE_DEFAULT" : "comm is NULL"));
    if (comm->bk->be)
        bk_backend()->abort(comm->bk, "ncclCommRevoke was called");
    ncclComm_t real = shim_real_comm(comm);
    const struct bk_real_nccl *n = bk_real_nccl();
    return real && n->CommRevoke ? n->CommRevoke(real, revokeFlags) : ncclSuccess;
}

/* ------------------------------------------------------------------ queries */

SHIM_API(ncclCommGetAsyncError);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    if (!comm || !asyncError)
        return shim_result(bk_error(blinkInvalidArgument, "ncclCommGetAsyncError: %s is NULL",
                                    comm ? "asyncError" : "comm"));
    blinkResult_t mine = blinkSuccess;
    blinkResult_t r = blinkCommGetAsyncError(comm->bk, &mine);
    *asyncError = shim_result(mine);
    ncclComm_t real = shim_real_comm(comm);
    if (r == blinkSuccess && mine == blinkSuccess && real)
        return bk_real_nccl()->CommGetAsyncError(real, asyncError);
    return shim_result(r);
}

SHIM_API(ncclCommCount);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    return shim_result(blinkCommCount(comm ? comm->bk : NULL, count));
}

SHIM_API(ncclCommCuDevice);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    return shim_result(blinkCommCuDevice(comm ? comm->bk : NULL, device));
}

SHIM_API(ncclCommUserRank);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    return shim_result(blinkCommUserRank(comm ? comm->bk : NULL, rank));
}
