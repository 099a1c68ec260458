#!/usr/bin/env bash
# The loom models (docs/model-checking.md): the teardown gates and deferred destroys, the
# poller's claim and the software CQ's ring, checked for every interleaving of two or three
# threads with at most LOOM_MAX_PREEMPTIONS preemptions each (3 unless set; the two models
# where two threads may wait on the gates for a third take at most one, src/object/teardown.rs
# says why).
#
# Builds the crate's unit tests with `--cfg typed_verbs_loom` (src/sync.rs maps the locks and
# atomics to loom's; the crate's own cfg, as crossbeam's `crossbeam_loom`: `--cfg loom` would
# switch tokio, a dev-dependency, to its own loom build) in target/loom, so that the normal
# build is not touched, runs the `loom_models`
# modules and prints one line, `loom: N models, 0 failures` (N counted from the test harness).
# Then it puts a past bug back (the cfg `typed_verbs_mutant`, a handed teardown that does not
# close its gates again, in src/object/teardown.rs) and checks that a model fails, printing
# `loom: mutant NAME caught by MODEL`. Exits non-zero if a model fails, if none ran, or if the
# mutant is not caught.
#
# The lib's test binary is built with `cargo rustc --profile test` (the dev settings, the test
# harness): the mutant's cfg then goes to this crate alone, and the dependencies built for the
# first run serve the second. Unoptimised, the models run in about 20 s instead of 5, and the
# build takes about a minute instead of several.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
export RUSTFLAGS="--cfg typed_verbs_loom"
export CARGO_TARGET_DIR="$PWD/target/loom"
mkdir -p "$CARGO_TARGET_DIR"
log="$CARGO_TARGET_DIR/loom.log"

# Builds the lib's test binary with the extra rustc flags "$@" and prints its path.
build() {
    local json exe
    json=$(cargo rustc -q --lib --profile test --message-format=json -- "$@") || {
        echo "loom: the build failed" >&2
        cargo rustc --lib --profile test -- "$@" >&2 || true
        exit 1
    }
    exe=$(grep -o '"executable":"[^"]*"' <<<"$json" | tail -n 1 | sed 's/^"executable":"//; s/"$//')
    if [ -z "$exe" ] || [ ! -x "$exe" ]; then
        echo "loom: no test binary in cargo's output" >&2
        exit 1
    fi
    echo "$exe"
}

# The models: every test in a `loom_models` module.
exe=$(build)
status=0
"$exe" loom_models:: >"$log" 2>&1 || status=$?
passed=$(grep -c '^test .* \.\.\. ok$' "$log" || true)
failed=$(grep -c '^test .* \.\.\. FAILED$' "$log" || true)
echo "loom: $passed models, $failed failures"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then
    grep -E '^test |panicked|^thread' "$log" | head -n 40 >&2 || true
    echo "loom: see $log" >&2
    exit 1
fi

# The past bug put back: a model must fail. Only the teardown's models run (the bug is there).
mutant=handed_teardown_keeps_gates_open
exe=$(build --cfg "typed_verbs_mutant=\"$mutant\"")
mlog="$CARGO_TARGET_DIR/loom-mutant.log"
"$exe" object::teardown::loom_models:: >"$mlog" 2>&1 || true
caught=$(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$mlog" | paste -sd, - | sed 's/,/, /g')
# The model written for this bug must be among those that fail, for the gates' reason.
expected=object::teardown::loom_models::handed_teardown_closes_the_gates_again
if ! grep -qx "test $expected ... FAILED" "$mlog" || ! grep -qE 'a destroy with gate [0-9]+ open' "$mlog"; then
    echo "loom: mutant $mutant NOT caught by $expected (failed: ${caught:-none}; see $mlog)" >&2
    exit 1
fi
echo "loom: mutant $mutant caught by $caught"
