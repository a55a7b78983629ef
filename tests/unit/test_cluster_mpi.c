/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_cluster_mpi.c - cluster plans across servers, emulated on this machine: the NCCL-API
 * client (tests/nccl/nccl_client.c) under mpirun, the host drop-in of a cluster plan in
 * LD_PRELOAD, each rank told its server (BLINK_SERVER) and device (BLINK_DEVICE). Ranks of one
 * server share memory; every edge between servers must go through MPI:
 *  - sweeps on 2 servers x 4 GPUs, 4 x 3 and 2 x 8 of DGX-1V (blinkc --servers), results
 *    checked by the client against its own reference;
 *  - the bytes each rank reports under BLINK_DEBUG=INFO as sent to and received from each rank
 *    of another server, against what the plan's trees put on those edges (this program links
 *    the same generated source and reads its tables), and no rank of its own server listed;
 *  - a rank that never joins, and one that dies: the others fail or are stopped in bounded
 *    time, and nothing is left in /dev/shm;
 *  - the 2 x 4 sweep with BLINK_PROTO=ll: LL inside each server, MPI between them;
 *  - the 2 x 4 sweep and byte counts again through the CUDA backend's own kernel and network
 *    proxy (proxy.c), run on the CPU by tests/shim's drop-in: mirrors of the other server's
 *    ranks, host-staged slots, the proxy's messages; and its faults;
 *  - the 2 x 4 plan in processes without MPI (this program links none): every rank fails
 *    with blinkInvalidUsage and a message that names the MPI library it looked for.
 * Skipped, not failed, where Open MPI or the client is missing. mpi_job.c runs the jobs.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blink_plan.h"
#include "mpi_job.h"

/* The build defines these; the defaults are relative to the build directory. */
#ifndef DROPIN_2X4
#define DROPIN_2X4 "tests/nccl/libblink-nccl-host-2x4.so"
#endif
#ifndef DROPIN_4X3
#define DROPIN_4X3 "tests/nccl/libblink-nccl-host-4x3.so"
#endif
#ifndef DROPIN_2X8
#define DROPIN_2X8 "tests/nccl/libblink-nccl-host-2x8.so"
#endif
/* The 2 x 4 plan on the CUDA backend's kernel and network proxy, run on the CPU (tests/shim). */
#ifndef DROPIN_SHIM_2X4
#define DROPIN_SHIM_2X4 "tests/nccl/libblink-nccl-shim-2x4.so"
#endif

/* The 2 x 4 source the drop-in DROPIN_2X4 was built from, linked here for its tables. */
const struct blink_plan_library *cluster_2x4_lib(void);
blinkResult_t cluster_2x4_rank(blinkComm_t *comm, int nranks, blinkUniqueId id, int rank);

static const int dev2x4[] = {0, 1, 2, 3, 0, 1, 2, 3}, srv2x4[] = {0, 0, 0, 0, 1, 1, 1, 1};
static const int dev4x3[] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2},
                 srv4x3[] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3};
static const int dev2x8[] = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7},
                 srv2x8[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

/* Counts: 0, 1, primes, and with 256-byte chunks up to dozens of chunks per tree. */
#define COUNTS "0,1,2,3,7,31,1021,4099"
#define SMALL_CHUNKS "BLINK_CHUNK_BYTES=256"
/* The shim's blocks are threads: 4 per block keep 8 ranks' kernels within two cores. */
#define FEW_THREADS "BK_SHIM_THREADS=4"

Test(cluster_mpi, dgx1v_2_servers_x_4, .timeout = 600)
{
    struct job j = {"2 x 4 DGX-1V GPUs", DROPIN_2X4, 8, dev2x4,
                    {"-q", "-n", COUNTS, "-d", "int8,float16,float32,bfloat16", "-o",
                     "all", "-p", "both", NULL}, -1, NULL, SMALL_CHUNKS, srv2x4, NULL, 0};
    run_sweep(&j);
}

Test(cluster_mpi, dgx1v_4_servers_x_3, .timeout = 600)
{
    struct job j = {"4 x 3 DGX-1V GPUs", DROPIN_4X3, 12, dev4x3,
                    {"-q", "-n", COUNTS, "-d", "uint8,int64,float32", "-o", "sum,prod,min,avg",
                     "-s", "11", NULL}, -1, NULL, SMALL_CHUNKS, srv4x3,
                    NULL, 0};
    run_sweep(&j);
}

Test(cluster_mpi, dgx1v_2_servers_x_8, .timeout = 600)
{
    struct job j = {"2 x 8 DGX-1V GPUs", DROPIN_2X8, 16, dev2x8,
                    {"-q", "-Q", "-d", "int32,float32", "-o", "sum,max", NULL}, -1, NULL, NULL,
                    srv2x8, NULL, 0};
    run_sweep(&j);
}

/* LL inside each server, whole chunks over MPI between servers (exec_host.c): results right
 * against the client's reference, and the runtime says the calls ran LL. */
Test(cluster_mpi, ll_inside_servers_mpi_between, .timeout = 600)
{
    struct job j = {"2 x 4 DGX-1V GPUs, LL", DROPIN_2X4, 8, dev2x4,
                    {"-q", "-n", "1,7,1021,4099", "-d", "int8,float16,float64", "-o", "sum,max",
                     NULL}, -1, "INFO", "BLINK_PROTO=ll", srv2x4, NULL, 0};
    struct run r;
    int n = -1;
    long cases = -1, wrong = -1, errors = -1;
    run_checked(&j, &r);
    const char *sum = strstr(r.out, "# nccl-client: ranks ");
    cr_expect(sum && sscanf(sum, "# nccl-client: ranks %d, cases %ld, wrong %ld, errors %ld", &n,
                            &cases, &wrong, &errors) == 4, "no summary line:\n%s", tail(r.out));
    cr_expect(n == 8 && wrong == 0 && errors == 0 && cases > 0, "ranks %d, cases %ld, wrong %ld, "
              "errors %ld:\n%s", n, cases, wrong, errors, tail(r.out));
    cr_expect_gt(count_log_lines(r.out, NULL, " chunks, LL"), 0, "no call ran LL:\n%s",
                 tail(r.out));
    free(r.out);
}

/* ------------------------------------------------------------------ bytes over MPI */

#define ELEMS 100003 /* float32: one allreduce of this many */

/* blink_plan.h's split rule for ELEMS floats: the boundary after prefix weight pre of total,
 * ELEMS * pre / total rounded down, then to the nearest 256-byte unit (64 floats), down where up
 * would pass ELEMS; all the weight gives ELEMS. */
static unsigned long long boundary(unsigned long long pre, unsigned long long total)
{
    if (pre >= total)
        return ELEMS;
    unsigned long long x = ELEMS * pre / total, r = x % 64;
    x -= r;
    return 2 * r >= 64 && x + 64 <= ELEMS ? x + 64 : x;
}

/* What the plan's allreduce trees send from plan rank u to plan rank v over MPI (servers
 * differ): each tree's share of ELEMS elements once up and once down each of its edges, by
 * blink_plan.h's split rule. */
static void expected_bytes(const struct blink_plan *p, unsigned long long *want)
{
    const struct blink_plan_schedule *s = NULL;
    for (int i = 0; i < p->nschedules; i++)
        if (p->schedules[i].coll == BLINK_PLAN_ALLREDUCE)
            s = &p->schedules[i];
    cr_assert_not_null(s, "the 2 x 4 plan has no allreduce");
    unsigned long long total = 0, before = 0;
    for (int t = 0; t < s->ntrees; t++)
        total += s->trees[t].weight;
    for (int t = 0; t < s->ntrees; t++) {
        unsigned long long lo = boundary(before, total);
        before += s->trees[t].weight;
        unsigned long long bytes = (boundary(before, total) - lo) * 4;
        for (int v = 0; v < p->nranks; v++) {
            int u = s->trees[t].parent[v];
            if (u >= 0 && p->servers[u] != p->servers[v]) {
                want[v * p->nranks + u] += bytes;
                want[u * p->nranks + v] += bytes;
            }
        }
    }
}

/* The bytes dropin's ranks report over MPI for one allreduce of ELEMS floats, per edge between
 * the servers, against what the plan's trees put there. */
static void check_bytes(const char *label, const char *dropin)
{
    const struct blink_plan *p = cluster_2x4_lib()->plans[0];
    cr_assert(p->nranks == 8 && p->nservers == 2 && p->servers);
    /* The test's user rank r is plan rank r: server r / 4, device r % 4, in plan order. */
    for (int r = 0; r < 8; r++)
        cr_assert(p->servers[r] == srv2x4[r] && p->devices[r] == dev2x4[r]);
    unsigned long long want[64] = {0}, sent[64] = {0}, recvd[64] = {0};
    expected_bytes(p, want);
    char n[16];
    snprintf(n, sizeof n, "%d", ELEMS);
    struct job j = {label, dropin, 8, dev2x4,
                    {"-q", "-C", "allreduce", "-d", "float32", "-o", "sum", "-n", n, "-p", "out",
                     NULL}, 1, "INFO", NULL, srv2x4, NULL, 0};
    struct run r;
    run_checked(&j, &r);
    cr_expect(strstr(r.out, "# nccl-client: ranks 8, cases 1, wrong 0, errors 0"), "%s",
              tail(r.out));
    int lines = 0;
    for (const char *at = r.out; (at = strstr(at, "blink INFO rank ")) != NULL; at++) {
        int u, v, su, sv, nr;
        unsigned long long s, g;
        if (sscanf(at, "blink INFO rank %d/%d (server %d): MPI with rank %d (server %d): sent "
                   "%llu bytes, received %llu bytes", &u, &nr, &su, &v, &sv, &s, &g) != 7)
            continue;
        lines++;
        cr_assert(u >= 0 && u < 8 && v >= 0 && v < 8);
        cr_expect_neq(srv2x4[u], srv2x4[v], "rank %d sent to rank %d of its own server over MPI",
                      u, v);
        cr_expect(su == srv2x4[u] && sv == srv2x4[v]);
        sent[u * 8 + v] = s;
        recvd[u * 8 + v] = g;
    }
    cr_expect_gt(lines, 0, "no byte counts at BLINK_DEBUG=INFO:\n%s", tail(r.out));
    unsigned long long all = 0;
    for (int u = 0; u < 8; u++)
        for (int v = 0; v < 8; v++) {
            all += want[u * 8 + v];
            cr_expect_eq(sent[u * 8 + v], want[u * 8 + v], "rank %d to rank %d: sent %llu bytes "
                         "over MPI, the plan puts %llu on that edge", u, v, sent[u * 8 + v],
                         want[u * 8 + v]);
            cr_expect_eq(recvd[v * 8 + u], want[u * 8 + v], "rank %d from rank %d: received "
                         "%llu bytes, the plan puts %llu", v, u, recvd[v * 8 + u],
                         want[u * 8 + v]);
        }
    cr_expect_gt(all, 0, "the plan has no edge between the servers");
    free(r.out);
}

Test(cluster_mpi, bytes_between_servers_are_the_plans, .timeout = 600)
{
    check_bytes("2 x 4 bytes", DROPIN_2X4);
}

/* ------------------------------------------------------------------ the CUDA kernel's path */

Test(cluster_mpi, cuda_kernel_and_proxy_2_servers_x_4, .timeout = 600)
{
    struct job j = {"2 x 4 DGX-1V GPUs, CUDA kernel (shim)", DROPIN_SHIM_2X4, 8, dev2x4,
                    {"-q", "-n", "0,1,7,1021,4099", "-d", "int8,float16,float32", "-o",
                     "sum,max,avg", "-p", "out", NULL}, -1, NULL, SMALL_CHUNKS " " FEW_THREADS,
                    srv2x4, NULL, 0};
    run_sweep(&j);
}

Test(cluster_mpi, cuda_kernel_and_proxy_bytes_are_the_plans, .timeout = 600)
{
    check_bytes("2 x 4 bytes, CUDA kernel (shim)", DROPIN_SHIM_2X4);
}

/* ------------------------------------------------------------------ faults */

/* Rank 5 never joins: the other seven fail their init, naming it, within BLINK_TIMEOUT_S. */
Test(cluster_mpi, a_rank_that_never_joins, .timeout = 600)
{
    struct job j = {"2 x 4, rank 5 absent", DROPIN_2X4, 8, dev2x4, {"-q", "-Q", NULL}, -1, NULL,
                    "BLINK_TIMEOUT_S=5", srv2x4, "absent", 5};
    struct run r;
    char left[2048];
    shm_mark();
    run_job(&j, &r);
    cr_expect(r.status == 1 && r.secs < 60, "%s: exit status %d after %.1f s:\n%s", j.label,
              r.status, r.secs, tail(r.out));
    cr_expect_eq(count_lines(r.out, "rank ", "of 8 ranks (5)"), 7,
                 "not every other rank names rank 5:\n%s", tail(r.out));
    cr_expect(strstr(r.out, "# nccl-client: ranks 8, cases 0, wrong 0, errors 7"), "%s",
              tail(r.out));
    cr_expect_eq(shm_left_since_mark(left, sizeof left), 0, "left in /dev/shm:%s", left);
    free(r.out);
}

/* Rank 6 dies after joining (drop-in dropin, env for every rank): MPI's launcher ends the job;
 * nothing waits for ever, nothing is left in /dev/shm. */
static void rank_6_dies(const char *label, const char *dropin, const char *env)
{
    struct job j = {label, dropin, 8, dev2x4, {"-q", "-Q", NULL}, -1, NULL, env, srv2x4, "exit",
                    6};
    struct run r;
    char left[2048];
    shm_mark();
    run_job(&j, &r);
    cr_expect(r.status > 0 && r.secs < 60, "%s: exit status %d after %.1f s:\n%s", j.label,
              r.status, r.secs, tail(r.out));
    cr_expect(strstr(r.out, "rank 6: NCCL_CLIENT_FAULT=exit"), "%s", tail(r.out));
    cr_expect_eq(shm_left_since_mark(left, sizeof left), 0, "left in /dev/shm:%s", left);
    free(r.out);
}

Test(cluster_mpi, a_rank_that_dies, .timeout = 600)
{
    rank_6_dies("2 x 4, rank 6 exits", DROPIN_2X4, "BLINK_TIMEOUT_S=20");
}

/* Faults on the CUDA kernel's path: the network proxy of rank 5 takes no call. Every rank
 * fails within BLINK_TIMEOUT_S, naming the rank it waited for, rank 5 among them; nothing is
 * left in /dev/shm. */
Test(cluster_mpi, cuda_kernel_a_stalled_proxy, .timeout = 600)
{
    struct job j = {"2 x 4, rank 5's proxy stalls (shim)", DROPIN_SHIM_2X4, 8, dev2x4,
                    {"-q", "-Q", NULL}, -1, NULL,
                    "BLINK_DEBUG_PROXY_STALL=5 BLINK_TIMEOUT_S=5 " FEW_THREADS, srv2x4, NULL, 0};
    struct run r;
    char left[2048];
    shm_mark();
    run_job(&j, &r);
    cr_expect(r.status == 1 && r.secs < 60, "%s: exit status %d after %.1f s:\n%s", j.label,
              r.status, r.secs, tail(r.out));
    /* Each rank names the peer it waited for: rank 5 itself where its wait timed out first, a
     * rank of its own server waiting on one that waits for rank 5 where that one did. */
    int failed = count_lines(r.out, "rank ", "error");
    int named = count_lines(r.out, "rank ", "waiting for rank 5 (") +
                count_lines(r.out, "rank ", "no word from rank 5 (");
    cr_expect(failed >= 7 && named >= 1, "%d ranks failed, %d naming rank 5 as the one waited "
              "for:\n%s", failed, named, tail(r.out));
    cr_expect(strstr(r.out, "BLINK_TIMEOUT_S"), "%s", tail(r.out));
    cr_expect_eq(shm_left_since_mark(left, sizeof left), 0, "left in /dev/shm:%s", left);
    free(r.out);
}

/* A rank that dies after joining, on the CUDA kernel's path: the job ends, nothing waits for
 * ever, nothing is left in /dev/shm (its host-staged segments included). */
Test(cluster_mpi, cuda_kernel_a_rank_that_dies, .timeout = 600)
{
    rank_6_dies("2 x 4, rank 6 exits (shim)", DROPIN_SHIM_2X4, "BLINK_TIMEOUT_S=20 " FEW_THREADS);
}

/* What a rank of the 2 x 4 plan must be told where MPI is not there: which library. */
#ifdef MPI_SONAME
#define NO_MPI_SAYS MPI_SONAME " is not loaded in this process"
#else
#define NO_MPI_SAYS "this runtime was built without MPI"
#endif

/* Rank r of 8 on server a or b, its id a shared-memory one: 0 where init failed as it must. */
static int rank_without_mpi(blinkUniqueId id, int r)
{
    char dev[8];
    snprintf(dev, sizeof dev, "%d", dev2x4[r]);
    setenv("BLINK_SERVER", srv2x4[r] ? "b" : "a", 1);
    setenv("BLINK_DEVICE", dev, 1);
    setenv("BLINK_TIMEOUT_S", "30", 1);
    blinkComm_t c = NULL;
    blinkResult_t res = cluster_2x4_rank(&c, 8, id, r);
    const char *msg = blinkGetLastError(NULL);
    if (res == blinkInvalidUsage && !c && strstr(msg, NO_MPI_SAYS) && strstr(msg, "spans 2"))
        return 0;
    fprintf(stderr, "rank %d: result %d, comm %p: %s\n", r, (int)res, (void *)c, msg);
    return 1;
}

Test(cluster_mpi, without_mpi_every_rank_is_told_which_library, .timeout = 120)
{
    blinkUniqueId id;
    cr_assert_eq(blinkGetUniqueId(&id), blinkSuccess);
    pid_t pid[8];
    for (int r = 0; r < 8; r++) {
        fflush(NULL);
        pid[r] = fork();
        cr_assert_geq(pid[r], 0);
        if (pid[r] == 0)
            _exit(rank_without_mpi(id, r));
    }
    for (int r = 0; r < 8; r++) {
        int status = -1;
        cr_assert_eq(waitpid(pid[r], &status, 0), pid[r]);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank %d: status %#x (its "
                  "message is above)", r, status);
    }
}
