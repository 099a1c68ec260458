#!/usr/bin/env bash
# The sanitizer lane, on the stable toolchain: the software-device (sw0) test suite and the
# examples under valgrind.
#
#   memcheck  the unit tests and every integration-test binary (tests/*.rs and tests/*/main.rs;
#             not the trybuild ui suite, not the doctests), one test at a time, a binary made of
#             modules (tests/typed/, tests/cm/, tests/raw/) one module at a time as a program of
#             its own (its label binary-module, e.g. typed-cq), then examples/demo.rs and the four
#             pingpong examples on sw0 (`--self`: server and client on two threads of one
#             process), polling and sleeping on completion events (-e). Zero errors: no invalid
#             access, no use of uninitialised memory, no definite or indirect leak
#             (scripts/valgrind/memcheck.supp names the leaks tests make on purpose).
#   helgrind  the same test programs, four tests at a time (so tests share the software device's
#             fabric and its RNR timer thread concurrently), and the four pingpong examples,
#             built with the feature `valgrind`, which tells helgrind the happens-before edges of
#             the crate's locks and of the software CQ's ring (src/sync.rs). Zero races and zero
#             lock-order or pthread-API errors; scripts/valgrind/helgrind.supp lists the false
#             positives of std's, libtest's and parking_lot's own synchronisation and of atomic
#             operations, each with the reason. A thread's accesses to its own stack frames are
#             not checked (--check-stack-refs=no, the reason where it is set).
#
# Usage: bash scripts/sanitize.sh [memcheck] [helgrind]   (default: both)
#   SANITIZE_TIMEOUT   seconds each program may run under valgrind (default 600)
# Prints PASS or FAIL per program with valgrind's error summary (the errors of a failure are
# printed), then a summary and the lane's duration; exits non-zero if anything failed. Full logs:
# target/sanitize/<tool>-<program>.log. Installs valgrind with apt if it is missing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=setup.sh
source scripts/setup.sh

tools=()
for a in "$@"; do
    case $a in
    memcheck | helgrind) tools+=("$a") ;;
    *) echo "usage: bash scripts/sanitize.sh [memcheck] [helgrind]" >&2; exit 2 ;;
    esac
done
[ "${#tools[@]}" -gt 0 ] || tools=(memcheck helgrind)

lane_start=$(date +%s)
# No backtraces: a test that panics on purpose would symbolize one, and std's symbolization
# cache is synchronised in ways helgrind does not see (and it is slow under valgrind).
export RUST_BACKTRACE=0
if ! command -v valgrind >/dev/null 2>&1; then
    echo "sanitize: installing valgrind"
    if [ "$(id -u)" -eq 0 ]; then SUDO=(); elif command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else
        echo "sanitize: valgrind is missing and this is not root: apt-get install valgrind" >&2
        exit 1
    fi
    "${SUDO[@]}" apt-get update -qq
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind >/dev/null
fi
echo "sanitize: $(valgrind --version), tools: ${tools[*]}"

OUT=target/sanitize
mkdir -p "$OUT"
timeout_s=${SANITIZE_TIMEOUT:-600}
# A proc-macro crate's test binary links std dynamically.
libdir=$(rustc --print target-libdir)
pass=0
fail=0
failed=()

# Builds the test binaries and the examples (debug: full debug info, debug assertions) and lists
# the test programs, "name path [filter]" per line, in $OUT/tests-<build>.txt: a binary of one
# file (tests/NAME.rs) as "NAME path"; a binary of modules (tests/NAME/main.rs) as one line per
# module, "NAME-MODULE path MODULE::" (libtest runs the tests whose path contains the filter: the
# module's own, since no test or module name contains another module's name followed by ::), so
# that each area keeps a timeout of its own and runs beside its own tests only, as when it was a
# binary of its own.
build() {
    local name=$1
    shift
    echo "sanitize: building the test binaries and the examples ($name)"
    if ! cargo test --workspace --lib --tests --no-run "$@" >"$OUT/build-$name.log" 2>&1 ||
        ! cargo build --examples "$@" >>"$OUT/build-$name.log" 2>&1; then
        tail -n 30 "$OUT/build-$name.log" >&2
        echo "sanitize: the build failed" >&2
        exit 1
    fi
    local n bin dir mods m
    sed -n 's/^ *Executable \(unittests src\/lib.rs\|tests\/\([A-Za-z0-9_]*\)\(\.rs\|\/main\.rs\)\) (\(.*\))$/\2 \4 \3/p' \
        "$OUT/build-$name.log" |
        awk '$1 != "ui" { if (NF == 1) { n = $1; sub(/.*\//, "", n); sub(/-[0-9a-f]+$/, "", n); print n "-unit " $1 } else print }' |
        while read -r n bin dir; do
            if [ "$dir" = /main.rs ]; then
                mods=$("$bin" --list 2>/dev/null | sed -n 's/^\([A-Za-z0-9_]*\)::.*: test$/\1/p' | sort -u)
                [ -n "$mods" ] || { echo "sanitize: tests/$n/main.rs lists no tests" >&2; exit 1; }
                for m in $mods; do echo "$n-$m $bin $m::"; done
            else
                echo "$n $bin"
            fi
        done >"$OUT/tests-$name.txt"
}

# run TOOL LABEL VALGRIND-OPTIONS... -- PROGRAM ARGS...
run() {
    local tool=$1 label=$2
    shift 2
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    local log=$OUT/$tool-$label.log start rc=0
    start=$(date +%s)
    LD_LIBRARY_PATH=$libdir timeout "$timeout_s" valgrind --tool="$tool" --error-exitcode=99 \
        --num-callers=40 --log-file="$log" "${opts[@]}" "$@" >"$OUT/$tool-$label.out" 2>&1 || rc=$?
    local summary secs=$(($(date +%s) - start))
    summary=$(grep -o 'ERROR SUMMARY: .*' "$log" | tail -n 1 || true)
    if [ "$rc" = 0 ]; then
        echo "PASS $tool $label (${secs}s) $summary"
        pass=$((pass + 1))
    else
        if [ "$rc" = 124 ]; then why="timed out after ${timeout_s}s"; elif [ "$rc" = 99 ]; then why="valgrind found errors"; else why="exit $rc"; fi
        echo "FAIL $tool $label ($why, ${secs}s) $summary"
        # valgrind's report without its banner, then the program's last lines.
        grep -v -E '^==[0-9]+== *$' "$log" | sed -n '/Possible data race\|Invalid \|uninitialised\|Conditional jump\|are definitely lost\|are indirectly lost\|Lock at\|lock order\|Thread #[0-9]*:.*\(unlocked\|error\)\|Syscall param\|Mismatched free/,$p' | head -n 150 | sed 's/^/  /' || true
        tail -n 15 "$OUT/$tool-$label.out" | sed 's/^/  | /' || true
        fail=$((fail + 1))
        failed+=("$tool $label")
    fi
}

# The examples: demo, then each pingpong polling and with -e, -n 200 exchanges on a receive
# queue of 16 (32 for srq's 16 QPs), so every ring wraps many times.
examples() {
    local tool=$1
    shift
    run "$tool" demo "$@" -- target/debug/examples/demo
    local p depth
    for p in rc uc ud srq; do
        depth=16
        [ "$p" = srq ] && depth=32
        run "$tool" "${p}_pingpong" "$@" -- target/debug/examples/${p}_pingpong --self -d sw0 -n 200 -r "$depth"
        run "$tool" "${p}_pingpong-e" "$@" -- target/debug/examples/${p}_pingpong --self -d sw0 -n 200 -r "$depth" -e
    done
    # The rdma_cm examples, server and client on two threads over the software device's CM.
    # rping, ucmatose and udaddy run under memcheck only: their --self mode hands the start from
    # the server's thread to the client's through std's mpsc channel (futex-based), whose
    # happens-before helgrind does not see, and helgrind reports hundreds of races on the
    # client's first reads of what the server's thread set up (not examined one by one). The CM
    # code itself is under helgrind through tests/cm/ (cm.rs, cm_raw.rs), two_node.rs and
    # cm_pingpong.
    if [ "$tool" = memcheck ]; then
        TYPED_VERBS_DEVICE=sw0 run "$tool" rping "$@" -- target/debug/examples/rping --self -C 10 -V
        TYPED_VERBS_DEVICE=sw0 run "$tool" ucmatose "$@" -- target/debug/examples/ucmatose --self -c 2 -C 10
        TYPED_VERBS_DEVICE=sw0 run "$tool" udaddy "$@" -- target/debug/examples/udaddy --self -c 2 -C 10
    fi
    run "$tool" cm_pingpong "$@" -- target/debug/examples/cm_pingpong --self -n 100
    # A service that survives its peer restarting: the transport's retries on the timer thread,
    # the flushes, ERR -> RESET -> connected again.
    run "$tool" reconnect "$@" -- target/debug/examples/reconnect --self --restarts 1 -d sw0 --port 18618
}

for tool in "${tools[@]}"; do
    tool_start=$(date +%s)
    case $tool in
    memcheck)
        build default
        opts=(--leak-check=full --show-leak-kinds=definite,indirect
            --errors-for-leak-kinds=definite,indirect --suppressions=scripts/valgrind/memcheck.supp)
        while read -r name bin filter; do
            # --fair-sched: a test's threads (a server and a client, the timer thread) spin on
            # their CQs; without it one can starve the others, as under helgrind.
            run memcheck "$name" "${opts[@]}" --fair-sched=yes -- "$bin" ${filter:+"$filter"} --test-threads=1
        done <"$OUT/tests-default.txt"
        # --fair-sched: the pingpong threads spin on their CQs; valgrind runs one thread at a time.
        examples memcheck "${opts[@]}" --fair-sched=yes
        ;;
    helgrind)
        build valgrind --features valgrind
        # --check-stack-refs=no: a thread's accesses within 16 KiB above its own stack pointer
        # are not race-checked. parking_lot's word lock (the lock of a bucket of its parking
        # table) parks a thread on a futex word in that thread's own stack frame; the thread
        # that wakes it stores to that word, then wakes it with a futex call, which helgrind
        # does not see as happens-before. Once the woken thread returns, any local that reuses
        # the slot is reported as racing with that store, from whatever function it is in, so no
        # suppression can name it (seen once on CI, in two_node). What is lost: a race between a
        # thread's own recent stack frames and another thread. Heap, statics, registered memory
        # and another thread's stack are still checked.
        opts=(--suppressions=scripts/valgrind/helgrind.supp --check-stack-refs=no)
        while read -r name bin filter; do
            # --fair-sched: tests wait for the RNR timer thread and spin on CQs; without it one
            # thread can starve the others under valgrind's one-thread-at-a-time scheduling.
            run helgrind "$name" "${opts[@]}" --fair-sched=yes -- "$bin" ${filter:+"$filter"} --test-threads=4
        done <"$OUT/tests-valgrind.txt"
        examples helgrind "${opts[@]}" --fair-sched=yes
        ;;
    esac
    echo "sanitize: $tool done in $(($(date +%s) - tool_start))s"
done

elapsed=$(($(date +%s) - lane_start))
if [ "$fail" = 0 ]; then
    echo "sanitize: $pass passed, 0 failed (${tools[*]}) in ${elapsed}s"
else
    echo "sanitize: $pass passed, $fail FAILED (${failed[*]}) in ${elapsed}s; logs in $OUT/" >&2
    exit 1
fi
