/* SPDX-License-Identifier: GPL-3.0-or-later */
/* oracle.c - placeholder, being written. */
typedef int bk_placeholder_oracle;
