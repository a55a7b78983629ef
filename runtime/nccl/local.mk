# SPDX-License-Identifier: GPL-3.0-or-later
# libblink-nccl: NCCL's C API over blinkc's plans, for LD_PRELOAD (blink-nccl(7)).
#
# An archive of the runtime and the NCCL shim, compiled position-independent with hidden
# visibility so that a shared library built from it exports NCCL's names and nothing else:
#
#   cc -shared -fPIC -o libblink-nccl-host.so -x c dgx1v.cu \
#      $(pkg-config --cflags --libs blink-nccl-host)
#
# The build makes that library for the DGX-1V source of every allocation (untuned, for build
# time; the README's command tunes), and on nvcc's machines its CUDA twin libblink-nccl.so.

NCCL_SHIM_SOURCES = runtime/nccl/nccl.h runtime/nccl/shim.h runtime/nccl/nccl_comm.c \
	runtime/nccl/nccl_coll.c runtime/nccl/nccl_handoff.c runtime/nccl/nccl_misc.c
SHIM_CFLAGS = $(AM_CFLAGS) -fPIC -fvisibility=hidden

blinkncclincludedir = $(includedir)/blink-nccl
blinkncclinclude_HEADERS = runtime/nccl/nccl.h
pkgconfig_DATA += runtime/blink-nccl-host.pc
EXTRA_DIST += runtime/blink-nccl-host.pc.in runtime/blink-nccl-host-uninstalled.pc.in \
	runtime/blink-nccl-cuda.pc.in runtime/blink-nccl-cuda-uninstalled.pc.in

lib_LIBRARIES += runtime/libblink-nccl-host.a
runtime_libblink_nccl_host_a_CPPFLAGS = $(RT_CPPFLAGS)
runtime_libblink_nccl_host_a_CFLAGS = $(SHIM_CFLAGS)
runtime_libblink_nccl_host_a_SOURCES = $(runtime_libblinkrt_host_a_SOURCES) $(NCCL_SHIM_SOURCES)

# The library is the generated source and the whole archive (nothing in the source calls
# NCCL's names, so only --whole-archive keeps them). The default drop-ins link the object of
# the DGX-1V source that blink-perf links (bench/dgx1v_all.o, position-independent).
# Its SONAME is its own name, as the .pc files give it: never libnccl.so.2, which would make
# the drop-in the loader's answer to a program's or nccl_real.c's search for the real NCCL.
# It needs no libmpi (runtime/net/net_mpi.c finds the program's).
DROPIN_LINK_HOST = -Wl,-soname,libblink-nccl-host.so \
	-Wl,--whole-archive runtime/libblink-nccl-host.a -Wl,--no-whole-archive \
	$(PTHREAD_LIBS) $(DL_LIBS) -lm
dropin_host = $(AM_V_CCLD)$(CC) $(SAN_CFLAGS) -std=c11 -shared -fPIC -Wl,-z,defs \
	-I$(top_srcdir)/runtime/include -o $@ -x c $< -x none $(DROPIN_LINK_HOST)

noinst_DATA = runtime/libblink-nccl-host.so
CLEANFILES += runtime/libblink-nccl-host.so
runtime/libblink-nccl-host.so: bench/dgx1v_all.o runtime/libblink-nccl-host.a
	$(AM_V_CCLD)$(CC) $(SAN_CFLAGS) -shared -Wl,-z,defs -o $@ bench/dgx1v_all.o \
		$(DROPIN_LINK_HOST)

if HAVE_NVCC
pkgconfig_DATA += runtime/blink-nccl-cuda.pc
lib_LIBRARIES += runtime/libblink-nccl-cuda.a
runtime_libblink_nccl_cuda_a_CPPFLAGS = $(runtime_libblinkrt_cuda_a_CPPFLAGS)
runtime_libblink_nccl_cuda_a_CFLAGS = $(SHIM_CFLAGS)
runtime_libblink_nccl_cuda_a_SOURCES = $(RT_SOURCES) $(NCCL_SHIM_SOURCES)
runtime_libblink_nccl_cuda_a_LIBADD = $(RT_CUDA_OBJS)
runtime_libblink_nccl_cuda_a_DEPENDENCIES = $(RT_CUDA_OBJS)
CLEANFILES += runtime/libblink-nccl.so
noinst_DATA += runtime/libblink-nccl.so
DROPIN_LINK_CUDA = -Wl,-soname,libblink-nccl.so \
	-Wl,--whole-archive runtime/libblink-nccl-cuda.a -Wl,--no-whole-archive \
	-L$(CUDA_PREFIX)/lib64 -lcudart -lstdc++ $(PTHREAD_LIBS) $(DL_LIBS) -lm
dropin_cuda = $(AM_V_CCLD)$(CC) $(SAN_CFLAGS) -std=c11 -shared -fPIC -Wl,-z,defs \
	-DBLINK_BACKEND_CUDA=1 -isystem $(CUDA_PREFIX)/include -I$(top_srcdir)/runtime/include \
	-o $@ -x c $< -x none $(DROPIN_LINK_CUDA)
# The generated tables are the same C for both backends.
runtime/libblink-nccl.so: bench/dgx1v_all.o runtime/libblink-nccl-cuda.a
	$(AM_V_CCLD)$(CC) $(SAN_CFLAGS) -shared -Wl,-z,defs -o $@ bench/dgx1v_all.o \
		$(DROPIN_LINK_CUDA)
DROPIN_SKU_CUDA = blink-nccl/libblink-nccl.so
blink-nccl/libblink-nccl.so: blink-nccl/plans.cu runtime/libblink-nccl-cuda.a
	$(dropin_cuda)
# The 2 x 4 DGX-1V cluster plan on the CUDA backend, for tools/gpu-check's emulated servers.
CLEANFILES += tests/nccl/libblink-nccl-cuda-2x4.so
tests/nccl/libblink-nccl-cuda-2x4.so: tests/nccl/cluster_2x4.cu runtime/libblink-nccl-cuda.a
	$(dropin_cuda)
endif

# `make blink-nccl [TOPO=builtin:dgx1v]`: the drop-ins for one server type, every allocation,
# tuned (about two CPU minutes for a DGX-1V), into blink-nccl/. Planned anew every time.
TOPO = builtin:dgx1v
blink-nccl/plans.cu: planner/blinkc blink-nccl-plan
	$(AM_V_GEN)mkdir -p blink-nccl && planner/blinkc -q --all-allocations -o $@ '$(TOPO)'
blink-nccl/libblink-nccl-host.so: blink-nccl/plans.cu runtime/libblink-nccl-host.a
	$(dropin_host)
blink-nccl: blink-nccl/libblink-nccl-host.so $(DROPIN_SKU_CUDA)
	@echo "blink-nccl/: the NCCL drop-ins for $(TOPO) (LD_PRELOAD=$$PWD/blink-nccl/libblink-nccl.so)"
blink-nccl-plan:
.PHONY: blink-nccl blink-nccl-plan
clean-local: clean-blink-nccl
clean-blink-nccl:
	rm -rf blink-nccl
.PHONY: clean-blink-nccl

# ---------------------------------------------------------------- tests
# test_nccl_abi: our nccl.h against NVIDIA's; test_nccl_symbols: what the drop-ins export;
# test_nccl_mpi: an NCCL-only MPI program (tests/nccl/nccl_client.c) under mpirun with the
# host drop-in in LD_PRELOAD, on DGX-1V allocations, DGX-1P and DGX-2.
UNIT_TESTS += tests/unit/test_nccl_abi tests/unit/test_nccl_symbols tests/unit/test_nccl_mpi
EXTRA_DIST += tests/nccl/abi_facts.c tests/nccl/abi_facts.h tests/nccl/nccl_client.c \
	tests/nccl/client_values.c tests/nccl/client_opts.c tests/nccl/client.h

ABI_FACTS_DEPS = $(top_srcdir)/tests/nccl/abi_facts.c $(top_srcdir)/tests/nccl/abi_facts.h
tests/nccl/abi_ours.$(OBJEXT): $(ABI_FACTS_DEPS) $(top_srcdir)/runtime/nccl/nccl.h
	$(AM_V_CC)mkdir -p tests/nccl && $(COMPILE) -I$(top_srcdir)/runtime/nccl \
		-DABI_TABLE=abi_ours -c -o $@ $(top_srcdir)/tests/nccl/abi_facts.c
CLEANFILES += tests/nccl/abi_ours.$(OBJEXT) tests/nccl/abi_real.$(OBJEXT)
tests_unit_test_nccl_abi_CPPFLAGS = $(AM_CPPFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_nccl_abi_LDADD = tests/nccl/abi_ours.$(OBJEXT) $(CRITERION_LIBS)
tests_unit_test_nccl_abi_DEPENDENCIES = tests/nccl/abi_ours.$(OBJEXT)

DROPIN_TEST_FLAGS = -DDROPIN_HOST='"$(abs_builddir)/runtime/libblink-nccl-host.so"' \
	-DDROPIN_CLUSTER='"$(abs_builddir)/tests/nccl/libblink-nccl-host-2x4.so"'
tests_unit_test_nccl_symbols_LDADD = $(CRITERION_LIBS) $(DL_LIBS)
tests_unit_test_nccl_symbols_DEPENDENCIES = runtime/libblink-nccl-host.so \
	tests/nccl/libblink-nccl-host-2x4.so

if HAVE_NCCL
tests/nccl/abi_real.$(OBJEXT): $(ABI_FACTS_DEPS)
	$(AM_V_CC)mkdir -p tests/nccl && $(COMPILE) -isystem $(CUDA_PREFIX)/include \
		-DABI_TABLE=abi_real -c -o $@ $(top_srcdir)/tests/nccl/abi_facts.c
tests_unit_test_nccl_abi_CPPFLAGS += -DHAVE_REAL_NCCL=1
tests_unit_test_nccl_abi_LDADD += tests/nccl/abi_real.$(OBJEXT)
tests_unit_test_nccl_abi_DEPENDENCIES += tests/nccl/abi_real.$(OBJEXT)
DROPIN_TEST_FLAGS += -DREAL_NCCL='"$(NCCL_LIBDIR)/libnccl.so"'
endif
if HAVE_NVCC
DROPIN_TEST_FLAGS += -DDROPIN_CUDA='"$(abs_builddir)/runtime/libblink-nccl.so"'
tests_unit_test_nccl_symbols_DEPENDENCIES += runtime/libblink-nccl.so
endif
tests_unit_test_nccl_symbols_CPPFLAGS = $(AM_CPPFLAGS) $(CRITERION_CFLAGS) $(DROPIN_TEST_FLAGS)

# The client is built against NVIDIA's nccl.h and libnccl.so where they are (a real NCCL
# program, whose calls LD_PRELOAD takes over), else against our header and the drop-in.
# Never with sanitizers: an instrumented drop-in is preloaded after libasan instead.
DROPIN_TESTS = tests/nccl/libblink-nccl-host-dgx1p.so tests/nccl/libblink-nccl-host-dgx2.so
CLEANFILES += tests/nccl/nccl_client $(DROPIN_TESTS)
tests/nccl/libblink-nccl-host-dgx1p.so: $(top_srcdir)/generated/dgx1p.cu runtime/libblink-nccl-host.a
	$(dropin_host)
tests/nccl/libblink-nccl-host-dgx2.so: $(top_srcdir)/generated/dgx2.cu runtime/libblink-nccl-host.a
	$(dropin_host)
if HAVE_NCCL
CLIENT_NCCL = -isystem $(CUDA_PREFIX)/include -L$(NCCL_LIBDIR) -lnccl -Wl,-rpath,$(NCCL_LIBDIR)
CLIENT_DEPS =
else
CLIENT_NCCL = -I$(top_srcdir)/runtime/nccl -Lruntime -l:libblink-nccl-host.so \
	-Wl,-rpath,$(abs_builddir)/runtime
CLIENT_DEPS = runtime/libblink-nccl-host.so
endif
# nccl_client's files by job (tests/nccl/client.h); users build them together with mpicc.
CLIENT_SRCS = $(top_srcdir)/tests/nccl/nccl_client.c $(top_srcdir)/tests/nccl/client_values.c \
	$(top_srcdir)/tests/nccl/client_opts.c
tests/nccl/nccl_client: $(CLIENT_SRCS) $(top_srcdir)/tests/nccl/client.h $(CLIENT_DEPS)
	$(AM_V_CCLD)mkdir -p tests/nccl && $(MPICC) -std=c11 $(WARN_CFLAGS) -O2 \
		-D_POSIX_C_SOURCE=200809L -o $@ $(CLIENT_SRCS) $(CLIENT_NCCL)

MPI_JOB_SOURCES = tests/unit/mpi_job.c tests/unit/mpi_job.h tests/unit/mpirun_util.c \
	tests/unit/mpirun_util.h
tests_unit_test_nccl_mpi_SOURCES = tests/unit/test_nccl_mpi.c $(MPI_JOB_SOURCES)
tests_unit_test_nccl_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(CRITERION_CFLAGS) \
	-DDROPIN_DGX1V='"$(abs_builddir)/runtime/libblink-nccl-host.so"' \
	-DDROPIN_DGX1P='"$(abs_builddir)/tests/nccl/libblink-nccl-host-dgx1p.so"' \
	-DDROPIN_DGX2='"$(abs_builddir)/tests/nccl/libblink-nccl-host-dgx2.so"' \
	-DDROPIN_SHIM_DGX1V='"$(abs_builddir)/tests/nccl/libblink-nccl-shim-dgx1v.so"' \
	-DSAN_PRELOAD='"$(SAN_PRELOAD)"'
tests_unit_test_nccl_mpi_LDADD = $(CRITERION_LIBS)
tests_unit_test_nccl_mpi_DEPENDENCIES = runtime/libblink-nccl-host.so $(DROPIN_TESTS) \
	tests/nccl/libblink-nccl-shim-dgx1v.so
if HAVE_MPI
MPI_JOB_FLAGS = -DNCCL_CLIENT='"$(abs_builddir)/tests/nccl/nccl_client"' -DMPIRUN='"$(MPIRUN)"'
tests_unit_test_nccl_mpi_DEPENDENCIES += tests/nccl/nccl_client
else
MPI_JOB_FLAGS = -DNCCL_CLIENT='"(not built: no mpicc)"'
endif
tests_unit_test_nccl_mpi_CPPFLAGS += $(MPI_JOB_FLAGS)
if HAVE_NCCL
tests_unit_test_nccl_mpi_CPPFLAGS += -DREAL_NCCL='"$(NCCL_LIBDIR)/libnccl.so.2"'
endif

# test_cluster_mpi: cluster plans of DGX-1V servers (blinkc --servers), the servers emulated
# here by BLINK_SERVER; it also links the 2 x 4 source itself, to read the plan's tables.
UNIT_TESTS += tests/unit/test_cluster_mpi
CLUSTER_GEN = tests/nccl/cluster_2x4.cu tests/nccl/cluster_4x3.cu tests/nccl/cluster_2x8.cu
CLUSTER_DROPINS = tests/nccl/libblink-nccl-host-2x4.so tests/nccl/libblink-nccl-host-4x3.so \
	tests/nccl/libblink-nccl-host-2x8.so
CLEANFILES += $(CLUSTER_GEN) $(CLUSTER_DROPINS) tests/nccl/cluster_2x4.$(OBJEXT)
tests/nccl/cluster_2x4.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/nccl && planner/blinkc -q builtin:dgx1v --servers 2 \
		--gpus 0-3,8-11 -o $@
tests/nccl/cluster_4x3.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/nccl && planner/blinkc -q builtin:dgx1v --servers 4 \
		--gpus 0-2,8-10,16-18,24-26 -o $@
tests/nccl/cluster_2x8.cu: planner/blinkc
	$(AM_V_GEN)mkdir -p tests/nccl && planner/blinkc -q builtin:dgx1v --servers 2 -o $@
tests/nccl/libblink-nccl-host-2x4.so: tests/nccl/cluster_2x4.cu runtime/libblink-nccl-host.a
	$(dropin_host)
tests/nccl/libblink-nccl-host-4x3.so: tests/nccl/cluster_4x3.cu runtime/libblink-nccl-host.a
	$(dropin_host)
tests/nccl/libblink-nccl-host-2x8.so: tests/nccl/cluster_2x8.cu runtime/libblink-nccl-host.a
	$(dropin_host)
tests/nccl/cluster_2x4.$(OBJEXT): tests/nccl/cluster_2x4.cu $(E2E_INCLUDES)
	$(AM_V_CC)$(E2E_CC) -DblinkCommInitAll=cluster_2x4_init -DblinkCommInitRank=cluster_2x4_rank \
		-DblinkPlanLibrary=cluster_2x4_lib -o $@ tests/nccl/cluster_2x4.cu
tests_unit_test_cluster_mpi_SOURCES = tests/unit/test_cluster_mpi.c $(MPI_JOB_SOURCES)
tests_unit_test_cluster_mpi_CPPFLAGS = $(RT_TEST_CPPFLAGS) $(MPI_JOB_FLAGS) \
	-DDROPIN_2X4='"$(abs_builddir)/tests/nccl/libblink-nccl-host-2x4.so"' \
	-DDROPIN_4X3='"$(abs_builddir)/tests/nccl/libblink-nccl-host-4x3.so"' \
	-DDROPIN_2X8='"$(abs_builddir)/tests/nccl/libblink-nccl-host-2x8.so"' \
	-DDROPIN_SHIM_2X4='"$(abs_builddir)/tests/nccl/libblink-nccl-shim-2x4.so"' \
	-DSAN_PRELOAD='"$(SAN_PRELOAD)"'
if HAVE_MPI_C
tests_unit_test_cluster_mpi_CPPFLAGS += -DMPI_SONAME='"$(MPI_SONAME)"'
endif
tests_unit_test_cluster_mpi_LDADD = tests/nccl/cluster_2x4.$(OBJEXT) runtime/libblinkrt-host.a \
	$(RT_NET_LIBS) $(CRITERION_LIBS) $(PTHREAD_LIBS) -lm
tests_unit_test_cluster_mpi_DEPENDENCIES = tests/nccl/cluster_2x4.$(OBJEXT) \
	runtime/libblinkrt-host.a $(CLUSTER_DROPINS) tests/nccl/libblink-nccl-shim-2x4.so
if HAVE_MPI
tests_unit_test_cluster_mpi_DEPENDENCIES += tests/nccl/nccl_client
endif

# test_nccl_api: one process, NCCL's API only, linked against the host drop-in; its hand-offs
# go to a stand-in for NVIDIA's libnccl (tests/nccl/fake_nccl.c).
UNIT_TESTS += tests/unit/test_nccl_api
EXTRA_DIST += tests/nccl/fake_nccl.c
CLEANFILES += tests/nccl/libfake-nccl.so
tests/nccl/libfake-nccl.so: $(top_srcdir)/tests/nccl/fake_nccl.c $(top_srcdir)/runtime/nccl/nccl.h
	$(AM_V_CCLD)mkdir -p tests/nccl && $(CC) -std=c11 $(WARN_CFLAGS) -shared -fPIC \
		-I$(top_srcdir)/runtime/nccl -o $@ $(top_srcdir)/tests/nccl/fake_nccl.c
tests_unit_test_nccl_api_CPPFLAGS = $(AM_CPPFLAGS) $(CRITERION_CFLAGS) -I$(top_srcdir)/runtime/nccl \
	-DFAKE_NCCL='"$(abs_builddir)/tests/nccl/libfake-nccl.so"'
if HAVE_MPI_C
tests_unit_test_nccl_api_CPPFLAGS += -DMPI_SONAME='"$(MPI_SONAME)"'
endif
tests_unit_test_nccl_api_LDFLAGS = $(AM_LDFLAGS) -Lruntime -Wl,-rpath,$(abs_builddir)/runtime
tests_unit_test_nccl_api_LDADD = -l:libblink-nccl-host.so $(CRITERION_LIBS) $(PTHREAD_LIBS) \
	$(DL_LIBS)
tests_unit_test_nccl_api_DEPENDENCIES = runtime/libblink-nccl-host.so tests/nccl/libfake-nccl.so
