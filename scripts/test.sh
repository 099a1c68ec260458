#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration, UI (trybuild, tests/ui.rs) and doc tests,
# then checks the build without default features, the build script under LTO C flags
# (scripts/build-script-check.sh) and the rust-version (scripts/msrv-check.sh),
# then the pingpong examples and the perftest-style tools on the software device
# (scripts/pingpong.sh, also with late ACKs; scripts/perf-self.sh), then the sanitizer
# lane: the sw0 tests and the examples under valgrind's memcheck and helgrind
# (scripts/sanitize.sh; TYPED_VERBS_NO_SANITIZE=1 leaves it out) and under Miri where a nightly
# toolchain has it (scripts/miri.sh, which says so and skips otherwise), then the runtime tests
# again on Soft-RoCE in a VM, with the examples against rdma-core's (scripts/rxe-lane.sh), then
# across a wire between two VMs (scripts/two-host-lane.sh; TYPED_VERBS_NO_VM=1 leaves both VM
# lanes out); after the rxe lane, the comparison with the Rust peers (scripts/peers.sh).
# Extra arguments go to `cargo test`, e.g. `bash scripts/test.sh ui` or
# `bash scripts/test.sh -- --nocapture`. Installs missing system packages first
# (see scripts/setup.sh). Exits non-zero if any test fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=setup.sh
source scripts/setup.sh

start=$(date +%s)
status=0
# TYPED_VERBS_TIDY=1 (.ci/run sets it): a step's scratch builds go once the step is done
# (trybuild's ui projects, the minimal-versions build, the VM image), so that the run's peak
# on the disk is lower; a developer's run keeps them for the next run.
tidy() {
    if [ "${TYPED_VERBS_TIDY:-0}" = 1 ]; then rm -rf "$@"; fi
}
# A whole run writes about 3 GB under target/ (printed at the end): say so up front when the
# disk has less, rather than failing half-way with "No space left on device".
mkdir -p target
free_mb=$(df -Pm target | awk 'NR == 2 { print $4 }')
if [ "${free_mb:-0}" -lt 4096 ]; then
    echo "typed-verbs: warning: only ${free_mb} MB free on the disk of target/; a whole test run needs about 3 GB" >&2
fi
cargo test --workspace "$@" || status=$?
tidy target/tests/trybuild
# Without the default features (the software device compiled out): the crate, its examples and
# its tests still build.
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ]; then
    cargo check --no-default-features --all-targets || status=$?
fi
# The build script under C flags with link-time optimisation (scripts/build-script-check.sh).
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ]; then
    bash scripts/build-script-check.sh || status=$?
fi
# rust-version is true: the lockfile's packages need no newer Rust, and the minimal versions
# Cargo.toml allows build (where a nightly toolchain can resolve them; SKIP otherwise).
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ]; then
    bash scripts/msrv-check.sh || status=$?
    tidy target/msrv-minimal
fi
# The tokio feature's tests: completion events awaited through tokio, owned handles moved into
# tokio tasks, rdma_cm events awaited by tasks (tests/cm/cm.rs's async tests): the modules
# ownership and events of tests/typed/ and cm of tests/cm/ (libtest's filters: tests whose path
# contains one of them).
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ]; then
    cargo test --features tokio --test typed --test cm -- ownership:: events:: cm:: || status=$?
fi
# The serde feature's tests (tests/serde.rs): the plain data a program sends its peer through
# JSON and back, bad input refused, endpoints read from JSON connecting two QPs.
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ]; then
    cargo test --features serde --test serde || status=$?
    # The wire forms' doctests exist only with the feature (the impls' docs), so the workspace
    # run above does not see them: the types that have one.
    if [ "$status" -eq 0 ]; then
        cargo test --features serde --doc -- Mtu Gid Endpoint RcParams RemoteMr RemoteAddr ||
            status=$?
    fi
fi
# The loom models of the teardown gates, the poller's claim and the software CQ's ring
# (docs/model-checking.md): `loom: N models, 0 failures`, then a past bug put back and caught.
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ]; then
    bash scripts/loom.sh || status=$?
    tidy target/loom
fi
# The pingpong examples on the software device, server and client in one process each.
if [ "$status" -eq 0 ]; then
    bash scripts/pingpong.sh -- -n 2000 || status=$?
fi
# rc_pingpong's sends through an extended QP (-N, ibv_wr_post(3)), checking every byte (-c), from
# an SGE (4096 bytes) and inline (16).
if [ "$status" -eq 0 ]; then
    bash scripts/pingpong.sh rc -- -N -c -n 1000 || status=$?
fi
if [ "$status" -eq 0 ]; then
    bash scripts/pingpong.sh rc -- -N -c -s 16 -n 1000 || status=$?
fi
# Again with the software device's ACKs 200 us late, polling and sleeping on events: an RC
# request then completes after the peer may have answered it, as on rxe.
if [ "$status" -eq 0 ]; then
    TYPED_VERBS_SW_ACK_DELAY_US=200 bash scripts/pingpong.sh -- -n 500 || status=$?
fi
if [ "$status" -eq 0 ]; then
    TYPED_VERBS_SW_ACK_DELAY_US=200 bash scripts/pingpong.sh -- -n 200 -e || status=$?
fi
# A service that survives its peer restarting (examples/reconnect.rs): the dead peer reported by
# the transport's retries, every slot back from the flush, ERR -> RESET -> connected again.
if [ "$status" -eq 0 ]; then
    cargo run -q --example reconnect -- --self --restarts 2 || status=$?
fi
# Endpoints and a remote region exchanged as JSON lines over TCP (examples/endpoint_tcp.rs, the
# serde feature): server and client on two threads, a send and an RDMA write checked.
if [ "$status" -eq 0 ]; then
    echo "typed-verbs: endpoint_tcp --self (serde: endpoints as JSON over TCP, on sw0)"
    cargo run -q --features serde --example endpoint_tcp -- --self || status=$?
fi
# The perftest-style tools on the software device: each runs and prints a table that parses.
if [ "$status" -eq 0 ]; then
    bash scripts/perf-self.sh || status=$?
fi
# The sanitizer lane: memcheck and helgrind, then Miri (a SKIP line where nightly lacks it).
if [ "$status" -eq 0 ] && [ "${TYPED_VERBS_NO_SANITIZE:-0}" != 1 ]; then
    bash scripts/sanitize.sh || status=$?
fi
if [ "$status" -eq 0 ] && [ "${TYPED_VERBS_NO_SANITIZE:-0}" != 1 ]; then
    bash scripts/miri.sh || status=$?
fi
# Then the same runtime tests on a real kernel RDMA device: rxe0 in a throw-away VM.
if [ "$status" -eq 0 ] && [ "${TYPED_VERBS_NO_VM:-0}" != 1 ]; then
    bash scripts/rxe-lane.sh || status=$?
    tidy target/rxe-vm/initrd.img
fi
# The comparison with ibverbs 0.9.2 and sideway 0.4.3 (docs/peers.md): every verdict and count of
# its tables checked again, the run-time ones on rxe0 in a VM (not with TYPED_VERBS_NO_VM=1).
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ]; then
    bash scripts/peers.sh || status=$?
    tidy target/peers
fi
# Then across a wire: two VMs, each with rxe0 over its NIC, joined by a link on 127.0.0.1.
if [ "$status" -eq 0 ] && [ "${TYPED_VERBS_NO_VM:-0}" != 1 ]; then
    bash scripts/two-host-lane.sh || status=$?
fi
elapsed=$(($(date +%s) - start))
echo "typed-verbs: target/ holds $(du -sh target 2>/dev/null | cut -f1) after the run"

if [ "$status" -eq 0 ]; then
    echo "typed-verbs: all tests passed in ${elapsed}s"
else
    echo "typed-verbs: tests FAILED (exit status $status of the first failing step above) after ${elapsed}s" >&2
fi
exit "$status"
