#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# One-step set-up for a fresh Debian 12 machine: install what is missing, bootstrap, configure,
# build, then do one job.
#
#   ./build.sh demo    plan 3 GPUs of the built-in DGX-1V, then the whole server, and print both
#   ./build.sh check   run the whole test suite: a plain build, then an ASan+UBSan build (no nvcc), then
#                      the reader and planner tests under valgrind memcheck
#   ./build.sh build   only build (into ./build)
set -eu
cd "$(dirname "$0")"
job=${1:-demo}

PACKAGES="gcc g++ make autoconf automake libtool pkg-config libglpk-dev glpk-utils libxml2-dev
libhwloc-dev libhwloc-plugins hwloc libcriterion-dev groff-base mandoc graphviz gnuplot-nox locales
valgrind libopenmpi-dev openmpi-bin"

install_missing() {
    missing=
    for p in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "build.sh: installing:$missing"
    if [ "$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; else
        echo "build.sh: need root or sudo to install:$missing" >&2
        exit 1
    fi
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
}

# configure_only DIR [CONFIGURE ARGS...]: configure DIR once.
configure_only() {
    dir=$1; shift
    [ -x configure ] && [ configure -nt configure.ac ] && [ configure -nt Makefile.am ] ||
        autoreconf -fi
    mkdir -p "$dir"
    [ -f "$dir/Makefile" ] || (cd "$dir" && ../configure -q "$@")
}

# configure_build DIR [CONFIGURE ARGS...]: configure DIR once, then build everything.
configure_build() {
    configure_only "$@"
    make -C "$1" -s -j"$(nproc)"
}

# Criterion writes its summary into the per-test .log files under automake's harness.
show_results() {
    for log in "$1"/tests/unit/*.log; do
        [ -f "$log" ] || continue
        printf '%-28s ' "$(basename "$log" .log):"
        grep -h 'Synthesis' "$log" | tail -n 1 || echo "(no Criterion summary)"
    done
    grep -h -E '^# (TOTAL|PASS|FAIL|ERROR)' "$1/test-suite.log" 2>/dev/null || true
}

# run_check DIR [CONFIGURE ARGS...]: build DIR, then run `make $check_target` (check by default;
# a narrower target builds only what its tests need).
check_target=check
run_check() {
    dir=$1; shift
    if [ "$check_target" = check ]; then configure_build "$dir" "$@"; else configure_only "$dir" "$@"; fi
    status=0
    make -C "$dir" -s -j"$(nproc)" "$check_target" >/dev/null 2>&1 || status=$?
    echo "== test results ($dir${*:+, $*})"
    show_results "$dir"
    if [ "$status" != 0 ]; then
        echo "== failures ($dir):"
        cat "$dir/test-suite.log"
        exit "$status"
    fi
}

install_missing
case "$job" in
    demo)
        configure_build build
        # A job's share of a server first, where trees beat rings; then the whole server, where
        # the rings already use every link.
        echo "== 3 of the DGX-1V's 8 GPUs (0, 2, 3), as a scheduler hands them out:"
        echo "\$ blinkc --gpus 0,2,3 --collective broadcast --root 0 --collective allreduce builtin:dgx1v"
        ./build/planner/blinkc -q --gpus 0,2,3 --collective broadcast --root 0 --collective allreduce builtin:dgx1v
        echo
        echo "== The whole DGX-1V:"
        echo "\$ blinkc --collective broadcast --root 0 --collective allreduce builtin:dgx1v"
        ./build/planner/blinkc -q --collective broadcast --root 0 --collective allreduce builtin:dgx1v
        ;;
    check)
        run_check build
        # The plain build compiled and checked the CUDA sources; nvcc's device code gains
        # nothing from the host sanitizers, so the next two stages leave nvcc out.
        run_check build-san --enable-sanitizers --without-cuda
        # Only the reader and planner tests (tests/valgrind.mk); the first two ran the rest.
        check_target=check-valgrind
        run_check build-vg --enable-valgrind --without-cuda
        ;;
    build)
        configure_build build
        ;;
    *)
        echo "usage: ./build.sh [demo|check|build]" >&2
        exit 2
        ;;
esac
