#!/usr/bin/env bash
# Runs the software-device (sw0) tests under Miri: the crate's unit tests and every
# integration-test binary (tests/NAME.rs, and tests/NAME/main.rs for a binary of modules) but the
# trybuild ui suite. Under Miri the device list is
# the software devices alone (src/device.rs: Miri cannot call into libibverbs).
#
# Miri needs a nightly toolchain with the miri component. Where there is none, this prints one
# SKIP line and exits 0: stable is the only toolchain every machine is sure to have. It never
# installs or downloads a toolchain or a component (`rustup component add --toolchain nightly
# miri` does, by hand).
#
# Usage: bash scripts/miri.sh [ARGS...]   ARGS go to `cargo miri test` after the test selection,
#   e.g. `bash scripts/miri.sh -- cq_shared`.
#   MIRIFLAGS      passed to Miri as usual (default: -Zmiri-strict-provenance)
#   MIRI_TIMEOUT   seconds the run may take (default 3600)
# Exits non-zero if Miri reports undefined behaviour or a test fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# rustup installs cargo into ~/.cargo/bin, which non-interactive shells may not have on PATH.
if ! command -v rustup >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/rustup" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
# Never let rustup fetch a missing toolchain as a side effect of the checks below.
export RUSTUP_AUTO_INSTALL=0

skip() {
    echo "miri: SKIP: $1; the sw0 tests did not run under Miri (needs: rustup toolchain install nightly --component miri)"
    exit 0
}

command -v rustup >/dev/null 2>&1 || skip "rustup not found"
rustup toolchain list 2>/dev/null | grep -q '^nightly' || skip "no nightly toolchain installed"
rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^miri' ||
    skip "the nightly toolchain has no miri component"
rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src' ||
    skip "the nightly toolchain has no rust-src component (Miri builds std from it)"

tests=()
for f in tests/*.rs tests/*/main.rs; do
    [ -f "$f" ] || continue
    case $f in
    */main.rs) t=$(basename "$(dirname "$f")") ;;
    *) t=$(basename "$f" .rs) ;;
    esac
    [ "$t" = ui ] || tests+=(--test "$t")
done

export MIRIFLAGS=${MIRIFLAGS:--Zmiri-strict-provenance}
start=$(date +%s)
echo "miri: $(cargo +nightly miri --version 2>/dev/null || echo miri), MIRIFLAGS=$MIRIFLAGS"
rc=0
TYPED_VERBS_DEVICE=sw0 timeout "${MIRI_TIMEOUT:-3600}" \
    cargo +nightly miri test --lib "${tests[@]}" "$@" || rc=$?
elapsed=$(($(date +%s) - start))
if [ "$rc" = 0 ]; then
    echo "miri: the sw0 tests passed under Miri in ${elapsed}s"
else
    [ "$rc" = 124 ] && echo "miri: timed out after ${MIRI_TIMEOUT:-3600}s" >&2
    echo "miri: FAILED (exit $rc) after ${elapsed}s" >&2
fi
exit "$rc"
