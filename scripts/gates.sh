#!/usr/bin/env bash
# The CI gates that run before the tests (.ci/run): formatting, clippy with every warning an
# error, and the documentation with every rustdoc warning an error (broken intra-doc links,
# missing docs). Each gate runs on the whole workspace and on every feature combination CI
# builds: the default features, all features (tokio, valgrind), no default features (without
# the software device). Exits non-zero at the first gate that fails, naming it.
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
echo "gates: all passed"
