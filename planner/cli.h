/* SPDX-License-Identifier: GPL-3.0-or-later */
#ifndef BK_CLI_H
#define BK_CLI_H
#endif
