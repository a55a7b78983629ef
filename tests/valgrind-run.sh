#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# valgrind-run.sh - automake's LOG_COMPILER under --enable-valgrind (tests/valgrind.mk): runs a
# reader or planner test program under memcheck, and any other test program as it is.
#
#   valgrind-run.sh VALGRIND SUPP "TEST..." PROGRAM [ARGS...]
# TEST... are the programs to check, as TESTS names them (matched by file name). Criterion runs
# each test in a worker process re-executed from the test binary, and tests run planner/blinkc,
# so valgrind follows children; programs outside the build tree (sh, groff, glpsol...) are left
# alone. Criterion ignores a worker's exit status once its test has passed, so --error-exitcode
# alone would miss an error inside a test body: every process logs to PROGRAM.vg/PID.log, and
# the run fails if any log counts an error (invalid access, uninitialised value, definite or
# indirect leak); those logs are copied into the test's .log. VALGRIND_FLAGS adds options, for
# example --track-origins=yes, or --gen-suppressions=all to draft a tests/valgrind.supp entry.
set -u
vg=$1 supp=$2 names=$3
shift 3
prog=$1
base=$(basename "$prog")
case " $names " in
*" $base "* | *"/$base "*) ;;
*) exec "$@" ;;
esac

# Absolute: children that change directory must still find it.
case $prog in
/*) logs=$prog.vg ;;
*) logs=$(pwd)/$prog.vg ;;
esac
rm -rf "$logs" && mkdir -p "$logs" || exit 99
# One test at a time: memcheck serialises each process anyway, and make -j already keeps the
# cores busy; the sanitizer builds do the same (Criterion's parallel runner leaks a block).
CRITERION_JOBS=1
# Tests that compare two runs byte for byte skip that check on this: memcheck slows GLPK so far
# that the ILP's wall-clock limits end its search at a different point on each run.
BLINKC_TEST_UNDER_VALGRIND=1
export CRITERION_JOBS BLINKC_TEST_UNDER_VALGRIND
# 99: automake's hard error for the test program; a blinkc it runs exits with 99 too, which no
# test expects of it.
# shellcheck disable=SC2086 # VALGRIND_FLAGS is a list of options
"$vg" --tool=memcheck --trace-children=yes \
    --trace-children-skip='/usr/*,/bin/*,/sbin/*' \
    --leak-check=full --show-leak-kinds=definite,indirect \
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
    --num-callers=30 --suppressions="$supp" --log-file="$logs/%p.log" \
    ${VALGRIND_FLAGS:-} "$@"
status=$?

# A log without a summary is a process that went on to exec a program valgrind skips.
bad=$(grep -l -E 'ERROR SUMMARY: [1-9]' "$logs"/*.log 2>/dev/null)
if [ -n "$bad" ]; then
    for f in $bad; do
        echo "== valgrind: $f"
        cat "$f"
    done
    echo "valgrind-run.sh: memcheck found errors in $base (logs in $logs)"
    [ "$status" = 0 ] && status=1
fi
exit "$status"
