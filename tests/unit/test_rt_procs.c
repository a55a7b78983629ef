/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_rt_procs.c - ranks as separate processes, as NCCL runs them: the test makes an id with
 * blinkGetUniqueId and forks one child per rank; child r joins with blinkCommInitRank (the
 * generated source's, renamed e2e_rank_NAME by templates/local.mk), playing topology device
 * devs[r] through BLINK_DEVICE where the ranks are an allocation's. Each child runs the same
 * seeded sweep as test_e2e (every collective x datatype x op; counts 0, 1, primes and many
 * chunks; in place or not; one call or a group of one; NULL or user streams), on its own
 * buffers only (rt_rank_run_check), through the staging both ways (no call's description has
 * proto.h's BK_ALGO_DIRECT), and exits with a status that the parent checks, writing its
 * first failure into a pipe. Outputs from blinkMemAlloc registered with blinkCommRegister are
 * written by the ranks' parents (proto.h, Registered), and only then. Then faults, each of
 * which must end in an error on every rank within seconds, never a hang: a rank killed
 * mid-call or during init, a damaged id, another valid id, two processes as one rank, another
 * rank count, mismatched counts. After every case nothing of its id is left in /dev/shm.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "rt.h"
#include "procs_util.h"
#include "rt_testutil.h"

typedef blinkResult_t (*rank_fn)(blinkComm_t *, int, blinkUniqueId, int);
blinkResult_t e2e_rank_dgx1p(blinkComm_t *, int, blinkUniqueId, int);
blinkResult_t e2e_rank_dgx2(blinkComm_t *, int, blinkUniqueId, int);
blinkResult_t e2e_rank_hgx_h100(blinkComm_t *, int, blinkUniqueId, int);
blinkResult_t e2e_rank_dgx1v_all(blinkComm_t *, int, blinkUniqueId, int);
blinkResult_t e2e_rank_nvl18_pairs(blinkComm_t *, int, blinkUniqueId, int);

/* ------------------------------------------------------------------ the sweep */

/* 4-byte chunks of a float are 16 bytes: a count of a few hundred crosses dozens of chunks. */
#define CHUNK_BYTES "64"
static const size_t counts[] = {0, 1, 2, 3, 7, 13, 31, 97, 251, 509, 1021};
#define NCOUNTS (sizeof counts / sizeof counts[0])

static unsigned next_random(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (unsigned)(*s >> 32);
}

struct sweep {
    const char *label;
    rank_fn init;
    int n;
    const int *devs;           /* the device each rank plays, or NULL: its rank number */
    const char *algo;          /* BLINK_ALGO: "trees" or "rings" */
    blinkUniqueId id;
};

/* Every child draws the same sequence from the same seed, so all ranks make the same calls. */
static int sweep_child(int rank, const void *arg, char *why, size_t len)
{
    const struct sweep *s = arg;
    setenv("BLINK_CHUNK_BYTES", CHUNK_BYTES, 1);
    /* Far below the deadline: a rank that waits in vain says for whom, rather than be killed. */
    setenv("BLINK_TIMEOUT_S", "60", 1);
    setenv("BLINK_ALGO", s->algo, 1);
    set_device(s->devs ? s->devs[rank] : -1);
    blinkComm_t comm;
    blinkResult_t res = s->init(&comm, s->n, s->id, rank);
    if (res != blinkSuccess) {
        snprintf(why, len, "rank %d: init: result %d: %s", rank, res, blinkGetLastError(NULL));
        return CHILD_FAILED;
    }
    int dev = -1, bad = 0;
    blinkCommCuDevice(comm, &dev);
    if (dev != (s->devs ? s->devs[rank] : rank)) {
        snprintf(why, len, "rank %d: device %d", rank, dev);
        bad = 1;
    }
    unsigned long long seed = 0x9e3779b97f4a7c15ull;
    int runs = 0;
    for (int coll = 0; coll < BLINK_PLAN_COLLS && !bad; coll++) {
        int has_op = coll != BLINK_PLAN_BROADCAST && coll != BLINK_PLAN_ALLGATHER;
        for (int dt = 0; dt < blinkNumTypes && !bad; dt++)
            for (int op = 0; op < (has_op ? blinkNumOps : 1) && !bad; op++) {
                unsigned r = next_random(&seed);
                struct rt_case c = {coll, (int)(r % (unsigned)s->n), (blinkDataType_t)dt,
                                    (blinkRedOp_t)op, counts[(r >> 8) % NCOUNTS],
                                    (int)((r >> 16) & 1), (r >> 17) & 1 ? RT_GROUP : RT_THREADS,
                                    (int)((r >> 18) & 1)};
                char what[MSG_BYTES] = "";
                bad = rt_rank_run_check(comm, rank, s->n, &c, what, sizeof what);
                runs++;
                /* A process per rank: the peers' pointers mean nothing here, so no call goes
                 * down direct (proto.h); the description this rank entered says which. */
                const struct bk_seg_header *h = (const void *)comm->peer[comm->prank].seg;
                if (!bad && (__atomic_load_n(&h->desc[6], __ATOMIC_RELAXED) & BK_ALGO_DIRECT)) {
                    snprintf(what, sizeof what, "rank %d went down direct", rank);
                    bad = 1;
                }
                if (bad)
                    snprintf(why, len, "coll %d dt %d op %d count %zu root %d inplace %d style "
                             "%d streams %d: %s", coll, dt, op, c.count, c.root, c.inplace,
                             c.style, c.streams, what);
            }
    }
    int want = 2 * blinkNumTypes + 3 * blinkNumTypes * blinkNumOps;
    if (!bad && runs != want) {
        snprintf(why, len, "rank %d: %d calls, not %d", rank, runs, want);
        bad = 1;
    }
    blinkCommDestroy(comm);
    return bad ? CHILD_FAILED : CHILD_OK;
}

static void run_sweep(struct sweep *s)
{
    struct procs p;
    cr_assert_eq(blinkGetUniqueId(&s->id), blinkSuccess);
    cr_expect(run_children(&p, s->n, sweep_child, s, 240), "%s: not done in 240 s (killed)",
              s->label);
    for (int r = 0; r < s->n; r++)
        cr_expect_eq(p.status[r], CHILD_OK, "%s: rank %d: status %d: %s", s->label, r,
                     p.status[r], p.msg[r]);
    expect_shm_clean(&s->id);
}

/* DGX-1V allocations through the library of every allocation. GPUs 0, 1 and 4 have no NVLink
 * ring (1-4 is not a link), and their ranks name them out of order, so the plan's ranks are
 * relabelled across processes. */
Test(procs, dgx1v_3_gpus_without_ring, .timeout = 300)
{
    static const int devs[] = {4, 0, 1};
    struct sweep s = {"DGX-1V GPUs 4,0,1", e2e_rank_dgx1v_all, 3, devs, "trees", {{0}}};
    run_sweep(&s);
}

/* GPUs 0-1-2-3 are an NVLink ring: run the plan's rings (as chains, with no NCCL here). */
Test(procs, dgx1v_4_gpus_rings, .timeout = 300)
{
    static const int devs[] = {0, 1, 2, 3};
    struct sweep s = {"DGX-1V GPUs 0-3, rings", e2e_rank_dgx1v_all, 4, devs, "rings", {{0}}};
    run_sweep(&s);
}

/* The whole machine, rank r on GPU 7 - r. */
Test(procs, dgx1v_8_gpus, .timeout = 300)
{
    static const int devs[] = {7, 6, 5, 4, 3, 2, 1, 0};
    struct sweep s = {"DGX-1V all GPUs reversed", e2e_rank_dgx1v_all, 8, devs, "trees",
                      {{0}}};
    run_sweep(&s);
}

/* The committed DGX-1P source: the rings of the whole machine. */
Test(procs, dgx1p_rings, .timeout = 300)
{
    struct sweep s = {"DGX-1P, rings", e2e_rank_dgx1p, 8, NULL, "rings", {{0}}};
    run_sweep(&s);
}

Test(procs, hgx_h100, .timeout = 300)
{
    struct sweep s = {"HGX H100", e2e_rank_hgx_h100, 8, NULL, "trees", {{0}}};
    run_sweep(&s);
}

/* A library by classes (9 Grace pairs): each process finds the class of devices 17, 4, 5 and 16
 * (two pairs, in scrambled order) by their blocks and builds the relabelled schedules itself. */
Test(procs, library_by_classes, .timeout = 300)
{
    static const int devs[] = {17, 4, 5, 16};
    struct sweep s = {"quarter NVL72 GPUs 17,4,5,16", e2e_rank_nvl18_pairs, 4, devs, "trees",
                      {{0}}};
    run_sweep(&s);
}

/* 16 processes, on however few cores. */
Test(procs, dgx2, .timeout = 300)
{
    struct sweep s = {"DGX-2", e2e_rank_dgx2, 16, NULL, "trees", {{0}}};
    run_sweep(&s);
}

/* ------------------------------------------------------------------ registered outputs */

/* Registered outputs (proto.h): every rank's output is blinkMemAlloc's and registered, so each
 * parent maps its children's outputs and writes them itself; results must be those of the
 * staging, with calls of many chunks (more than the S slots a credit would guard). */
struct reg_run {
    int n, registered;
    const char *direct;        /* BLINK_DIRECT */
    blinkUniqueId id;
};

static float value(int rank, size_t i) { return (float)(rank * 1000 + (int)(i % 997)); }

/* The three collectives with a down pass, on counts of 1 to 64 chunks of 256 bytes. */
static int reg_calls(blinkComm_t comm, int rank, int n, float *send, float *recv, char *why,
                     size_t len)
{
    static const size_t counts[] = {1, 97, 1021, 4099};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        for (int coll = 0; coll < 3; coll++) {
            size_t count = counts[k], total = coll == 2 ? count * (size_t)n : count;
            int root = (int)(k + (size_t)coll) % n;
            for (size_t i = 0; i < count; i++)
                send[i] = value(rank, i);
            memset(recv, 0xff, total * sizeof *recv);
            blinkResult_t r = coll == 0 ? blinkBroadcast(send, recv, count, blinkFloat32, root,
                                                         comm, NULL)
                            : coll == 1 ? blinkAllReduce(send, recv, count, blinkFloat32,
                                                         blinkSum, comm, NULL)
                                        : blinkAllGather(send, recv, count, blinkFloat32, comm,
                                                         NULL);
            if (r != blinkSuccess) {
                snprintf(why, len, "rank %d: collective %d of %zu: %s", rank, coll, count,
                         blinkGetLastError(comm));
                return 1;
            }
            for (size_t i = 0; i < total; i++) {
                float want = coll == 0   ? value(root, i)
                             : coll == 1 ? (float)(500 * n * (n - 1) + n * (int)(i % 997))
                                         : value((int)(i / count), i % count);
                if (recv[i] != want) {
                    snprintf(why, len, "rank %d: collective %d of %zu: [%zu] = %g, not %g",
                             rank, coll, count, i, recv[i], want);
                    return 1;
                }
            }
        }
    return 0;
}

static int registered_child(int rank, const void *arg, char *why, size_t len)
{
    const struct reg_run *s = arg;
    setenv("BLINK_CHUNK_BYTES", "256", 1);
    setenv("BLINK_TIMEOUT_S", "60", 1);
    setenv("BLINK_ALGO", "trees", 1);
    setenv("BLINK_DIRECT", s->direct, 1);
    set_device(-1);
    blinkComm_t comm;
    if (e2e_rank_dgx1v_all(&comm, s->n, s->id, rank) != blinkSuccess) {
        snprintf(why, len, "rank %d: init: %s", rank, blinkGetLastError(NULL));
        return CHILD_FAILED;
    }
    size_t bytes = 4099 * (size_t)s->n * sizeof(float);
    void *send = NULL, *recv = NULL, *handle = NULL;
    int bad = blinkMemAlloc(&send, bytes) != blinkSuccess ||
              blinkMemAlloc(&recv, bytes) != blinkSuccess ||
              (s->registered && blinkCommRegister(comm, recv, bytes, &handle) != blinkSuccess);
    if (bad)
        snprintf(why, len, "rank %d: memory: %s", rank, blinkGetLastError(comm));
    else
        bad = reg_calls(comm, rank, s->n, send, recv, why, len);
    if (handle && blinkCommDeregister(comm, handle) != blinkSuccess && !bad) {
        snprintf(why, len, "rank %d: deregister: %s", rank, blinkGetLastError(comm));
        bad = 1;
    }
    /* A fresh output each call, as an allocator that frees and allocates again gives: the
     * parents' old mappings must go (a mapping holds the freed pages). */
    for (int i = 0; !bad && s->registered && i < 3 * BK_REG_MAPS_PER_PEER; i++) {
        void *fresh = NULL, *h = NULL;
        bad = blinkMemAlloc(&fresh, bytes) != blinkSuccess ||
              blinkCommRegister(comm, fresh, bytes, &h) != blinkSuccess;
        if (bad)
            snprintf(why, len, "rank %d: memory: %s", rank, blinkGetLastError(comm));
        for (size_t k = 0; !bad && k < 97; k++)
            ((float *)send)[k] = value(rank, k);
        if (!bad && blinkAllReduce(send, fresh, 97, blinkFloat32, blinkSum, comm, NULL) !=
                        blinkSuccess) {
            snprintf(why, len, "rank %d: fresh output %d: %s", rank, i, blinkGetLastError(comm));
            bad = 1;
        }
        for (size_t k = 0; !bad && k < 97; k++)
            if (((float *)fresh)[k] != (float)(500 * s->n * (s->n - 1) + s->n * (int)k)) {
                snprintf(why, len, "rank %d: fresh output %d: [%zu] = %g", rank, i, k,
                         ((float *)fresh)[k]);
                bad = 1;
            }
        if (h)
            blinkCommDeregister(comm, h);
        blinkMemFree(fresh);
    }
    int count = 0;
    unsigned long long mask = bk_reg_mapped(comm, &count);
    if (!bad && count > BK_REG_MAPS_PER_PEER * __builtin_popcountll(mask)) {
        snprintf(why, len, "rank %d: %d regions mapped of %d peers", rank, count,
                 __builtin_popcountll(mask));
        bad = 1;
    }
    if (!bad)
        snprintf(why, len, "%llx", mask);
    blinkCommDestroy(comm);
    blinkMemFree(send);
    blinkMemFree(recv);
    return bad ? CHILD_FAILED : CHILD_OK;
}

/* The plan ranks whose outputs some rank mapped. */
static unsigned long long run_registered(struct reg_run *s)
{
    struct procs p;
    cr_assert_eq(blinkGetUniqueId(&s->id), blinkSuccess);
    cr_expect(run_children(&p, s->n, registered_child, s, 120), "not done in 120 s (killed)");
    unsigned long long mapped = 0;
    for (int r = 0; r < s->n; r++) {
        cr_expect_eq(p.status[r], CHILD_OK, "rank %d: status %d: %s", r, p.status[r],
                     p.msg[r]);
        mapped |= strtoull(p.msg[r], NULL, 16);
    }
    expect_shm_clean(&s->id);
    return mapped;
}

Test(procs, registered_outputs_are_written_by_the_parents, .timeout = 300)
{
    /* Every rank is some call's child (the roots change), so every output is mapped. */
    struct reg_run s = {4, 1, "1", {{0}}};
    cr_expect_eq(run_registered(&s), 0xfull);
    /* BLINK_DIRECT=0, or outputs not registered: through the staging, nothing mapped. */
    s = (struct reg_run){4, 1, "0", {{0}}};
    cr_expect_eq(run_registered(&s), 0ull);
    s = (struct reg_run){4, 0, "1", {{0}}};
    cr_expect_eq(run_registered(&s), 0ull);
}

/* ------------------------------------------------------------------ faults */

/* Four ranks of the DGX-1V library on GPUs 0-3, each rank on the device of its number. */
#define FAULT_RANKS 4

/* 0.3 s from now, kill child `victim`; the others must each give up with blinkRemoteError within
 * seconds, saying the victim exited: the first to notice aborts the communicator with that
 * reason, so every survivor names the victim, not a survivor that already gave up and left.
 * The victim stays an unreaped zombie until the others are done: gone all the same. */
static void kill_and_check(struct procs *p, int victim)
{
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    double killed_at = now();
    kill(p->pid[victim], SIGKILL);
    int in_time = wait_children(p, killed_at - p->start + 10, victim), st;
    double took = now() - killed_at;
    if (p->pid[victim] && waitpid(p->pid[victim], &st, 0) == p->pid[victim])
        reaped(p, victim, st);
    read_messages(p);
    cr_expect(in_time, "the survivors were still running 10 s after the kill");
    cr_expect_lt(took, 5.0, "the survivors took %.2f s to give up", took);
    cr_expect_eq(p->status[victim], 128 + SIGKILL);
    char name[16];
    snprintf(name, sizeof name, "rank %d (", victim);
    int named = 0;
    for (int r = 0; r < p->n; r++)
        if (r != victim) {
            cr_expect_eq(p->status[r], CHILD_GOT(blinkRemoteError), "rank %d: status %d: %s", r,
                         p->status[r], p->msg[r]);
            cr_expect(strstr(p->msg[r], "exited") != NULL, "rank %d: '%s'", r, p->msg[r]);
            named += strstr(p->msg[r], name) != NULL;
        }
    cr_expect_eq(named, p->n - 1, "not every survivor named rank %d", victim);
}

/* a. A rank killed mid-call: big allreduces in small chunks, so that every rank is in a call
 * when rank 2 dies. The test waits for all ranks to finish init (a byte each on `ready`). */
#define BIG_COUNT ((size_t)4 << 20)

struct kill_arg {
    blinkUniqueId id;
    int ready;                 /* write end of the pipe that says a rank is past init */
};

static int kill_child(int rank, const void *arg, char *msg, size_t len)
{
    const struct kill_arg *a = arg;
    setenv("BLINK_CHUNK_BYTES", "4096", 1);
    /* Longer than the test allows: the survivors must notice the death by its pid. */
    setenv("BLINK_TIMEOUT_S", "30", 1);
    unsetenv("BLINK_ALGO");
    set_device(-1);
    blinkComm_t comm;
    blinkResult_t res = e2e_rank_dgx1v_all(&comm, FAULT_RANKS, a->id, rank);
    if (res != blinkSuccess) {
        snprintf(msg, len, "init: result %d: %s", res, blinkGetLastError(NULL));
        return CHILD_FAILED;
    }
    float *send = calloc(BIG_COUNT, sizeof *send), *recv = malloc(BIG_COUNT * sizeof *recv);
    if (!send || !recv || write(a->ready, "r", 1) != 1) {
        snprintf(msg, len, "out of memory, or the ready pipe failed");
        return CHILD_FAILED;
    }
    int code = CHILD_OK;
    snprintf(msg, len, "every call succeeded");
    for (int i = 0; i < 10000; i++) {
        res = blinkAllReduce(send, recv, BIG_COUNT, blinkFloat32, blinkSum, comm, NULL);
        if (res != blinkSuccess) {
            snprintf(msg, len, "call %d: %s", i, blinkGetLastError(comm));
            code = CHILD_GOT(res);
            break;
        }
    }
    free(send);
    free(recv);
    blinkCommDestroy(comm);
    return code;
}

Test(procs_fault, rank_killed_mid_call, .timeout = 60)
{
    struct kill_arg a;
    struct procs p;
    int ready[2];
    cr_assert_eq(blinkGetUniqueId(&a.id), blinkSuccess);
    cr_assert_eq(pipe(ready), 0);
    a.ready = ready[1];
    spawn(&p, FAULT_RANKS, kill_child, &a);
    close(ready[1]);
    char bytes[FAULT_RANKS];
    size_t got = 0;
    for (ssize_t k; got < FAULT_RANKS && (k = read(ready[0], bytes + got, FAULT_RANKS - got)) > 0;)
        got += (size_t)k;
    close(ready[0]);
    cr_expect_eq(got, FAULT_RANKS, "only %zu ranks got past init", got);
    kill_and_check(&p, 2);
    expect_shm_clean(&a.id);
}

/* b, d. Init with one rank given something else: its own id, rank, nranks or BLINK_TIMEOUT_S. */
struct init_arg {
    blinkUniqueId id[FAULT_RANKS];
    int rank[FAULT_RANKS];     /* the rank each child joins as */
    int nranks[FAULT_RANKS];
    const char *timeout[FAULT_RANKS];
};

static int init_child(int rank, const void *arg, char *msg, size_t len)
{
    const struct init_arg *a = arg;
    setenv("BLINK_TIMEOUT_S", a->timeout[rank], 1);
    set_device(-1);
    blinkComm_t comm;
    blinkResult_t res = e2e_rank_dgx1v_all(&comm, a->nranks[rank], a->id[rank], a->rank[rank]);
    if (res == blinkSuccess) {
        snprintf(msg, len, "init succeeded");
        blinkCommDestroy(comm);
        return CHILD_OK;
    }
    snprintf(msg, len, "%s", blinkGetLastError(NULL));
    return CHILD_GOT(res);
}

/* Four ranks of one id, each told its rank, nranks 4 and BLINK_TIMEOUT_S=timeout. */
static void init_arg_base(struct init_arg *a, const char *timeout)
{
    blinkUniqueId id;
    cr_assert_eq(blinkGetUniqueId(&id), blinkSuccess);
    for (int r = 0; r < FAULT_RANKS; r++) {
        a->id[r] = id;
        a->rank[r] = r;
        a->nranks[r] = FAULT_RANKS;
        a->timeout[r] = timeout;
    }
}

/* Every rank fails init within 10 s, with a message; nothing of any id is left. */
static void expect_init_fails(const struct init_arg *a, struct procs *p, const char *label)
{
    cr_expect(run_children(p, FAULT_RANKS, init_child, a, 30), "%s: not done in 30 s", label);
    for (int r = 0; r < FAULT_RANKS; r++) {
        cr_expect(got_error(p->status[r]), "%s: rank %d: status %d: %s", label, r,
                  p->status[r], p->msg[r]);
        cr_expect_lt(p->secs[r], 10.0, "%s: rank %d took %.2f s", label, r, p->secs[r]);
        cr_expect(p->msg[r][0], "%s: rank %d: no message", label, r);
    }
    for (int r = 0; r < FAULT_RANKS; r++)
        expect_shm_clean(&a->id[r]);
}

/* A rank whose call is done may leave (its process ends) while a peer is still in that call:
 * the peer must finish, not blame it. DGX-1V GPUs 0, 1, 4 have one tree, the path 1 - 0 - 4;
 * rank 1 (GPU 1) broadcasts one element and leaves at once, rank 2 (GPU 4) enters 0.5 s late,
 * so rank 0 (GPU 0) sits idle in the call meanwhile. */
static int early_exit_child(int rank, const void *arg, char *msg, size_t len)
{
    static const int devs[] = {0, 1, 4};
    const blinkUniqueId *id = arg;
    setenv("BLINK_TIMEOUT_S", "30", 1);
    setenv("BLINK_ALGO", "trees", 1);
    set_device(devs[rank]);
    blinkComm_t comm;
    blinkResult_t res = e2e_rank_dgx1v_all(&comm, 3, *id, rank);
    if (res != blinkSuccess) {
        snprintf(msg, len, "init: %s", blinkGetLastError(NULL));
        return CHILD_FAILED;
    }
    struct timespec late = {0, 500 * 1000 * 1000};
    if (rank == 2)
        nanosleep(&late, NULL);
    float x = (float)rank;
    res = blinkBroadcast(&x, &x, 1, blinkFloat32, 1, comm, NULL);
    snprintf(msg, len, "result %d, x %g: %s", res, x, res ? blinkGetLastError(comm) : "");
    blinkCommDestroy(comm);
    return res == blinkSuccess && x == 1 ? CHILD_OK : CHILD_FAILED;
}

Test(procs_fault, rank_leaves_after_its_part, .timeout = 60)
{
    blinkUniqueId id;
    struct procs p;
    cr_assert_eq(blinkGetUniqueId(&id), blinkSuccess);
    cr_expect(run_children(&p, 3, early_exit_child, &id, 30));
    for (int r = 0; r < 3; r++)
        cr_expect_eq(p.status[r], CHILD_OK, "rank %d: %s", r, p.msg[r]);
    expect_shm_clean(&id);
}

/* A damaged id (its magic, or its token) is refused at once, before any waiting (its rank may
 * wait 30 s, and does not); the others wait out BLINK_TIMEOUT_S for it. */
Test(procs_fault, damaged_id, .timeout = 60)
{
    static const int at[] = {0, 8 + 5}; /* a byte of "blinkid1", a hex digit of the token */
    for (int k = 0; k < 2; k++) {
        struct init_arg a;
        struct procs p;
        char label[32];
        init_arg_base(&a, "1");
        a.id[3].internal[at[k]] = 'z';
        a.timeout[3] = "30";
        snprintf(label, sizeof label, "id damaged at byte %d", at[k]);
        expect_init_fails(&a, &p, label);
        cr_expect_eq(p.status[3], CHILD_GOT(blinkInvalidArgument), "%s: %s", label, p.msg[3]);
    }
}

/* A valid id, but another one: two rendezvous, neither complete; all time out. */
Test(procs_fault, another_valid_id, .timeout = 60)
{
    struct init_arg a;
    struct procs p;
    init_arg_base(&a, "1");
    cr_assert_eq(blinkGetUniqueId(&a.id[3]), blinkSuccess);
    expect_init_fails(&a, &p, "another id");
}

/* d. A rank told another rank count, more or less: whichever rank arrives first sets the count;
 * the others are refused, or wait out BLINK_TIMEOUT_S for ranks that never come. */
Test(procs_fault, mismatched_nranks, .timeout = 60)
{
    static const int rank[] = {3, 0}, nranks[] = {FAULT_RANKS + 1, FAULT_RANKS - 1};
    for (int k = 0; k < 2; k++) {
        struct init_arg a;
        struct procs p;
        char label[32];
        init_arg_base(&a, "1");
        a.nranks[rank[k]] = nranks[k];
        snprintf(label, sizeof label, "nranks %d at rank %d", nranks[k], rank[k]);
        expect_init_fails(&a, &p, label);
    }
}

/* Two processes that join as the same rank: the second to register is refused and the rest
 * fail with it. (A rank that reaches init only after that finds no rendezvous left and waits
 * out BLINK_TIMEOUT_S.) */
Test(procs_fault, same_rank_twice, .timeout = 60)
{
    struct init_arg a;
    struct procs p;
    init_arg_base(&a, "1");
    a.rank[3] = 2;
    expect_init_fails(&a, &p, "rank 2 twice");
    cr_expect(p.status[2] == CHILD_GOT(blinkInvalidUsage) ||
              p.status[3] == CHILD_GOT(blinkInvalidUsage), "'%s' '%s'", p.msg[2], p.msg[3]);
}

/* A rank killed in init while all wait for rank 3, which never comes: the others notice by the
 * pid it registered (BLINK_TIMEOUT_S is 30) and give up, leaving nothing behind. */
Test(procs_fault, rank_killed_during_init, .timeout = 60)
{
    struct init_arg a;
    struct procs p;
    init_arg_base(&a, "30");
    spawn(&p, FAULT_RANKS - 1, init_child, &a);
    kill_and_check(&p, 1);
    expect_shm_clean(&a.id[0]);
}

/* c. Counts that differ across ranks: every rank's call fails (none hangs), and the ranks that
 * compared descriptions say "mismatched". */
struct count_arg {
    blinkUniqueId id;
    int streams;
};

static int count_child(int rank, const void *arg, char *msg, size_t len)
{
    const struct count_arg *a = arg;
    setenv("BLINK_TIMEOUT_S", "30", 1);
    setenv("BLINK_CHUNK_BYTES", CHUNK_BYTES, 1);
    set_device(-1);
    blinkComm_t comm;
    blinkResult_t res = e2e_rank_dgx1v_all(&comm, FAULT_RANKS, a->id, rank);
    if (res != blinkSuccess) {
        snprintf(msg, len, "init: result %d: %s", res, blinkGetLastError(NULL));
        return CHILD_FAILED;
    }
    float send[1000] = {0}, recv[1000];
    blinkStream_t stream = NULL;
    if (a->streams)
        blinkHostStreamCreate(&stream);
    res = blinkAllReduce(send, recv, rank == 1 ? 999 : 1000, blinkFloat32, blinkSum, comm, stream);
    if (res == blinkSuccess && stream)
        res = blinkHostStreamSynchronize(stream);
    snprintf(msg, len, "%s", res == blinkSuccess ? "the call succeeded" : blinkGetLastError(comm));
    if (stream)
        blinkHostStreamDestroy(stream);
    blinkCommDestroy(comm);
    return res == blinkSuccess ? CHILD_OK : CHILD_GOT(res);
}

Test(procs_fault, mismatched_counts, .timeout = 60)
{
    for (int streams = 0; streams <= 1; streams++) {
        struct count_arg a = {{{0}}, streams};
        struct procs p;
        cr_assert_eq(blinkGetUniqueId(&a.id), blinkSuccess);
        cr_expect(run_children(&p, FAULT_RANKS, count_child, &a, 30), "not done in 30 s");
        int said = 0;
        for (int r = 0; r < FAULT_RANKS; r++) {
            cr_expect(got_error(p.status[r]), "streams %d: rank %d: status %d: %s",
                      streams, r, p.status[r], p.msg[r]);
            cr_expect_lt(p.secs[r], 10.0, "streams %d: rank %d took %.2f s", streams, r,
                         p.secs[r]);
            said += strstr(p.msg[r], "mismatched") != NULL;
        }
        cr_expect_gt(said, 0, "streams %d: no rank said 'mismatched': '%s'", streams, p.msg[0]);
        expect_shm_clean(&a.id);
    }
}
