/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench_scaling.h - `bench_plan scaling`: planning time against cluster size (bench_scaling.c). */
#ifndef BK_BENCH_SCALING_H
#define BK_BENCH_SCALING_H

void bench_scaling(void);
/* The child of one point: `bench_plan scaling-point SERVERS COLLECTIVE-MASK FD`. */
int bench_scaling_point(int argc, char **argv);

#endif
