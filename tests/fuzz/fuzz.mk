# SPDX-License-Identifier: GPL-3.0-or-later
# make fuzz: libFuzzer harnesses (clang) for the readers and the template engine.
