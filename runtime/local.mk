# SPDX-License-Identifier: GPL-3.0-or-later
# The runtime: libblinkrt-host, libblinkrt-cuda, their .pc files and tests.
