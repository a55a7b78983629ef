/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_calibration.c - the simulator's NCCL against every published nccl-tests row
 * (docs/calibration/nccl-published.tsv): the table and its error are printed to this test's
 * log, and the test fails when the median absolute error exceeds 10% or any row's 25%
 * (docs/calibration/README.md).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "calibrate.h"
#include "testutil.h"

Test(calibration, published_nccl_tests_within_thresholds, .timeout = 300)
{
    char *tsv = tu_src_path("docs/calibration/nccl-published.tsv");
    int rc = bench_calibrate(tsv, CALIBRATE_CHECK);
    fflush(stdout);
    cr_expect_eq(rc, 0, "the model's error exceeds the thresholds (table above, %s)", tsv);
    free(tsv);
}
