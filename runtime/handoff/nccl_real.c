/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_real.c - finding and loading the real NCCL (nccl_real.h says which and why this way).
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_real.h"

static struct bk_real_nccl real;
static const struct bk_real_nccl *loaded;
static char why[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The functions NCCL has had since 2.14 (ncclCommInitRankConfig): without one, no NCCL. */
#define REQUIRED(f) {#f, (void **)&real.f, 1}
/* Newer functions: NULL where this NCCL is older; calling them then says so. */
#define OPTIONAL(f) {#f, (void **)&real.f, 0}

static const struct sym {
    const char *name;
    void **slot;
    int required;
} syms[] = {
    REQUIRED(GetVersion), REQUIRED(GetUniqueId), REQUIRED(GetErrorString),
    OPTIONAL(GetLastError), REQUIRED(CommInitRankConfig), OPTIONAL(CommFinalize),
    REQUIRED(CommDestroy), REQUIRED(CommAbort), OPTIONAL(CommRevoke),
    REQUIRED(CommGetAsyncError), OPTIONAL(CommRegister), OPTIONAL(CommDeregister),
    OPTIONAL(CommWindowRegister), OPTIONAL(CommWindowDeregister), OPTIONAL(MemAlloc),
    OPTIONAL(MemFree), REQUIRED(RedOpCreatePreMulSum), REQUIRED(RedOpDestroy), REQUIRED(Reduce),
    REQUIRED(Broadcast), REQUIRED(AllReduce), REQUIRED(ReduceScatter), REQUIRED(AllGather),
    OPTIONAL(AlltoAll), OPTIONAL(Gather), OPTIONAL(Scatter), REQUIRED(Send), REQUIRED(Recv),
    REQUIRED(GroupStart), REQUIRED(GroupEnd), OPTIONAL(GroupSimulateEnd),
};

/* Whether fn lives in the same shared object as this code (BLINK_NCCL_LIB naming the
 * drop-in itself would otherwise make every hand-off call itself). */
static int is_ours(void *fn)
{
    Dl_info a, b;
    return dladdr(fn, &a) && dladdr((void *)&bk_real_nccl, &b) && a.dli_fbase == b.dli_fbase;
}

static void load(void)
{
    const char *env = getenv("BLINK_NCCL_LIB");
#ifdef BLINK_BACKEND_CUDA
    const char *path = env && *env ? env : "libnccl.so.2";
#else
    const char *path = env && *env ? env : NULL;
    if (!path) {
        snprintf(why, sizeof why, "the host backend loads NCCL only where BLINK_NCCL_LIB names "
                 "it");
        return;
    }
#endif
    if (!strcmp(path, "none")) {
        snprintf(why, sizeof why, "BLINK_NCCL_LIB=none");
        return;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "cannot load %s: %s%s", path, e ? e : "?",
                 env && *env ? "" : " (set BLINK_NCCL_LIB to its path)");
        return;
    }
    char sym[64];
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        snprintf(sym, sizeof sym, "nccl%s", syms[i].name);
        *syms[i].slot = dlsym(h, sym);
        if (!*syms[i].slot && syms[i].required) {
            snprintf(why, sizeof why, "%s has no %s (NCCL 2.14 or later is needed)", path, sym);
            dlclose(h);
            return;
        }
    }
    if (is_ours((void *)real.GetVersion)) {
        snprintf(why, sizeof why, "%s is libblink-nccl itself, not NCCL", path);
        dlclose(h); /* our own object: the handle only adds a reference */
        return;
    }
    if (real.GetVersion(&real.version) != ncclSuccess)
        real.version = 0;
    snprintf(real.path, sizeof real.path, "%s", path);
    loaded = &real;
}

const struct bk_real_nccl *bk_real_nccl(void)
{
    pthread_once(&once, load);
    return loaded;
}

const char *bk_real_nccl_why(void)
{
    pthread_once(&once, load);
    return loaded ? "" : why;
}
