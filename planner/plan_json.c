/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "plan_json.h"
