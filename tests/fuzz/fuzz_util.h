/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_util.h - the entry points shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c) and
 * the regression test that replays tests/fuzz/regress/ (tests/unit/test_fuzz_regress.c).
 *
 * Each fuzz_X_one() feeds one input to the code under test from memory, frees everything, and
 * returns 0, or a non-zero code when an invariant the harness checks was broken (a reader that
 * fails without a diagnostic, an escaped literal that is unsafe or does not round-trip). Under
 * libFuzzer a non-zero code aborts, so it is saved as a crash; the regression test asserts 0.
 * Sanitizer reports (ASan, UBSan, leaks) end the process in either setting.
 */
#ifndef BK_FUZZ_UTIL_H
#define BK_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Inputs the hwloc harness skips: libhwloc's XML import is slow on large buffers. */
#define FUZZ_HWLOC_MAX_BYTES (64u * 1024u)

int fuzz_text_one(const uint8_t *data, size_t size);
int fuzz_hwloc_one(const uint8_t *data, size_t size);
int fuzz_nccl_one(const uint8_t *data, size_t size);
int fuzz_smi_one(const uint8_t *data, size_t size);
int fuzz_tmpl_one(const uint8_t *data, size_t size);
int fuzz_cstr_one(const uint8_t *data, size_t size);
int fuzz_cluster_one(const uint8_t *data, size_t size);
int fuzz_plan_one(const uint8_t *data, size_t size);

/* Shared by the four reader harnesses (fuzz_read.c): read with the format forced, then check
 * that a failure carries an error and a success none. fmt is an enum topo_format. */
int fuzz_read_as(const uint8_t *data, size_t size, int fmt);

/* The same checks on an input already wrapped, with the caller's options (fuzz_cluster.c). */
struct input;
struct topo_read_opts;
int fuzz_read_check(const struct input *in, const struct topo_read_opts *o);

/* libFuzzer's entry point, defined once per harness unless BK_FUZZ_NO_ENTRY is set. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One harness's entry point wrapped for libFuzzer: a broken invariant becomes a crash. */
#define FUZZ_ENTRY(fn)                                                                             \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                   \
    {                                                                                              \
        if (fn(data, size) != 0)                                                                   \
            abort();                                                                               \
        return 0;                                                                                  \
    }

#endif
