/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pack_integral.c - placeholder, being written. */
typedef int bk_placeholder_pack_integral;
