# SPDX-License-Identifier: GPL-3.0-or-later
# make figures: the Blink paper's comparisons as tables and plots.
