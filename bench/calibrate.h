/* SPDX-License-Identifier: GPL-3.0-or-later */
/* calibrate.h - `bench_plan calibrate`: the simulator's NCCL against published nccl-tests. */
#ifndef BK_BENCH_CALIBRATE_H
#define BK_BENCH_CALIBRATE_H

/* Print every row of the table at tsv with the model's busbw and error, and the median and
 * largest absolute error. Returns 0; with check, 1 when the error exceeds the thresholds; 2
 * when the file cannot be read. */
int bench_calibrate(const char *tsv, int check);

#endif
