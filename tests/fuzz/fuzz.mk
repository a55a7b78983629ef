# SPDX-License-Identifier: GPL-3.0-or-later
# make fuzz: libFuzzer harnesses (clang) for the readers, the plan loader and the template engine.
#
# The harnesses are built with clang, apart from the normal (gcc) build: the planner sources
# they need are compiled again with -fsanitize=fuzzer-no-link,address,undefined into
# tests/fuzz/libfuzzplanner.a, and each harness links it with -fsanitize=fuzzer. `make fuzz`
# builds them and runs each for FUZZ_SECONDS on a seed corpus gathered at run time from
# topologies/, tests/data/, templates/, ../shared, tests/fuzz/regress/ and plans written by the
# blinkc just built (run.sh).
# Not part of `make check`; tests/unit/test_fuzz_regress replays tests/fuzz/regress/ there.
#   make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS="nccl smi" FUZZ_CC=clang-14
FUZZ_CC = clang
FUZZ_SECONDS = 60
FUZZ_TARGETS = text hwloc nccl smi tmpl cstr cluster plan
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -std=c11 -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN)
FUZZ_CPPFLAGS = -D_POSIX_C_SOURCE=200809L -I$(top_builddir) -I$(top_srcdir)/planner \
	-I$(top_builddir)/planner -I$(top_srcdir)/tests/fuzz \
	$(HWLOC_CFLAGS) $(LIBXML_CFLAGS)
FUZZ_LIBS = tests/fuzz/libfuzzplanner.a $(HWLOC_LIBS) $(LIBXML_LIBS) $(GLPK_LIBS) -lm

# The whole planner library: the plan harness needs the loader, the plan set it fills and the
# code generator (with the embedded templates, generated in the build tree), which reach most
# of it (the recipe skips the headers). A harness links only the objects it calls.
FUZZ_PLANNER_SRCS = $(planner_libblinkc_a_SOURCES)
FUZZ_PLANNER_GEN = $(nodist_planner_libblinkc_a_SOURCES)
FUZZ_HARNESS_SRCS = \
	tests/fuzz/fuzz_util.h tests/fuzz/fuzz_read.c \
	tests/fuzz/fuzz_text.c tests/fuzz/fuzz_hwloc.c tests/fuzz/fuzz_nccl.c tests/fuzz/fuzz_smi.c \
	tests/fuzz/fuzz_tmpl.c tests/fuzz/fuzz_cstr.c tests/fuzz/fuzz_cluster.c tests/fuzz/fuzz_plan.c
FUZZ_BINS = tests/fuzz/fuzz_text tests/fuzz/fuzz_hwloc tests/fuzz/fuzz_nccl tests/fuzz/fuzz_smi \
	tests/fuzz/fuzz_tmpl tests/fuzz/fuzz_cstr tests/fuzz/fuzz_cluster tests/fuzz/fuzz_plan

# One recipe compiles them all: any planner source or header changing rebuilds the set.
tests/fuzz/libfuzzplanner.a: $(FUZZ_PLANNER_SRCS) $(FUZZ_PLANNER_GEN)
	$(AM_V_GEN)rm -f $@ && mkdir -p tests/fuzz/obj && objs= && \
	for s in $(FUZZ_PLANNER_SRCS:%=$(top_srcdir)/%) $(FUZZ_PLANNER_GEN); do \
	  case $$s in *.c) ;; *) continue ;; esac; \
	  o=tests/fuzz/obj/`basename $$s .c`.o; objs="$$objs $$o"; \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_CPPFLAGS) \
	    -c -o $$o $$s || exit 1; \
	done && $(AR) cr $@ $$objs

FUZZ_LINK = $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_CPPFLAGS)
FUZZ_DEPS = tests/fuzz/libfuzzplanner.a $(top_srcdir)/tests/fuzz/fuzz_util.h
tests/fuzz/fuzz_text: $(top_srcdir)/tests/fuzz/fuzz_text.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) -o $@ $(top_srcdir)/tests/fuzz/fuzz_text.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_LIBS)
tests/fuzz/fuzz_hwloc: $(top_srcdir)/tests/fuzz/fuzz_hwloc.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) -o $@ $(top_srcdir)/tests/fuzz/fuzz_hwloc.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_LIBS)
tests/fuzz/fuzz_nccl: $(top_srcdir)/tests/fuzz/fuzz_nccl.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) -o $@ $(top_srcdir)/tests/fuzz/fuzz_nccl.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_LIBS)
tests/fuzz/fuzz_smi: $(top_srcdir)/tests/fuzz/fuzz_smi.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) -o $@ $(top_srcdir)/tests/fuzz/fuzz_smi.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_LIBS)
tests/fuzz/fuzz_tmpl: $(top_srcdir)/tests/fuzz/fuzz_tmpl.c $(FUZZ_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) -o $@ $(top_srcdir)/tests/fuzz/fuzz_tmpl.c $(FUZZ_LIBS)
tests/fuzz/fuzz_cstr: $(top_srcdir)/tests/fuzz/fuzz_cstr.c $(FUZZ_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) -o $@ $(top_srcdir)/tests/fuzz/fuzz_cstr.c $(FUZZ_LIBS)
tests/fuzz/fuzz_cluster: $(top_srcdir)/tests/fuzz/fuzz_cluster.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) -o $@ $(top_srcdir)/tests/fuzz/fuzz_cluster.c $(top_srcdir)/tests/fuzz/fuzz_read.c $(FUZZ_LIBS)
tests/fuzz/fuzz_plan: $(top_srcdir)/tests/fuzz/fuzz_plan.c $(FUZZ_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) -o $@ $(top_srcdir)/tests/fuzz/fuzz_plan.c $(FUZZ_LIBS)

fuzz-build: $(FUZZ_BINS)
# Crashes go to tests/fuzz/crashes/NAME/, the grown corpus to tests/fuzz/corpus/NAME/ and
# libFuzzer's output to tests/fuzz/logs/NAME.log, all in the build tree. blinkc writes the
# plan seeds.
fuzz: fuzz-build planner/blinkc$(EXEEXT)
	FUZZ_CC='$(FUZZ_CC)' BLINKC='$(abs_top_builddir)/planner/blinkc$(EXEEXT)' \
	  $(SHELL) $(top_srcdir)/tests/fuzz/run.sh '$(abs_top_srcdir)' \
	  tests/fuzz '$(FUZZ_SECONDS)' $(FUZZ_TARGETS)
.PHONY: fuzz fuzz-build

clean-local: clean-fuzz
clean-fuzz:
	rm -rf tests/fuzz/obj tests/fuzz/libfuzzplanner.a $(FUZZ_BINS) tests/fuzz/corpus \
	  tests/fuzz/crashes tests/fuzz/logs
.PHONY: clean-fuzz

EXTRA_DIST += tests/fuzz/fuzz.mk tests/fuzz/run.sh tests/fuzz/regress $(FUZZ_HARNESS_SRCS) \
	tests/fuzz/text.dict tests/fuzz/xml.dict tests/fuzz/smi.dict tests/fuzz/tmpl.dict \
	tests/fuzz/cluster.dict tests/fuzz/plan.dict tests/fuzz/seeds

# Every crash the fuzzers found, replayed by `make check` through the same entry points
# (compiled by the normal compiler, without libFuzzer's main).
UNIT_TESTS += tests/unit/test_fuzz_regress
tests_unit_test_fuzz_regress_SOURCES = tests/unit/test_fuzz_regress.c $(FUZZ_HARNESS_SRCS)
tests_unit_test_fuzz_regress_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tests/fuzz -DBK_FUZZ_NO_ENTRY
tests_unit_test_fuzz_regress_LDADD = $(TEST_LIBS)
tests_unit_test_fuzz_regress_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a
