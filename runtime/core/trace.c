/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * trace.c - BLINK_TRACE's file: one per rank, written when the communicator is destroyed, as
 * text that a person can read and bench/blink_trace.c summarises (trace.h says what the events
 * are). The name carries the host, the process and the rank, so the ranks of one job, threads
 * or processes, never write the same file:
 *   DIR/blink-trace.HOST.PID.rRANK.tsv
 * and its lines are
 *   # blink-trace 1
 *   # rank R prank P nranks N device D backend B clock C records K dropped X
 *   seq coll block tree kind chunk peer t_ns      (tab-separated, one event per line)
 * A file that cannot be written costs a WARN line, never the destroy's result: the trace is
 * an aid, and the collectives it watched have already completed. The host backend's ring and
 * stamps are here too (its threads play the blocks, on the monotonic clock).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rt.h"
#include "trace.h"

static const char *kind_name(unsigned k)
{
    static const char *const names[BK_TR_NKINDS] = {
        "enter", "up-decide", "up-start", "up-post",
        "down-decide", "down-start", "down-post", "exit",
    };
    return k < BK_TR_NKINDS ? names[k] : "unknown";
}

void bk_trace_write(blinkComm_t c, const char *backend, const char *clock,
                    const struct bk_trace_rec *rec, unsigned long long offered,
                    unsigned long long cap)
{
    unsigned long long n = offered < cap ? offered : cap;
    const struct bk_peer *me = &c->peer[c->prank];
    char path[sizeof c->env.trace_dir + 128];
    snprintf(path, sizeof path, "%s/blink-trace.%s.%d.r%d.tsv", c->env.trace_dir, me->host,
             (int)getpid(), c->rank);
    FILE *f = fopen(path, "w");
    if (!f) {
        if (bk_logs(&c->env, BK_LOG_WARN, BK_SUB_ALL))
            bk_log(BK_LOG_WARN, bk_log_dev(c), "BLINK_TRACE: cannot write %s: %s", path,
                   strerror(errno));
        return;
    }
    fprintf(f, "# " BK_TRACE_FORMAT "\n");
    fprintf(f, "# rank %d prank %d nranks %d device %d backend %s clock %s records %llu "
            "dropped %llu\n", c->rank, c->prank, c->nranks, me->topo_dev, backend, clock, n,
            offered - n);
    fprintf(f, "seq\tcoll\tblock\ttree\tkind\tchunk\tpeer\tt_ns\n");
    for (unsigned long long i = 0; i < n; i++)
        fprintf(f, "%u\t%s\t%u\t%u\t%s\t%u\t%d\t%llu\n", rec[i].seq, bk_coll_name(rec[i].coll),
                rec[i].block, rec[i].tree, kind_name(rec[i].kind), rec[i].chunk, rec[i].peer,
                (unsigned long long)rec[i].t_ns);
    if ((ferror(f) | fclose(f)) && bk_logs(&c->env, BK_LOG_WARN, BK_SUB_ALL))
        bk_log(BK_LOG_WARN, bk_log_dev(c), "BLINK_TRACE: writing %s failed", path);
    else if (bk_logs(&c->env, BK_LOG_INFO, BK_SUB_COLL))
        bk_log(BK_LOG_INFO, bk_log_dev(c), "BLINK_TRACE: %llu events in %s (%llu dropped: "
               "BLINK_TRACE_RECORDS)", n, path, offered - n);
}

struct bk_trace_ring *bk_trace_ring_new(size_t cap)
{
    struct bk_trace_ring *r = malloc(offsetof(struct bk_trace_ring, rec) + cap * sizeof r->rec[0]);
    if (r) {
        r->head = 0;
        r->cap = cap;
    }
    return r;
}

uint64_t bk_trace_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bk_trace_add(struct bk_trace_ring *r, int kind, uint32_t seq, int coll, int block, int tree,
                  uint32_t chunk, int peer)
{
    unsigned long long i = __atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);
    if (i >= r->cap)
        return;
    r->rec[i] = (struct bk_trace_rec){bk_trace_now(), seq, chunk, (uint16_t)block, (uint16_t)tree,
                                      (int16_t)peer, (uint8_t)kind, (uint8_t)coll};
}
