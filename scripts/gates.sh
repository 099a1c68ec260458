#!/usr/bin/env bash
# The CI gates that run before the tests (.ci/run): formatting, clippy with every warning an
# error, the documentation with every rustdoc warning an error (broken intra-doc links,
# missing docs), packaging, and the documentation's coverage. Clippy runs on the whole
# workspace with every feature combination CI builds: the default features, all features
# (tokio, valgrind), no default features (without the software device). Exits non-zero at the
# first gate that fails, naming it.
#
# Usage: bash scripts/gates.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=setup.sh
source scripts/setup.sh

gate() { # gate NAME COMMAND...: runs one gate, prints its verdict
    local name=$1
    shift
    echo "gates: $name"
    if ! "$@"; then
        echo "gates: FAILED: $name ($*)" >&2
        exit 1
    fi
}

gate "rustfmt" cargo fmt --all --check
gate "clippy (default features)" cargo clippy --workspace --all-targets -- -D warnings
gate "clippy (all features)" cargo clippy --workspace --all-targets --all-features -- -D warnings
gate "clippy (no default features: without the software device)" cargo clippy --workspace --all-targets --no-default-features -- -D warnings
gate "rustdoc" env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features
# The packages as crates.io would take them: each packed and built from its package alone.
gate "packaging (cargo publish --dry-run --workspace)" cargo publish --dry-run --workspace --allow-dirty --quiet
# Every public item has an example and every fallible function an `# Errors` section (measured
# on rustdoc's JSON, which needs nightly: a SKIP line where there is none).
doc_coverage() {
    local out
    out=$(bash scripts/doc-coverage.sh -v) || return 1
    echo "$out"
    case $out in *SKIP*) return 0 ;; esac
    ! grep -qE '^(items with an example|fallible functions with # Errors): ([0-9]+)/([0-9]+)' <<<"$out" && return 1
    grep -E '^(items with an example|fallible functions with # Errors): ' <<<"$out" |
        awk -F'[ :/]+' '{ n = $(NF-2); d = $(NF-1); if (n != d) bad = 1 } END { exit bad }'
}
gate "documentation coverage (an example on every public item, # Errors on every fallible function)" doc_coverage
echo "gates: all passed"
