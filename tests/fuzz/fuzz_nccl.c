/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_nccl.c - libFuzzer harness: any bytes as NCCL topology XML, through the safe libxml2
 * wrapper (topo_nccl.c, xml_safe.c).
 */
#include <stdlib.h>

#include "fuzz_util.h"
#include "read/topo_read.h"

int fuzz_nccl_one(const uint8_t *data, size_t size)
{
    return fuzz_read_as(data, size, TOPO_FMT_NCCL);
}

#ifndef BK_FUZZ_NO_ENTRY
FUZZ_ENTRY(fuzz_nccl_one)
#endif
