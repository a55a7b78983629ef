/* SPDX-License-Identifier: GPL-3.0-or-later */
/* ring.c - placeholder, being written. */
typedef int bk_placeholder_ring;
