/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * rendezvous.h - how the ranks of one server meet at init, behind a blinkUniqueId.
 *
 * The id holds a magic string and 16 random hex digits, the token; an id made while MPI runs
 * with more than one process also names its maker's MPI world rank, and its ranks meet over
 * MPI instead (rendezvous_mpi.h: the same rounds, so they may be on several servers). Otherwise
 * every rank opens the POSIX
 * shared-memory object /blink-TOKEN (the first to arrive creates it, sized for the rank count it
 * was given, and marks it ready last). The object holds BK_RV_ROUNDS rounds of one fixed-size
 * record per rank; a round is an all-gather: each rank writes its record, counts itself in,
 * and waits until every rank has. Round 0 says who the ranks are (pid, host, devices, PCI bus
 * id), round 1 carries their segment handles, round 2 says every rank has mapped its peers.
 * After round 2 every rank removes the name, so nothing is left in /dev/shm; a rank that
 * fails marks the object failed (the others stop waiting at once) and removes the name and the
 * names of all segments of the token. Waits are bounded by BLINK_TIMEOUT_S, and a rank that
 * registered and then died is noticed by its pid.
 */
#ifndef BK_RENDEZVOUS_H
#define BK_RENDEZVOUS_H

#include "proc.h"
#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_RV_ROUNDS 3
#define BK_RV_REC 512           /* bytes of one rank's record in one round */
#define BK_TOKEN_CHARS 16

struct bk_rv;

/* Round 0's record. */
struct bk_rv_who {
    int32_t pid, topo_dev, phys_dev, world; /* world: MPI world rank, or -1 */
    char host[64], busid[32];
    char server[64];                        /* BLINK_SERVER, else the host name */
};

/* The token of a valid id (BK_TOKEN_CHARS hex digits and a NUL) and the MPI world rank of its
 * maker (-1: the ranks meet in shared memory), or an error. */
blinkResult_t bk_rv_token(const blinkUniqueId *id, char *token, int *mpi_root, const char *fn);
/* The id of a token (mpi_root as bk_rv_token gives it). */
void bk_rv_make_id(const char *token, int mpi_root, blinkUniqueId *id);
blinkResult_t bk_rv_open(const char *token, int mpi_root, int nranks, int rank,
                         double timeout_s, struct bk_rv **out, const char *fn);
/* Publish rec (BK_RV_REC bytes) for round k; all[nranks * BK_RV_REC] gets every rank's. */
blinkResult_t bk_rv_allgather(struct bk_rv *rv, int round, const void *rec, void *all,
                              const char *fn);
/* Give up: the other ranks' waits fail with msg; every name of the token is removed. */
void bk_rv_fail(struct bk_rv *rv, const char *msg);
/* Unmap (and remove the name, once every rank has passed round 2 or on failure). */
void bk_rv_close(struct bk_rv *rv);
/* An id derived from a token, a salt and two numbers: the same on every rank that derives it
 * (a split communicator's id from its parent's), meeting over MPI at mpi_root (or not: -1). */
void bk_rv_derive_id(const char *token, const char *salt, uint64_t a, uint64_t b,
                     int mpi_root, blinkUniqueId *id);
/* One all-gather of rec among nranks under token (open, rounds, close): all[nranks*BK_RV_REC]. */
blinkResult_t bk_rv_exchange(const char *token, int mpi_root, int nranks, int rank,
                             double timeout_s, const void *rec, void *all, const char *fn);
/* A hash of the token, the same on every rank: MPI tags drawn from it. */
static inline unsigned bk_rv_token_hash(const char *token)
{
    unsigned h = 0;
    for (const char *p = token; *p; p++)
        h = h * 31u + (unsigned char)*p;
    return h;
}
/* The shared-memory name of rank r's segment ("/blink-TOKEN-r"). */
void bk_rv_seg_name(const char *token, int rank, char *name, size_t len);

#ifdef __cplusplus
}
#endif

#endif
