/* SPDX-License-Identifier: GPL-3.0-or-later */
/* gpu_list.h - GPU lists as users write them: "0,1,3" or "0-3,6". */
#ifndef BK_GPU_LIST_H
#define BK_GPU_LIST_H

/* Parse s (strictly decimal, numbers up to 1000000, ranges ascending, no empty item) into
 * gpus[cap] in the order written. Returns how many, 0 when s is no such list, -1 when it names
 * more than cap GPUs. */
int gpu_list_parse(const char *s, int *gpus, int cap);

#endif
