# SPDX-License-Identifier: GPL-3.0-or-later
# The schedule simulator and the per-size tuning built on it (trees or rings, and the chunk):
# sources appended to libblinkc, and their tests.
planner_libblinkc_a_SOURCES += \
	planner/sim/sim.c planner/sim/sim.h planner/sim/sim_facts.c \
	planner/sim/sim_engine.c planner/sim/sim_engine.h \
	planner/sim/sim_ring.c planner/sim/sim_nccl.c \
	planner/sim/sim_hops.c planner/sim/sim_hops.h \
	planner/sim/sim_tree.c \
	planner/out/sim_report.c planner/out/sim_report.h \
	planner/tune/plan_tune.c planner/tune/plan_tune.h planner/tune/tune_jobs.c \
	planner/tune/allocations.c planner/tune/allocations.h planner/tune/alloc_classes.c \
	planner/ring/ring_chain.c planner/ring/ring_chain.h

UNIT_TESTS += tests/unit/test_sim tests/unit/test_sim_plan tests/unit/test_simulate \
	tests/unit/test_tune tests/unit/test_symmetry
# test_sim compares the simulator's split with the runtime's own (proto.h, which reads
# blink_plan.h's collectives).
tests_unit_test_sim_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/runtime/include
tests_unit_test_sim_LDADD = $(TEST_LIBS)
tests_unit_test_sim_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a
tests_unit_test_sim_plan_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_sim_plan_LDADD = $(TEST_LIBS)
tests_unit_test_sim_plan_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a
tests_unit_test_simulate_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_simulate_LDADD = $(TEST_LIBS)
tests_unit_test_simulate_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc
tests_unit_test_tune_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_tune_LDADD = $(TEST_LIBS)
tests_unit_test_tune_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a
tests_unit_test_symmetry_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_symmetry_LDADD = $(TEST_LIBS)
tests_unit_test_symmetry_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc
