#!/usr/bin/env bash
# Checks that each package's `rust-version` is true:
#
# 1. Every package the lockfile resolves for a workspace member (its dependencies, build and
#    dev-dependencies, and theirs, all features on) declares a rust-version no newer than the
#    member's: a toolchain of that version builds from the checked-in Cargo.lock.
# 2. The oldest versions Cargo.toml allows build: in a scratch copy of the workspace, the
#    lockfile is resolved with `cargo +nightly update -Z minimal-versions` and the workspace is
#    checked (all targets, all features) on the default toolchain. Only where a nightly toolchain
#    is installed (nothing is downloaded); a SKIP line says so otherwise.
#
# A toolchain of the rust-version itself is not used: the machines have one stable toolchain.
# Run from scripts/test.sh; exits non-zero on failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v python3 >/dev/null 2>&1; then
    echo "msrv-check: python3 is needed to read cargo metadata" >&2
    exit 1
fi

echo "msrv-check: locked packages against each member's rust-version"
check_locked=$(
    cat <<'EOF'
import json, sys

meta = json.load(sys.stdin)
pkgs = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}


def version(v):
    parts = [int(x) for x in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


bad = 0
for member in meta["workspace_members"]:
    name = pkgs[member]["name"]
    own = pkgs[member].get("rust_version")
    if not own:
        print(f"msrv-check: {name} declares no rust-version")
        bad += 1
        continue
    # The member's own dev-dependencies are built for its tests; a dependency's never are.
    seen, todo = set(), [(member, True)]
    while todo:
        pid, is_member = todo.pop()
        for dep in nodes[pid]["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if not is_member and kinds <= {"dev"}:
                continue
            if dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                todo.append((dep["pkg"], False))
    newer = []
    for pid in sorted(seen):
        p = pkgs[pid]
        rv = p.get("rust_version")
        if rv and version(rv) > version(own):
            newer.append(f"{p['name']} {p['version']} needs Rust {rv}")
    for n in newer:
        print(f"msrv-check: {name} (rust-version {own}) locks {n}")
    if not newer:
        print(f"msrv-check: {name}: {len(seen)} locked packages, none needs more than Rust {own}")
    bad += len(newer)
sys.exit(1 if bad else 0)
EOF
)
cargo metadata --format-version 1 --locked --all-features | python3 -c "$check_locked"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "SKIP msrv-check minimal-versions: no nightly toolchain installed"
    exit 0
fi

echo "msrv-check: the minimal versions Cargo.toml allows, checked on $(cargo --version)"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The workspace's files as they are now (tracked and new ones, not the build output).
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && cp --parents -- "$f" "$scratch/"
done
(
    cd "$scratch"
    cargo +nightly update -Z minimal-versions --quiet
    # A target directory of its own that survives the scratch copy, so later runs are incremental.
    CARGO_TARGET_DIR="$OLDPWD/target/msrv-minimal" \
        cargo check --workspace --all-targets --all-features --locked --quiet
)
echo "msrv-check: minimal versions build"
