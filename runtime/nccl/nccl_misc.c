/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_misc.c - libblink-nccl's version, errors, memory and registration.
 *
 * The version is the real NCCL's where one is loaded (programs gate features on it), else the
 * NCCL API version nccl.h declares. Memory and registration are blink's (blinkMemAlloc,
 * blinkCommRegister: a registered output is written by its parents) where no real NCCL takes
 * them: its allocator, and its registration where its communicator exists.
 */
#include <stdlib.h>

#include "shim.h"

SHIM_API(ncclGetVersion);
ncclResult_t ncclGetVersion(int *version)
{
    if (!version)
        return shim_result(bk_error(blinkInvalidArgument, "ncclGetVersion: version is NULL"));
    const struct bk_real_nccl *real = bk_real_nccl();
    *version = real && real->version ? real->version : NCCL_VERSION_CODE;
    return ncclSuccess;
}

SHIM_API(ncclGetErrorString);
const char *ncclGetErrorString(ncclResult_t result)
{
    return blinkGetErrorString((blinkResult_t)result);
}

SHIM_API(ncclGetLastError);
const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return bk_last_error();
}

SHIM_API(ncclResetDebugInit);
void ncclResetDebugInit(void)
{
}

SHIM_API(ncclMemAlloc);
ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    if (!ptr)
        return shim_result(bk_error(blinkInvalidArgument, "ncclMemAlloc: ptr is NULL"));
#ifdef BLINK_BACKEND_CUDA
    const struct bk_real_nccl *real = bk_real_nccl();
    if (real && real->MemAlloc)
        return real->MemAlloc(ptr, size);
#endif
    /* Memory the other ranks' processes can map (blinkMemAlloc): on CUDA cudaMalloc with its
     * IPC handle; on the host backend, where device memory is host memory, a memory file,
     * page-aligned as NCCL's windows want it. */
    return shim_result(blinkMemAlloc(ptr, size));
}

SHIM_API(ncclMemFree);
ncclResult_t ncclMemFree(void *ptr)
{
#ifdef BLINK_BACKEND_CUDA
    const struct bk_real_nccl *real = bk_real_nccl();
    if (real && real->MemFree)
        return real->MemFree(ptr);
#endif
    return shim_result(blinkMemFree(ptr));
}

SHIM_API(ncclCommRegister);
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    if (!comm || !handle)
        return shim_result(bk_error(blinkInvalidArgument, "ncclCommRegister: %s is NULL",
                                    comm ? "handle" : "comm"));
    ncclComm_t real = shim_real_comm(comm);
    if (real && bk_real_nccl()->CommRegister)
        return bk_real_nccl()->CommRegister(real, buff, size, handle);
    return shim_result(blinkCommRegister(comm->bk, buff, size, handle));
}

SHIM_API(ncclCommDeregister);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    if (!comm)
        return shim_result(bk_error(blinkInvalidArgument, "ncclCommDeregister: comm is NULL"));
    ncclComm_t real = shim_real_comm(comm);
    if (real && bk_real_nccl()->CommDeregister)
        return bk_real_nccl()->CommDeregister(real, handle);
    return shim_result(blinkCommDeregister(comm->bk, handle));
}

SHIM_API(ncclCommWindowRegister);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                    int winFlags)
{
    if (!comm || !win)
        return shim_result(bk_error(blinkInvalidArgument, "ncclCommWindowRegister: %s is NULL",
                                    comm ? "win" : "comm"));
    ncclComm_t real = shim_real_comm(comm);
    if (real && bk_real_nccl()->CommWindowRegister)
        return bk_real_nccl()->CommWindowRegister(real, buff, size, win, winFlags);
    /* A window is registered memory to the plan (blinkCommRegister). */
    void *handle = NULL;
    ncclResult_t r = shim_result(blinkCommRegister(comm->bk, buff, size, &handle));
    *win = (ncclWindow_t)handle;
    return r;
}

SHIM_API(ncclCommWindowDeregister);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    if (!comm)
        return shim_result(bk_error(blinkInvalidArgument, "ncclCommWindowDeregister: comm is "
                                    "NULL"));
    ncclComm_t real = shim_real_comm(comm);
    if (real && bk_real_nccl()->CommWindowDeregister)
        return bk_real_nccl()->CommWindowDeregister(real, win);
    return shim_result(blinkCommDeregister(comm->bk, (void *)win));
}
