# SPDX-License-Identifier: GPL-3.0-or-later
# make figures: the Blink paper's comparisons as tables and plots.
# bench/figures writes $(builddir)/figures/figN.dat (and prints them); gnuplot draws each as
# SVG and PNG. Not part of make check: it takes a minute or two.
noinst_PROGRAMS += bench/figures
FIGURES_COMMON = bench/alloc_util.c bench/alloc_util.h bench/figures.h bench/figures_fig5.c
bench_figures_SOURCES = bench/figures.c bench/figures_table.c bench/figures_sim.c \
	bench/figures_cluster.c bench/gen_cluster.c bench/gen_cluster.h $(FIGURES_COMMON)
bench_figures_LDADD = $(BLINKC_LIBS)

FIGURE_PLOTS = bench/fig5.gp bench/fig6.gp bench/fig7.gp bench/fig9b.gp
EXTRA_DIST += $(FIGURE_PLOTS) docs/figures.md

figures: bench/figures
	@mkdir -p figures
	./bench/figures figures
	@if command -v gnuplot >/dev/null 2>&1; then \
		for f in $(FIGURE_PLOTS); do \
			echo "gnuplot $$f"; \
			gnuplot -e "dir='figures'" $(top_srcdir)/$$f || exit 1; \
		done; \
		ls figures; \
	else \
		echo "figures: gnuplot not found: tables only (figures/*.dat)"; \
	fi
.PHONY: figures clean-figures
# A prerequisite only, so other clean-local hooks can sit beside it.
clean-local: clean-figures
clean-figures:
	rm -rf figures

# Figure 5's computation against blink-and-peers.md 6.1, and the plan of two HGX H100 servers
# at 400 Gb/s against their rings (about a second each).
UNIT_TESTS += tests/unit/test_figures
tests_unit_test_figures_SOURCES = tests/unit/test_figures.c bench/figures_cluster.c \
	bench/gen_cluster.c bench/gen_cluster.h $(FIGURES_COMMON)
tests_unit_test_figures_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/bench
tests_unit_test_figures_LDADD = $(TEST_LIBS)
tests_unit_test_figures_DEPENDENCIES = tests/unit/testutil.o planner/libblinkc.a
