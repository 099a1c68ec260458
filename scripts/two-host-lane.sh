#!/usr/bin/env bash
# The two-host lane: RDMA across a wire between two kernels. Two throw-away qemu VMs (A and B,
# TCG, one CPU and 768 MiB each) boot Debian's generic kernel, each with rdma_rxe over a
# virtio-net NIC; the two NICs are joined by a qemu `-netdev dgram` link whose host side is UDP
# on 127.0.0.1 only (no user networking, no bridge: nothing leaves this machine). A is 10.0.0.1,
# B is 10.0.0.2, both only on that wire.
#
# Every step runs twice, with the server in A and the client in B ("A-B"), then the other way
# round ("B-A"): rdma-core's ibv_{rc,uc,ud,srq}_pingpong as health checks of the lane, the crate's
# four pingpong examples against rdma-core's (each as server and as client), rc_pingpong -N -c
# against ibv_rc_pingpong (and the probes of rdma-core's -N -s 16 -c), rdmacm-utils' rping,
# ucmatose and udaddy against themselves (rdma_cm across the wire) and perftest's ib_send_bw,
# ib_write_bw, ib_send_lat and ib_write_lat. rdmacm-utils and perftest come from their Debian
# packages, downloaded and unpacked into the VMs' image, never installed on the host.
#
# How the two VMs keep in step: both run the same list of steps in the same order; each step has
# its own port. The server's VM starts the server, waits until it listens, then tells the
# client's VM over the wire (a line to a control port of the step's own); the client's VM waits
# for that, then runs the client. Every server, client and wait is bounded by the step's timeout.
# Each VM prints one line per half it runs, `LANE: PASS|FAIL <dir>:<step>:server|client`;
# the host reads both consoles and fails on a FAIL and on a verdict missing or seen twice.
#
# Crash steps (`crash:CASE`, examples/peer_crash.rs, docs/peer-crash.md): the server is the
# survivor, the client the victim, run by scripts/guest/crash-victim.sh, which waits until the
# victim's traffic runs and then kills it. rc-process, cm-process, ud-process and uc-process
# kill the victim's process (SIGKILL) and run in both directions like any step; each half gives
# its verdict, and each prints a line "crash: CASE: ..." (the survivor's says what it saw and
# when, against its bound) that the summary repeats. rc-vm and cm-vm kill the victim's whole VM
# (LAST_STEPS): they run once, survivor in A and victim in B, after every step of both
# directions, side by side: A leaves each survivor running and waits for them after its last
# step; B's half of rc-vm leaves its victim running (a verdict), its half of cm-vm writes
# "LANE-KILL-VM b" on the console once its victim's traffic runs, and the host, which watches
# the consoles while the VMs run, kills B's qemu (SIGKILL; its pid from qemu's -pidfile) and
# says so in a line "crash: host killed VM b ...". The host expects no verdict from the half
# that asked for the kill, no "LANE: DONE b" and no counters of B, and fails if B was not
# killed.
#
# Adding a step (for the integrator): append to STEPS below, or to the hooks after it; a step
# is "NAME|READY|TIMEOUT|SERVER COMMAND|CLIENT COMMAND", see the comment there. Programs the
# steps run are put into the image by the lines after the hooks (EXAMPLES, GUEST_SCRIPTS, test
# binaries).
#
# Usage: bash scripts/two-host-lane.sh
#   TWO_HOST_LANE_TIMEOUT   seconds the VMs may run (default 900)
#   TWO_HOST_LANE_ONLY      a regular expression: only the steps whose name matches ('^crash:':
#                           the crash steps)
#   TWO_HOST_LANE_PERF      0: leave out scripts/guest/perf-compare.sh across the wire (see the hooks)
#   PERF_*                  passed to perf-compare.sh in the VMs
# Prints one line per verdict, the wire's counters and a summary; exits non-zero if any step
# failed or is missing. The consoles stay in target/two-host-vm/. The kernel and the packages
# are cached in target/rxe-vm/cache (shared with scripts/rxe-lane.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=setup.sh
source scripts/setup.sh
# shellcheck source=vm-lib.sh
source scripts/vm-lib.sh
# shellcheck source=lib/vm.sh
source scripts/lib/vm.sh
VM_NAME=two-host-lane

lane_start=$(date +%s)
vm_need_packages qemu-system-x86 busybox-static kmod cpio iproute2 ibverbs-providers ibverbs-utils librdmacm1

WORK=target/two-host-vm
CACHE=target/rxe-vm/cache
ROOT=$WORK/root
mkdir -p "$WORK" "$CACHE"
ADDR_A=10.0.0.1
ADDR_B=10.0.0.2

# The steps. Each is "NAME|READY|TIMEOUT|SERVER COMMAND|CLIENT COMMAND", run once with the server
# in A and the client in B, once the other way round:
#   READY    when the server's VM lets the client start: tcp (the server listens on @PORT@,
#            netstat), cm (an rdma_cm listener on @PORT@, `rdma res show cm_id`), tcp:N or cm:N
#            (on port N, for a program with a fixed port), none (at once: the client retries by
#            itself)
#   TIMEOUT  seconds each half may take
#   @PORT@   a port of the step's own (TCP and rdma_cm), @SERVER@ the server's address,
#            @CLIENT@ the client's
# Commands run under the VM's /bin/sh with PATH=/bin:/usr/bin; the crate's examples are in
# /examples, its test binaries in /tests, guest scripts in /guest. No '|' inside a command.
PP_ITERS=200
PP="-d rxe0 -g 1 -p @PORT@ -n $PP_ITERS"
STEPS=()
for ex in rc uc ud srq; do
    args=$PP
    [ $ex = ud ] && args="$args -s 1024" # the path MTU is 1024
    STEPS+=("health:ibv_${ex}_pingpong|tcp|40|ibv_${ex}_pingpong $args|ibv_${ex}_pingpong $args @SERVER@")
done
for ex in rc uc ud srq; do
    args=$PP
    [ $ex = ud ] && args="$args -s 1024"
    STEPS+=("interop:${ex}_pingpong:typed-server|tcp|40|/examples/${ex}_pingpong $args|ibv_${ex}_pingpong $args @SERVER@"
        "interop:${ex}_pingpong:typed-client|tcp|40|ibv_${ex}_pingpong $args|/examples/${ex}_pingpong $args @SERVER@")
done
STEPS+=(
    "health:rping|cm|40|rping -s -a 0.0.0.0 -p @PORT@ -C 10|rping -c -a @SERVER@ -p @PORT@ -C 10 -v"
    "health:ucmatose|cm|40|ucmatose -p @PORT@ -C 10|ucmatose -s @SERVER@ -p @PORT@ -C 10"
    # udaddy has no port option (it uses 7174).
    "health:udaddy|cm:7174|40|udaddy|udaddy -s @SERVER@"
)
PERF="-d rxe0 -x 1 -F -p @PORT@"
STEPS+=(
    "health:ib_send_bw|tcp|60|ib_send_bw $PERF -s 4096 -n 500|ib_send_bw $PERF -s 4096 -n 500 @SERVER@"
    "health:ib_write_bw|tcp|60|ib_write_bw $PERF -s 4096 -n 500|ib_write_bw $PERF -s 4096 -n 500 @SERVER@"
    "health:ib_send_lat|tcp|60|ib_send_lat $PERF -s 2 -n 200|ib_send_lat $PERF -s 2 -n 200 @SERVER@"
    "health:ib_write_lat|tcp|60|ib_write_lat $PERF -s 2 -n 200|ib_write_lat $PERF -s 2 -n 200 @SERVER@"
)

# Hooks: the crate's programs that take part once they exist. EXAMPLES are built (debug) and
# RELEASE_EXAMPLES (release) and both copied to /examples; GUEST_SCRIPTS are copied to /guest;
# TESTS (tests/NAME.rs, or tests/NAME/main.rs) are built and copied to /tests/NAME. PERF_* variables of the host's
# environment reach the guests in /etc/perf-compare.env.
EXAMPLES=(rc_pingpong uc_pingpong ud_pingpong srq_pingpong)
RELEASE_EXAMPLES=()
GUEST_SCRIPTS=()
TESTS=()
# - The CM examples against rdmacm-utils, both ways: rping (10 pings, validated), ucmatose,
#   udaddy (its fixed port; its waits are bounded, a lost datagram is reported and fails).
EXAMPLES+=(rping ucmatose udaddy cm_pingpong)
STEPS+=(
    "cm_pingpong|cm|40|/examples/cm_pingpong -d rxe0 -p @PORT@ -n 200|/examples/cm_pingpong -d rxe0 -p @PORT@ -n 200 @SERVER@"
    "interop:rping:typed-server|cm|40|/examples/rping -s -a 0.0.0.0 -p @PORT@ -C 10 -V|rping -c -a @SERVER@ -p @PORT@ -C 10 -v -V"
    "interop:rping:typed-client|cm|40|rping -s -a 0.0.0.0 -p @PORT@ -C 10 -V|/examples/rping -c -a @SERVER@ -p @PORT@ -C 10 -v -V"
    "interop:ucmatose:typed-server|cm|40|/examples/ucmatose -p @PORT@ -C 10|ucmatose -s @SERVER@ -p @PORT@ -C 10"
    "interop:ucmatose:typed-client|cm|40|ucmatose -p @PORT@ -C 10|/examples/ucmatose -s @SERVER@ -p @PORT@ -C 10"
    "interop:udaddy:typed-server|cm:7174|40|/examples/udaddy|udaddy -s @SERVER@"
    "interop:udaddy:typed-client|cm:7174|40|udaddy|/examples/udaddy -s @SERVER@"
)
# - The typed perf tools side by side with perftest (release builds, as perftest's), across
#   the wire: perf-compare.sh's server in one VM, its client (which retries its connections and
#   prints the table of ratios) in the other, on ports of its own from 40000 on. On by default
#   (TWO_HOST_LANE_PERF=0 leaves it out): one pair per size (PERF_REPS=1 unless set), and the
#   typed tool once more with --use_old_post_send (PERF_OLD_REPS=1; 0 leaves it out): both
#   posting methods in the table, about 165 s a direction. Across the wire the ratios are
#   reported, not gated (PERF_GATE=0 unless set): under TCG a stall of either VM decides a
#   single latency run, and the figure is the ratio in one run, read by a person; the single-VM
#   lane keeps the gate.
if [ -f scripts/guest/perf-compare.sh ] && [ -f examples/tv_send_bw.rs ] && [ "${TWO_HOST_LANE_PERF:-1}" = 1 ]; then
    RELEASE_EXAMPLES+=(tv_send_bw tv_write_bw tv_send_lat tv_write_lat)
    GUEST_SCRIPTS+=(scripts/guest/perf-compare.sh)
    STEPS+=("perf:compare|none|600|export PERF_REPS=1 PERF_GATE=0; . /etc/perf-compare.env; PERF_PORT=40000 sh /guest/perf-compare.sh server|export PERF_REPS=1 PERF_GATE=0; . /etc/perf-compare.env; PERF_PORT=40000 sh /guest/perf-compare.sh client @SERVER@")
fi
# - rc_pingpong -N (its sends through an extended QP, ibv_wr_post(3)) against rdma-core's
#   ibv_rc_pingpong, both ways, with -c, each half judged by pp-chk.sh (rdma-core's prints
#   "invalid data" and exits 0): 4096 bytes (from the SGE) against rdma-core's -N; 16 bytes
#   (inline: rxe's max_inline_data) against rdma-core's ibv_post_send path, since rdma-core's -N
#   sets IBV_SEND_INLINE with an SGE, which rxe sends from the WQE's inline area. The probes
#   (their halves always pass; each prints a NOTE line, shown in the summary) report what
#   rdma-core's -N -s 16 -c does against itself and against rc_pingpong -N -c.
GUEST_SCRIPTS+=(scripts/guest/pp-chk.sh)
CHK="sh /guest/pp-chk.sh"
STEPS+=(
    "interop:rc_pingpong-N:typed-server|tcp|40|$CHK /examples/rc_pingpong -N -c $PP|$CHK ibv_rc_pingpong -N -c $PP @SERVER@"
    "interop:rc_pingpong-N:typed-client|tcp|40|$CHK ibv_rc_pingpong -N -c $PP|$CHK /examples/rc_pingpong -N -c $PP @SERVER@"
    "interop:rc_pingpong-N-s16:typed-server|tcp|40|$CHK /examples/rc_pingpong -N -c -s 16 $PP|$CHK ibv_rc_pingpong -c -s 16 $PP @SERVER@"
    "interop:rc_pingpong-N-s16:typed-client|tcp|40|$CHK ibv_rc_pingpong -c -s 16 $PP|$CHK /examples/rc_pingpong -N -c -s 16 $PP @SERVER@"
    "probe:ibv-N-s16|tcp|40|$CHK --probe=ibv-N-s16:server ibv_rc_pingpong -N -c -s 16 $PP|$CHK --probe=ibv-N-s16:client ibv_rc_pingpong -N -c -s 16 $PP @SERVER@"
    "probe:typed-N-s16-vs-ibv-N|tcp|40|$CHK --probe=typed-N-s16-vs-ibv-N:server /examples/rc_pingpong -N -c -s 16 $PP|$CHK --probe=typed-N-s16-vs-ibv-N:client ibv_rc_pingpong -N -c -s 16 $PP @SERVER@"
    "probe:ibv-N-s16-vs-typed-N|tcp|40|$CHK --probe=ibv-N-s16-vs-typed-N:server ibv_rc_pingpong -N -c -s 16 $PP|$CHK --probe=ibv-N-s16-vs-typed-N:client /examples/rc_pingpong -N -c -s 16 $PP @SERVER@"
)
# - The runtime tests that need two nodes (TWO_NODE_TESTS, also built as TESTS): each test of
#   the binary is a step of its own (`test:two_node:NAME`, the names listed by running the
#   binary with --list on the host), its server half in one VM (TYPED_VERBS_CM_ROLE=server), its
#   client half (TYPED_VERBS_CM_ROLE=client, TYPED_VERBS_CM_PEER=the server's address; it
#   retries its connect while the server is not yet listening) in the other, so that one
#   failing test cannot hold the next one's halves apart.
# - The peer-crash steps' program and the victim's wrapper (the steps come after the tests').
crash_steps=0
if [ -f examples/peer_crash.rs ] && [ -f scripts/guest/crash-victim.sh ]; then
    EXAMPLES+=(peer_crash)
    GUEST_SCRIPTS+=(scripts/guest/crash-victim.sh)
    crash_steps=1
fi
TWO_NODE_TESTS=()
if [ -f tests/two_node.rs ]; then
    TESTS+=(two_node)
    TWO_NODE_TESTS+=(two_node)
fi

# 1. The kernel (scripts/vm-lib.sh).
vm_kernel

# 2. The crate's programs (debug builds, like the single-VM lane's).
echo "$VM_NAME: building the examples${RELEASE_EXAMPLES[*]:+ (and ${RELEASE_EXAMPLES[*]} in release)}${TESTS[*]:+ and tests ${TESTS[*]}}"
vm_build examples examples build-examples "${EXAMPLES[@]/#/--example=}"
if [ "${#RELEASE_EXAMPLES[@]}" -gt 0 ]; then
    vm_build release_examples "release examples" build-release --release "${RELEASE_EXAMPLES[@]/#/--example=}"
    examples+=("${release_examples[@]}")
fi
tests=()
if [ "${#TESTS[@]}" -gt 0 ]; then
    if ! cargo test "${TESTS[@]/#/--test=}" --no-run >"$WORK/build-tests.log" 2>&1; then
        tail -n 30 "$WORK/build-tests.log" >&2
        echo "$VM_NAME: building the tests failed" >&2
        exit 1
    fi
    mapfile -t tests < <(sed -n 's/^ *Executable tests\/\([A-Za-z0-9_]*\)\(\.rs\|\/main\.rs\) (\(.*\))$/\1 \3/p' "$WORK/build-tests.log")
fi
for t in "${tests[@]}"; do
    name=${t%% *}
    [[ " ${TWO_NODE_TESTS[*]} " == *" $name "* ]] || continue
    mapfile -t cases < <("${t#* }" --list --format=terse 2>/dev/null | sed -n 's/: test$//p')
    [ "${#cases[@]}" -gt 0 ] || { echo "$VM_NAME: the test binary $name lists no tests" >&2; exit 1; }
    for c in "${cases[@]}"; do
        run="/tests/$name --exact $c --test-threads=1"
        STEPS+=("test:$name:$c|none|60|TYPED_VERBS_DEVICE=rxe0 TYPED_VERBS_CM_ROLE=server TYPED_VERBS_CM_ADDR=@SERVER@ $run|TYPED_VERBS_DEVICE=rxe0 TYPED_VERBS_CM_ROLE=client TYPED_VERBS_CM_ADDR=@CLIENT@ TYPED_VERBS_CM_PEER=@SERVER@ $run")
    done
done

# - Peer crashes (examples/peer_crash.rs, scripts/guest/crash-victim.sh; docs/peer-crash.md):
#   the survivor is the server, the victim the client, which crash-victim.sh kills mid-traffic
#   (its process, SIGKILL). rc-process and cm-process: the survivor's RC QP must fail within
#   the bound (retry_cnt 6) with every other request flushed, and its CM report the crash;
#   ud-process and uc-process: the loss is reported. Each survivor and each victim prints a
#   line "crash: CASE: ..." that the summary repeats.
#   LAST_STEPS (rc-vm, cm-vm) kill the victims' whole VM, once, at the end (see the header):
#   @KILL@ is `start` (leave the victim running) in all but the last, `vm` (ask the host for
#   the kill) in the last.
LAST_STEPS=()
if [ "$crash_steps" = 1 ]; then
    CRASH="/examples/peer_crash -d rxe0 -g 1 -p @PORT@"
    for c in rc-process cm-process ud-process uc-process; do
        ready=tcp
        [ $c = cm-process ] && ready=cm
        STEPS+=("crash:$c|$ready|60|$CRASH survivor $c|sh /guest/crash-victim.sh process $c $CRASH victim $c @SERVER@")
    done
    LAST_STEPS+=(
        "crash:rc-vm|tcp|90|$CRASH survivor rc-vm|sh /guest/crash-victim.sh @KILL@ rc-vm $CRASH victim rc-vm @SERVER@"
        "crash:cm-vm|cm|90|$CRASH survivor cm-vm|sh /guest/crash-victim.sh @KILL@ cm-vm $CRASH victim cm-vm @SERVER@"
    )
fi

if [ -n "${TWO_HOST_LANE_ONLY:-}" ]; then
    for list in STEPS LAST_STEPS; do
        declare -n steps_ref=$list
        kept=()
        for s in "${steps_ref[@]}"; do
            [[ ${s%%|*} =~ $TWO_HOST_LANE_ONLY ]] && kept+=("$s")
        done
        steps_ref=("${kept[@]}")
        unset -n steps_ref
    done
fi

# 3. The image, one for both VMs (each learns from the kernel command line which it is).
rm -rf "$ROOT"
mkdir -p "$ROOT"/{bin,sbin,usr/bin,lib,lib64,etc/libibverbs.d,proc,sys,dev,tmp,tests,examples,guest}
cp /bin/busybox "$ROOT/bin/busybox"
vm_debs rdmacm-utils perftest libibumad3 libpci3
rm -rf "$ROOT/usr/share"
provider=$(ls /usr/lib/"$multiarch"/libibverbs/librxe-rdmav*.so)
vm_copy_with_libs /usr/bin/ip /usr/bin/rdma /usr/bin/ibv_devices /usr/bin/ibv_devinfo \
    /usr/bin/ibv_rc_pingpong /usr/bin/ibv_uc_pingpong /usr/bin/ibv_ud_pingpong \
    /usr/bin/ibv_srq_pingpong "$provider"
cp /etc/libibverbs.d/rxe.driver "$ROOT/etc/libibverbs.d/"
vm_copy_libs "$ROOT"/usr/bin/{rping,ucmatose,udaddy,ib_send_bw,ib_write_bw,ib_send_lat,ib_write_lat}
for ex in "${examples[@]}"; do
    vm_copy_libs "$ex"
    cp "$ex" "$ROOT/examples/${ex##*/}"
done
for t in "${tests[@]}"; do
    vm_copy_libs "${t#* }"
    cp "${t#* }" "$ROOT/tests/${t%% *}"
done
for g in "${GUEST_SCRIPTS[@]}"; do
    cp "$g" "$ROOT/guest/"
done
mkdir -p "$ROOT/etc"
env | sed -n 's/^\(PERF_[A-Z_]*\)=\(.*\)$/export \1="\2"/p' >"$ROOT/etc/perf-compare.env"
# The NIC, rxe and the connection manager, with what they depend on (modules.dep);
# crc32_generic is asked for at run time.
vm_modules virtio_pci virtio_net rdma_rxe ib_uverbs rdma_ucm crc32_generic

# The steps as the VMs run them: "INDEX|DIR|SERVER NODE|PORT|READY|TIMEOUT|SERVER|CLIENT",
# both directions, the placeholders filled in. The host expects one verdict per half.
expected=(a:rxe0 b:rxe0 a:wire b:wire)
: >"$ROOT/steps"
i=0
for dir in A-B B-A; do
    if [ $dir = A-B ]; then srv=a sa=$ADDR_A ca=$ADDR_B; else srv=b sa=$ADDR_B ca=$ADDR_A; fi
    for s in "${STEPS[@]}"; do
        IFS='|' read -r name ready tmo scmd ccmd <<<"$s"
        port=$((18515 + i))
        fill() { sed -e "s/@PORT@/$port/g" -e "s/@SERVER@/$sa/g" -e "s/@CLIENT@/$ca/g" <<<"$1"; }
        echo "$i|$dir:$name|$srv|$port|$ready|$tmo|$(fill "$scmd")|$(fill "$ccmd")" >>"$ROOT/steps"
        expected+=("$dir:$name:server" "$dir:$name:client")
        i=$((i + 1))
    done
done
# The steps that kill a VM: once, the survivor (server) in A, the victim in B, at the very end
# (B is gone afterwards). Their survivors run side by side (A waits for them after the last
# step); the victims of all but the last are left running by their halves (crash-victim.sh
# start, a verdict), the last asks for the kill (no verdict).
vm_kills=${#LAST_STEPS[@]}
for s in "${LAST_STEPS[@]}"; do
    IFS='|' read -r name ready tmo scmd ccmd <<<"$s"
    port=$((18515 + i))
    kill=start
    [ "$s" = "${LAST_STEPS[-1]}" ] && kill=vm
    fill() { sed -e "s/@PORT@/$port/g" -e "s/@SERVER@/$ADDR_A/g" -e "s/@CLIENT@/$ADDR_B/g" -e "s/@KILL@/$kill/g" <<<"$1"; }
    echo "$i|A-B:$name|a|$port|$ready|$tmo|$(fill "$scmd")|$(fill "$ccmd")" >>"$ROOT/steps"
    expected+=("A-B:$name:server")
    [ $kill = vm ] || expected+=("A-B:$name:client")
    i=$((i + 1))
done

vm_init_start "$ROOT/init"
cat >>"$ROOT/init" <<'INIT'
case $(cat /proc/cmdline) in
*lane.node=a*) node=a me=10.0.0.1 peer=10.0.0.2 ;;
*) node=b me=10.0.0.2 peer=10.0.0.1 ;;
esac
verdict() { # verdict NAME STATUS
    if [ "$2" = 0 ]; then echo "LANE: PASS $1"; else echo "LANE: FAIL $1 (exit $2)"; fi
}
up() {
    modprobe crc32_generic &&
        modprobe virtio_pci &&
        modprobe virtio_net &&
        modprobe rdma_rxe &&
        modprobe ib_uverbs &&
        modprobe rdma_ucm &&
        /usr/bin/ip link set lo up &&
        for _ in $(seq 20); do
            [ -e /sys/class/net/eth0 ] && break
            sleep 0.25
        done &&
        /usr/bin/ip link set eth0 up &&
        /usr/bin/ip addr add $me/24 dev eth0 &&
        /usr/bin/rdma link add rxe0 type rxe netdev eth0 &&
        for _ in $(seq 20); do
            [ -e /dev/infiniband/uverbs0 ] && [ -e /dev/infiniband/rdma_cm ] && break
            sleep 0.25
        done &&
        ibv_devinfo -d rxe0 >/dev/null
}
up
verdict $node:rxe0 $?
# The wire: until the peer answers (it may boot later), at most 90 s.
wire=1
for _ in $(seq 90); do
    if ping -c 1 -W 1 $peer >/dev/null 2>&1; then wire=0; break; fi
done
verdict $node:wire $wire
eth0() { # eth0's frame counters, as NAME=VALUE words
    for c in tx_packets rx_packets tx_dropped rx_dropped rx_errors; do
        printf '%s=%s ' $c "$(cat /sys/class/net/eth0/statistics/$c)"
    done
}
# Frames sent while the peer was still booting count as sent, never as received: the counters
# from here on tell the wire's drops during the steps.
echo "COUNTERS-START $node eth0 $(eth0)"
echo "$node: up $(cut -d' ' -f1 /proc/uptime)s"

listening() { # listening READY PORT: whether the server's listener is there
    case $1 in *:*) set -- "${1%%:*}" "${1#*:}" ;; esac
    case $1 in
    tcp) netstat -ltn 2>/dev/null | grep -q ":$2 " ;;
    cm) /usr/bin/rdma res show cm_id 2>/dev/null | grep -q ":$2 " ;;
    *) true ;;
    esac
}
show() { # show LOG LABEL STATUS: PERF and crash lines and the last lines on success, more on failure
    if [ "$3" = 0 ]; then grep -E '^(PERF|crash):' "$1"; tail -n 2 "$1" | grep -vE '^(PERF|crash):'; else tail -n 40 "$1"; fi | sed "s|^|  $2: |"
}
# The steps are read on fd 3; every command's stdin is /dev/null (a program that reads stdin
# would eat the list).
exec </dev/null
: >/tmp/background
while IFS='|' read -r i name srv port ready tmo scmd ccmd <&3; do
    ctl=$((30000 + i))
    if [ "$srv" = $node ]; then
        t0=$(cut -d' ' -f1 /proc/uptime)
        timeout $tmo sh -c "$scmd" >/tmp/server-$i.log 2>&1 &
        pid=$!
        for _ in $(seq $((tmo * 5))); do # until it listens (or has died)
            listening $ready $port && break
            kill -0 $pid 2>/dev/null || break
            sleep 0.2
        done
        tr=$(cut -d' ' -f1 /proc/uptime)
        # Tell the client's VM (it may still be busy with the step before).
        for _ in $(seq $((tmo * 5))); do
            echo go | nc $peer $ctl 2>/dev/null && break
            kill -0 $pid 2>/dev/null || break
            sleep 0.2
        done
        case $name in
        *:crash:*-vm)
            # A survivor of a VM kill runs on while the next such step starts (the kill comes
            # at the last): waited for after the last step.
            echo "$i $pid $t0 $tr $name" >>/tmp/background
            continue
            ;;
        esac
        wait $pid
        s=$?
        t1=$(cut -d' ' -f1 /proc/uptime)
        show /tmp/server-$i.log "$name server" $s
        verdict "$name:server" $s
        echo "TIME $name:server started $t0 listening $tr ended $t1"
    else
        # Wait for the server's VM to say its server listens, then run the client.
        timeout $tmo nc -l -p $ctl >/dev/null 2>&1
        t0=$(cut -d' ' -f1 /proc/uptime)
        timeout $tmo sh -c "$ccmd" >/tmp/client.log 2>&1
        c=$?
        t1=$(cut -d' ' -f1 /proc/uptime)
        show /tmp/client.log "$name client" $c
        verdict "$name:client" $c
        echo "TIME $name:client started $t0 ended $t1"
    fi
done 3</steps
while read -r i pid t0 tr name; do
    wait $pid
    s=$?
    t1=$(cut -d' ' -f1 /proc/uptime)
    show /tmp/server-$i.log "$name server" $s
    verdict "$name:server" $s
    echo "TIME $name:server started $t0 listening $tr ended $t1"
done </tmp/background
# What crossed the wire: eth0's frame counters and rxe's.
echo "COUNTERS $node eth0 $(eth0)"
echo "COUNTERS $node rxe0 $(cd /sys/class/infiniband/rxe0/ports/1/hw_counters 2>/dev/null && for c in *; do
    v=$(cat $c); [ "$v" != 0 ] && printf '%s=%s ' $c $v; done)"
echo "LANE: DONE $node"
poweroff -f
INIT
chmod +x "$ROOT/init"
vm_pack "$WORK/initrd.img"
rm -rf "$ROOT"

# 4. Boot both, joined by the wire: UDP on 127.0.0.1, A's port P and B's port P+1.
limit=${TWO_HOST_LANE_TIMEOUT:-900}
wport=$((20000 + ($$ % 10000) * 2))
echo "$VM_NAME: booting two VMs with $kver (TCG), wire on 127.0.0.1:$wport-$((wport + 1)), ${#expected[@]} verdicts expected, limit ${limit}s"
boot() { # boot NODE LOCAL_PORT REMOTE_PORT MAC
    timeout "$limit" qemu-system-x86_64 -accel tcg -cpu max -m 768M -smp 1 -nographic -nodefaults \
        -serial stdio -no-reboot -kernel "$vmlinuz" -initrd "$WORK/initrd.img" -pidfile "$WORK/qemu-$1.pid" \
        -netdev "dgram,id=wire,local.type=inet,local.host=127.0.0.1,local.port=$2,remote.type=inet,remote.host=127.0.0.1,remote.port=$3" \
        -device "virtio-net-pci,netdev=wire,mac=$4,romfile=" \
        -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init lane.node=$1" </dev/null >"$WORK/console-$1.log" 2>&1
}
# A crash step's victim VM asks to be killed by a line on its console (LANE-KILL-VM NODE): while
# the VMs run, the host looks for it every 0.2 s and kills that VM's qemu (SIGKILL, its pid from
# -pidfile), noting the pid and the time in $WORK/killed-NODE.
watch_kills() {
    local n qpid
    while :; do
        for n in a b; do
            [ -e "$WORK/killed-$n" ] && continue
            grep -aq "LANE-KILL-VM $n" "$WORK/console-$n.log" 2>/dev/null || continue
            qpid=$(cat "$WORK/qemu-$n.pid" 2>/dev/null) || continue
            kill -KILL "$qpid" 2>/dev/null && echo "$qpid $(($(date +%s) - boot_start))" >"$WORK/killed-$n"
        done
        sleep 0.2
    done
}
rm -f "$WORK"/killed-{a,b} "$WORK"/qemu-{a,b}.pid
boot_start=$(date +%s)
set +e
# (bash's own stderr is dropped: its "Killed" line for the VM a crash step kills is not news; qemu
# writes to the console logs.)
boot a "$wport" $((wport + 1)) 52:54:00:77:00:01 2>/dev/null &
pid_a=$!
boot b $((wport + 1)) "$wport" 52:54:00:77:00:02 2>/dev/null &
pid_b=$!
watcher=
if [ "$vm_kills" -gt 0 ]; then
    watch_kills &
    watcher=$!
fi
wait $pid_a
rc_a=$?
wait $pid_b
rc_b=$?
[ -z "$watcher" ] || { kill "$watcher"; wait "$watcher"; } 2>/dev/null
set -e
vm_secs=$(($(date +%s) - boot_start))
for n in a b; do
    sed -e 's/\r$//' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' "$WORK/console-$n.log" >"$WORK/console-$n.tmp" &&
        mv "$WORK/console-$n.tmp" "$WORK/console-$n.log"
done

# 5. The verdict, from both consoles: every expected verdict exactly once.
grep -ohE 'LANE: (PASS|FAIL) .*' "$WORK"/console-{a,b}.log >"$WORK/verdicts" || true
vm_tally "$WORK/verdicts" "verdicts on the consoles" expected
for n in a b; do
    if [ -e "$WORK/killed-$n" ]; then
        read -r qpid at <"$WORK/killed-$n"
        echo "$VM_NAME: crash: host killed VM $n (qemu pid $qpid, SIGKILL) ${at}s after boot, at its crash step's request (mid-traffic); its later verdicts and counters are not expected"
        continue
    fi
    if ! grep -q "LANE: DONE $n" "$WORK/console-$n.log"; then
        echo "$VM_NAME: VM $n did not finish (qemu exit $([ $n = a ] && echo $rc_a || echo $rc_b)); see $WORK/console-$n.log" >&2
        fail=$((fail + 1))
    fi
done
# The wire's frames: what one VM's eth0 sent and the other's received (the dgram link drops
# a few under load; RC retransmits, which rxe0's counters show).
grep -ohE 'COUNTERS .*' "$WORK"/console-{a,b}.log | sed "s/^COUNTERS /$VM_NAME: counters: /" || true
frames() { # frames NODE COUNTER [-START]: the counter at the end (or once the wire was up)
    sed -n "s/.*COUNTERS${3:-} $1 eth0 .*$2=\([0-9]*\).*/\1/p" "$WORK/console-$1.log" | head -n 1
}
tx_a=$(frames a tx_packets) rx_a=$(frames a rx_packets) tx_b=$(frames b tx_packets) rx_b=$(frames b rx_packets)
tx_a0=$(frames a tx_packets -START) rx_a0=$(frames a rx_packets -START)
tx_b0=$(frames b tx_packets -START) rx_b0=$(frames b rx_packets -START)
if [ -n "$tx_a" ] && [ -n "$rx_a" ] && [ -n "$tx_b" ] && [ -n "$rx_b" ] &&
    [ -n "$tx_a0" ] && [ -n "$rx_a0" ] && [ -n "$tx_b0" ] && [ -n "$rx_b0" ]; then
    ab=$((tx_a - tx_a0)) ba=$((tx_b - tx_b0))
    echo "$VM_NAME: wire, from both up to the end (give or take the frames of the wire check):" \
        "A->B $ab frames sent, $((rx_b - rx_b0)) received ($((ab - (rx_b - rx_b0))) lost);" \
        "B->A $ba sent, $((rx_a - rx_a0)) received ($((ba - (rx_a - rx_a0))) lost);" \
        "from boot: $((tx_a - rx_b)) and $((tx_b - rx_a)) lost (frames sent before the peer was up count as lost)"
fi
# The steps that kill a VM must have killed it (B, the victims').
if [ "$vm_kills" -gt 0 ] && [ ! -e "$WORK/killed-b" ]; then
    echo "$VM_NAME: crash: VM b was never killed (no LANE-KILL-VM b on its console)" >&2
    fail=$((fail + 1))
fi
# The crash steps' lines (the survivors' and the victims'), as the consoles show them.
grep -ahoE '[^ ]+ (server|client): crash: .*' "$WORK"/console-{a,b}.log | sed "s/^/$VM_NAME: /" || true
# The probes' outcomes (pp-chk.sh's NOTE lines: reported, not verdicts).
grep -ahoE 'NOTE probe .*' "$WORK"/console-{a,b}.log | sed "s/^/$VM_NAME: /" || true
# Tables the steps printed (perf-compare's PERF lines), as the client's VM saw them.
grep -ahE ' client: PERF:' "$WORK"/console-{a,b}.log | sed 's/^ *//' || true
# Why the failed steps failed (their last console lines), near the end of the output.
vm_fail_context "$WORK"/console-{a,b}.log
elapsed=$(($(date +%s) - lane_start))
echo "$VM_NAME: ${#STEPS[@]} steps x 2 directions${LAST_STEPS[*]:+ + ${#LAST_STEPS[@]} once}: $pass passed, $fail failed, $missing_steps missing of ${#expected[@]} verdicts expected; VMs ${vm_secs}s, whole lane ${elapsed}s"
[ "$fail" = 0 ] && [ "$missing_steps" = 0 ]
