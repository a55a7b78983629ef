/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cuda_hostmem.cu - cuda_hostmem.h.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_hostmem.h"
#include "rt.h"

static blinkResult_t fail(cudaError_t e, const char *what, int line)
{
    (void)cudaGetLastError(); /* a non-sticky error must not surface in the user's next check */
    return bk_error(blinkUnhandledCudaError, "CUDA backend: %s failed: %s (cuda_hostmem.cu:%d)",
                    what, cudaGetErrorString(e), line);
}

static void quiet(cudaError_t e)
{
    if (e != cudaSuccess)
        (void)cudaGetLastError();
}

static void host_name(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s.h", name);
}

blinkResult_t bk_hostmem_map(const char *name, size_t bytes, int create, struct bk_hostmem *hs,
                             unsigned char **dev)
{
    char hn[96];
    host_name(name, hn, sizeof hn);
    int fd = shm_open(hn, create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
    if (fd < 0)
        return bk_error(blinkSystemError, "CUDA backend: shm_open %s: %s", hn, strerror(errno));
    void *m = MAP_FAILED;
    if (!create || ftruncate(fd, (off_t)bytes) == 0)
        m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int er = errno;
    close(fd);
    cudaError_t e = cudaSuccess;
    void *d = NULL;
    if (m != MAP_FAILED &&
        (e = cudaHostRegister(m, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable)) ==
            cudaSuccess &&
        (e = cudaHostGetDevicePointer(&d, m, 0)) != cudaSuccess)
        quiet(cudaHostUnregister(m));
    if (m == MAP_FAILED || e != cudaSuccess) {
        if (m != MAP_FAILED)
            munmap(m, bytes);
        if (create)
            shm_unlink(hn);
        return m == MAP_FAILED ? bk_error(blinkSystemError, "CUDA backend: mapping %s (%zu "
                                          "bytes): %s", hn, bytes, strerror(er))
                               : fail(e, "cudaHostRegister", __LINE__);
    }
    hs->host = m;
    hs->bytes = bytes;
    *dev = (unsigned char *)d;
    return blinkSuccess;
}

void bk_hostmem_unmap(struct bk_hostmem *hs)
{
    if (!hs->host)
        return;
    quiet(cudaHostUnregister(hs->host));
    munmap(hs->host, hs->bytes);
    hs->host = NULL;
}

void bk_hostmem_unlink(const char *name)
{
    char hn[96];
    host_name(name, hn, sizeof hn);
    shm_unlink(hn);
}

blinkResult_t bk_hostmem_mirror(size_t bytes, void **host, unsigned char **dev)
{
    void *d = NULL;
    cudaError_t e = cudaHostAlloc(host, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) {
        *host = NULL;
        return fail(e, "cudaHostAlloc", __LINE__);
    }
    memset(*host, 0, bytes);
    if ((e = cudaHostGetDevicePointer(&d, *host, 0)) != cudaSuccess)
        return fail(e, "cudaHostGetDevicePointer", __LINE__); /* freed with the others */
    *dev = (unsigned char *)d;
    return blinkSuccess;
}

void bk_hostmem_mirror_free(void *host)
{
    if (host)
        quiet(cudaFreeHost(host));
}
