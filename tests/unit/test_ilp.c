/* SPDX-License-Identifier: GPL-3.0-or-later */
#include <criterion/criterion.h>

Test(placeholder_ilp, builds) { cr_assert(1); }
