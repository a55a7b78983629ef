# SPDX-License-Identifier: GPL-3.0-or-later
# make fuzz: libFuzzer harnesses (clang) for the readers and the template engine.
#
# The harnesses are built with clang, apart from the normal (gcc) build: the planner sources
# they need are compiled again with -fsanitize=fuzzer-no-link,address,undefined into
# tests/fuzz/libfuzzplanner.a, and each harness links it with -fsanitize=fuzzer. `make fuzz`
# builds them and runs each for FUZZ_SECONDS on a seed corpus gathered at run time from
# topologies/, tests/data/, templates/, ../shared/fixtures and tests/fuzz/regress/ (run.sh).
# Not part of `make check`; tests/unit/test_fuzz_regress replays tests/fuzz/regress/ there.
#   make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS="nccl smi" FUZZ_CC=clang-14
FUZZ_CC = clang
FUZZ_SECONDS = 60
FUZZ_TARGETS = text hwloc nccl smi tmpl cstr
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -std=c11 -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN)
FUZZ_CPPFLAGS = -D_POSIX_C_SOURCE=200809L -I$(top_srcdir)/planner -I$(top_srcdir)/tests/fuzz \
	$(HWLOC_CFLAGS) $(LIBXML_CFLAGS)
FUZZ_LIBS = tests/fuzz/libfuzzplanner.a $(HWLOC_LIBS) $(LIBXML_LIBS) $(GLPK_LIBS) -lm

# The readers (with topo_finalize) and the template engine, and what they call.
FUZZ_PLANNER_SRCS = \
	planner/core/diag.c planner/core/strbuf.c planner/core/trail.c planner/core/input.c \
	planner/core/progress.c \
	planner/topo/topo.c planner/topo/topo_canon.c planner/topo/topo_rates.c planner/read/topo_read.c \
	planner/read/reader.c \
	planner/read/topo_text.c planner/read/text_lex.c planner/read/topo_cluster.c planner/topo/topo_join.c \
	planner/read/topo_hwloc.c planner/read/hwloc_links.c planner/read/hwloc_precheck.c \
	planner/read/topo_nccl.c planner/read/nccl_values.c planner/read/nccl_links.c \
	planner/read/topo_smi.c planner/read/smi_parse.c planner/read/smi_infer.c \
	planner/read/xml_safe.c \
	planner/emit/tmpl.c planner/emit/tmpl_parse.c planner/emit/tmpl_escape.c planner/emit/tmpl_value.c
FUZZ_HARNESS_SRCS = \
	tests/fuzz/fuzz_util.h tests/fuzz/fuzz_read.c \
	tests/fuzz/fuzz_text.c tests/fuzz/fuzz_hwloc.c tests/fuzz/fuzz_nccl.c tests/fuzz/fuzz_smi.c \
	tests/fuzz/fuzz_tmpl.c tests/fuzz/fuzz_cstr.c
FUZZ_BINS = tests/fuzz/fuzz_text tests/fuzz/fuzz_hwloc tests/fuzz/fuzz_nccl tests/fuzz/fuzz_smi \
	tests/fuzz/fuzz_tmpl tests/fuzz/fuzz_cstr

# One recipe compiles them all: any planner source or header changing rebuilds the set.
tests/fuzz/libfuzzplanner.a: $(planner_libblinkc_a_SOURCES)
	$(AM_V_GEN)rm -f $@ && mkdir -p tests/fuzz/obj && for s in $(FUZZ_PLANNER_SRCS); do \
	  o=tests/fuzz/obj/`basename $$s .c`.o; \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_CPPFLAGS) \
	    -c -o $$o $(top_srcdir)/$$s || exit 1; \
	done && $(AR) cr $@ `for s in $(FUZZ_PLANNER_SRCS); do echo tests/fuzz/obj/\`basename $$s .c\`.o; done`

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

fuzz-build: $(FUZZ_BINS)
# Crashes go to tests/fuzz/crashes/NAME/, the grown corpus to tests/fuzz/corpus/NAME/ and
# libFuzzer's output to tests/fuzz/logs/NAME.log, all in the build tree.
fuzz: fuzz-build
	FUZZ_CC='$(FUZZ_CC)' $(SHELL) $(top_srcdir)/tests/fuzz/run.sh '$(abs_top_srcdir)' \
	  tests/fuzz '$(FUZZ_SECONDS)' $(FUZZ_TARGETS)
.PHONY: fuzz fuzz-build

clean-local: clean-fuzz
clean-fuzz:
	rm -rf tests/fuzz/obj tests/fuzz/libfuzzplanner.a $(FUZZ_BINS) tests/fuzz/corpus \
	  tests/fuzz/crashes tests/fuzz/logs
.PHONY: clean-fuzz

EXTRA_DIST += tests/fuzz/fuzz.mk tests/fuzz/run.sh tests/fuzz/regress $(FUZZ_HARNESS_SRCS) \
	tests/fuzz/text.dict tests/fuzz/xml.dict tests/fuzz/smi.dict tests/fuzz/tmpl.dict

# Every crash the fuzzers found, replayed by `make check` through the same entry points
# (compiled by the normal compiler, without libFuzzer's main).
UNIT_TESTS += tests/unit/test_fuzz_regress
tests_unit_test_fuzz_regress_SOURCES = tests/unit/test_fuzz_regress.c $(FUZZ_HARNESS_SRCS)
tests_unit_test_fuzz_regress_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tests/fuzz -DBK_FUZZ_NO_ENTRY
tests_unit_test_fuzz_regress_LDADD = $(TEST_LIBS)
tests_unit_test_fuzz_regress_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a
