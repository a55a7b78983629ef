/* SPDX-License-Identifier: GPL-3.0-or-later */
/* ilp_glpk.c - placeholder, being written. */
typedef int bk_placeholder_ilp_glpk;
