/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bound.c - placeholder, being written. */
typedef int bk_placeholder_bound;
