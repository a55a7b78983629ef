/* SPDX-License-Identifier: GPL-3.0-or-later */
/* calibrate.h - `bench_plan calibrate`: the simulator's NCCL against published nccl-tests. */
#ifndef BK_BENCH_CALIBRATE_H
#define BK_BENCH_CALIBRATE_H

enum calibrate_mode {
    CALIBRATE_REPORT, /* every row with the model's busbw and error, then the median and largest */
    CALIBRATE_CHECK,  /* the same; the result says whether the thresholds hold */
    CALIBRATE_FIT,    /* the grid fit of the fitted values, on all rows and without each source */
};

/* Returns 0; CALIBRATE_CHECK 1 when the error exceeds the thresholds; 2 when the file cannot
 * be read. */
int bench_calibrate(const char *tsv, enum calibrate_mode mode);

#endif
