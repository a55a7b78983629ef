# SPDX-License-Identifier: GPL-3.0-or-later
# Code generation: the embedded templates, generated/ goldens and their checks.
