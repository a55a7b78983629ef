# SPDX-License-Identifier: GPL-3.0-or-later
# The schedule simulator: sources appended to libblinkc, and its tests.
