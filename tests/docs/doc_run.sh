#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# doc_run.sh DOC... - run every command that README.md and the man pages show, as written, in the
# order they show them, as a reader who follows them would: from a scratch copy of the source
# tree (its entries linked, `build` linked to the build tree), one shell per block, files left
# by one block there for the next. Shown runs ("$ command" and its output) must print the lines
# shown, in that order ("..." stands for lines left out).
#
# What this machine cannot do is said, not hidden: a command that needs GPUs and PyTorch, a
# second machine, nvcc or Open MPI where they are missing, a build of this very tree (the test
# runs inside it), or the reader's own program is skipped with the reason. `nvidia-smi topo -m`
# and `lstopo --of xml` print the DGX-1V's recorded outputs (topologies/dgx1v.smi.txt and
# dgx1v.hwloc.xml), since a machine without GPUs has nothing to show them.
# Environment: BLINKC_SRCDIR, BLINKC_BUILDDIR (as make check sets them). Exit status 0: every
# command that ran succeeded; 1 otherwise.
set -u
src=${BLINKC_SRCDIR:?} build=${BLINKC_BUILDDIR:?}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/blinkc-docs.XXXXXX) || exit 1
trap 'rm -rf "$work"; rm -f /dev/shm/blink-* 2>/dev/null' EXIT
for entry in "$src"/* "$src"/.[!.]*; do
    [ -e "$entry" ] || continue
    name=$(basename "$entry")
    [ "$name" = build ] || ln -s "$entry" "$work/$name"
done
ln -s "$build" "$work/build"

# Installed names (the man pages' `blinkc`) and the recorded outputs of GPU-only tools.
mkdir -p "$work/.bin"
ln -s "$build/planner/blinkc" "$work/.bin/blinkc"
cat > "$work/.bin/nvidia-smi" <<END
#!/bin/sh
[ "\$*" = "topo -m" ] && exec cat "$src/topologies/dgx1v.smi.txt"
echo "nvidia-smi: no GPU on this machine (doc_run.sh)" >&2; exit 9
END
real_lstopo=$(command -v lstopo || true)
cat > "$work/.bin/lstopo" <<END
#!/bin/sh
[ "\$*" = "--of xml" ] && exec cat "$src/topologies/dgx1v.hwloc.xml"
[ -n "$real_lstopo" ] && exec "$real_lstopo" "\$@"
exit 9
END
chmod +x "$work/.bin/nvidia-smi" "$work/.bin/lstopo"
export PATH="$work/.bin:$PATH"
unset PKG_CONFIG_PATH LD_PRELOAD BLINK_DEBUG
# CI runs as root, which Open MPI refuses unless told; a reader is not root.
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

failures=0 ran=0 skipped=0 queued=0

# Why COMMAND cannot run here, or nothing.
skip_reason() {
    case $1 in
    *torchrun*|*train.py*) echo "needs GPUs and PyTorch" ;;
    *--nnodes*|*host0:*) echo "needs a second machine" ;;
    ./build.sh*|*autoreconf*|*../configure*|make\ *|*"&& make"*)
        echo "builds this tree, which the test runs inside" ;;
    *app.c*) echo "compiles the reader's own program (app.c)" ;;
    *nvcc\ *) # make check exports BLINKC_NVCC, empty in a build configured --without-cuda
        if [ -n "${BLINKC_NVCC+set}" ] && [ -z "$BLINKC_NVCC" ]; then
            echo "this build was configured without CUDA"
        else
            command -v nvcc >/dev/null || echo "needs nvcc (the CUDA toolkit)"
        fi ;;
    *mpirun*|*mpicc*) command -v mpirun >/dev/null || echo "needs Open MPI (mpirun)" ;;
    esac
}

doc_block() {
    echo "== $1"
}

# Queue one command of the block; run_block runs the block's commands in one shell.
doc_cmd() {
    local at=$1 cmd=$2 why
    why=$(skip_reason "$cmd")
    if [ -n "$why" ]; then
        doc_skip "$at" "$why" "$cmd"
        return
    fi
    printf 'echo "run  %s"; t0=$SECONDS\n%s\necho "time %s: $((SECONDS - t0)) s"\n' "$at" "$cmd" "$at" \
        >> "$work/.block"
    queued=$((queued + 1))
}

doc_skip() {
    printf 'echo %q\n' "skip $1 ($2): ${3%%$'\n'*}" >> "$work/.block"
    skipped=$((skipped + 1))
}

doc_file() {
    printf '%s' "$3" > "$work/$2"
    echo "file $1: $2"
}

# The output of COMMAND must hold the shown lines in order ("..." skips any number).
doc_sample() {
    local at=$1 cmd=$2 want=$3 got line rest
    got=$(cd "$work" && timeout 600 bash -c "$cmd" 2>&1 < /dev/null)
    ran=$((ran + 1))
    rest=$got
    while IFS= read -r line; do
        line=${line%"${line##*[! ]}"}
        [ "$line" = "..." ] || [ -z "$line" ] && continue
        case $rest in
        *"$line"*) rest=${rest#*"$line"} ;;
        *) echo "FAIL $at: \$ $cmd"
           echo "  the documentation shows this line, which the run did not print (in order):"
           echo "  $line"
           echo "  the run printed:"; printf '%s\n' "$got" | sed 's/^/  | /' | head -n 40
           failures=$((failures + 1))
           return ;;
        esac
    done <<< "$want"
    echo "ok   $at: \$ $cmd"
}

# Run the block's queued commands in one shell, in order, stopping at the first failure. Each
# block gets a shell of its own, as a reader may open a new terminal: variables and functions do
# not carry over, files in the directory do.
run_block() {
    [ -s "$work/.block" ] || return 0
    local out status
    out=$(cd "$work" && timeout 900 bash -e -o pipefail "$work/.block" 2>&1 < /dev/null)
    status=$?
    ran=$((ran + queued))
    if [ $status -eq 0 ]; then
        printf '%s\n' "$out" | grep -E '^(skip|time) '
    else
        printf '%s\n' "$out" | grep -E '^(run|skip|time) '
        failures=$((failures + 1))
        echo "FAIL (exit $status): the last command run above; the block:"
        grep -v -E '^echo ("|skip)' "$work/.block" | sed 's/^/  > /'
        echo "  it printed (last 40 lines):"
        printf '%s\n' "$out" | grep -v -E '^(run|skip|time) ' | tail -n 40 | sed 's/^/  | /'
    fi
    : > "$work/.block"
    queued=0
}

for doc in "$@"; do
    case $doc in *.md) man=0 ;; *) man=1 ;; esac
    script=$(awk -v man=$man -f "$here/extract.awk" "$doc") || exit 1
    : > "$work/.block"
    while IFS= read -r -d $'\036' call; do
        call=${call#$'\n'}
        case $call in doc_cmd\ *) ;; *) run_block ;; esac
        eval "$call"
    done <<< "$script"
    run_block
done
echo "doc_run: $ran commands ran, $skipped skipped, $failures failed"
[ $failures -eq 0 ]
