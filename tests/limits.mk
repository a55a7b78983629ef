# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 6 (hardening): the planner's size limits (a clear error instead of a hang or a crash on
# huge inputs), iterative max-flow, and the fewest-trees ILP's deterministic work budget.
LIMITS_TESTS = tests/unit/test_limits
UNIT_TESTS += $(LIMITS_TESTS)

tests_unit_test_limits_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_limits_LDADD = $(TEST_LIBS) -lpthread
tests_unit_test_limits_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc
