# SPDX-License-Identifier: GPL-3.0-or-later
# Code generation: the embedded templates, generated/ goldens and their checks.

# templates/*.tmpl are embedded with the same od | sed rule as the topology fixtures.
TEMPLATES = \
	templates/collectives.cu.tmpl \
	templates/header.tmpl \
	templates/plan.tmpl \
	templates/schedule.tmpl
nodist_planner_libblinkc_a_SOURCES += planner/templates_data.c
planner/templates_data.c: $(top_srcdir)/tools/embed.sh $(TEMPLATES:%=$(top_srcdir)/%)
	$(AM_V_GEN)mkdir -p planner && $(SHELL) $(top_srcdir)/tools/embed.sh builtin_templates $(TEMPLATES:%=$(top_srcdir)/%) > $@.tmp && mv $@.tmp $@
CLEANFILES += planner/templates_data.c

# Committed sources generated for the built-in servers; test_emit_golden regenerates them.
GOLDEN_CU = generated/dgx1p.cu generated/dgx1v.cu generated/dgx2.cu
EXTRA_DIST += $(TEMPLATES) $(GOLDEN_CU) generated/msccl templates/local.mk

EMIT_TESTS = \
	tests/unit/test_tmpl \
	tests/unit/test_tmpl_escape \
	tests/unit/test_emit \
	tests/unit/test_emit_cli \
	tests/unit/test_emit_golden \
	tests/unit/test_from_plan
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
tests_unit_test_emit_golden_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc \
	$(E2E_GEN)
tests_unit_test_from_plan_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_from_plan_LDADD = $(TEST_LIBS)
tests_unit_test_from_plan_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc
# The link test builds a program against the runtime with the same sanitizer flags.
tests_unit_test_emit_cli_CPPFLAGS = $(TEST_CPPFLAGS) -DBK_SAN_CFLAGS='"$(SAN_CFLAGS)"' \
	-DBK_RT_NET_LIBS='"$(RT_NET_LIBS)"'
tests_unit_test_emit_cli_LDADD = $(TEST_LIBS)
tests_unit_test_emit_cli_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a planner/blinkc \
	runtime/libblinkrt-host.a

# ---------------------------------------------------------------- end to end (host backend)
# Generated sources run by the host runtime (tests/unit/test_e2e.c): the committed goldens and
# the other fixtures, plus the DGX-1V library of every allocation. Each object renames its
# blinkCommInitAll to e2e_init_NAME so that all of them link into one test program.
E2E_CC = $(CC) -std=c11 $(CFLAGS) $(SAN_CFLAGS) -I$(top_srcdir)/runtime/include -x c -c
E2E_OBJS = tests/e2e/dgx1p.o tests/e2e/dgx1v.o tests/e2e/dgx2.o tests/e2e/dgx_a100.o \
	tests/e2e/hgx_h100.o tests/e2e/pcie8.o tests/e2e/cluster.o tests/e2e/dgx1v_all.o \
	tests/e2e/nvl18_pairs.o tests/e2e/rtx4090x8.o tests/e2e/pcie8_no_p2p.o
E2E_GEN = tests/e2e/dgx_a100.cu tests/e2e/hgx_h100.cu tests/e2e/pcie8.cu tests/e2e/cluster.cu \
	tests/e2e/dgx1v_all.cu tests/e2e/nvl18_pairs.cu tests/e2e/rtx4090x8.cu \
	tests/e2e/pcie8_no_p2p.cu

tests/e2e/dgx_a100.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/e2e && planner/blinkc -q builtin:dgx-a100 -o $@
tests/e2e/hgx_h100.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/e2e && planner/blinkc -q builtin:hgx-h100 -o $@
tests/e2e/pcie8.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/e2e && planner/blinkc -q builtin:pcie8 -o $@
# GPUs without peer access: a published 8 x RTX 4090 box, and pcie8 with --no-p2p.
tests/e2e/rtx4090x8.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/e2e && planner/blinkc -q builtin:rtx4090x8 -o $@
tests/e2e/pcie8_no_p2p.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/e2e && planner/blinkc -q --no-p2p builtin:pcie8 -o $@
tests/e2e/cluster.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/e2e && planner/blinkc -q builtin:cluster-4x-dgx1v -o $@
# --no-tune: the test sets the chunk and the algorithm itself, and tuning the 247 plans (73
# classes) takes 11 CPU s (the tuned fixtures above cover the per-size ranges).
tests/e2e/dgx1v_all.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/e2e && planner/blinkc -q builtin:dgx1v --all-allocations --no-tune -o $@
# A library by classes: 18 GPUs in 9 Grace pairs, 53 plans for its 2^18 sets.
tests/e2e/nvl18_pairs.cu: planner/blinkc $(top_srcdir)/tests/data/nvl18-pairs.topo
	$(AM_V_GEN)mkdir -p tests/e2e && planner/blinkc -q $(top_srcdir)/tests/data/nvl18-pairs.topo --all-allocations --no-tune -o $@

# blink-perf (Makefile.am) links that untuned library, so it runs every allocation; tuning its
# 247 plans would cost every build 11 CPU s more (a minute and a half before allocations of one
# class shared their plans). So that it still
# exercises a per-size choice, it links the committed, tuned full-server source too
# (generated/dgx1v.cu as tests/e2e/dgx1v.o, already built for test_e2e, nothing planned anew),
# whose library blink-perf puts first (BLINK_PERF_TUNED): its default run, all 8 GPUs, takes
# the tuned ranges, trees at some sizes and rings at others; other device sets, the untuned
# plans. The generated tables are the same C for both backends; the object's only calls, into
# the runtime's init, are already linked by the first source.
bench_blink_perf_CPPFLAGS += -DBLINK_PERF_TUNED=e2e_lib_dgx1v
bench_blink_perf_LDADD += tests/e2e/dgx1v.o
bench_blink_perf_DEPENDENCIES += tests/e2e/dgx1v.o
if HAVE_NVCC
bench_blink_perf_cuda_CPPFLAGS += -DBLINK_PERF_TUNED=e2e_lib_dgx1v
bench_blink_perf_cuda_LDADD += tests/e2e/dgx1v.o
bench_blink_perf_cuda_DEPENDENCIES += tests/e2e/dgx1v.o
endif

E2E_INCLUDES = $(top_srcdir)/runtime/include/blink.h $(top_srcdir)/runtime/include/blink_plan.h
tests/e2e/dgx1p.o: $(top_srcdir)/generated/dgx1p.cu $(E2E_INCLUDES)
	$(AM_V_CC)mkdir -p tests/e2e && $(E2E_CC) -DblinkCommInitAll=e2e_init_dgx1p -DblinkCommInitRank=e2e_rank_dgx1p -DblinkPlanLibrary=e2e_lib_dgx1p -o $@ $(top_srcdir)/generated/dgx1p.cu
tests/e2e/dgx1v.o: $(top_srcdir)/generated/dgx1v.cu $(E2E_INCLUDES)
	$(AM_V_CC)mkdir -p tests/e2e && $(E2E_CC) -DblinkCommInitAll=e2e_init_dgx1v -DblinkCommInitRank=e2e_rank_dgx1v -DblinkPlanLibrary=e2e_lib_dgx1v -o $@ $(top_srcdir)/generated/dgx1v.cu
tests/e2e/dgx2.o: $(top_srcdir)/generated/dgx2.cu $(E2E_INCLUDES)
	$(AM_V_CC)mkdir -p tests/e2e && $(E2E_CC) -DblinkCommInitAll=e2e_init_dgx2 -DblinkCommInitRank=e2e_rank_dgx2 -DblinkPlanLibrary=e2e_lib_dgx2 -o $@ $(top_srcdir)/generated/dgx2.cu
tests/e2e/dgx_a100.o: tests/e2e/dgx_a100.cu $(E2E_INCLUDES)
	$(AM_V_CC)$(E2E_CC) -DblinkCommInitAll=e2e_init_dgx_a100 -DblinkCommInitRank=e2e_rank_dgx_a100 -DblinkPlanLibrary=e2e_lib_dgx_a100 -o $@ tests/e2e/dgx_a100.cu
tests/e2e/hgx_h100.o: tests/e2e/hgx_h100.cu $(E2E_INCLUDES)
	$(AM_V_CC)$(E2E_CC) -DblinkCommInitAll=e2e_init_hgx_h100 -DblinkCommInitRank=e2e_rank_hgx_h100 -DblinkPlanLibrary=e2e_lib_hgx_h100 -o $@ tests/e2e/hgx_h100.cu
tests/e2e/rtx4090x8.o: tests/e2e/rtx4090x8.cu $(E2E_INCLUDES)
	$(AM_V_CC)$(E2E_CC) -DblinkCommInitAll=e2e_init_rtx4090x8 -DblinkCommInitRank=e2e_rank_rtx4090x8 -DblinkPlanLibrary=e2e_lib_rtx4090x8 -o $@ tests/e2e/rtx4090x8.cu
tests/e2e/pcie8_no_p2p.o: tests/e2e/pcie8_no_p2p.cu $(E2E_INCLUDES)
	$(AM_V_CC)$(E2E_CC) -DblinkCommInitAll=e2e_init_pcie8_no_p2p -DblinkCommInitRank=e2e_rank_pcie8_no_p2p -DblinkPlanLibrary=e2e_lib_pcie8_no_p2p -o $@ tests/e2e/pcie8_no_p2p.cu
tests/e2e/pcie8.o: tests/e2e/pcie8.cu $(E2E_INCLUDES)
	$(AM_V_CC)$(E2E_CC) -DblinkCommInitAll=e2e_init_pcie8 -DblinkCommInitRank=e2e_rank_pcie8 -DblinkPlanLibrary=e2e_lib_pcie8 -o $@ tests/e2e/pcie8.cu
tests/e2e/cluster.o: tests/e2e/cluster.cu $(E2E_INCLUDES)
	$(AM_V_CC)$(E2E_CC) -DblinkCommInitAll=e2e_init_cluster -DblinkCommInitRank=e2e_rank_cluster -DblinkPlanLibrary=e2e_lib_cluster -o $@ tests/e2e/cluster.cu
tests/e2e/dgx1v_all.o: tests/e2e/dgx1v_all.cu $(E2E_INCLUDES)
	$(AM_V_CC)$(E2E_CC) -DblinkCommInitAll=e2e_init_dgx1v_all -DblinkCommInitRank=e2e_rank_dgx1v_all -DblinkPlanLibrary=e2e_lib_dgx1v_all -o $@ tests/e2e/dgx1v_all.cu
tests/e2e/nvl18_pairs.o: tests/e2e/nvl18_pairs.cu $(E2E_INCLUDES)
	$(AM_V_CC)$(E2E_CC) -DblinkCommInitAll=e2e_init_nvl18_pairs -DblinkCommInitRank=e2e_rank_nvl18_pairs -DblinkPlanLibrary=e2e_lib_nvl18_pairs -o $@ tests/e2e/nvl18_pairs.cu
CLEANFILES += $(E2E_OBJS) $(E2E_GEN)

# test_rt_procs runs the same sources with each rank a process of its own (blinkCommInitRank).
UNIT_TESTS += tests/unit/test_e2e tests/unit/test_rt_procs
tests_unit_test_e2e_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_e2e_LDADD = $(E2E_OBJS) $(RT_TEST_LIBS)
tests_unit_test_e2e_DEPENDENCIES = $(E2E_OBJS) tests/unit/rt_testutil.$(OBJEXT) \
	runtime/libblinkrt-host.a
# test_rt_hybrid: bytes per edge kind of the committed DGX-1P and DGX-1V sources' hybrids, and
# of the RTX 4090 box whose GPUs have no peer access.
UNIT_TESTS += tests/unit/test_rt_hybrid
tests_unit_test_rt_hybrid_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_hybrid_LDADD = tests/e2e/dgx1p.o tests/e2e/dgx1v.o tests/e2e/rtx4090x8.o \
	$(RT_TEST_LIBS)
tests_unit_test_rt_hybrid_DEPENDENCIES = tests/e2e/dgx1p.o tests/e2e/dgx1v.o tests/e2e/rtx4090x8.o \
	tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_procs_SOURCES = tests/unit/test_rt_procs.c tests/unit/procs_util.c \
	tests/unit/procs_util.h
tests_unit_test_rt_procs_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_procs_LDADD = $(E2E_OBJS) $(RT_TEST_LIBS)
tests_unit_test_rt_procs_DEPENDENCIES = $(E2E_OBJS) tests/unit/rt_testutil.$(OBJEXT) \
	runtime/libblinkrt-host.a
