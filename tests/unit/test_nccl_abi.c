/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_nccl_abi.c - libblink-nccl's nccl.h against NVIDIA's: every enum value, struct size,
 * field offset and initializer value that a program compiled against one and run on the other
 * depends on (tests/nccl/abi_facts.c, compiled against each header). Skipped where configure
 * found no nccl.h beside nvcc.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../nccl/abi_facts.h"

#ifdef HAVE_REAL_NCCL

static int count(const struct abi_fact *t)
{
    int n = 0;
    while (t[n].name)
        n++;
    return n;
}

Test(nccl_abi, every_fact_matches_nvidias_header)
{
    int n = count(abi_ours);
    cr_assert_eq(n, count(abi_real), "the two tables list different facts");
    cr_assert_gt(n, 80);
    for (int i = 0; i < n; i++) {
        cr_assert_str_eq(abi_ours[i].name, abi_real[i].name);
        cr_expect_eq(abi_ours[i].value, abi_real[i].value, "%s: ours %lld, NVIDIA's %lld",
                     abi_ours[i].name, abi_ours[i].value, abi_real[i].value);
    }
}

#else

Test(nccl_abi, every_fact_matches_nvidias_header)
{
    cr_skip_test("no nccl.h beside nvcc: install the CUDA toolkit with NCCL to compare ABIs");
}

#endif

/* Without NVIDIA's header our facts still hold what NCCL documents. */
Test(nccl_abi, our_header_has_nccls_numbers)
{
    const struct {
        const char *name;
        long long value;
    } want[] = {{"ncclInvalidUsage", 5}, {"ncclBfloat16", 9}, {"ncclFloat8e5m2", 11},
                {"ncclNumTypes", 12}, {"ncclAvg", 4}, {"NCCL_UNIQUE_ID_BYTES", 128},
                {"sizeof(ncclUniqueId)", 128}, {"NCCL_CONFIG_INITIALIZER.magic", 0xcafebeef},
                {"NCCL_VERSION(2, 8, 4)", 2804}, {"NCCL_VERSION(2, 28, 9)", 22809}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int found = 0;
        for (int i = 0; abi_ours[i].name; i++)
            if (!strcmp(abi_ours[i].name, want[k].name)) {
                found = 1;
                cr_expect_eq(abi_ours[i].value, want[k].value, "%s", want[k].name);
            }
        cr_expect(found, "%s missing from the facts", want[k].name);
    }
}
