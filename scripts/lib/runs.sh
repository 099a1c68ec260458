# What scripts/pingpong.sh and scripts/perf-self.sh share: building examples in release mode,
# running each with a time limit into its log, counting PASS and FAIL, and the closing line.
#
# Sourced after scripts/setup.sh; the caller keeps `pass` and `fail` (both start at 0).
# shellcheck shell=bash

pass=0
fail=0

# build_release WHO EXAMPLE...: builds the examples in release mode, saying so as WHO.
build_release() {
    local who=$1
    shift
    echo "$who: building $* (release)"
    cargo build --release --quiet "${@/#/--example=}"
}

# run_logged LOG SECONDS COMMAND...: runs COMMAND for at most SECONDS, its output into LOG;
# sets `rc` to its exit status (124: timed out).
run_logged() {
    local log=$1 secs=$2
    shift 2
    rc=0
    timeout "$secs" "$@" >"$log" 2>&1 || rc=$?
}

# passed WHAT: counts a PASS.
passed() {
    echo "PASS $1"
    pass=$((pass + 1))
}

# failed LOG WHAT WHY: shows LOG and counts a FAIL (WHY unless the run timed out).
failed() {
    sed 's/^/  /' "$1"
    if [ "$rc" = 124 ]; then echo "FAIL $2 (timed out)"; else echo "FAIL $2 ($3)"; fi
    fail=$((fail + 1))
}

# summary WHO: the closing line; fails if any run failed.
summary() {
    echo "$1: $pass passed, $fail failed"
    [ "$fail" = 0 ]
}
