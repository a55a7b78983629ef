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
# NCCL's names, so only --whole-archive keeps them).
DROPIN_LINK_HOST = -Wl,--whole-archive runtime/libblink-nccl-host.a -Wl,--no-whole-archive \
	$(PTHREAD_LIBS) $(DL_LIBS) -lm
dropin_host = $(AM_V_CCLD)$(CC) $(SAN_CFLAGS) -std=c11 -shared -fPIC -Wl,-z,defs \
	-I$(top_srcdir)/runtime/include -o $@ -x c $< -x none $(DROPIN_LINK_HOST)

noinst_DATA = runtime/libblink-nccl-host.so
CLEANFILES += runtime/libblink-nccl-host.so
runtime/libblink-nccl-host.so: tests/e2e/dgx1v_all.cu runtime/libblink-nccl-host.a
	$(dropin_host)

if HAVE_NVCC
pkgconfig_DATA += runtime/blink-nccl-cuda.pc
lib_LIBRARIES += runtime/libblink-nccl-cuda.a
runtime_libblink_nccl_cuda_a_CPPFLAGS = $(runtime_libblinkrt_cuda_a_CPPFLAGS)
runtime_libblink_nccl_cuda_a_CFLAGS = $(SHIM_CFLAGS)
runtime_libblink_nccl_cuda_a_SOURCES = $(RT_SOURCES) $(NCCL_SHIM_SOURCES)
runtime_libblink_nccl_cuda_a_LIBADD = runtime/src/backend_cuda_pic.$(OBJEXT)
runtime_libblink_nccl_cuda_a_DEPENDENCIES = runtime/src/backend_cuda_pic.$(OBJEXT)
runtime/src/backend_cuda_pic.$(OBJEXT): $(top_srcdir)/runtime/src/backend_cuda.cu \
		$(top_srcdir)/runtime/src/kernel_cuda.cuh \
		$(top_srcdir)/runtime/src/backend.h $(top_srcdir)/runtime/src/rt.h \
		$(top_srcdir)/runtime/include/blink.h
	$(AM_V_GEN)mkdir -p runtime/src && $(NVCC) $(NVCC_FLAGS) -Xcompiler -fPIC,-fvisibility=hidden \
		-c -o $@ $(top_srcdir)/runtime/src/backend_cuda.cu
CLEANFILES += runtime/src/backend_cuda_pic.$(OBJEXT) runtime/libblink-nccl.so
noinst_DATA += runtime/libblink-nccl.so
runtime/libblink-nccl.so: tests/e2e/dgx1v_all.cu runtime/libblink-nccl-cuda.a
	$(AM_V_CCLD)$(CC) -std=c11 -shared -fPIC -Wl,-z,defs -DBLINK_BACKEND_CUDA=1 \
		-isystem $(CUDA_PREFIX)/include -I$(top_srcdir)/runtime/include -o $@ -x c $< -x none \
		-Wl,--whole-archive runtime/libblink-nccl-cuda.a -Wl,--no-whole-archive \
		-L$(CUDA_PREFIX)/lib64 -lcudart -lstdc++ $(PTHREAD_LIBS) $(DL_LIBS) -lm
endif
