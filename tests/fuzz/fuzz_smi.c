/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_smi.c - libFuzzer harness: any bytes as 'nvidia-smi topo -m' text (topo_smi.c).
 */
#include <stdlib.h>

#include "fuzz_util.h"
#include "read/topo_read.h"

int fuzz_smi_one(const uint8_t *data, size_t size)
{
    return fuzz_read_as(data, size, TOPO_FMT_SMI);
}

#ifndef BK_FUZZ_NO_ENTRY
FUZZ_ENTRY(fuzz_smi_one)
#endif
