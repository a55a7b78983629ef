/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench_fabrics.h - `bench_plan fabrics`: the table of today's fabrics (bench_fabrics.c). */
#ifndef BK_BENCH_FABRICS_H
#define BK_BENCH_FABRICS_H

void bench_fabrics(void);

#endif
