# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 6 (hardening): hostile inputs for every reader, the hostile-name property over every
# fixture's generated code, and determinism (repeated runs, a decimal-comma locale).
HOSTILE_TESTS = \
	tests/unit/test_hostile \
	tests/unit/test_hostile_emit \
	tests/unit/test_determinism
UNIT_TESTS += $(HOSTILE_TESTS)

tests_unit_test_hostile_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_hostile_LDADD = $(TEST_LIBS)
tests_unit_test_hostile_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc
tests_unit_test_hostile_emit_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_hostile_emit_LDADD = $(TEST_LIBS)
tests_unit_test_hostile_emit_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a
# Under the sanitizers it repeats fewer times (the plain build does the 50).
tests_unit_test_determinism_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_determinism_LDADD = $(TEST_LIBS)
tests_unit_test_determinism_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc
