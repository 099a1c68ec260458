#!/usr/bin/env bash
# The comparison with the published Rust peers, ibverbs 0.9.2 and sideway 0.4.3 (docs/peers.md).
#
# peers/ is a workspace of its own (outside the crate's): one package per crate, each with the
# README's first program (examples/first.rs) and one example per misuse of peers/cases.tsv
# (examples/CASE.rs; no file where the crate has no API to write the misuse). This script:
#   1. checks every example of each package (`cargo check --examples --keep-going`); an example
#      that does not compile is "compile error", or "needs unsafe" when its only errors are E0133
#      (a call to an unsafe function outside `unsafe`), and every error must match the cell's
#      pattern in peers/expected.tsv; typed-verbs' compile-time programs are its UI tests' fail
#      cases (peers/typed-verbs/ui-tests.tsv names them): each must be the same as its UI test
#      after rustfmt, or the script stops before building;
#   2. builds the others and runs them: typed-verbs' on the software device sw0 here, and all
#      three crates' on Soft-RoCE (rxe0) in a throw-away qemu VM (the kernel and image of
#      scripts/rxe-lane.sh, scripts/vm-lib.sh), each program printing `PEER-VERDICT VERDICT WHAT`
#      (runtime-error, with the step under test and its error; silent; kept-alive), or
#      `SETUP-FAILED STEP: ERROR` when a step before the misuse fails (no verdict: the cell fails),
#      or stopping with a panic or a signal (panic, crash), or not ending within the time limit
#      of a program (hangs: stopped by a watchdog in the VM, by `timeout` here, which leave
#      `PEER-TIMEOUT`; not "crash");
#   3. checks each "no API" cell: the crate's source must not contain the verb named in
#      peers/expected.tsv;
#   4. counts the first program's lines (not blank, not comments; rustfmt's layout, checked) and
#      `unsafe` keywords;
#   5. prints the misuse matrix and the first program's costs (markdown), and fails if any
#      verdict or cost differs from peers/expected.tsv, or if docs/peers.md's tables are not the
#      ones expected.tsv gives (PEERS_WRITE_DOCS=1 rewrites them in docs/peers.md instead).
#
# Usage: bash scripts/peers.sh
#   PEERS_NO_VM=1 (or TYPED_VERBS_NO_VM=1)  no VM: the peers' run-time cells are "not run" (and
#                 not compared); typed-verbs' run on sw0 only
#   PEERS_PROGRAM_TIMEOUT  whole seconds a program may run (default 10: the slowest took 0.5 s in
#                 the VM on a loaded machine, see docs/peers.md), here and in the VM
#   PEERS_TIMEOUT  seconds the VM may run (default: 120 s to boot and set up rxe0, plus the
#                 program limit for each program, plus 60 s)
#   PEERS_LOCK_WAIT  seconds to wait for another VM run (/tmp/typed-verbs-vm.lock; default 1800)
# Outputs stay in target/peers/ (builds, check and run logs, the VM's console).
# Installs missing system packages first: those of scripts/setup.sh, cmake (both peers' -sys
# crates run cmake: ibverbs-sys over the rdma-core it vendors, for its bindings; rdma-mummy-sys,
# sideway's, for the loader it links), libnl-3-dev and libnl-route-3-dev (rdma-core's cmake), and
# for the VM those of scripts/rxe-lane.sh.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=setup.sh
source scripts/setup.sh
# shellcheck source=vm-lib.sh
source scripts/vm-lib.sh
# shellcheck source=lib/vm.sh
source scripts/lib/vm.sh
VM_NAME=peers
start=$(date +%s)

vm_need_packages cmake libnl-3-dev libnl-route-3-dev
use_vm=1
[ "${PEERS_NO_VM:-0}" != 1 ] && [ "${TYPED_VERBS_NO_VM:-0}" != 1 ] || use_vm=0
[ "$use_vm" = 0 ] || vm_need_packages qemu-system-x86 busybox-static kmod cpio iproute2 ibverbs-providers ibverbs-utils

OUT=target/peers
WORK=$OUT
rm -rf "$OUT/runs" && mkdir -p "$OUT/runs"
CRATES=(typed-verbs sideway-0.4.3 ibverbs-0.9.2)
MANIFEST=peers/Cargo.toml

# The programs are rustfmt's layout (the default one), so that their lines count alike.
command -v rustfmt >/dev/null && cargo fmt --version >/dev/null 2>&1 ||
    { echo "peers: rustfmt is missing (it checks the programs' layout): rustup component add rustfmt" >&2; exit 1; }
cargo fmt --manifest-path "$MANIFEST" --all --check >/dev/null ||
    { echo "peers: the programs in peers/ are not formatted: cargo fmt --manifest-path $MANIFEST --all" >&2; exit 1; }
# typed-verbs' compile-time programs are its UI tests' fail cases.
python3 peers/report.py ui-tests || exit 1
# peers/Cargo.lock pins typed-verbs' dependencies too: after the crate's Cargo.toml changes, it
# is out of date and every build below (--locked) would fail.
if ! lock_err=$(cargo metadata --locked --format-version 1 --manifest-path "$MANIFEST" 2>&1 >/dev/null); then
    echo "$lock_err" | tail -n 5 >&2
    if grep -q -- '--locked' <<<"$lock_err"; then
        echo "peers: peers/Cargo.lock is out of date (the crate's dependencies changed?): cargo update --manifest-path $MANIFEST -p typed-verbs" >&2
    else
        echo "peers: cargo metadata failed on $MANIFEST" >&2
    fi
    exit 1
fi

exe_of() { # exe_of CRATE NAME: the built executable of example NAME
    sed -n "s|.*\"executable\":\"\\([^\"]*/examples/$2\\)\".*|\\1|p" "$OUT/$1.build.json" | head -n 1
}

# 1 and 2. Check every example, then build those that compile (each crate in a target directory
# of its own: the packages' examples have the same names).
for crate in "${CRATES[@]}"; do
    pkg=peer-${crate%-[0-9]*}
    tdir=$OUT/$crate
    echo "peers: checking $crate's examples"
    CARGO_TARGET_DIR=$tdir cargo check --locked --manifest-path "$MANIFEST" -p "$pkg" --examples --keep-going \
        --message-format=json >"$OUT/$crate.check.json" 2>"$OUT/$crate.check.log" || true
    # (A check that did not run shows its log.)
    python3 peers/report.py compiled "$OUT/$crate.check.json" "peers/$crate/examples" >"$OUT/$crate.compiled" ||
        { tail -n 15 "$OUT/$crate.check.log" >&2; exit 1; }
    mapfile -t compiled <"$OUT/$crate.compiled"
    args=()
    for ex in "${compiled[@]}"; do args+=("--example=$ex"); done
    [ "${#args[@]}" -gt 0 ] || { echo "peers: $crate: no example compiles" >&2; exit 1; }
    echo "peers: building $crate's ${#args[@]} run-time programs"
    if ! CARGO_TARGET_DIR=$tdir cargo build --locked --manifest-path "$MANIFEST" -p "$pkg" "${args[@]}" \
        --message-format=json-render-diagnostics >"$OUT/$crate.build.json" 2>"$OUT/$crate.build.log"; then
        tail -n 30 "$OUT/$crate.build.log" >&2
        echo "peers: building $crate's programs failed" >&2
        exit 1
    fi
    # Stripped copies of the programs, which the runs use; with TYPED_VERBS_TIDY=1 (CI), the
    # crate's build goes now, so that the three builds (about 1 GB) are never on the disk at once.
    rm -rf "$OUT/bin/$crate" && mkdir -p "$OUT/bin/$crate"
    for ex in "${compiled[@]}"; do strip -o "$OUT/bin/$crate/$ex" "$(exe_of "$crate" "$ex")"; done
    [ "${TYPED_VERBS_TIDY:-0}" != 1 ] || rm -rf "$tdir"
done

per=${PEERS_PROGRAM_TIMEOUT:-10}
[[ $per =~ ^[1-9][0-9]*$ ]] || { echo "peers: PEERS_PROGRAM_TIMEOUT must be whole seconds, not '$per'" >&2; exit 1; }
# run OUTFILE PROGRAM: runs it ($per s at most, then TERM, and KILL 5 s later), its output and
# then "EXIT <status>" in OUTFILE, after "PEER-TIMEOUT $per" if `timeout` stopped it (124, or 137
# after the KILL, at the limit), which report.py reads as "hangs", as in the VM.
run() {
    local rc=0 t0=$SECONDS
    timeout -k 5 "$per" "$2" >"$1" 2>&1 || rc=$?
    if [ "$rc" = 124 ] || { [ "$rc" = 137 ] && [ $((SECONDS - t0)) -ge "$per" ]; }; then
        echo "PEER-TIMEOUT $per" >>"$1"
    fi
    echo "EXIT $rc" >>"$1"
}

# 2a. typed-verbs' programs on the software device.
mkdir -p "$OUT/runs/sw0/typed-verbs"
for exe in "$OUT"/bin/typed-verbs/*; do
    TYPED_VERBS_DEVICE=sw0 run "$OUT/runs/sw0/typed-verbs/${exe##*/}" "$exe"
done

# 2b. All three crates' programs on rxe0, in a VM.
if [ "$use_vm" = 1 ]; then
    CACHE=target/rxe-vm/cache # the kernel package, shared with the rxe lane
    ROOT=$OUT/vm-root
    mkdir -p "$CACHE"
    vm_kernel
    rm -rf "$ROOT"
    mkdir -p "$ROOT"/{bin,sbin,usr/bin,lib,lib64,etc/libibverbs.d,proc,sys,dev,tmp,peers}
    cp /bin/busybox "$ROOT/bin/busybox"
    provider=$(ls /usr/lib/"$multiarch"/libibverbs/librxe-rdmav*.so)
    vm_copy_with_libs /usr/bin/ip /usr/bin/rdma /usr/bin/ibv_devinfo "$provider"
    cp /etc/libibverbs.d/rxe.driver "$ROOT/etc/libibverbs.d/"
    for crate in "${CRATES[@]}"; do
        mkdir -p "$ROOT/peers/$crate"
        for exe in "$OUT/bin/$crate"/*; do
            vm_copy_libs "$exe"
            cp "$exe" "$ROOT/peers/$crate/"
        done
    done
    vm_modules rdma_rxe ib_uverbs crc32_generic dummy
    vm_init_start "$ROOT/init"
    cat >>"$ROOT/init" <<'INIT'
modprobe crc32_generic && modprobe dummy numdummies=0 && modprobe rdma_rxe && modprobe ib_uverbs &&
    ip link set lo up && ip link add dummy0 type dummy && ip link set dummy0 up &&
    ip addr add 10.0.0.1/24 dev dummy0 && rdma link add rxe0 type rxe netdev dummy0
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -e /dev/infiniband/uverbs0 ] && break; sleep 0.5; done
now() { cut -d' ' -f1 /proc/uptime; }
ibv_devinfo -d rxe0 >/dev/null && echo "PEERS: rxe0 up, $(now) s after boot"
echo "PEERS: kernel $(uname -r)"
# Each program runs for @PER@ seconds at most: a watchdog kills it then (and leaves a mark, so a
# program it killed is told from one killed by a signal of its own), and PEER-TIME is how long it
# ran (seconds, from /proc/uptime).
for p in /peers/*/*; do
    crate=${p%/*}
    crate=${crate##*/}
    name=${p##*/}
    rm -f /tmp/timedout
    t0=$(now)
    TYPED_VERBS_DEVICE=rxe0 "$p" >/tmp/out 2>&1 &
    pid=$!
    (sleep @PER@ && kill -0 $pid 2>/dev/null && touch /tmp/timedout && kill -9 $pid) &
    dog=$!
    wait $pid
    rc=$?
    kill $dog 2>/dev/null
    t1=$(now)
    sed "s|^|PEER-OUT $crate $name |" /tmp/out
    [ ! -e /tmp/timedout ] || echo "PEER-TIMEOUT $crate $name @PER@"
    echo "PEER-TIME $crate $name $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
    echo "PEER-EXIT $crate $name $rc"
done
echo "PEERS: DONE"
poweroff -f
INIT
    sed -i "s/@PER@/$per/g" "$ROOT/init"
    chmod +x "$ROOT/init"
    programs=$(find "$ROOT/peers" -type f | wc -l)
    vm_pack "$OUT/initrd.img"
    rm -rf "$ROOT"
    # Booting and bringing rxe0 up took 9 s at most under TCG (docs/peers.md): 120 s for it.
    limit=${PEERS_TIMEOUT:-$((120 + programs * per + 60))}
    console=$OUT/console.log
    vm_start=$(date +%s)
    echo "peers: booting Linux $kver under qemu (TCG, no NIC), $programs programs of ${per}s at most, limit ${limit}s; rdma-core $(dpkg-query -W -f='${Version}' libibverbs1) (this machine's libibverbs and rxe provider)"
    lock_wait=${PEERS_LOCK_WAIT:-1800}
    set +e
    flock -w "$lock_wait" /tmp/typed-verbs-vm.lock timeout -k 10 "$limit" qemu-system-x86_64 -accel tcg -cpu max -m 1024M -smp 2 \
        -nographic -nodefaults -serial stdio -nic none -no-reboot -kernel "$vmlinuz" -initrd "$OUT/initrd.img" \
        -append 'console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init' </dev/null >"$console" 2>&1
    vm_rc=$?
    set -e
    # flock -w exits 1 when it times out, before the VM starts (the console is then empty).
    if [ "$vm_rc" = 1 ] && [ ! -s "$console" ]; then
        echo "peers: another VM run held /tmp/typed-verbs-vm.lock for ${lock_wait}s (PEERS_LOCK_WAIT): not started" >&2
        exit 1
    fi
    [ "$vm_rc" != 124 ] || echo "peers: the VM ran out of its ${limit}s (PEERS_TIMEOUT)" >&2
    sed -i -e 's/\r$//' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' "$console"
    echo "peers: the VM ran $(($(date +%s) - vm_start))s (with the wait for the lock);$(sed -n 's/.*PEERS: rxe0 up,/ rxe0 up/p' "$console" | head -n 1)"
    grep -q 'PEERS: rxe0 up' "$console" || { tail -n 20 "$console" >&2; echo "peers: rxe0 did not come up in the VM" >&2; exit 1; }
    grep -q 'PEERS: DONE' "$console" || { tail -n 20 "$console" >&2; echo "peers: the VM did not finish (see $console)" >&2; exit 1; }
    # The console's lines back into one file per program, as for the runs here.
    python3 peers/report.py split-console "$console" "$OUT/runs/rxe0"
fi

# 3 to 5. Verdicts, counts, tables, comparison.
status=0
echo "peers: $(rustc -V)"
python3 peers/report.py report "$OUT" "$use_vm" || status=$?
echo "peers: done in $(($(date +%s) - start))s"
exit "$status"
