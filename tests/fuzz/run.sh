#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# run.sh - `make fuzz`: run each libFuzzer harness for a bounded time on a fresh seed corpus.
#
#   run.sh SRCDIR WORKDIR SECONDS TARGET...
# WORKDIR (the build tree's tests/fuzz) holds the harnesses fuzz_TARGET. Seeds are copied at
# run time into WORKDIR/corpus/TARGET (which keeps what libFuzzer adds between runs) from
# SRCDIR/topologies, tests/data, templates, tests/fuzz/seeds/TARGET, tests/fuzz/regress/TARGET
# and every file of SRCDIR/../shared/fixtures whose content matches the target's format; the
# cluster seeds bundle each cluster file with the files it names, and the plan seeds are written
# by the blinkc named in $BLINKC. Nothing is copied into the source tree. Crashes, leaks and
# timeouts go to WORKDIR/crashes/TARGET/, libFuzzer's output to WORKDIR/logs/TARGET.log. Exits 1
# if any harness found something.
# FUZZ_KEEP_GOING=1 runs libFuzzer's fork mode (-fork=1 -ignore_crashes=1 ...), which saves each
# finding and goes on, for long campaigns past a known, not yet fixed crash.
set -u
src=$1 work=$2 secs=$3
shift 3
shared=$src/../shared/fixtures
status=0

# copy FILE... into the corpus dir $dir, skipping what is not a plain file
seed() {
    for f in "$@"; do
        test -f "$f" && cp -f "$f" "$dir/seed-$(basename "$f")"
    done
    return 0
}

# bundle CLUSTER: the cluster file and, each after a line "@file PATH", the files its servers
# name (fuzz_cluster.c reads them from memory)
bundle() {
    cdir=$(dirname "$1")
    awk '$1 == "server" && NF >= 3 { p = $3; gsub(/"/, "", p); print p }' "$1" |
        sort -u > "$dir/.paths"
    { cat "$1"
      while read -r p; do
          case $p in /*) f=$p ;; *) f=$cdir/$p ;; esac
          test -f "$f" && printf '\n@file %s\n' "$p" && cat "$f"
      done < "$dir/.paths"; } > "$dir/seed-$(basename "$1")"
    rm -f "$dir/.paths"
}

# pair FILE: a two-server cluster of FILE, in a bundle
pair() {
    test -f "$1" || return 0
    b=$(basename "$1")
    { printf 'cluster pair\nnic-speed 100Gb/s\nserver a %s\nserver b %s\n@file %s\n' "$b" "$b" "$b"
      cat "$1"; } > "$dir/seed-pair-$b"
}

# plans: plan files written by the blinkc just built ($BLINKC), small allocations and a cluster
plans() {
    test -x "${BLINKC:-}" || return 0
    for a in "dgx1v --gpus 0-3" "dgx1v --gpus 0,1 --collective broadcast --root 1" \
        "pcie8 --gpus 0-2" "dgx2 --gpus 0-2 --collective allgather" \
        "dgx1v --gpus 0-2 --no-tune --collective reducescatter" \
        "cluster-4x-dgx1v --gpus 0,1,8,9" \
        "hgx-h100 --gpus 0,1 --servers 2 --collective allreduce"; do
        # shellcheck disable=SC2086 # $a is the fixture and its options
        set -- $a
        n=$1
        shift
        "$BLINKC" -q "builtin:$n" "$@" -o /dev/null \
            --plan-json "$dir/seed-$(echo "$n $*" | tr -c 'a-z0-9\n' '-').json" ||
            echo "run.sh: no plan seed from blinkc builtin:$n $*" >&2
    done
    return 0
}

# shared fixtures by content: .topo by name, XML by its root element, smi by its header row,
# cluster files by their first statement, plan files by their format
shared_seeds() {
    test -d "$shared" || return 0
    find "$shared" -type f | sort | while read -r f; do
        case $1 in
        text) case $f in *.topo) seed "$f" ;; esac ;;
        hwloc) test "$(wc -c < "$f")" -le 65536 && grep -q '<topology' "$f" && seed "$f" ;;
        nccl) grep -q '<system' "$f" && seed "$f" ;;
        smi) grep -q '^[[:space:]]*GPU0' "$f" && ! grep -q '<' "$f" && seed "$f" ;;
        cluster) grep -q '^cluster[[:space:]]' "$f" && bundle "$f" ;;
        plan) grep -q '"blink-plan"' "$f" && seed "$f" ;;
        esac
    done
    return 0
}

for t in "$@"; do
    bin=$work/fuzz_$t
    dir=$work/corpus/$t
    mkdir -p "$dir" "$work/crashes/$t" "$work/logs"
    case $t in
    text) maxlen=16384 dict=text.dict; seed "$src"/topologies/*.topo ;;
    hwloc) maxlen=65536 dict=xml.dict; seed "$src"/topologies/*.hwloc.xml ;;
    nccl) maxlen=32768 dict=xml.dict; seed "$src"/topologies/*.nccl.xml "$src"/tests/data/nccl/* ;;
    smi) maxlen=8192 dict=smi.dict; seed "$src"/topologies/*.smi.txt "$src"/tests/data/smi/* ;;
    tmpl) maxlen=8192 dict=tmpl.dict; seed "$src"/templates/*.tmpl ;;
    cstr) maxlen=4096 dict=''; seed "$src"/topologies/*.smi.txt
          printf 'dgx1v' > "$dir/seed-name"; printf 'a"b\\c??/*/\n\342\200\256' > "$dir/seed-hostile" ;;
    cluster) maxlen=65536 dict=cluster.dict; seed "$src"/tests/fuzz/seeds/cluster/*
          for f in "$src"/tests/data/cluster/*.cluster; do bundle "$f"; done
          for f in dgx1v.topo dgx-a100.topo hgx-h100.topo dgx1v.smi.txt dgx1v.nccl.xml; do
              pair "$src/topologies/$f"
          done ;;
    plan) maxlen=65536 dict=plan.dict; seed "$src"/tests/fuzz/seeds/plan/*; plans ;;
    *) echo "run.sh: unknown fuzz target '$t'" >&2; status=1; continue ;;
    esac
    shared_seeds "$t"
    seed "$src"/tests/fuzz/regress/"$t"/*
    log=$work/logs/$t.log
    before=$(ls "$work/crashes/$t" | wc -l)
    echo "fuzz_$t: ${secs}s, corpus $dir ($(ls "$dir" | wc -l) files), log $log"
    # -rss_limit_mb and -timeout turn blow-ups into findings; UBSan already aborts (built with
    # -fno-sanitize-recover); leaks are checked after every input (-detect_leaks=1).
    keep=
    test "${FUZZ_KEEP_GOING:-0}" = 1 &&
        keep="-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"
    # shellcheck disable=SC2086 # $keep is a list of options
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} nice -n 10 "$bin" $keep \
        -max_total_time="$secs" -max_len="$maxlen" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -detect_leaks=1 -artifact_prefix="$work/crashes/$t/" \
        ${dict:+-dict="$src/tests/fuzz/$dict"} "$dir" > "$log" 2>&1
    rc=$?
    cov=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -n 1)
    execs=$(grep 'stat::number_of_executed_units' "$log" | sed 's/.*: *//')
    after=$(ls "$work/crashes/$t" | wc -l)
    # fork mode exits 0 after the time is up: new files under crashes/ are the findings
    test "$after" -gt "$before" && test $rc -eq 0 && rc=1
    if test $rc -eq 0; then
        echo "fuzz_$t: ok, ${execs:-?} executions; last: $cov"
    else
        status=1
        echo "fuzz_$t: FOUND SOMETHING (exit $rc), see $log and $work/crashes/$t/:"
        ls "$work/crashes/$t/"
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -n 5
    fi
done
exit $status
