/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cuda_hostmem.h - host memory the CUDA kernel reaches over PCIe: the host segments of
 * host-staged edges (POSIX shared memory NAME.h that every rank of a server maps and registers
 * with cudaHostRegister, as NCCL's SHM transport does) and the mirrors of peers on other
 * servers (cudaHostAlloc'ed, this process's alone; proxy.h). Host side of the CUDA backend.
 */
#ifndef BK_CUDA_HOSTMEM_H
#define BK_CUDA_HOSTMEM_H

#include <stddef.h>

#include "blink.h"

/* A region mapped and registered here. */
struct bk_hostmem {
    void *host;
    size_t bytes;
};

/* Map the host segment NAME.h of `bytes` (create: make it, zeroed) and register it: *dev is
 * the address the kernel uses. A failure leaves nothing mapped, and nothing named if it made
 * it. */
blinkResult_t bk_hostmem_map(const char *name, size_t bytes, int create, struct bk_hostmem *hs,
                             unsigned char **dev);
/* Unregister and unmap (nothing where hs->host is NULL). */
void bk_hostmem_unmap(struct bk_hostmem *hs);
/* Remove the name NAME.h (none where the plan has no host-staged edges). */
void bk_hostmem_unlink(const char *name);

/* A zeroed mirror of `bytes`: pinned, mapped into every device (*host, *dev). */
blinkResult_t bk_hostmem_mirror(size_t bytes, void **host, unsigned char **dev);
void bk_hostmem_mirror_free(void *host);

#endif
