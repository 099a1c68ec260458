#!/usr/bin/env bash
# The real-kernel lane: runs the crate's runtime test binaries against a real kernel RDMA device,
# Soft-RoCE (rdma_rxe), inside a throw-away qemu VM that boots Debian's generic kernel.
#
# This machine's kernel need not have RDMA: the kernel package is downloaded with apt (never
# installed on the host), its rxe modules go into an initramfs with the test binaries, the
# rxe provider and rdma-core's pingpong programs, and qemu boots it under TCG with no NIC, so
# nothing leaves the VM. Inside, rxe0 is created over a dummy netdev and every test binary runs
# with TYPED_VERBS_DEVICE=rxe0; then rdma-core's own ibv_{rc,uc,ud,srq}_pingpong run as a health
# check of the lane, so a broken lane is told apart from a broken crate. Last, the crate's examples
# rc_pingpong, uc_pingpong, ud_pingpong and srq_pingpong run against rdma-core's program of the
# same name both ways (the example as server and ibv_*_pingpong as client, then the other way
# round, then once more with the example sleeping on completion events, -e), -n 100 each, every
# run bounded by a timeout; rc_pingpong -N -c (its sends through an extended QP) runs against
# ibv_rc_pingpong both ways at 4096 and 16 bytes, and three probes report (NOTE lines, not
# verdicts) what rdma-core's own -N -s 16 -c sends on rxe (see the steps). The image also holds the kernel's rdma_cm (rdma_ucm and what it needs),
# rdmacm-utils and perftest: rping, ucmatose, udaddy and ib_send_bw run once as health checks of
# rdma_cm and perftest in the VM, and the tests get TYPED_VERBS_CM_ADDR=10.0.0.1 (rxe0's address).
# Last, scripts/guest/perf-compare.sh runs perftest's ib_send_bw, ib_write_bw, ib_send_lat and
# ib_write_lat and the typed tools (tv_*, release builds) alternately on rxe0, the typed tools in
# both posting methods (by default the extended QP's ibv_wr_*, and once per size with
# --use_old_post_send, ibv_post_send, perftest's own method on rxe), and prints one table of
# ratios with both (step perf-compare: passes when every run ran and parsed; ratios reported, not
# gated, unless grossly off at most sizes: see the script's header).
#
# Usage: bash scripts/rxe-lane.sh [--keep-going]
#   RXE_LANE_TIMEOUT   seconds the VM may run (default 600: the perftest comparison takes one and
#                      a quarter to four minutes, by the machine's load)
#   RXE_LANE_EXTRA     more programs (host paths, space-separated) to run in the VM like tests
#   RXE_LANE_PERF_ONLY =1: only rxe0 and the perftest comparison (for measuring)
#   PERF_*             passed to scripts/guest/perf-compare.sh in the VM (PERF_REPS, PERF_ITERS, ...)
#   RXE_LANE_ONLY      test binaries (space-separated: NAME for tests/NAME.rs or for the binary
#                      of modules tests/NAME/main.rs, e.g. typed, cm, raw, differential) to run,
#                      alone: the other test binaries, the examples, the health, interop and
#                      rdma_cm steps and the perftest comparison are left out (unset: everything
#                      runs, as always)
#   RXE_LANE_ENV       NAME=VALUE words (space-separated) set for the test binaries in the VM,
#                      e.g. "TYPED_VERBS_DIFF_SEED=1365 TYPED_VERBS_DIFF_SEQUENCES=1"
# Prints one line per binary and per health check, and a summary; exits non-zero if any failed.
# The console log and per-binary outputs stay in target/rxe-vm/. The kernel package is cached in
# target/rxe-vm/cache and reused by later runs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=setup.sh
source scripts/setup.sh

# shellcheck source=vm-lib.sh
source scripts/vm-lib.sh
# shellcheck source=lib/vm.sh
source scripts/lib/vm.sh
VM_NAME=rxe-lane

lane_start=$(date +%s)
vm_need_packages qemu-system-x86 busybox-static kmod cpio iproute2 ibverbs-providers ibverbs-utils

WORK=target/rxe-vm
CACHE=$WORK/cache
ROOT=$WORK/root
mkdir -p "$CACHE"

# 1. The kernel (scripts/vm-lib.sh).
vm_kernel

# 2. The test binaries: the integration tests (the trybuild ui suite needs cargo and stays on
#    the host), with the tokio feature, so that its tests (events and CM ids awaited by tasks)
#    run on rxe0 too.
echo "rxe-lane: building the test binaries"
if ! cargo test --tests --no-run --features tokio >"$WORK/build.log" 2>&1; then
    tail -n 30 "$WORK/build.log" >&2
    echo "rxe-lane: building the test binaries failed" >&2
    exit 1
fi
# "name path" per binary: tests/NAME.rs or tests/NAME/main.rs (a binary of modules, one per area).
mapfile -t tests < <(sed -n 's/^ *Executable tests\/\([A-Za-z0-9_]*\)\(\.rs\|\/main\.rs\) (\(.*\))$/\1 \3/p' "$WORK/build.log" | grep -v '^ui ')
[ "${#tests[@]}" -gt 0 ] || { echo "rxe-lane: no test binaries found" >&2; exit 1; }
only=${RXE_LANE_ONLY:-}
if [ -n "$only" ]; then
    kept=()
    for name in $only; do
        found=
        for t in "${tests[@]}"; do
            [ "${t%% *}" = "$name" ] && { kept+=("$t"); found=1; }
        done
        [ -n "$found" ] || { echo "rxe-lane: RXE_LANE_ONLY: no test binary $name" >&2; exit 1; }
    done
    tests=("${kept[@]}")
    echo "rxe-lane: only ${tests[*]%% *} (RXE_LANE_ONLY); no health or interop steps"
fi
lane_env=${RXE_LANE_ENV:-}
for word in $lane_env; do
    [[ $word =~ ^[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.,:/+-]*$ ]] ||
        { echo "rxe-lane: RXE_LANE_ENV: not NAME=VALUE (plain characters): $word" >&2; exit 1; }
done
# The examples that interoperate with rdma-core's ibv_*_pingpong (debug build, like the tests).
PINGPONGS=(rc_pingpong uc_pingpong ud_pingpong srq_pingpong)
[ -z "$only" ] || PINGPONGS=()
examples=()
if [ "${#PINGPONGS[@]}" -gt 0 ]; then
    echo "rxe-lane: building the pingpong examples"
    vm_build examples "pingpong examples" build-examples "${PINGPONGS[@]/#/--example=}"
fi
# The perftest-style tools, measured against perftest in the VM (scripts/guest/perf-compare.sh):
# a release build, as perftest's is.
PERF_TOOLS=(tv_send_bw tv_write_bw tv_send_lat tv_write_lat)
echo "rxe-lane: building the perftest-style tools (release)"
vm_build perf_tools "perftest-style tools" build-perf --release "${PERF_TOOLS[@]/#/--example=}"
examples+=("${perf_tools[@]}")

# --- The rdma_cm examples (rping, ucmatose, udaddy), run against rdmacm-utils' programs in the VM. ---
CM_EXAMPLES=(rping ucmatose udaddy cm_pingpong reconnect)
echo "rxe-lane: building the rdma_cm examples"
vm_build cm_examples "rdma_cm examples" build-cm-examples "${CM_EXAMPLES[@]/#/--example=}"
# Stripped copies (a debug build is 12 MB; the initramfs must unpack in the VM's memory).
mkdir -p "$WORK/cm-examples"
for ex in "${cm_examples[@]}"; do
    strip -o "$WORK/cm-examples/${ex##*/}" "$ex"
    examples+=("$WORK/cm-examples/${ex##*/}")
done
# --- end of the rdma_cm examples' build ---

# 3. The initramfs.
rm -rf "$ROOT" "${ROOT}target" # the second: stray copies an older version of this script left
mkdir -p "$ROOT"/{bin,sbin,usr/bin,lib,lib64,etc/libibverbs.d,proc,sys,dev,tmp,tests,examples}
cp /bin/busybox "$ROOT/bin/busybox"

provider=$(ls /usr/lib/"$multiarch"/libibverbs/librxe-rdmav*.so)
vm_copy_with_libs /usr/bin/ip /usr/bin/rdma /usr/bin/ibv_devices /usr/bin/ibv_devinfo \
    /usr/bin/ibv_rc_pingpong /usr/bin/ibv_uc_pingpong /usr/bin/ibv_ud_pingpong \
    /usr/bin/ibv_srq_pingpong "$provider"
cp /etc/libibverbs.d/rxe.driver "$ROOT/etc/libibverbs.d/"
# rdma-core's rdma_cm programs (rdmacm-utils: rping, ucmatose, udaddy) and perftest (ib_send_bw,
# ib_write_lat, ...): their Debian packages and the libraries they add (libibumad3, libpci3) are
# downloaded and unpacked into the image, never installed on this machine.
vm_debs rdmacm-utils perftest libibumad3 libpci3
rm -rf "$ROOT/usr/share" # documentation and man pages
# Their libraries that this machine has (libc, libibverbs, librdmacm, libudev, zlib, ...); the
# unpacked ones are found in the image first.
vm_copy_libs "$ROOT"/usr/bin/*
for extra in ${RXE_LANE_EXTRA:-}; do
    tests+=("$(basename "$extra") $(readlink -f "$extra")")
done
# The crate's own programs go to /tests and /examples only (cargo prints their paths relative to
# the workspace; copying them to "$ROOT$path" as well left a second copy of every test binary
# under target/rxe-vm/roottarget).
for t in "${tests[@]}"; do
    name=${t%% *}
    bin=${t#* }
    vm_copy_libs "$bin"
    cp "$bin" "$ROOT/tests/$name"
done
for ex in ${examples[@]+"${examples[@]}"}; do
    vm_copy_libs "$ex"
    cp "$ex" "$ROOT/examples/${ex##*/}"
done
cp scripts/guest/perf-compare.sh "$ROOT/bin/perf-compare.sh"
cp scripts/guest/pp-chk.sh "$ROOT/bin/pp-chk.sh"
# RXE_LANE_PERF_ONLY=1: only rxe0 and the perftest comparison (for measuring).
[ "${RXE_LANE_PERF_ONLY:-0}" = 1 ] && touch "$ROOT/etc/lane-perf-only"
# PERF_* variables of this environment (PERF_REPS, PERF_ITERS, ...) reach perf-compare.sh.
env | sed -n 's/^\(PERF_[A-Z_]*\)=\(.*\)$/export \1="\2"/p' >"$ROOT/etc/perf-compare.env"
# The modules the init loads, with every module they depend on (the kernel's modules.dep):
# rdma_ucm brings rdma_cm, ib_cm, iw_cm and configfs; crc32_generic is asked for at run time.
vm_modules rdma_rxe ib_uverbs crc32_generic dummy rdma_ucm

vm_init_start "$ROOT/init"
cat >>"$ROOT/init" <<'INIT'
step() { # step NAME COMMAND...: one LANE line per step
    name=$1
    shift
    if "$@"; then echo "LANE: PASS $name"; else echo "LANE: FAIL $name (exit $?)"; fi
}
up() {
    modprobe crc32_generic &&
        modprobe dummy numdummies=0 &&
        modprobe rdma_rxe &&
        modprobe ib_uverbs &&
        modprobe rdma_ucm &&
        /usr/bin/ip link set lo up &&
        /usr/bin/ip link add dummy0 type dummy &&
        /usr/bin/ip link set dummy0 up &&
        /usr/bin/ip addr add 10.0.0.1/24 dev dummy0 &&
        /usr/bin/rdma link add rxe0 type rxe netdev dummy0 &&
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            [ -e /dev/infiniband/uverbs0 ] && [ -e /dev/infiniband/rdma_cm ] && break
            sleep 0.5
        done &&
        ibv_devinfo -d rxe0 >/dev/null
}
step rxe0 up
ibv_devinfo -d rxe0 -v 2>&1 | grep -E 'vendor_id|vendor_part_id|max_cqe|max_qp_wr|num_comp_vectors|active_mtu' | head -n 6
if [ -e /etc/lane-perf-only ]; then
    . /etc/perf-compare.env
    step perf-compare perf-compare.sh both
    echo "LANE: DONE"
    poweroff -f
fi
for t in /tests/*; do
    name=${t##*/}
    echo "LANE: BEGIN $name"
    # shellcheck disable=SC2086 # LANE_ENV is a list of NAME=VALUE words
    env $LANE_ENV TYPED_VERBS_DEVICE=rxe0 TYPED_VERBS_CM_ADDR=10.0.0.1 RUST_BACKTRACE=1 "$t" --test-threads=2 2>&1
    rc=$?
    echo "LANE: END $name"
    if [ "$rc" = 0 ]; then echo "LANE: PASS test:$name"; else echo "LANE: FAIL test:$name (exit $rc)"; fi
done
if [ -n "$LANE_ONLY" ]; then
    echo "LANE: DONE"
    poweroff -f
fi
pingpong() { # pingpong PROGRAM ARGS...: server and client on rxe0, over loopback TCP
    prog=$1
    shift
    $prog -d rxe0 -g 1 "$@" >/tmp/server.log 2>&1 &
    server=$!
    sleep 1
    $prog -d rxe0 -g 1 "$@" 127.0.0.1 >/tmp/client.log 2>&1
    c=$?
    wait $server
    s=$?
    tail -n 2 /tmp/client.log
    [ "$c" = 0 ] && [ "$s" = 0 ]
}
step health:ibv_rc_pingpong pingpong ibv_rc_pingpong
step health:ibv_uc_pingpong pingpong ibv_uc_pingpong
step health:ibv_ud_pingpong pingpong ibv_ud_pingpong -s 1024
step health:ibv_srq_pingpong pingpong ibv_srq_pingpong
cmpair() { # cmpair "SERVER ARGS" "CLIENT ARGS": rdma_cm programs on rxe0's address, 20 s each
    # shellcheck disable=SC2086 # each is a program and its options
    timeout 20 $1 >/tmp/server.log 2>&1 &
    server=$!
    sleep 1
    # shellcheck disable=SC2086
    timeout 20 $2 >/tmp/client.log 2>&1
    c=$?
    wait $server
    s=$?
    if [ "$c" = 0 ] && [ "$s" = 0 ]; then
        tail -n 2 /tmp/client.log
    else
        sed "s|^|server (exit $s): |" /tmp/server.log
        sed "s|^|client (exit $c): |" /tmp/client.log
    fi
    [ "$c" = 0 ] && [ "$s" = 0 ]
}
step health:rping cmpair "rping -s -a 10.0.0.1 -C 10 -v" "rping -c -a 10.0.0.1 -C 10 -v"
step health:ucmatose cmpair "ucmatose -b 10.0.0.1" "ucmatose -s 10.0.0.1"
step health:udaddy cmpair "udaddy -b 10.0.0.1" "udaddy -s 10.0.0.1"
step health:ib_send_bw cmpair "ib_send_bw -d rxe0 -x 1 -F -s 4096 -n 200" "ib_send_bw -d rxe0 -x 1 -F -s 4096 -n 200 10.0.0.1"
# --- The crate's rdma_cm examples against rdmacm-utils' programs, both ways, on rxe0's address,
# each run bounded by cmpair's timeout (udaddy's own waits are bounded too: UD may lose). rping:
# every ping read, echoed and validated (-V), both sides printing each (-v).
pings() { # pings "SERVER ARGS" "CLIENT ARGS": cmpair, and 10 pings printed by each side
    cmpair "$1" "$2" &&
        [ "$(grep -c '^server ping data: rdma-ping-' /tmp/server.log)" = 10 ] &&
        [ "$(grep -c '^ping data: rdma-ping-' /tmp/client.log)" = 10 ]
}
step interop:rping:typed-server pings "/examples/rping -s -a 10.0.0.1 -C 10 -v -V" "rping -c -a 10.0.0.1 -C 10 -v -V"
step interop:rping:typed-client pings "rping -s -a 10.0.0.1 -C 10 -v -V" "/examples/rping -c -a 10.0.0.1 -C 10 -v -V"
step interop:ucmatose:typed-server cmpair "/examples/ucmatose -b 10.0.0.1 -c 2 -C 20" "ucmatose -s 10.0.0.1 -c 2 -C 20"
step interop:ucmatose:typed-client cmpair "ucmatose -b 10.0.0.1 -c 2 -C 20" "/examples/ucmatose -s 10.0.0.1 -c 2 -C 20"
step interop:udaddy:typed-server cmpair "/examples/udaddy -b 10.0.0.1 -c 2 -C 20" "udaddy -s 10.0.0.1 -c 2 -C 20"
step interop:udaddy:typed-client cmpair "udaddy -b 10.0.0.1 -c 2 -C 20" "/examples/udaddy -s 10.0.0.1 -c 2 -C 20"
# The crate's own CM ping-pong (ibv_rc_pingpong's exchange over a typed rdma_cm connection).
step cm_pingpong cmpair "/examples/cm_pingpong -d rxe0 -p 18600 -n 200" "/examples/cm_pingpong -d rxe0 -p 18600 -n 200 10.0.0.1"
# A service that survives its peer restarting twice: RETRY_EXC_ERR from rxe0's retransmit timer,
# every slot back from the flush, ERR -> RESET -> connected again (bounded: 60 s).
step reconnect timeout 60 /examples/reconnect --self --restarts 2 -d rxe0
# --- end of the rdma_cm examples' steps
interop() { # interop "SERVER [OPTS]" "CLIENT [OPTS]" ARGS...: on rxe0, 20 s each, over loopback TCP
    srv=$1
    cli=$2
    shift 2
    # shellcheck disable=SC2086 # $srv and $cli are a program and its own options
    timeout 20 $srv -d rxe0 -g 1 "$@" >/tmp/server.log 2>&1 &
    server=$!
    for _ in $(seq 100); do # until the server listens (it sets up its QP first), at most 20 s
        netstat -ltn 2>/dev/null | grep -q ':18515 ' && break
        kill -0 $server 2>/dev/null || break
        sleep 0.2
    done
    # shellcheck disable=SC2086
    timeout 20 $cli -d rxe0 -g 1 "$@" 127.0.0.1 >/tmp/client.log 2>&1
    c=$?
    wait $server
    s=$?
    if [ "$c" = 0 ] && [ "$s" = 0 ]; then
        tail -n 2 /tmp/server.log | sed "s|^|${srv##*/} (server): |"
        tail -n 2 /tmp/client.log | sed "s|^|${cli##*/} (client): |"
    else
        sed "s|^|${srv##*/} (server, exit $s): |" /tmp/server.log
        sed "s|^|${cli##*/} (client, exit $c): |" /tmp/client.log
    fi
    [ "$c" = 0 ] && [ "$s" = 0 ]
}
for ex in rc uc ud srq; do
    args="-n 100"
    [ $ex = ud ] && args="$args -s 1024"
    # shellcheck disable=SC2086 # $args is a list of words
    step "interop:${ex}_pingpong:typed-server" interop /examples/${ex}_pingpong ibv_${ex}_pingpong $args
    # shellcheck disable=SC2086
    step "interop:${ex}_pingpong:typed-client" interop ibv_${ex}_pingpong /examples/${ex}_pingpong $args
    # The typed client sleeping on completion events (-e); rdma-core's server polls.
    # shellcheck disable=SC2086
    step "interop:${ex}_pingpong:typed-client-events" interop ibv_${ex}_pingpong "/examples/${ex}_pingpong -e" $args
done
# --- rc_pingpong -N: its sends through an extended QP (ibv_wr_post(3)), against rdma-core's
# ibv_rc_pingpong, both ways, with -c (each side's run judged by pp-chk.sh: rdma-core's prints
# "invalid data" and exits 0). The default 4096 bytes go from the SGE, against rdma-core's -N;
# 16 bytes (rxe's max_inline_data here) go inline, against rdma-core's ibv_post_send path,
# since rdma-core's -N sets IBV_SEND_INLINE with an SGE, which rxe sends from the WQE's inline
# area: the probes below report what that does, against rdma-core and against rc_pingpong's
# check of every byte.
chk() { echo "sh /bin/pp-chk.sh $*"; }
step "interop:rc_pingpong-N:typed-server" interop "$(chk /examples/rc_pingpong -N -c)" "$(chk ibv_rc_pingpong -N -c)" -n 100
step "interop:rc_pingpong-N:typed-client" interop "$(chk ibv_rc_pingpong -N -c)" "$(chk /examples/rc_pingpong -N -c)" -n 100
step "interop:rc_pingpong-N-s16:typed-server" interop "$(chk /examples/rc_pingpong -N -c)" "$(chk ibv_rc_pingpong -c)" -s 16 -n 100
step "interop:rc_pingpong-N-s16:typed-client" interop "$(chk ibv_rc_pingpong -c)" "$(chk /examples/rc_pingpong -N -c)" -s 16 -n 100
# Probes (NOTE lines, not verdicts): rdma-core's -N -s 16 -c between two rdma-core programs,
# and against rc_pingpong -N -c as server and as client.
interop "$(chk --probe=ibv-N-s16:server ibv_rc_pingpong -N -c)" "$(chk --probe=ibv-N-s16:client ibv_rc_pingpong -N -c)" -s 16 -n 100
interop "$(chk --probe=typed-N-s16-vs-ibv-N:server /examples/rc_pingpong -N -c)" "$(chk --probe=typed-N-s16-vs-ibv-N:client ibv_rc_pingpong -N -c)" -s 16 -n 100
interop "$(chk --probe=ibv-N-s16-vs-typed-N:server ibv_rc_pingpong -N -c)" "$(chk --probe=ibv-N-s16-vs-typed-N:client /examples/rc_pingpong -N -c)" -s 16 -n 100
# --- end of rc_pingpong -N's steps
# perftest's ib_send_bw, ib_write_bw, ib_send_lat, ib_write_lat against the typed tools (their
# default posting method and --use_old_post_send), one after the other at 4 B, 4 KiB and
# 64 KiB, server and client on rxe0: one table of ratios.
. /etc/perf-compare.env
step perf-compare perf-compare.sh both
echo "LANE: DONE"
poweroff -f
INIT
# What the init reads from the host: whether it runs the tests alone, and their environment.
sed -i "2i LANE_ONLY='$only'\nLANE_ENV='$lane_env'" "$ROOT/init"
chmod +x "$ROOT/init"
vm_pack "$WORK/initrd.img"

# 4. Boot.
limit=${RXE_LANE_TIMEOUT:-600}
echo "rxe-lane: booting $kver under qemu (TCG, no NIC), limit ${limit}s"
console=$WORK/console.log
set +e
timeout "$limit" qemu-system-x86_64 -accel tcg -cpu max -m 1536M -smp 2 -nographic -nodefaults \
    -serial stdio -nic none -no-reboot -kernel "$vmlinuz" -initrd "$WORK/initrd.img" \
    -append 'console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init' </dev/null >"$console" 2>&1
qemu_rc=$?
set -e
# Drop carriage returns and the firmware's terminal escapes, so each line starts with its text.
sed -e 's/\r$//' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' "$console" >"$console.tmp" && mv "$console.tmp" "$console"

# 5. The verdict, from the console. Every step the init runs must report exactly once: the steps
#    are listed here as the init runs them, and a step with no verdict (a line lost or garbled on
#    the console, a VM that stopped early) fails the lane like a failed step.
expected=(rxe0)
[ "${RXE_LANE_PERF_ONLY:-0}" = 1 ] || for t in "${tests[@]}"; do expected+=("test:${t%% *}"); done
if [ "${RXE_LANE_PERF_ONLY:-0}" != 1 ] && [ -z "$only" ]; then
    for ex in rc uc ud srq; do expected+=("health:ibv_${ex}_pingpong"); done
    expected+=(health:rping health:ucmatose health:udaddy health:ib_send_bw)
    for ex in rc uc ud srq; do
        expected+=("interop:${ex}_pingpong:typed-server" "interop:${ex}_pingpong:typed-client"
            "interop:${ex}_pingpong:typed-client-events")
    done
    for n in N N-s16; do
        expected+=("interop:rc_pingpong-$n:typed-server" "interop:rc_pingpong-$n:typed-client")
    done
fi
[ -n "$only" ] || expected+=(perf-compare)
# A LANE line is found anywhere in a console line: the kernel or the firmware may have written
# text before it on the same line.
grep -oE 'LANE: (PASS|FAIL) .*' "$console" >"$WORK/verdicts" || true
# The rdma_cm examples' steps (not run when the init stops early: perf-only, RXE_LANE_ONLY).
if [ "${RXE_LANE_PERF_ONLY:-0}" != 1 ] && [ -z "$only" ]; then
    for ex in rping ucmatose udaddy; do expected+=("interop:$ex:typed-server" "interop:$ex:typed-client"); done
    expected+=(cm_pingpong reconnect)
fi
vm_tally "$WORK/verdicts" "step verdicts on the console" "steps expected"
# The probes' outcomes (pp-chk.sh's NOTE lines: reported, not verdicts).
grep -oE 'NOTE probe .*' "$console" | sed 's/^/rxe-lane: /' || true
# The perftest comparison's table (perf-compare.sh's PERF lines).
grep -E '^PERF:|^perf-compare: (OK|FAIL|ib_)' "$console" || true
# Why the failed steps failed (their last console lines), near the end of the output.
vm_fail_context "$console"
if [ "${RXE_LANE_PERF_ONLY:-0}" = 1 ]; then
    grep -c 'LANE: DONE' "$console" >/dev/null || { echo "rxe-lane: the VM did not finish (qemu exit $qemu_rc); see $console" >&2; fail=$((fail + 1)); }
    rm -rf "$ROOT"
    echo "rxe-lane: perftest comparison only: $pass passed, $fail failed, $missing_steps missing; $(($(date +%s) - lane_start))s"
    [ "$fail" = 0 ] && [ "$missing_steps" = 0 ]
    exit
fi
# A SKIP line is written by a test thread while libtest writes "test NAME ... ok" from another,
# so it may start anywhere in a console line ("test a ... okSKIP b: ..."): count every
# "SKIP test_name: " wherever it starts.
# (No SKIP line at all, as when RXE_LANE_ONLY runs a binary that skips nothing, counts 0.)
skips=$({ grep -oE 'SKIP [a-z_][a-z0-9_]*: ' "$console" || true; } | wc -l)
tests_run=$({ grep -oE 'test result: [a-zA-Z]+\. [0-9]+ passed; [0-9]+ failed' "$console" || true; } |
    awk '{ p += $4; f += $6 } END { printf "%d passed, %d failed", p, f }')
done_seen=$(grep -c 'LANE: DONE' "$console" || true)
if [ "$done_seen" = 0 ]; then
    echo "rxe-lane: the VM did not finish (qemu exit $qemu_rc); see $console" >&2
    fail=$((fail + 1))
fi
# How many sequences the differential test compared on sw0 and rxe0 (its NOTE line): at least
# DIFF_MIN, or the lane fails (a comparison that quietly ran fewer proves less). With
# RXE_LANE_ONLY, only when the differential test is one of those run; with
# TYPED_VERBS_DIFF_SEQUENCES in RXE_LANE_ENV, at least that many.
DIFF_MIN=2000
diff_ran=1
if [ -n "$only" ]; then
    diff_ran=
    for t in "${tests[@]}"; do [ "${t%% *}" = differential ] && diff_ran=1; done
fi
for word in $lane_env; do
    case $word in TYPED_VERBS_DIFF_SEQUENCES=[0-9]*) DIFF_MIN=${word#*=} ;; esac
done
diff_note=$(grep -oE 'NOTE software_device_agrees_with_the_real_one[a-z_]*: .*' "$console" | head -n 1 || true)
diff_count=$(sed -nE 's/^NOTE [a-z_]*: ([0-9]+) sequences .* agree on .*/\1/p' <<<"$diff_note")
if [ -z "$diff_ran" ]; then
    :
elif [ -n "$diff_count" ] && [ "$diff_count" -ge "$DIFF_MIN" ]; then
    echo "rxe-lane: differential: ${diff_note#NOTE *: }"
else
    echo "rxe-lane: the differential test did not report at least $DIFF_MIN agreeing sequences on rxe0 (${diff_note:-no NOTE line})" >&2
    missing_steps=$((missing_steps + 1))
fi
# The initramfs tree is in initrd.img now.
rm -rf "$ROOT"
elapsed=$(($(date +%s) - lane_start))
echo "rxe-lane: steps: $pass passed, $fail failed, $missing_steps missing of ${#expected[@]} expected; tests on rxe0: $tests_run, $skips skipped (SKIP lines in $console); ${elapsed}s"
[ "$fail" = 0 ] && [ "$missing_steps" = 0 ]
