/* SPDX-License-Identifier: GPL-3.0-or-later */
#ifndef BK_PLAN_JSON_H
#define BK_PLAN_JSON_H
#endif
