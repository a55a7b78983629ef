/* SPDX-License-Identifier: GPL-3.0-or-later */
/* plan_explain.c - placeholder, being written. */
typedef int bk_placeholder_plan_explain;
