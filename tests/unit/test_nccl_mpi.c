/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_nccl_mpi.c - libblink-nccl-host.so as a drop-in NCCL for an unmodified NCCL program:
 * tests/nccl/nccl_client (NCCL's API and MPI only) runs under mpirun with the library in
 * LD_PRELOAD, one MPMD app context per rank so that each rank plays a chosen topology device
 * (BLINK_DEVICE). Each run must exit 0 with the client's summary saying the right rank count,
 * no wrong result and no error, within a wall-clock limit (past it, mpirun and its ranks are
 * killed), and leave nothing in /dev/shm. Calls blinkc does not plan must fail with
 * ncclInvalidUsage where there is no NCCL, saying so at BLINK_DEBUG=INFO.
 * Skipped, not failed, where Open MPI or the client is missing. mpi_job.c runs the jobs.
 */
#define _DEFAULT_SOURCE /* realpath */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_job.h"

/* The build defines these; the defaults are relative to the build directory. */
#ifndef DROPIN_DGX1V
#define DROPIN_DGX1V "runtime/libblink-nccl-host.so"
#endif
#ifndef DROPIN_DGX1P
#define DROPIN_DGX1P "tests/nccl/libblink-nccl-host-dgx1p.so"
#endif
#ifndef DROPIN_DGX2
#define DROPIN_DGX2 "tests/nccl/libblink-nccl-host-dgx2.so"
#endif
/* The DGX-1V plan on the CUDA backend's kernel, run on the CPU (tests/shim). */
#ifndef DROPIN_SHIM_DGX1V
#define DROPIN_SHIM_DGX1V "tests/nccl/libblink-nccl-shim-dgx1v.so"
#endif

/* ------------------------------------------------------------------ the matrix */

static const int d023[] = {0, 2, 3}, d302[] = {3, 0, 2}, d0123[] = {0, 1, 2, 3},
                 d4567[] = {4, 5, 6, 7}, d0125[] = {0, 1, 2, 5},
                 d8[] = {0, 1, 2, 3, 4, 5, 6, 7},
                 d16[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/* Case counts per type and count, with R roots, O ops and both places: 2 (R + R O + O + 1 + O)
 * (broadcast, reduce, allreduce, allgather, reduce-scatter). */

/* Everything: the default counts, 1000003 for float32, every root, in and out of place. */
Test(nccl_mpi, dgx1v_3_gpus_everything, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 0,2,3", DROPIN_DGX1V, 3, d023, {"-q", NULL}, 5278, NULL, NULL,
                    NULL, NULL, 0};
    run_sweep(&j);
}

/* Ranks 0-2 on GPUs 3, 0, 2: the plan's rank order is not the communicator's. */
Test(nccl_mpi, dgx1v_3_gpus_shuffled, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 3,0,2", DROPIN_DGX1V, 3, d302, {"-q", "-Q", "-s", "7", NULL},
                    2900, NULL, NULL, NULL, NULL, 0};
    run_sweep(&j);
}

Test(nccl_mpi, dgx1v_4_gpus_ring, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 0-3", DROPIN_DGX1V, 4, d0123,
                    {"-q", "-n", "0,1,2,3,7,31,1021,4096,65537", NULL}, 6300, NULL, NULL, NULL,
                    NULL, 0};
    run_sweep(&j);
}

Test(nccl_mpi, dgx1v_4_gpus_other_half, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 4-7", DROPIN_DGX1V, 4, d4567, {"-q", "-Q", "-s", "3", NULL},
                    3500, NULL, NULL, NULL, NULL, 0};
    run_sweep(&j);
}

/* No NVLink ring: 0-1-2 a triangle and 5 hanging off 1. */
Test(nccl_mpi, dgx1v_4_gpus_irregular, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 0,1,2,5", DROPIN_DGX1V, 4, d0125, {"-q", "-Q", NULL}, 3500,
                    NULL, NULL, NULL, NULL, 0};
    run_sweep(&j);
}

Test(nccl_mpi, dgx1v_8_gpus, .timeout = 600)
{
    struct job j = {"DGX-1V all GPUs", DROPIN_DGX1V, 8, d8, {"-q", "-Q", NULL}, 5900, NULL, NULL,
                    NULL, NULL, 0};
    run_sweep(&j);
}

Test(nccl_mpi, dgx1p_8_gpus, .timeout = 600)
{
    struct job j = {"DGX-1P all GPUs", DROPIN_DGX1P, 8, d8, {"-q", "-Q", "-s", "5", NULL},
                    5900, NULL, NULL, NULL, NULL, 0};
    run_sweep(&j);
}

/* 16 processes on however few cores: fewer types. */
Test(nccl_mpi, dgx2_16_gpus, .timeout = 600)
{
    struct job j = {"DGX-2 all GPUs", DROPIN_DGX2, 16, d16,
                    {"-q", "-Q", "-d", "int8,uint64,float16,float32,bfloat16", NULL}, 5350,
                    NULL, NULL, NULL, NULL, 0};
    run_sweep(&j);
}

/* ncclCommSplit by parity, then allreduce on each half. */
Test(nccl_mpi, dgx1v_split, .timeout = 600)
{
    struct job j = {"DGX-1V split", DROPIN_DGX1V, 8, d8, {"-q", "--split", "-C", "none", NULL},
                    10, NULL, NULL, NULL, NULL, 0};
    run_sweep(&j);
}

/* Init returns on every rank although rank 0, once back, calls no MPI until all are back, as
 * it does inside the real NCCL's init (seen hanging on a GPU before the rendezvous closed ahead
 * of it): the rendezvous's last messages, over MPI's eager size at 8 ranks, must have left. */
Test(nccl_mpi, init_returns_everywhere_before_root_calls_mpi_again, .timeout = 600)
{
    char dir[] = "/tmp/blink-marks-XXXXXX", env[64];
    cr_assert_not_null(mkdtemp(dir), "mkdtemp");
    snprintf(env, sizeof env, "NCCL_CLIENT_MARKS=%s", dir);
    /* Without single-copy, a message over the eager size needs its sender's progress. */
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    struct job j = {"DGX-1V mute root", DROPIN_DGX1V, 8, d8,
                    {"-q", "-C", "allreduce", "-d", "float32", "-o", "sum", "-n", "1", NULL}, -1,
                    NULL, env, NULL, "mute", 0};
    run_sweep(&j);
    for (int r = 0; r < 8; r++) {
        char path[96];
        snprintf(path, sizeof path, "%s/joined.%d", dir, r);
        cr_expect_eq(remove(path), 0, "rank %d left no mark in %s", r, dir);
    }
    cr_expect_eq(rmdir(dir), 0, "rmdir %s", dir);
}

/* A call that goes to NCCL, with none loaded, fails with ncclInvalidUsage on every rank; rank
 * 0 says so once at INFO, with `says` in the line; every rank's error message has `error`. */
static void expect_invalid_usage(const char *what, const char *env, const char *says,
                                 const char *error)
{
    struct job j = {what, DROPIN_DGX1V, 4, d0123, {"-q", "-X", what, "--expect", "5", NULL}, -1,
                    "INFO", env, NULL, NULL, 0};
    struct run r;
    char result[64];
    run_checked(&j, &r);
    snprintf(result, sizeof result, ": %s: result 5 (", what);
    cr_expect_eq(count_lines(r.out, "rank ", result), 4, "%s: not every rank got 5:\n%s", what,
                 tail(r.out));
    cr_expect_eq(count_lines(r.out, "rank ", error), 4, "%s: not every rank says '%s':\n%s",
                 what, error, tail(r.out));
    cr_expect_geq(count_log_lines(r.out, NULL, says), 1, "%s: no line with '%s':\n%s", what,
                  says, tail(r.out));
    free(r.out);
}

Test(nccl_mpi, p2p_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("p2p", NULL, "point-to-point", "goes to NCCL");
}

Test(nccl_mpi, fp8_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("fp8", NULL, "float8e4m3", "goes to NCCL");
}

Test(nccl_mpi, alltoall_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("alltoall", NULL, "all-to-all", "goes to NCCL");
}

Test(nccl_mpi, premulsum_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("premulsum", NULL, "reduction ops", "goes to NCCL");
}

/* BLINK_ALGO=nccl forces a planned collective to NCCL too. */
Test(nccl_mpi, algo_nccl_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("allreduce", "BLINK_ALGO=nccl", "BLINK_ALGO=nccl", "goes to NCCL");
}

/* The drop-in named as the real NCCL is refused, not called in a loop. */
Test(nccl_mpi, dropin_as_its_own_nccl_is_refused, .timeout = 600)
{
    char env[PATH_MAX + 32], path[PATH_MAX];
    cr_assert(realpath(DROPIN_DGX1V, path) != NULL);
    snprintf(env, sizeof env, "BLINK_NCCL_LIB=%s", path);
    expect_invalid_usage("p2p", env, "point-to-point", "libblink-nccl itself");
}

/* One rank: no plan and no NCCL needed, every collective a copy. */
Test(nccl_mpi, one_rank, .timeout = 600)
{
    static const int d5[] = {5};
    struct job j = {"DGX-1V GPU 5 alone", DROPIN_DGX1V, 1, d5, {"-q", "-Q", NULL}, -1, NULL, NULL,
                    NULL, NULL, 0};
    run_sweep(&j);
}

/* Buffers from ncclMemAlloc registered with ncclCommRegister: parents write their children's
 * outputs (an INFO line for each region a rank maps; every rank is some call's child), and every
 * result is still right. */
Test(nccl_mpi, dgx1v_4_gpus_registered, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 0-3, registered", DROPIN_DGX1V, 4, d0123,
                    {"-q", "-Q", "--register", "-d", "float32,int8", NULL}, 700, "INFO",
                    "BLINK_DEBUG_SUBSYS=COLL", NULL, NULL, 0};
    struct run r;
    run_checked(&j, &r);
    cr_expect(strstr(r.out, "# nccl-client: ranks 4, cases 700, wrong 0, errors 0"), "%s",
              tail(r.out));
    cr_expect_geq(count_log_lines(r.out, "INFO", "registered output directly"), 4, "%s",
                  tail(r.out));
    free(r.out);
}

/* The most regions one rank opened of another's ("rank P: writes rank C's registered output
 * directly" lines), and how many pairs opened any. */
static int most_regions_of_a_peer(const char *out, int *pairs)
{
    int n[4][4] = {{0}}, most = 0;
    *pairs = 0;
    for (const char *at = out; (at = strstr(at, "blink INFO rank ")); at++) {
        int p, c;
        char rest[64];
        if (sscanf(at, "blink INFO rank %d: writes rank %d's %63[^\n]", &p, &c, rest) == 3 &&
            strncmp(rest, "registered output directly", 26) == 0 && p >= 0 && p < 4 &&
            c >= 0 && c < 4) {
            *pairs += n[p][c]++ == 0;
            most = n[p][c] > most ? n[p][c] : most;
        }
    }
    return most;
}

/* The same on the CUDA kernel (kernel_reg.h), with new buffers for every group of cases: a
 * parent's kernel asks its host to open a child's region at the first call into it and writes
 * into it from the next, and with more regions of a peer than stay open (4) the oldest close.
 * Every result right, every tree edge taken directly at some time, no warning (a request that
 * comes after its region was freed fails to open quietly: INFO). */
Test(nccl_mpi, cuda_kernel_registered, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 0-3, registered, CUDA kernel (shim)", DROPIN_SHIM_DGX1V, 4,
                    d0123, {"-q", "-Q", "--register", "--fresh", "-d", "float32,int8", NULL},
                    700, "INFO", "BLINK_DEBUG_SUBSYS=COLL BK_SHIM_THREADS=4", NULL, NULL, 0};
    struct run r;
    run_checked(&j, &r);
    cr_expect(strstr(r.out, "# nccl-client: ranks 4, cases 700, wrong 0, errors 0"), "%s",
              tail(r.out));
    int pairs = 0, most = most_regions_of_a_peer(r.out, &pairs);
    cr_expect_geq(pairs, 4, "%d parent-child pairs wrote directly:\n%s", pairs, tail(r.out));
    cr_expect_gt(most, 4, "at most %d regions of one peer opened: none was closed for another",
                 most);
    cr_expect_eq(count_log_lines(r.out, "WARN", "registered output"), 0, "%s", tail(r.out));
    free(r.out);
}

/* Split 3 ranks by parity: a pair with a plan and a rank alone. */
Test(nccl_mpi, dgx1v_split_odd, .timeout = 600)
{
    struct job j = {"DGX-1V split of 0,2,3", DROPIN_DGX1V, 3, d023,
                    {"-q", "--split", "-C", "none", NULL}, 10, NULL, NULL, NULL, NULL, 0};
    run_sweep(&j);
}

#ifdef REAL_NCCL
/* NVIDIA's NCCL loaded, its init failing (no GPU here): a warning, and the plan still runs. */
Test(nccl_mpi, real_nccl_that_cannot_start, .timeout = 600)
{
    struct job j = {"DGX-1V 0-3 with NCCL", DROPIN_DGX1V, 4, d0123,
                    {"-q", "-Q", "-d", "float32,int8", NULL}, 700, "WARN",
                    "BLINK_NCCL_LIB=" REAL_NCCL, NULL, NULL, 0};
    struct run r;
    run_checked(&j, &r);
    cr_expect(strstr(r.out, "# nccl-client: ranks 4, cases 700, wrong 0, errors 0"), "%s",
              tail(r.out));
    cr_expect_eq(count_log_lines(r.out, "WARN", "NCCL's init failed"), 4, "%s", tail(r.out));
    free(r.out);
}
#endif
