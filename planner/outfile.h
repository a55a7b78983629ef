/* SPDX-License-Identifier: GPL-3.0-or-later */
#ifndef BK_OUTFILE_H
#define BK_OUTFILE_H
#endif
