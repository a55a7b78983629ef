# SPDX-License-Identifier: GPL-3.0-or-later
# The runtime: libblinkrt-host, libblinkrt-cuda, their .pc files and tests.
# The runtime links neither GLPK nor hwloc nor libxml2: only libc, pthreads (and CUDA). It
# compiles against mpi.h but finds the program's MPI at run time (runtime/net/net_mpi.c).

# The runtime's folders, each a layer that includes and calls only from the layers before it
# (docs/architecture.md): include (the public API), core, plan, net, host and cuda (the two
# executors), handoff (the real NCCL), comm, and nccl (the drop-in) on top.
RT_DIRS = core plan net host cuda handoff comm
RT_SOURCES = \
	runtime/core/rt.h runtime/core/proto.h runtime/core/backend.h \
	runtime/core/errors.c runtime/core/env.c runtime/core/log.c runtime/core/log.h \
	runtime/core/proc.c runtime/core/proc.h runtime/core/trace.c runtime/core/trace.h \
	runtime/core/memreg.c \
	runtime/plan/library.c runtime/plan/plan_check.c runtime/plan/plan_expand.c \
	runtime/net/net.h runtime/net/net_edge.c runtime/net/net_edge.h \
	runtime/net/proxy.c runtime/net/proxy.h \
	runtime/handoff/nccl_real.c runtime/handoff/nccl_real.h runtime/handoff/nccl_call.c \
	runtime/comm/comm.c runtime/comm/roles.c runtime/comm/rendezvous.c runtime/comm/rendezvous.h \
	runtime/comm/rendezvous_mpi.c runtime/comm/rendezvous_mpi.h \
	runtime/comm/choose.c runtime/comm/call.c
if HAVE_MPI_C
RT_SOURCES += runtime/net/net_mpi.c
RT_MPI_CPPFLAGS = $(MPI_CFLAGS) -DBK_MPI_SONAME='"$(MPI_SONAME)"'
else
RT_SOURCES += runtime/net/net_none.c
endif
EXTRA_DIST += runtime/net/net_mpi.c runtime/net/net_none.c
RT_ABS_INCLUDES = $(RT_DIRS:%=-I$(abs_top_srcdir)/runtime/%)
RT_CPPFLAGS = -D_POSIX_C_SOURCE=200809L -I$(top_srcdir)/runtime/include \
	$(RT_DIRS:%=-I$(top_srcdir)/runtime/%) -I$(top_srcdir)/runtime/nccl $(RT_MPI_CPPFLAGS)

include_HEADERS = runtime/include/blink.h runtime/include/blink_plan.h
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = runtime/blinkrt-host.pc

lib_LIBRARIES = runtime/libblinkrt-host.a
runtime_libblinkrt_host_a_CPPFLAGS = $(RT_CPPFLAGS)
runtime_libblinkrt_host_a_SOURCES = $(RT_SOURCES) \
	runtime/host/backend_host.c runtime/host/exec_host.c runtime/host/exec_host.h \
	runtime/host/exec_host_step.c runtime/host/exec_host_flags.c runtime/host/exec_host_internal.h \
	runtime/host/exec_host_ll.c runtime/host/exec_host_ll.h \
	runtime/host/reduce_host.c runtime/host/reduce_host.h

# CUDA: the same core compiled with BLINK_BACKEND_CUDA, plus the nvcc-built backend
# (position-independent and hidden: libblink-nccl.so links the same object).
EXTRA_DIST += runtime/cuda/backend_cuda.cu runtime/cuda/kernel_cuda.cuh runtime/cuda/kernel_ll.cuh \
	runtime/cuda/kernel_fail.cuh runtime/cuda/kernel_moves.cuh \
	runtime/cuda/kernel_8_16bit.cu runtime/cuda/kernel_32bit.cu runtime/cuda/kernel_64bit.cu \
	runtime/cuda/kernel_args.h runtime/cuda/cuda_hostmem.cu runtime/cuda/cuda_hostmem.h \
	runtime/cuda/cuda_segs.cu runtime/cuda/backend_cuda.h \
	runtime/blinkrt-host.pc.in runtime/blinkrt-cuda.pc.in \
	runtime/blinkrt-host-uninstalled.pc.in runtime/blinkrt-cuda-uninstalled.pc.in
if HAVE_NVCC
lib_LIBRARIES += runtime/libblinkrt-cuda.a
pkgconfig_DATA += runtime/blinkrt-cuda.pc
runtime_libblinkrt_cuda_a_CPPFLAGS = $(RT_CPPFLAGS) -DBLINK_BACKEND_CUDA=1 -isystem $(CUDA_PREFIX)/include
runtime_libblinkrt_cuda_a_SOURCES = $(RT_SOURCES)
# The backend's host side, and the kernel in three objects by element width (kernel_cuda.cuh's
# lists): the kernels are nvcc's longest work (about 380 s in one object on one core here;
# 225 s for the widest of two at once), and make -j runs the objects at once.
RT_CUDA_OBJS = runtime/cuda/backend_cuda.$(OBJEXT) runtime/cuda/cuda_hostmem.$(OBJEXT) \
	runtime/cuda/cuda_segs.$(OBJEXT) \
	runtime/cuda/kernel_8_16bit.$(OBJEXT) \
	runtime/cuda/kernel_32bit.$(OBJEXT) runtime/cuda/kernel_64bit.$(OBJEXT)
runtime_libblinkrt_cuda_a_LIBADD = $(RT_CUDA_OBJS)
runtime_libblinkrt_cuda_a_DEPENDENCIES = $(RT_CUDA_OBJS)
NVCC_FLAGS = -O2 -std=c++14 -DBLINK_BACKEND_CUDA=1 $(RT_CPPFLAGS) $(NVCC_ARCH_FLAGS)
RT_CUDA_DEPS = $(top_srcdir)/runtime/cuda/kernel_cuda.cuh $(top_srcdir)/runtime/cuda/kernel_ll.cuh \
	$(top_srcdir)/runtime/cuda/kernel_fail.cuh $(top_srcdir)/runtime/cuda/kernel_moves.cuh \
	$(top_srcdir)/runtime/cuda/kernel_args.h $(top_srcdir)/runtime/core/trace.h \
	$(top_srcdir)/runtime/core/backend.h $(top_srcdir)/runtime/core/rt.h \
	$(top_srcdir)/runtime/core/proto.h $(top_srcdir)/runtime/core/log.h \
	$(top_srcdir)/runtime/net/proxy.h $(top_srcdir)/runtime/net/net_edge.h \
	$(top_srcdir)/runtime/cuda/cuda_hostmem.h $(top_srcdir)/runtime/cuda/backend_cuda.h \
	$(top_srcdir)/runtime/include/blink.h $(top_srcdir)/runtime/include/blink_plan.h
runtime/cuda/backend_cuda.$(OBJEXT): $(top_srcdir)/runtime/cuda/backend_cuda.cu $(RT_CUDA_DEPS)
runtime/cuda/cuda_hostmem.$(OBJEXT): $(top_srcdir)/runtime/cuda/cuda_hostmem.cu $(RT_CUDA_DEPS)
runtime/cuda/cuda_segs.$(OBJEXT): $(top_srcdir)/runtime/cuda/cuda_segs.cu $(RT_CUDA_DEPS)
runtime/cuda/kernel_8_16bit.$(OBJEXT): $(top_srcdir)/runtime/cuda/kernel_8_16bit.cu $(RT_CUDA_DEPS)
runtime/cuda/kernel_32bit.$(OBJEXT): $(top_srcdir)/runtime/cuda/kernel_32bit.cu $(RT_CUDA_DEPS)
runtime/cuda/kernel_64bit.$(OBJEXT): $(top_srcdir)/runtime/cuda/kernel_64bit.cu $(RT_CUDA_DEPS)
$(RT_CUDA_OBJS):
	$(AM_V_GEN)mkdir -p runtime/cuda && $(NVCC) $(NVCC_FLAGS) -Xcompiler -fPIC,-fvisibility=hidden \
		-c -o $@ $(top_srcdir)/runtime/cuda/$(@F:.$(OBJEXT)=.cu)
CLEANFILES += $(RT_CUDA_OBJS)
endif

# ---------------------------------------------------------------- runtime tests
RT_TEST_CPPFLAGS = $(RT_CPPFLAGS) -I$(top_srcdir)/tests/unit $(CRITERION_CFLAGS)
RT_TEST_LIBS = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a $(RT_NET_LIBS) $(CRITERION_LIBS) \
	$(PTHREAD_LIBS) -lm
RT_TESTS = \
	tests/unit/test_rt_api \
	tests/unit/test_rt_reduce \
	tests/unit/test_rt_coll \
	tests/unit/test_rt_styles \
	tests/unit/test_rt_fail \
	tests/unit/test_rt_wrap \
	tests/unit/test_rt_ll \
	tests/unit/test_rt_ranges \
	tests/unit/test_rt_align \
	tests/unit/test_rt_trace \
	tests/unit/test_rt_log
UNIT_TESTS += $(RT_TESTS)
EXTRA_DIST += tests/unit/rt_testutil.c tests/unit/rt_testutil.h

tests/unit/rt_testutil.$(OBJEXT): $(top_srcdir)/tests/unit/rt_testutil.c $(top_srcdir)/tests/unit/rt_testutil.h \
		$(top_srcdir)/runtime/include/blink.h $(top_srcdir)/runtime/include/blink_plan.h
	$(AM_V_CC)mkdir -p tests/unit && $(COMPILE) $(RT_TEST_CPPFLAGS) -c -o $@ $(top_srcdir)/tests/unit/rt_testutil.c
CLEANFILES += tests/unit/rt_testutil.$(OBJEXT)

tests_unit_test_rt_trace_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_trace_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_trace_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a \
	bench/blink-trace
tests_unit_test_rt_ranges_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_ranges_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_ranges_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_align_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_align_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_align_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_api_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_api_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_api_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_reduce_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_reduce_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_reduce_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_coll_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_coll_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_coll_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_styles_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_styles_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_styles_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_log_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_log_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_log_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_wrap_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_wrap_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_wrap_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_ll_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_ll_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_ll_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a
tests_unit_test_rt_fail_CPPFLAGS = $(RT_TEST_CPPFLAGS)
tests_unit_test_rt_fail_LDADD = $(RT_TEST_LIBS)
tests_unit_test_rt_fail_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a

# The CUDA backend's kernel on the CPU: g++ compiles kernel_cuda.cuh through tests/shim's
# cuda_shim.h into backend_shim.cc, a backend that test_rt_shim links before libblinkrt-host.a,
# so the runtime's core drives it (the linker never takes backend_host.o from the archive:
# backend_shim.o defines all that it would). No GPU, no CUDA headers.
UNIT_TESTS += tests/unit/test_rt_shim
tests_unit_test_rt_shim_SOURCES = tests/unit/test_rt_shim.c tests/shim/backend_shim.cc \
	tests/shim/cuda_shim.h
tests_unit_test_rt_shim_CPPFLAGS = $(RT_TEST_CPPFLAGS) -DBK_KERNEL_SHIM -I$(top_srcdir)/tests/shim
tests_unit_test_rt_shim_CXXFLAGS = -std=c++17 $(WARN_CXXFLAGS) $(SAN_CFLAGS)
tests_unit_test_rt_shim_LDADD = tests/e2e/dgx1v.o tests/e2e/rtx4090x8.o $(RT_TEST_LIBS)
tests_unit_test_rt_shim_DEPENDENCIES = tests/e2e/dgx1v.o tests/e2e/rtx4090x8.o \
	tests/unit/rt_testutil.$(OBJEXT) \
	runtime/libblinkrt-host.a

# The host's half of registered outputs on CUDA (kernel_reg.h), compiled as the shim compiles it.
UNIT_TESTS += tests/unit/test_kreg
tests_unit_test_kreg_SOURCES = tests/unit/test_kreg.cc
tests_unit_test_kreg_CPPFLAGS = $(tests_unit_test_rt_shim_CPPFLAGS)
tests_unit_test_kreg_CXXFLAGS = $(tests_unit_test_rt_shim_CXXFLAGS)
tests_unit_test_kreg_LDADD = $(RT_TEST_LIBS)
tests_unit_test_kreg_DEPENDENCIES = tests/unit/rt_testutil.$(OBJEXT) runtime/libblinkrt-host.a

# The same shim backend as an NCCL drop-in of the 2 x 4 cluster plan (test_cluster_mpi): the
# CUDA backend's kernel and its network proxy (proxy.c) across emulated servers, under mpirun.
noinst_LIBRARIES += tests/shim/libblink-nccl-shim.a
tests_shim_libblink_nccl_shim_a_CPPFLAGS = $(RT_CPPFLAGS) -DBK_KERNEL_SHIM -I$(top_srcdir)/tests/shim
tests_shim_libblink_nccl_shim_a_CFLAGS = $(SHIM_CFLAGS)
tests_shim_libblink_nccl_shim_a_CXXFLAGS = -std=c++17 $(WARN_CXXFLAGS) $(SAN_CFLAGS) -fPIC \
	-fvisibility=hidden
tests_shim_libblink_nccl_shim_a_SOURCES = $(RT_SOURCES) $(NCCL_SHIM_SOURCES) \
	runtime/host/reduce_host.c tests/shim/backend_shim.cc
# And of the DGX-1V plan (test_nccl_mpi): ranks in processes of one server, where parents
# write their children's registered outputs (kernel_reg.h).
SHIM_DROPIN_LINK = -Wl,-soname,libblink-nccl-shim.so -Wl,--whole-archive \
	tests/shim/libblink-nccl-shim.a -Wl,--no-whole-archive -lstdc++ $(PTHREAD_LIBS) $(DL_LIBS) -lm
CLEANFILES += tests/nccl/libblink-nccl-shim-2x4.so tests/nccl/libblink-nccl-shim-dgx1v.so
tests/nccl/libblink-nccl-shim-2x4.so: tests/nccl/cluster_2x4.cu tests/shim/libblink-nccl-shim.a
	$(AM_V_CCLD)$(CC) $(SAN_CFLAGS) -std=c11 -shared -fPIC -Wl,-z,defs \
		-I$(top_srcdir)/runtime/include -o $@ -x c $< -x none $(SHIM_DROPIN_LINK)
tests/nccl/libblink-nccl-shim-dgx1v.so: bench/dgx1v_all.o tests/shim/libblink-nccl-shim.a
	$(AM_V_CCLD)$(CC) $(SAN_CFLAGS) -shared -Wl,-z,defs -o $@ bench/dgx1v_all.o \
		$(SHIM_DROPIN_LINK)

# make check-tsan: the same kernel under ThreadSanitizer (tests/shim/tsan_main.c, no Criterion:
# its runner cannot start under TSan), with the runtime's core, the shim backend and rt_testutil
# all instrumented (uninstrumented, the rendezvous's atomics would look like no synchronization).
# Not part of make check: about 1.5 minutes on two busy cores.
TSAN_FLAGS = -fsanitize=thread -O1 -g
TSAN_CPPFLAGS = -D_POSIX_C_SOURCE=200809L -DBK_KERNEL_SHIM -I$(abs_top_srcdir)/runtime/include \
	$(RT_ABS_INCLUDES) -I$(abs_top_srcdir)/runtime/nccl \
	-I$(abs_top_srcdir)/tests/unit -I$(abs_top_srcdir)/tests/shim -I$(abs_top_builddir) \
	$(RT_MPI_CPPFLAGS)
TSAN_C = $(RT_SOURCES) runtime/host/reduce_host.c tests/unit/rt_testutil.c tests/shim/tsan_main.c
EXTRA_DIST += tests/shim/tsan_main.c
check-tsan:
	$(AM_V_GEN)rm -rf tests/shim/tsan && mkdir -p tests/shim/tsan && cd tests/shim/tsan && \
	for f in $(TSAN_C); do case $$f in *.c) echo "$(abs_top_srcdir)/$$f";; esac; done > c.list && \
	$(CC) -std=c11 $(TSAN_FLAGS) $(TSAN_CPPFLAGS) -c `cat c.list` && \
	$(CXX) -std=c++17 $(TSAN_FLAGS) -Wno-tsan $(TSAN_CPPFLAGS) \
		-c $(abs_top_srcdir)/tests/shim/backend_shim.cc && \
	$(CXX) $(TSAN_FLAGS) -o test_rt_shim_tsan *.o $(RT_NET_LIBS) $(PTHREAD_LIBS) -lm
	tests/shim/tsan/test_rt_shim_tsan
CLEANFILES += tests/shim/tsan/*.o tests/shim/tsan/c.list tests/shim/tsan/test_rt_shim_tsan
.PHONY: check-tsan
