/* SPDX-License-Identifier: GPL-3.0-or-later */
#include <criterion/criterion.h>

#include "testutil.h"

Test(detect, placeholder) { cr_assert(1); }
