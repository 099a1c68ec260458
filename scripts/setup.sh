#!/usr/bin/env bash
# Makes a Debian/Ubuntu machine ready to build typed-verbs: installs the system packages that
# rdma-sys and build.rs need (only those that are missing) and checks that cargo is available.
# Safe to run any number of times. scripts/demo.sh and scripts/test.sh source it, so that the PATH
# it may extend (for cargo) carries over to them.
set -euo pipefail

# pkg-config, libibverbs-dev and librdmacm-dev: rdma-sys links libibverbs/librdmacm through
# pkg-config; libclang-dev: bindgen; libibverbs-dev also provides <infiniband/verbs.h> for
# build.rs's layout probe and pulls in libibverbs1 for run time; python3: scripts/msrv-check.sh
# reads cargo metadata with it.
PACKAGES=(pkg-config libibverbs-dev librdmacm-dev libclang-dev python3)

installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "typed-verbs: dpkg-query not found; this script supports Debian-based systems." >&2
    echo "typed-verbs: install these (or your distribution's equivalents) yourself: ${PACKAGES[*]}" >&2
    exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
    installed "$p" || missing+=("$p")
done

# apt_install WHO WHAT PACKAGE...: installs the packages with apt-get, as root or through sudo;
# without either, says (as WHO) to install WHAT as root, and exits.
apt_install() {
    local who=$1 what=$2
    shift 2
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "$who: not root and sudo is not available; install $what as root:" >&2
        echo "    apt-get install $*" >&2
        exit 1
    fi
    "${SUDO[@]}" apt-get update -qq
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

if [ "${#missing[@]}" -gt 0 ]; then
    echo "typed-verbs: installing missing system packages: ${missing[*]}"
    apt_install typed-verbs them "${missing[@]}"
    for p in "${missing[@]}"; do
        if ! installed "$p"; then
            echo "typed-verbs: package $p is still not installed" >&2
            exit 1
        fi
    done
fi

# rustup installs cargo into ~/.cargo/bin, which non-interactive shells may not have on PATH.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "typed-verbs: cargo not found (neither on PATH nor in \$HOME/.cargo/bin)." >&2
    echo "typed-verbs: install Rust 1.85 or newer, e.g. from https://rustup.rs" >&2
    exit 1
fi

# Disk: a whole test run builds the workspace several ways (tests, trybuild's ui projects, the
# minimal-versions check, the VM lanes), and a fresh CI machine's disk may be small. Line tables
# (file:line in backtraces and in valgrind's reports) instead of full debug info, and no
# incremental caches, take a clean run's target/ from about 9 GB to about 4.5, and .ci/run's
# tidying (scripts/test.sh) to 3.2 at its peak (scripts/test.sh prints what is left at the
# end). Both are the caller's to override, e.g. CARGO_PROFILE_DEV_DEBUG=2 for a debugger.
# Exported, so that trybuild's own cargo builds (ui tests) follow them too.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
