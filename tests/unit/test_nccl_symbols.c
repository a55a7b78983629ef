/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_nccl_symbols.c - the drop-ins export what NCCL programs call.
 *
 * CALLED lists the nccl* functions that PyTorch and nccl-tests call, read from their sources:
 *   PyTorch 2.x: torch/csrc/cuda/nccl.cpp (ncclGetVersion, ncclGetUniqueId, ncclCommInitAll,
 *     ncclCommInitRank, ncclCommDestroy, groups, the five collectives, ncclSend/ncclRecv,
 *     ncclCommCount, ncclCommUserRank, ncclGetErrorString) and
 *     torch/csrc/distributed/c10d/NCCLUtils.cpp, ProcessGroupNCCL.cpp, NCCLUtils.hpp
 *     (ncclCommInitRankConfig, ncclCommInitRankScalable, ncclCommSplit, ncclCommShrink,
 *     ncclCommAbort, ncclCommFinalize, ncclCommGetAsyncError, ncclGetLastError,
 *     ncclCommRegister/Deregister, ncclCommWindowRegister/Deregister, ncclMemAlloc/Free,
 *     ncclRedOpCreatePreMulSum, ncclRedOpDestroy, ncclAlltoAll);
 *   nccl-tests: src/common.cu and src/*.cu (ncclCommCuDevice, ncclBcast, ncclGather,
 *     ncclScatter, ncclGroupSimulateEnd, and the above).
 * Each must resolve (dlsym) in libblink-nccl-host.so and, where nvcc built it, libblink-nccl.so.
 * Where NVIDIA's libnccl.so is installed, every nccl* function it exports must be in ours too,
 * except its device-API helpers (nccl_device.h: DEVICE_API), which serve CUDA kernels that
 * use NCCL's device communicators, a thing the drop-in does not make.
 * Every nccl* function is also exported as pnccl* (NCCL's profiling interface), the same code.
 * Deploying: no drop-in needs libmpi (glibc would skip it in LD_PRELOAD where Open MPI is not
 * installed), a cluster one included, and each names itself (SONAME), never libnccl.so.2.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#ifndef DROPIN_HOST
#define DROPIN_HOST "runtime/libblink-nccl-host.so"
#endif
#ifndef DROPIN_CUDA
#define DROPIN_CUDA ""
#endif
#ifndef REAL_NCCL
#define REAL_NCCL ""
#endif
#ifndef DROPIN_CLUSTER
#define DROPIN_CLUSTER "tests/nccl/libblink-nccl-host-2x4.so"
#endif

static const char *const CALLED[] = {
    "ncclGetVersion", "ncclGetUniqueId", "ncclGetErrorString", "ncclGetLastError",
    "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitRankScalable", "ncclCommInitAll",
    "ncclCommSplit", "ncclCommShrink", "ncclCommFinalize", "ncclCommDestroy", "ncclCommAbort",
    "ncclCommGetAsyncError", "ncclCommCount", "ncclCommCuDevice", "ncclCommUserRank",
    "ncclCommRegister", "ncclCommDeregister", "ncclCommWindowRegister",
    "ncclCommWindowDeregister", "ncclMemAlloc", "ncclMemFree", "ncclRedOpCreatePreMulSum",
    "ncclRedOpDestroy", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllReduce",
    "ncclAllGather", "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter",
    "ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd", "ncclGroupSimulateEnd"};

static const char *const DEVICE_API[] = {
    "ncclDevCommCreate", "ncclDevCommDestroy", "ncclGinBarrierCreateRequirement",
    "ncclLLA2ACalcSlots", "ncclLLA2ACreateRequirement", "ncclLsaBarrierCreateRequirement",
    "ncclTeamLsa", "ncclTeamRail", "ncclTeamRankToLsa", "ncclTeamRankToWorld", "ncclTeamWorld",
    "ncclResetDebugInitInternal"};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void expect_called(const char *path)
{
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    cr_assert_not_null(h, "dlopen %s: %s", path, dlerror());
    for (size_t i = 0; i < N(CALLED); i++)
        cr_expect_not_null(dlsym(h, CALLED[i]), "%s does not export %s", path, CALLED[i]);
    dlclose(h);
}

/* The names `nm -D --defined-only` lists for path, into names[cap]; returns how many. */
static int exported(const char *path, char names[][64], int cap)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "cannot run nm");
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, p) && n < cap) {
        char addr[64], type[8], name[256];
        if (sscanf(line, "%63s %7s %255s", addr, type, name) == 3)
            snprintf(names[n++], 64, "%s", name);
    }
    cr_assert_eq(pclose(p), 0, "nm -D %s failed (binutils installed?)", path);
    return n;
}

static int listed(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i]))
            return 1;
    return 0;
}

Test(nccl_symbols, host_dropin_exports_what_pytorch_and_nccl_tests_call)
{
    expect_called(DROPIN_HOST);
}

Test(nccl_symbols, cuda_dropin_exports_what_pytorch_and_nccl_tests_call)
{
    if (!DROPIN_CUDA[0])
        cr_skip_test("no nvcc: libblink-nccl.so (CUDA) was not built");
    expect_called(DROPIN_CUDA);
}

/* Only NCCL's names and the generated source's three leave the library: the runtime's own
 * symbols stay hidden, so they can never clash with a program's. */
Test(nccl_symbols, exports_nothing_but_nccl_names)
{
    static char names[4096][64];
    int n = exported(DROPIN_HOST, names, 4096);
    const char *const generated[] = {"blinkCommInitAll", "blinkCommInitRank", "blinkPlanLibrary"};
    int nccl = 0;
    for (int i = 0; i < n; i++) {
        if (!strncmp(names[i], "nccl", 4)) {
            nccl++;
            continue;
        }
        if (!strncmp(names[i], "pnccl", 5))
            continue;
        /* the toolchain's own (ASan builds add its interceptors' helpers) */
        if (names[i][0] == '_' || listed(names[i], generated, N(generated)))
            continue;
        cr_expect_fail("%s exports %s", DROPIN_HOST, names[i]);
    }
    cr_expect_geq(nccl, (int)N(CALLED));
}

Test(nccl_symbols, every_real_nccl_function_but_the_device_api_is_ours_too)
{
    if (!REAL_NCCL[0])
        cr_skip_test("NVIDIA's libnccl.so is not installed beside nvcc: nothing to compare");
    static char real[4096][64], ours[4096][64];
    int nr = exported(REAL_NCCL, real, 4096);
    int no = exported(DROPIN_CUDA[0] ? DROPIN_CUDA : DROPIN_HOST, ours, 4096);
    int compared = 0;
    for (int i = 0; i < nr; i++) {
        if (strncmp(real[i], "nccl", 4) || listed(real[i], DEVICE_API, N(DEVICE_API)))
            continue;
        int found = 0;
        for (int k = 0; k < no && !found; k++)
            found = !strcmp(real[i], ours[k]);
        cr_expect(found, "NVIDIA's %s exports %s; the drop-in does not", REAL_NCCL, real[i]);
        compared++;
    }
    cr_expect_geq(compared, 30, "only %d nccl* functions in %s", compared, REAL_NCCL);
    /* its profiling names too (pnccl*), but for the device API's */
    int profiled = 0;
    for (int i = 0; i < nr; i++) {
        if (strncmp(real[i], "pnccl", 5) || listed(real[i] + 1, DEVICE_API, N(DEVICE_API)))
            continue;
        int found = 0;
        for (int k = 0; k < no && !found; k++)
            found = !strcmp(real[i], ours[k]);
        cr_expect(found, "NVIDIA's %s exports %s; the drop-in does not", REAL_NCCL, real[i]);
        profiled++;
    }
    cr_expect_geq(profiled, 30, "only %d pnccl* functions in %s", profiled, REAL_NCCL);
    /* and everything PyTorch and nccl-tests call is in NVIDIA's too, so the list is honest */
    for (size_t i = 0; i < N(CALLED); i++) {
        int found = 0;
        for (int k = 0; k < nr && !found; k++)
            found = !strcmp(CALLED[i], real[k]);
        cr_expect(found, "%s is not in %s", CALLED[i], REAL_NCCL);
    }
}

/* Every nccl* function the drop-in exports is exported as pnccl* too, and is the same function,
 * so a tool that calls pncclAllReduce (NCCL's profiling interface) reaches our communicator. */
static void expect_pnccl_twins(const char *path)
{
    static char names[4096][64];
    int n = exported(path, names, 4096), twins = 0;
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    cr_assert_not_null(h, "dlopen %s: %s", path, dlerror());
    for (int i = 0; i < n; i++) {
        if (strncmp(names[i], "nccl", 4))
            continue;
        char p[72];
        snprintf(p, sizeof p, "p%.63s", names[i]);
        void *f = dlsym(h, names[i]), *pf = dlsym(h, p);
        cr_expect_not_null(pf, "%s exports %s but not %s", path, names[i], p);
        cr_expect(pf == NULL || pf == f, "%s: %s is not %s", path, p, names[i]);
        twins += pf != NULL && pf == f;
    }
    cr_expect_geq(twins, (int)N(CALLED), "%s: %d pnccl twins", path, twins);
    dlclose(h);
}

Test(nccl_symbols, every_nccl_function_is_also_its_pnccl_name)
{
    expect_pnccl_twins(DROPIN_HOST);
    if (DROPIN_CUDA[0])
        expect_pnccl_twins(DROPIN_CUDA);
}

/* `objdump -p path`: its NEEDED libraries, one per line, into needed; its SONAME into soname
 * ("" where it has none). */
static void dynamic_section(const char *path, char *needed, size_t nlen, char *soname,
                            size_t slen)
{
    char cmd[512], line[512];
    snprintf(cmd, sizeof cmd, "objdump -p '%s'", path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "cannot run objdump");
    needed[0] = soname[0] = '\0';
    while (fgets(line, sizeof line, p)) {
        char key[64], value[256];
        if (sscanf(line, " %63s %255s", key, value) != 2)
            continue;
        if (!strcmp(key, "NEEDED"))
            snprintf(needed + strlen(needed), nlen - strlen(needed), "%s\n", value);
        else if (!strcmp(key, "SONAME"))
            snprintf(soname, slen, "%s", value);
    }
    cr_assert_eq(pclose(p), 0, "objdump -p %s failed (binutils installed?)", path);
}

static void expect_deployable(const char *path, const char *soname_wanted)
{
    char needed[2048], soname[256];
    dynamic_section(path, needed, sizeof needed, soname, sizeof soname);
    cr_expect(strstr(needed, "libc.so"), "%s: no NEEDED libc in objdump's answer:\n%s", path,
              needed);
    cr_expect_null(strstr(needed, "libmpi"), "%s needs MPI to load:\n%s", path, needed);
    cr_expect_str_eq(soname, soname_wanted, "%s: SONAME [%s]", path, soname);
}

Test(nccl_symbols, no_dropin_needs_mpi_and_each_names_itself)
{
    expect_deployable(DROPIN_HOST, "libblink-nccl-host.so");
    /* a cluster plan's drop-in too: it uses the MPI the program loaded */
    expect_deployable(DROPIN_CLUSTER, "libblink-nccl-host.so");
    if (DROPIN_CUDA[0])
        expect_deployable(DROPIN_CUDA, "libblink-nccl.so");
}
