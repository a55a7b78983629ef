/* SPDX-License-Identifier: GPL-3.0-or-later */
#ifndef BK_TOPO_PRINT_H
#define BK_TOPO_PRINT_H
#endif
