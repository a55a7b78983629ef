/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_text.c - libFuzzer harness: any bytes as blinkc's own .topo text format (topo_text.c).
 */
#include <stdlib.h>

#include "fuzz_util.h"
#include "read/topo_read.h"

int fuzz_text_one(const uint8_t *data, size_t size)
{
    return fuzz_read_as(data, size, TOPO_FMT_TEXT);
}

#ifndef BK_FUZZ_NO_ENTRY
FUZZ_ENTRY(fuzz_text_one)
#endif
