/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * proc.h - what the runtime asks of the system about time and other processes: a monotonic
 * clock for every bounded wait, and whether a peer's process is gone.
 */
#ifndef BK_PROC_H
#define BK_PROC_H

#ifdef __cplusplus
extern "C" {
#endif

/* Monotonic seconds. */
double bk_now(void);
/* Whether process pid has exited (a zombie counts as gone). */
int bk_pid_gone(int pid);

#ifdef __cplusplus
}
#endif

#endif
