/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_nccl_api.c - libblink-nccl-host.so called in one process through NCCL's API alone (this
 * program includes runtime/nccl/nccl.h and links the drop-in, nothing of the runtime):
 * ncclCommInitAll with a group of calls from one thread, the queries, configs, one-rank
 * communicators, memory and registration, and the errors NCCL programs check for. Also what
 * deploying it takes: NCCL's pnccl names reach its communicators, hand-offs reach the real
 * NCCL (tests/nccl/fake_nccl.c, which exports pnccl names too) and never the drop-in's own,
 * and one server never loads MPI.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT, RTLD_NOLOAD */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

/* The ranks are threads: with no BLINK_NCCL_LIB the host drop-in loads no NCCL. */
static void no_environment(void)
{
    unsetenv("BLINK_NCCL_LIB");
    unsetenv("BLINK_ALGO");
    unsetenv("BLINK_DEVICE");
    unsetenv("BLINK_DEVICE_MAP");
    setenv("BLINK_TIMEOUT_S", "60", 1);
}

TestSuite(nccl_api, .init = no_environment);

Test(nccl_api, init_all_and_a_group_from_one_thread)
{
    const int devs[3] = {0, 2, 3};
    const size_t count = 100003;
    ncclComm_t comms[3];
    float *buf[3];
    cr_assert_eq(ncclCommInitAll(comms, 3, devs), ncclSuccess, "%s", ncclGetLastError(NULL));
    for (int r = 0; r < 3; r++) {
        int n = -1, rank = -1, dev = -1;
        cr_assert_eq(ncclCommCount(comms[r], &n), ncclSuccess);
        cr_assert_eq(ncclCommUserRank(comms[r], &rank), ncclSuccess);
        cr_assert_eq(ncclCommCuDevice(comms[r], &dev), ncclSuccess);
        cr_expect(n == 3 && rank == r && dev == devs[r], "rank %d: n %d rank %d dev %d", r, n,
                  rank, dev);
        cr_assert_eq(ncclMemAlloc((void **)&buf[r], count * sizeof(float)), ncclSuccess);
        cr_expect_eq((uintptr_t)buf[r] % NCCL_WIN_REQUIRED_ALIGNMENT, 0);
        for (size_t i = 0; i < count; i++)
            buf[r][i] = (float)((r + 1) * (int)(i % 7));
    }
    cr_assert_eq(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 3; r++)
        cr_assert_eq(ncclAllReduce(buf[r], buf[r], count, ncclFloat32, ncclSum, comms[r], NULL),
                     ncclSuccess, "%s", ncclGetLastError(comms[r]));
    cr_assert_eq(ncclGroupEnd(), ncclSuccess, "%s", ncclGetLastError(NULL));
    for (int r = 0; r < 3; r++) {
        size_t bad = 0;
        for (size_t i = 0; i < count; i++)
            bad += buf[r][i] != (float)(6 * (int)(i % 7));
        cr_expect_eq(bad, 0, "rank %d: %zu wrong elements", r, bad);
        ncclResult_t async = ncclInternalError;
        cr_expect_eq(ncclCommGetAsyncError(comms[r], &async), ncclSuccess);
        cr_expect_eq(async, ncclSuccess);
        cr_expect_eq(ncclCommFinalize(comms[r]), ncclSuccess);
        cr_expect_eq(ncclCommDestroy(comms[r]), ncclSuccess);
        cr_expect_eq(ncclMemFree(buf[r]), ncclSuccess);
    }
}

/* One rank has no plan and needs none: every collective is a copy. */
Test(nccl_api, one_rank_copies)
{
    ncclComm_t c;
    const int dev = 6;
    double in[5] = {1, 2, 3, 4, 5}, out[5] = {0};
    cr_assert_eq(ncclCommInitAll(&c, 1, &dev), ncclSuccess, "%s", ncclGetLastError(NULL));
    cr_expect_eq(ncclAllReduce(in, out, 5, ncclFloat64, ncclAvg, c, NULL), ncclSuccess);
    cr_expect_arr_eq(in, out, sizeof in);
    memset(out, 0, sizeof out);
    cr_expect_eq(ncclReduceScatter(in, out, 5, ncclFloat64, ncclMax, c, NULL), ncclSuccess);
    cr_expect_arr_eq(in, out, sizeof in);
    cr_expect_eq(ncclBroadcast(in, out, 5, ncclFloat64, 1, c, NULL), ncclInvalidArgument);
    cr_expect(strstr(ncclGetLastError(c), "root 1"), "%s", ncclGetLastError(c));
    ncclCommDestroy(c);
}

Test(nccl_api, version_and_error_strings)
{
    int v = 0;
    cr_assert_eq(ncclGetVersion(&v), ncclSuccess);
    cr_expect_eq(v, NCCL_VERSION_CODE); /* no real NCCL loaded */
    cr_expect_eq(ncclGetVersion(NULL), ncclInvalidArgument);
    cr_expect_str_eq(ncclGetErrorString(ncclSuccess), "no error");
    cr_expect_str_eq(ncclGetErrorString(ncclInvalidUsage), "invalid usage");
    cr_expect_eq(ncclGetUniqueId(NULL), ncclInvalidArgument);
    cr_expect(strstr(ncclGetLastError(NULL), "ncclGetUniqueId"), "%s", ncclGetLastError(NULL));
}

struct init_arg {
    ncclUniqueId id;
    int rank;
    ncclConfig_t *config;
    ncclResult_t res;
    char msg[512];
    ncclComm_t comm;
};

static void *init_rank(void *p)
{
    struct init_arg *a = p;
    a->res = ncclCommInitRankConfig(&a->comm, 2, a->id, a->rank, a->config);
    snprintf(a->msg, sizeof a->msg, "%s", ncclGetLastError(NULL));
    return NULL;
}

/* Two ranks as threads, each with the config given; results in a[2]. */
static void init_two(ncclConfig_t *config, struct init_arg a[2])
{
    pthread_t t[2];
    ncclUniqueId id;
    cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
    for (int r = 0; r < 2; r++) {
        a[r] = (struct init_arg){id, r, config, ncclInternalError, "", NULL};
        cr_assert_eq(pthread_create(&t[r], NULL, init_rank, &a[r]), 0);
    }
    for (int r = 0; r < 2; r++)
        pthread_join(t[r], NULL);
}

Test(nccl_api, blocking_config_runs_the_plan)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;
    config.commName = "blocking";
    struct init_arg a[2];
    init_two(&config, a);
    for (int r = 0; r < 2; r++) {
        cr_expect_eq(a[r].res, ncclSuccess, "rank %d: %s", r, a[r].msg);
        if (a[r].comm)
            ncclCommDestroy(a[r].comm);
    }
}

/* A config not made with NCCL_CONFIG_INITIALIZER is refused, as NCCL refuses it. */
Test(nccl_api, unset_config_is_refused)
{
    ncclConfig_t config;
    memset(&config, 0, sizeof config);
    ncclComm_t c = (ncclComm_t)&config;
    ncclUniqueId id;
    cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
    cr_expect_eq(ncclCommInitRankConfig(&c, 1, id, 0, &config), ncclInvalidArgument);
    cr_expect_null(c);
    cr_expect(strstr(ncclGetLastError(NULL), "NCCL_CONFIG_INITIALIZER"), "%s",
              ncclGetLastError(NULL));
}

/* Non-blocking communicators are NCCL's; with none, init says so on every rank. */
Test(nccl_api, nonblocking_config_needs_nccl)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    struct init_arg a[2];
    init_two(&config, a);
    for (int r = 0; r < 2; r++) {
        cr_expect_eq(a[r].res, ncclInvalidUsage, "rank %d: %d", r, a[r].res);
        cr_expect(strstr(a[r].msg, "config asks for NCCL") && strstr(a[r].msg, "no NCCL"),
                  "rank %d: %s", r, a[r].msg);
        cr_expect_null(a[r].comm);
    }
}

/* Without a real NCCL, registration is blink's: a handle or window the matching Deregister
 * takes once. */
Test(nccl_api, registration_without_nccl_is_blinks)
{
    const int devs[2] = {4, 5};
    ncclComm_t comms[2];
    char buf[64];
    void *handle = NULL;
    ncclWindow_t win = NULL;
    cr_assert_eq(ncclCommInitAll(comms, 2, devs), ncclSuccess, "%s", ncclGetLastError(NULL));
    cr_expect_eq(ncclCommRegister(comms[0], buf, sizeof buf, &handle), ncclSuccess);
    cr_expect_not_null(handle);
    cr_expect_eq(ncclCommDeregister(comms[0], handle), ncclSuccess);
    cr_expect_eq(ncclCommWindowRegister(comms[0], buf, sizeof buf, &win, NCCL_WIN_DEFAULT),
                 ncclSuccess);
    cr_expect_eq(ncclCommWindowDeregister(comms[0], win), ncclSuccess);
    cr_expect_eq(ncclCommDeregister(comms[0], handle), ncclInvalidArgument);
    cr_expect_eq(ncclCommWindowDeregister(comms[0], win), ncclInvalidArgument);
    cr_expect_eq(ncclCommRegister(NULL, buf, sizeof buf, &handle), ncclInvalidArgument);
    /* an op NCCL never made, on a communicator without NCCL */
    cr_expect_eq(ncclRedOpDestroy((ncclRedOp_t)ncclNumOps, comms[0]), ncclInvalidArgument);
    ncclComm_t sub = comms[0];
    cr_expect_eq(ncclCommSplit(comms[0], -5, 0, &sub, NULL), ncclInvalidArgument);
    cr_expect_null(sub);
    for (int r = 0; r < 2; r++)
        cr_expect_eq(ncclCommDestroy(comms[r]), ncclSuccess);
}

Test(nccl_api, null_arguments)
{
    int n;
    cr_expect_eq(ncclCommCount(NULL, &n), ncclInvalidArgument);
    cr_expect_eq(ncclCommDestroy(NULL), ncclInvalidArgument);
    cr_expect_eq(ncclCommAbort(NULL), ncclSuccess);
    cr_expect_eq(ncclAllReduce(&n, &n, 1, ncclInt32, ncclSum, NULL, NULL), ncclInvalidArgument);
    cr_expect_eq(ncclSend(&n, 1, ncclInt32, 0, NULL, NULL), ncclInvalidArgument);
    cr_expect_eq(ncclCommInitAll(NULL, 2, NULL), ncclInvalidArgument);
    cr_expect_eq(ncclGroupEnd(), ncclInvalidUsage); /* no group open */
}

/* NCCL's profiling interface: a tool calls pnccl names, found in the global scope as a tool
 * library finds them, with the communicators the program made. They are the drop-in's. */
#define PNCCL(f) ((__typeof__(&nccl##f))dlsym(RTLD_DEFAULT, "pnccl" #f))

Test(nccl_api, pnccl_names_reach_our_communicators)
{
    __typeof__(&ncclAllReduce) all_reduce = PNCCL(AllReduce);
    __typeof__(&ncclGroupStart) group_start = PNCCL(GroupStart);
    __typeof__(&ncclGroupEnd) group_end = PNCCL(GroupEnd);
    __typeof__(&ncclCommInitAll) init_all = PNCCL(CommInitAll);
    __typeof__(&ncclSend) send = PNCCL(Send);
    cr_assert(all_reduce && group_start && group_end && init_all && send,
              "the drop-in does not export pncclAllReduce, pncclGroupStart, pncclGroupEnd, "
              "pncclCommInitAll and pncclSend");
    const int devs[3] = {0, 2, 3};
    ncclComm_t comms[3];
    int32_t buf[3][1001];
    cr_assert_eq(init_all(comms, 3, devs), ncclSuccess, "%s", ncclGetLastError(NULL));
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 1001; i++)
            buf[r][i] = (r + 1) * i;
    cr_assert_eq(group_start(), ncclSuccess);
    for (int r = 0; r < 3; r++)
        cr_expect_eq(all_reduce(buf[r], buf[r], 1001, ncclInt32, ncclSum, comms[r], NULL),
                     ncclSuccess, "%s", ncclGetLastError(comms[r]));
    cr_assert_eq(group_end(), ncclSuccess, "%s", ncclGetLastError(NULL));
    for (int r = 0; r < 3; r++) {
        int bad = 0;
        for (int i = 0; i < 1001; i++)
            bad += buf[r][i] != 6 * i;
        cr_expect_eq(bad, 0, "rank %d: %d wrong elements", r, bad);
    }
    /* a hand-off through pncclSend is the drop-in's too: here there is no NCCL to take it */
    cr_expect_eq(send(buf[0], 1, ncclInt32, 1, comms[0], NULL), ncclInvalidUsage);
    cr_expect(strstr(ncclGetLastError(comms[0]), "goes to NCCL"), "%s",
              ncclGetLastError(comms[0]));
    for (int r = 0; r < 3; r++)
        cr_expect_eq(ncclCommDestroy(comms[r]), ncclSuccess);
}

#ifdef FAKE_NCCL
static int fake_count(void *fake, const char *name)
{
    int *n = dlsym(fake, name);
    cr_assert_not_null(n, "%s has no %s", FAKE_NCCL, name);
    return __atomic_load_n(n, __ATOMIC_SEQ_CST);
}

/* The real NCCL's functions come from its own library: a drop-in that also exports pnccl
 * names never finds itself there (a hand-off would then call itself forever). */
Test(nccl_api, hand_offs_reach_the_real_nccl_not_our_pnccl)
{
    setenv("BLINK_NCCL_LIB", FAKE_NCCL, 1);
    const int devs[2] = {1, 4};
    ncclComm_t comms[2];
    float x[4] = {0};
    cr_assert_eq(ncclCommInitAll(comms, 2, devs), ncclSuccess, "%s", ncclGetLastError(NULL));
    void *fake = dlopen(FAKE_NCCL, RTLD_LAZY | RTLD_NOLOAD);
    cr_assert_not_null(fake, "the drop-in did not load %s", FAKE_NCCL);
    cr_expect_eq(fake_count(fake, "fake_nccl_inits"), 2);
    cr_expect_eq(ncclSend(x, 4, ncclFloat32, 1, comms[0], NULL), ncclSuccess, "%s",
                 ncclGetLastError(comms[0]));
    cr_expect_eq(ncclRecv(x, 4, ncclFloat32, 0, comms[1], NULL), ncclSuccess, "%s",
                 ncclGetLastError(comms[1]));
    __typeof__(&ncclSend) psend = PNCCL(Send);
    cr_assert_not_null(psend, "the drop-in does not export pncclSend");
    cr_expect_eq(psend(x, 4, ncclFloat32, 1, comms[0], NULL), ncclSuccess, "%s",
                 ncclGetLastError(comms[0]));
    cr_expect_eq(fake_count(fake, "fake_nccl_sends"), 2);
    cr_expect_eq(fake_count(fake, "fake_nccl_recvs"), 1);
    for (int r = 0; r < 2; r++)
        cr_expect_eq(ncclCommDestroy(comms[r]), ncclSuccess);
    cr_expect_eq(fake_count(fake, "fake_nccl_destroys"), 2);
    dlclose(fake);
}
#endif

#ifdef MPI_SONAME
/* This program links the drop-in and not MPI: a single server's whole life (an id, a
 * communicator, a collective) must leave MPI unloaded, so that a machine without it runs the
 * drop-in (glibc skips an LD_PRELOAD library whose libmpi it cannot find). */
Test(nccl_api, one_server_never_loads_mpi)
{
    const int devs[2] = {2, 3};
    ncclComm_t comms[2];
    ncclUniqueId id;
    double v[2][3] = {{1, 2, 3}, {4, 5, 6}};
    cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
    cr_assert_eq(ncclCommInitAll(comms, 2, devs), ncclSuccess, "%s", ncclGetLastError(NULL));
    cr_assert_eq(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 2; r++)
        cr_expect_eq(ncclAllReduce(v[r], v[r], 3, ncclFloat64, ncclMax, comms[r], NULL),
                     ncclSuccess);
    cr_assert_eq(ncclGroupEnd(), ncclSuccess, "%s", ncclGetLastError(NULL));
    cr_expect(v[0][2] == 6 && v[1][0] == 4, "max: %g %g", v[0][2], v[1][0]);
    for (int r = 0; r < 2; r++)
        ncclCommDestroy(comms[r]);
    void *mpi = dlopen(MPI_SONAME, RTLD_LAZY | RTLD_NOLOAD);
    cr_expect_null(mpi, "%s is loaded in a program that never asked for it", MPI_SONAME);
    if (mpi)
        dlclose(mpi);
}
#endif
