/* SPDX-License-Identifier: GPL-3.0-or-later */
/* mwu.c - placeholder, being written. */
typedef int bk_placeholder_mwu;
