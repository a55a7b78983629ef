/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_kreg.cc - the host's half of registered outputs on CUDA (runtime/cuda/kernel_reg.h),
 * against requests written as the kernel writes them (kernel_reg.cuh) and open, close and put
 * callbacks that record what they are asked: a request is opened once and entered in the table
 * (base before serial); a fifth region of a peer takes the oldest out of the table at once but
 * closes it only once every launch issued before then finished, and only then opens the new one;
 * after a capture nothing closes; a region that fails to open is not tried again, and the peer's
 * third failure in a row, none opened, is a warning; where the table cannot be written, nothing
 * the kernel may still find is closed, and nothing stays open that it cannot find; a peer in
 * this process needs no opening. The shim's mpirun test (test_nccl_mpi's
 * cuda_kernel_registered) runs the same code with the kernel; here each rule is held alone.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define KARGS_WHO "test"
#include "kernel_cuda.cuh"
#include "kernel_reg.h"

#define N 4 /* ranks */

struct calls {
    int opens, closes, fail_serial, put_fails;
    uint64_t opened_serial[32];
    void *closed[32];
    int puts;
};

static int fake_open(void *ctx, int peer, const struct kreg_req *rq, void **opened,
                     unsigned char **base, char *why, size_t len)
{
    struct calls *k = (struct calls *)ctx;
    if (rq->serial == (uint64_t)k->fail_serial) {
        snprintf(why, len, "no such region");
        return 0;
    }
    k->opened_serial[k->opens++ % 32] = rq->serial;
    *opened = (void *)(uintptr_t)(0x1000 * (peer + 1) + rq->serial); /* any non-NULL token */
    *base = (unsigned char *)(uintptr_t)(0x100000 * (rq->serial + 1));
    return 1;
}

static void fake_close(void *ctx, void *opened)
{
    struct calls *k = (struct calls *)ctx;
    k->closed[k->closes++ % 32] = opened;
}

static int fake_put(void *ctx, struct kreg_entry *tab, int slot, uint64_t serial, uint64_t base)
{
    struct calls *k = (struct calls *)ctx;
    if (serial)
        cr_assert_neq(base, 0, "a region put without its address");
    if (k->put_fails)
        return 0;
    tab[slot].base = base;
    tab[slot].serial = serial;
    k->puts++;
    return 1;
}

/* One rank's state: its communicator (for the log lines), the requests' block and table. */
struct rank {
    struct blinkComm c;
    int user_of[N];
    unsigned char req[4096];
    struct kreg_entry tab[N * KREG_PER_PEER];
    struct kreg r;
    struct calls k;
};

static void rank_make(struct rank *x)
{
    memset(x, 0, sizeof *x);
    for (int i = 0; i < N; i++)
        x->user_of[i] = i;
    x->c.user_of = x->user_of;
    x->c.nranks = N;
    x->c.env.log_level = BK_LOG_WARN;
    x->c.env.log_mask = ~0u;
    cr_assert_leq(kreg_bytes(N), sizeof x->req);
    cr_assert_eq(kreg_init(&x->r, N, x->req, x->req, x->tab, fake_open, fake_close, fake_put,
                           &x->k),
                 blinkSuccess);
    x->k.fail_serial = -1;
}

/* What a kernel does where peer q's region `serial` is not in its table (kernel_reg.cuh). */
static void ask(struct rank *x, int q, uint64_t serial)
{
    x->r.h.req[q].len = 4096;
    x->r.h.req[q].serial = serial;
    *x->r.h.asked = 1;
}

/* Peer q's regions 1 to KREG_PER_PEER asked for and opened, one launch each: a full table. */
static void fill(struct rank *x, int q)
{
    for (uint64_t s = 1; s <= KREG_PER_PEER; s++) {
        ask(x, q, s);
        kreg_serve(&x->r, &x->c, (unsigned)s, (unsigned)s, 1);
    }
}

/* The table slot of peer q holding serial, or -1: what the kernel would find. */
static int found(const struct rank *x, int q, uint64_t serial)
{
    for (int k = 0; k < KREG_PER_PEER; k++)
        if (x->tab[q * KREG_PER_PEER + k].serial == serial)
            return q * KREG_PER_PEER + k;
    return -1;
}

Test(kreg, a_request_opens_once_and_enters_the_table)
{
    struct rank x;
    rank_make(&x);
    kreg_serve(&x.r, &x.c, 0, 0, 1); /* nothing asked: nothing happens */
    cr_expect_eq(x.k.opens + x.k.puts, 0);
    ask(&x, 2, 7);
    kreg_serve(&x.r, &x.c, 0, 0, 1);
    int k = found(&x, 2, 7);
    cr_assert_geq(k, 0, "rank 2's region 7 is not in the table");
    cr_expect_eq(x.tab[k].base, 0x100000u * 8);
    cr_expect_eq(x.k.opens, 1);
    cr_expect_eq(x.r.h.req[2].serial, 0, "the request was not taken");
    ask(&x, 2, 7); /* asked again before the kernel saw the table: no second open */
    kreg_serve(&x.r, &x.c, 1, 1, 1);
    cr_expect_eq(x.k.opens, 1);
    kreg_free(&x.r);
    cr_expect_eq(x.k.closes, 1, "kreg_free closes what is open");
}

Test(kreg, a_fifth_region_waits_for_the_launches_that_may_use_the_oldest)
{
    struct rank x;
    rank_make(&x);
    fill(&x, 1);
    cr_assert_eq(x.k.opens, KREG_PER_PEER);
    /* Launches 1-9 issued, 5 finished: region 1 (the oldest) leaves the table now... */
    ask(&x, 1, 9);
    kreg_serve(&x.r, &x.c, 5, 9, 1);
    cr_expect_eq(found(&x, 1, 1), -1, "the oldest region is still in the table");
    cr_expect_eq(x.k.closes, 0, "closed while launches issued before may still use it");
    cr_expect_eq(found(&x, 1, 9), -1, "opened before a slot was free");
    cr_expect_eq(*x.r.h.asked, 1, "the request must wait for the next launch");
    /* ...and closes once all 9 finished; then 9 opens in its slot. */
    kreg_serve(&x.r, &x.c, 8, 10, 1);
    cr_expect_eq(x.k.closes, 0);
    kreg_serve(&x.r, &x.c, 9, 11, 1);
    cr_expect_eq(x.k.closes, 1);
    cr_expect_eq(x.k.closed[0], (void *)(uintptr_t)(0x1000 * 2 + 1), "not the oldest closed");
    cr_expect_geq(found(&x, 1, 9), 0, "the new region was not opened");
    for (uint64_t s = 2; s <= KREG_PER_PEER; s++)
        cr_expect_geq(found(&x, 1, s), 0, "region %d left the table too", (int)s);
    kreg_free(&x.r);
}

Test(kreg, nothing_closes_after_a_capture)
{
    struct rank x;
    rank_make(&x);
    fill(&x, 3);
    ask(&x, 3, 99);
    for (int i = 0; i < 3; i++)
        kreg_serve(&x.r, &x.c, 100, 100, 0); /* a graph's replays are not counted */
    cr_expect_eq(x.k.closes, 0);
    cr_expect_eq(found(&x, 3, 99), -1);
    for (uint64_t s = 1; s <= KREG_PER_PEER; s++)
        cr_expect_geq(found(&x, 3, s), 0, "region %d left the table", (int)s);
    kreg_free(&x.r);
}

Test(kreg, failures_are_tried_once_and_the_third_in_a_row_warns, .init = cr_redirect_stderr)
{
    struct rank x;
    rank_make(&x);
    for (int s = 1; s <= KREG_WARN_AFTER + 1; s++) {
        x.k.fail_serial = s;
        ask(&x, 0, (uint64_t)s);
        kreg_serve(&x.r, &x.c, 0, 0, 1);
        ask(&x, 0, (uint64_t)s); /* the kernel asks again: the host does not retry */
        kreg_serve(&x.r, &x.c, 0, 0, 1);
    }
    cr_expect_eq(x.k.opens, 0);
    cr_expect_eq(x.r.failed[0], (uint64_t)KREG_WARN_AFTER + 1);
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    char line[512];
    int warn = 0, other = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, " blink WARN rank 0: cannot open rank 0's registered output (no such "
                         "region); it goes through the staging"))
            warn++;
        else
            other++;
    }
    cr_expect_eq(warn, 1, "%d warnings for %d failures", warn, KREG_WARN_AFTER + 1);
    cr_expect_eq(other, 0, "other lines at BLINK_DEBUG=WARN");
    kreg_free(&x.r);
}

/* The table cannot be written (the device's context is gone): a region opened for it is closed
 * again and counts as failed; a region that cannot leave the table is never closed. */
Test(kreg, a_table_that_cannot_be_written)
{
    struct rank x;
    rank_make(&x);
    fill(&x, 2);
    x.k.put_fails = 1;
    ask(&x, 2, 50);
    for (int i = 0; i < 3; i++)
        kreg_serve(&x.r, &x.c, 100, 100, 1);
    cr_expect_eq(x.k.closes, 0, "a region closed that the kernel's table still names");
    kreg_free(&x.r);
    rank_make(&x);
    x.k.put_fails = 1;
    ask(&x, 1, 5);
    kreg_serve(&x.r, &x.c, 0, 0, 1);
    cr_expect_eq(x.k.opens, 1);
    cr_expect_eq(x.k.closes, 1, "opened but not in the table: it must be closed again");
    cr_expect_eq(x.r.failed[1], 5);
    kreg_free(&x.r);
    cr_expect_eq(x.k.closes, 1);
}

/* A peer in this process: its region is found by serial among this process's blinkMemAlloc
 * regions, at its own address, without the backend's open; nothing is closed at the end. */
Test(kreg, a_peer_in_this_process)
{
    struct rank x;
    rank_make(&x);
    struct bk_peer peers[N];
    memset(peers, 0, sizeof peers);
    for (int i = 0; i < N; i++)
        peers[i].pid = (int)getpid();
    x.c.peer = peers;
    pthread_mutex_init(&x.c.reg_mu, NULL);
    void *mem = NULL;
    cr_assert_eq(blinkMemAlloc(&mem, 4096), blinkSuccess);
    struct bk_out_reg reg;
    void *h = NULL;
    cr_assert_eq(blinkCommRegister(&x.c, mem, 4096, &h), blinkSuccess);
    cr_assert(bk_reg_find(&x.c, mem, 4096, &reg), "blinkMemAlloc's memory is not found");
    ask(&x, 1, reg.serial);
    kreg_serve(&x.r, &x.c, 0, 0, 1);
    int k = found(&x, 1, reg.serial);
    cr_assert_geq(k, 0, "the region of this process is not in the table");
    cr_expect_eq(x.tab[k].base, (uint64_t)(uintptr_t)mem);
    cr_expect_eq(x.k.opens, 0, "the backend was asked to open memory of this process");
    ask(&x, 2, reg.serial + 1000); /* no such region here: it fails, without the backend */
    kreg_serve(&x.r, &x.c, 0, 0, 1);
    cr_expect_eq(found(&x, 2, reg.serial + 1000), -1);
    cr_expect_eq(x.r.failed[2], reg.serial + 1000);
    kreg_free(&x.r);
    cr_expect_eq(x.k.closes, 0, "memory of this process was closed");
    cr_expect_eq(blinkCommDeregister(&x.c, h), blinkSuccess);
    cr_expect_eq(blinkMemFree(mem), blinkSuccess);
    pthread_mutex_destroy(&x.c.reg_mu);
}
