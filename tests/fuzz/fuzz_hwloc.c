/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_hwloc.c - libFuzzer harness: any bytes as hwloc 2.x XML through libhwloc (topo_hwloc.c).
 * Inputs over FUZZ_HWLOC_MAX_BYTES are skipped: libhwloc's import is slow on large buffers.
 */
#include <stdlib.h>

#include "fuzz_util.h"
#include "read/topo_read.h"

int fuzz_hwloc_one(const uint8_t *data, size_t size)
{
    if (size > FUZZ_HWLOC_MAX_BYTES)
        return 0;
    return fuzz_read_as(data, size, TOPO_FMT_HWLOC);
}

#ifndef BK_FUZZ_NO_ENTRY
FUZZ_ENTRY(fuzz_hwloc_one)
#endif
