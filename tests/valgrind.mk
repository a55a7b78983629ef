# SPDX-License-Identifier: GPL-3.0-or-later
# --enable-valgrind: `make check` runs the reader and planner test programs below under valgrind
# memcheck (tests/valgrind-run.sh, every other test as usual); any error, or any definite or
# indirect leak, in the test, in a Criterion worker or in a planner/blinkc it runs fails that
# test. tests/valgrind.supp silences known third-party noise only. `make check-valgrind` runs
# only these programs (./build.sh check's third stage: the others run in the first two).
# The runtime, code-generation, simulator and figure tests stay out: they run schedules or
# large generated sources, too slow under memcheck for CI, and ASan covers them.
VALGRIND_TESTS = \
	tests/unit/test_text \
	tests/unit/test_hwloc \
	tests/unit/test_nccl \
	tests/unit/test_smi \
	tests/unit/test_smi_input \
	tests/unit/test_detect \
	tests/unit/test_badinput \
	tests/unit/test_topo \
	tests/unit/test_equiv \
	tests/unit/test_fuzz_regress \
	tests/unit/test_bound \
	tests/unit/test_mwu \
	tests/unit/test_ilp \
	tests/unit/test_ring \
	tests/unit/test_plan \
	tests/unit/test_cluster \
	tests/unit/test_dot \
	tests/unit/test_cli
EXTRA_DIST += tests/valgrind-run.sh tests/valgrind.supp

if ENABLE_VALGRIND
# Tests have no extension, so automake runs each as $(LOG_COMPILER) $(AM_LOG_FLAGS) PROGRAM.
LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/valgrind-run.sh
AM_LOG_FLAGS = '$(VALGRIND)' '$(abs_top_srcdir)/tests/valgrind.supp' '$(VALGRIND_TESTS)'
# Builds only these programs too (with the blinkc and man page they depend on).
check-valgrind:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(VALGRIND_TESTS)' check_PROGRAMS='$(VALGRIND_TESTS)'
else
check-valgrind:
	@echo "check-valgrind: configure with --enable-valgrind first" >&2; exit 1
endif
.PHONY: check-valgrind

# Each checked program leaves its per-process logs in PROGRAM.vg/.
clean-local: clean-valgrind
clean-valgrind:
	rm -rf tests/unit/*.vg
.PHONY: clean-valgrind
