/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * rendezvous_mpi.h - the rendezvous of ranks that may sit on several servers, over MPI
 * (rendezvous.c uses it for ids made while MPI runs; net.h carries the messages).
 *
 * The id names its maker's rank in MPI_COMM_WORLD, the root. A round is an all-gather through
 * the root: every other rank sends its record, the root answers with the table of all of
 * them. A failing rank sends the root a failure record instead, and the root answers every
 * rank with the failure, so all fail at once; every wait is bounded by BLINK_TIMEOUT_S.
 */
#ifndef BK_RENDEZVOUS_MPI_H
#define BK_RENDEZVOUS_MPI_H

#include "rt.h"

struct bk_rvm;

blinkResult_t bk_rvm_open(const char *token, int root, int nranks, int rank, double timeout_s,
                          struct bk_rvm **out, const char *fn);
blinkResult_t bk_rvm_allgather(struct bk_rvm *m, int round, const void *rec, void *all,
                               const char *fn);
void bk_rvm_fail(struct bk_rvm *m, const char *msg);
void bk_rvm_close(struct bk_rvm *m);

#endif
