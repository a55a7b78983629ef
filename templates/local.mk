# SPDX-License-Identifier: GPL-3.0-or-later
# Code generation: the embedded templates, generated/ goldens and their checks.

# templates/*.tmpl are embedded with the same od | sed rule as the topology fixtures.
TEMPLATES = \
	templates/collectives.cu.tmpl \
	templates/header.tmpl \
	templates/schedule.tmpl
nodist_planner_libblinkc_a_SOURCES += planner/templates_data.c
planner/templates_data.c: $(top_srcdir)/tools/embed.sh $(TEMPLATES:%=$(top_srcdir)/%)
	$(AM_V_GEN)mkdir -p planner && $(SHELL) $(top_srcdir)/tools/embed.sh builtin_templates $(TEMPLATES:%=$(top_srcdir)/%) > $@.tmp && mv $@.tmp $@
CLEANFILES += planner/templates_data.c

# Committed sources generated for the built-in servers; test_emit_golden regenerates them.
GOLDEN_CU = generated/dgx1p.cu generated/dgx1v.cu generated/dgx2.cu
EXTRA_DIST += $(TEMPLATES) $(GOLDEN_CU) templates/local.mk

EMIT_TESTS = \
	tests/unit/test_tmpl \
	tests/unit/test_tmpl_escape \
	tests/unit/test_emit \
	tests/unit/test_emit_cli \
	tests/unit/test_emit_golden
UNIT_TESTS += $(EMIT_TESTS)

tests_unit_test_tmpl_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_tmpl_LDADD = $(TEST_LIBS)
tests_unit_test_tmpl_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a
tests_unit_test_tmpl_escape_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_tmpl_escape_LDADD = $(TEST_LIBS)
tests_unit_test_tmpl_escape_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a
tests_unit_test_emit_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_emit_LDADD = $(TEST_LIBS)
tests_unit_test_emit_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc
tests_unit_test_emit_golden_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_emit_golden_LDADD = $(TEST_LIBS)
tests_unit_test_emit_golden_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc
# The link test builds a program against the runtime with the same sanitizer flags.
tests_unit_test_emit_cli_CPPFLAGS = $(TEST_CPPFLAGS) -DBK_SAN_CFLAGS='"$(SAN_CFLAGS)"'
tests_unit_test_emit_cli_LDADD = $(TEST_LIBS)
tests_unit_test_emit_cli_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc \
	runtime/libblinkrt-host.a
